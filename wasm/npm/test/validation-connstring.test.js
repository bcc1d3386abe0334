// The official LangGraph.js checkpoint conformance suite again, against an
// AgentStateSaver made as LangGraph.js's own SqliteSaver is,
// fromConnString(":memory:"): returned at once, its database opened by the
// suite's first call. (test/validation.test.js runs it on open's saver; the
// 726 that scripts/check-results.js counts are that file's.)
import { specTest, deltaChannelHistoryTests } from "@langchain/langgraph-checkpoint-validation";
import { AgentStateSaver } from "../src/index.js";

const initializer = {
  checkpointerName: "agentstate (fromConnString)",
  async createCheckpointer() {
    return AgentStateSaver.fromConnString(":memory:");
  },
  async destroyCheckpointer(saver) {
    await saver.close();
  },
};

specTest(initializer);
deltaChannelHistoryTests(initializer);
