// The bench's chat graph: a 200-byte human message in, an 800-byte AI
// message out (deterministic text, no model), over LangGraph's default
// messages channel or a DeltaChannel with snapshots every `every` steps.
// langgraph.bench.mjs runs it in Node and wasm/startup/edge/memory-worker.js
// in a Durable Object; the LangGraph, messages and zod exports come from
// the caller, so that each loads them its own way (node_modules, or a
// bundle of LangGraph's "/web" entry).

const words = "the agent model tool call result answer question search file plan step memory context thread checkpoint state message summary".split(" ");

/** Deterministic text of n characters for seed. */
export function text(seed, n) {
  let s = "";
  let x = seed * 2654435761;
  while (s.length < n) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += (s ? " " : "") + words[x % words.length];
  }
  return s.slice(0, n);
}

/**
 * The graph, compiled with checkpointer. lg holds DeltaValue, END,
 * MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer (from
 * @langchain/langgraph), AIMessage (from @langchain/core/messages) and z
 * (from zod/v4); channel is "default" or "delta".
 */
export function chatGraph(lg, checkpointer, channel, every) {
  const { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer, AIMessage, z } = lg;
  const messages =
    channel === "delta"
      ? new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: every })
      : MessagesValue;
  return new StateGraph(new StateSchema({ messages }))
    .addNode("agent", (s) => ({ messages: [new AIMessage({ id: `ai-${s.messages.length}`, content: text(s.messages.length, 800) })] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer });
}
