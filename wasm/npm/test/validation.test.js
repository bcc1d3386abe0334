// The official LangGraph.js checkpoint conformance suite
// (@langchain/langgraph-checkpoint-validation) against AgentStateSaver.
// Nothing is skipped: the suite skips "should only store channel_values that
// have changed" only for savers it names, and "agentstate" is not one.
import { specTest, deltaChannelHistoryTests } from "@langchain/langgraph-checkpoint-validation";
import { AgentStateSaver } from "../src/index.js";

const initializer = {
  checkpointerName: "agentstate",
  async createCheckpointer() {
    return AgentStateSaver.open();
  },
  async destroyCheckpointer(saver) {
    await saver.close();
  },
};

specTest(initializer);
deltaChannelHistoryTests(initializer);
