// LangGraph.js's checkpoint conformance suite
// (@langchain/langgraph-checkpoint-validation) against AgentStateSaver on a
// postgresql:// URL: the engine's PostgreSQL build over node-postgres, each
// checkpointer in a schema of its own. scripts/check-results.js counts its
// 726 tests.
import { specTest, deltaChannelHistoryTests } from "@langchain/langgraph-checkpoint-validation";
import { AgentStateSaver } from "../src/index.js";
import { dropSchema, freshSchema, url } from "./helpers.js";

const schemas = new WeakMap();
const initializer = {
  checkpointerName: "agentstate",
  async createCheckpointer() {
    const schema = await freshSchema("conf");
    const saver = await AgentStateSaver.open({ url, schema });
    schemas.set(saver, schema);
    return saver;
  },
  async destroyCheckpointer(saver) {
    await saver.close();
    await dropSchema(schemas.get(saver));
  },
};

if (url) {
  specTest(initializer);
  deltaChannelHistoryTests(initializer);
} else {
  test.skip("AGENTSTATE_TEST_PG is not set", () => {});
}
