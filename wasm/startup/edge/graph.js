// The graph every host harness drives: a LangGraph.js chat graph whose
// assistant answers deterministically (no model), checkpointed by the
// agentstate saver. `langgraph` is "@langchain/langgraph" or its "/web"
// entry (hosts without node:async_hooks); `messages` is
// "@langchain/core/messages". Both come from the caller, so that each host
// loads them its own way (a bundle, or Deno's node_modules).
export function buildGraph({ StateGraph, MessagesAnnotation, START, END }, { AIMessage, HumanMessage }, checkpointer) {
  const assistant = (state) => {
    const turn = state.messages.filter((m) => m.getType() === "human").length;
    return { messages: [new AIMessage(`turn ${turn}: ${state.messages.length + 1} messages`)] };
  };
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("assistant", assistant)
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer });
  graph.HumanMessage = HumanMessage;
  return graph;
}

/** One turn on thread: returns the thread's messages after it. */
export async function turn(graph, thread, text) {
  const out = await graph.invoke({ messages: [new graph.HumanMessage(text)] }, { configurable: { thread_id: thread } });
  return out.messages.map((m) => `${m.getType()}: ${m.content}`);
}
