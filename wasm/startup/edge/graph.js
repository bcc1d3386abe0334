// The graph every host harness drives: a LangGraph.js chat graph whose
// assistant answers deterministically (no model), checkpointed by the
// agentstate saver. `langgraph` is "@langchain/langgraph" or its "/web"
// entry (hosts without node:async_hooks).
import { AIMessage, HumanMessage } from "@langchain/core/messages";

export function buildGraph({ StateGraph, MessagesAnnotation, START, END }, checkpointer) {
  const assistant = (state) => {
    const turn = state.messages.filter((m) => m.getType() === "human").length;
    return { messages: [new AIMessage(`turn ${turn}: ${state.messages.length + 1} messages`)] };
  };
  return new StateGraph(MessagesAnnotation)
    .addNode("assistant", assistant)
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer });
}

/** One turn on thread: returns the thread's messages after it. */
export async function turn(graph, thread, text) {
  const out = await graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id: thread } });
  return out.messages.map((m) => `${m.getType()}: ${m.content}`);
}
