// Generates langgraph-js.sqlite: a LangGraph.js SqliteSaver file written by
// real graphs, the fixture of `agentstate import-langgraph`.
//
//   cd testdata/langgraph && npm ci && node generate.mjs
//
// The model is a deterministic fake (no network), so the conversations are
// fixed; checkpoint ids and timestamps are not. CI never runs this script:
// the committed .sqlite file is the fixture.
import { existsSync, rmSync } from "node:fs";
import {
  StateGraph,
  MessagesAnnotation,
  Annotation,
  START,
  END,
  Command,
  interrupt,
  REMOVE_ALL_MESSAGES,
} from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import {
  AIMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  RemoveMessage,
} from "@langchain/core/messages";

const out = new URL("./langgraph-js.sqlite", import.meta.url).pathname;
for (const f of [out, out + "-wal", out + "-shm"]) if (existsSync(f)) rmSync(f);
const saver = SqliteSaver.fromConnString(out);

// A fake chat model: answers deterministically, calls the "weather" tool
// when asked about weather, and reports token usage.
let calls = 0;
function fakeModel(messages) {
  calls++;
  const last = messages[messages.length - 1];
  const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
  const usage = { input_tokens: 10 * messages.length, output_tokens: 7, total_tokens: 10 * messages.length + 7 };
  if (last._getType() === "human" && /weather/i.test(text)) {
    return new AIMessage({
      id: `ai-${calls}`,
      content: "",
      tool_calls: [{ id: `call-${calls}`, name: "weather", args: { city: "Paris", unit: "C" } }],
      usage_metadata: usage,
      response_metadata: { model_name: "fake-1", finish_reason: "tool_calls" },
    });
  }
  if (last._getType() === "tool") {
    return new AIMessage({ id: `ai-${calls}`, content: `It is ${last.content} there.`, usage_metadata: usage });
  }
  // Every third answer has no id: the add_messages reducer gives it one.
  const id = calls % 3 === 0 ? undefined : `ai-${calls}`;
  return new AIMessage({
    id,
    content: [{ type: "text", text: `You said: ${text}` }],
    usage_metadata: usage,
    additional_kwargs: { seq: calls },
  });
}

// --- 1. chat: an agent with a tool loop, several turns, a summary channel.
const ChatState = Annotation.Root({
  ...MessagesAnnotation.spec,
  turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
  topic: Annotation(),
});
const chat = new StateGraph(ChatState)
  .addNode("agent", (s) => ({ messages: [fakeModel(s.messages)], turns: 1 }))
  .addNode("tools", (s) => {
    const ai = s.messages[s.messages.length - 1];
    return {
      messages: ai.tool_calls.map(
        (tc) => new ToolMessage({ id: `tool-${tc.id}`, tool_call_id: tc.id, name: tc.name, content: "21 degrees" }),
      ),
      topic: "weather",
    };
  })
  .addEdge(START, "agent")
  .addConditionalEdges("agent", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END))
  .addEdge("tools", "agent")
  .compile({ checkpointer: saver });

const chatCfg = { configurable: { thread_id: "chat" } };
await chat.invoke({ messages: [new SystemMessage({ id: "sys", content: "You are terse." }), new HumanMessage({ id: "h1", content: "hello" })] }, chatCfg);
await chat.invoke({ messages: [new HumanMessage({ id: "h2", content: "what is the weather in Paris?" })] }, chatCfg);
// A message given as a plain object, without id: the reducer assigns one.
await chat.invoke({ messages: [{ role: "user", content: "thanks" }] }, chatCfg);
await chat.invoke({ messages: [new HumanMessage({ id: "h4", content: [{ type: "text", text: "and tomorrow?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }], additional_kwargs: { hide_from_ui: true } })] }, chatCfg);

// --- 2. fork: time travel and an edit of the past, plus a removal.
const fork = new StateGraph(MessagesAnnotation)
  .addNode("agent", (s) => {
    const last = s.messages[s.messages.length - 1];
    if (typeof last.content === "string" && last.content.startsWith("forget")) {
      // Remove the first exchange by id, then answer.
      return { messages: [new RemoveMessage({ id: s.messages[0].id }), new RemoveMessage({ id: s.messages[1].id }), new AIMessage({ id: `ai-f${++calls}`, content: "Forgotten." })] };
    }
    return { messages: [fakeModel(s.messages)] };
  })
  .addEdge(START, "agent")
  .addEdge("agent", END)
  .compile({ checkpointer: saver });
const forkCfg = { configurable: { thread_id: "fork" } };
await fork.invoke({ messages: [new HumanMessage({ id: "f1", content: "one" })] }, forkCfg);
await fork.invoke({ messages: [new HumanMessage({ id: "f2", content: "two" })] }, forkCfg);
await fork.invoke({ messages: [new HumanMessage({ id: "f3", content: "three" })] }, forkCfg);
// Time travel: back to the state after turn one.
const history = [];
for await (const s of fork.getStateHistory(forkCfg)) history.push(s);
const afterOne = history.find((s) => s.values.messages?.length === 2 && s.next.length === 0);
// Edit the past: a new message written onto the old checkpoint (a fork).
const edited = await fork.updateState(afterOne.config, { messages: [new HumanMessage({ id: "f2b", content: "two, edited" })] });
await fork.invoke(null, edited);
// Replay from the old checkpoint with new input (a second fork of it).
await fork.invoke({ messages: [new HumanMessage({ id: "f2c", content: "forget the start" })] }, afterOne.config);
// Replace everything (REMOVE_ALL_MESSAGES) through updateState on the head.
await fork.updateState(forkCfg, { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), new HumanMessage({ id: "f9", content: "fresh start" })] });
await fork.invoke(null, forkCfg);

// --- 3. sub: a subgraph node (its checkpoints live in a child namespace)
// and a human-in-the-loop interrupt resumed with a Command.
const inner = new StateGraph(MessagesAnnotation)
  .addNode("research", (s) => ({ messages: [new AIMessage({ id: `ai-r${++calls}`, content: `Notes on ${s.messages[s.messages.length - 1].content}` })] }))
  .addNode("approve", () => {
    const answer = interrupt({ question: "Publish the notes?" });
    return { messages: [new HumanMessage({ id: `h-approve-${++calls}`, content: `approved: ${answer}` })] };
  })
  .addEdge(START, "research")
  .addEdge("research", "approve")
  .addEdge("approve", END)
  .compile();
const outer = new StateGraph(MessagesAnnotation)
  .addNode("child", inner)
  .addNode("final", (s) => ({ messages: [new AIMessage({ id: `ai-final${++calls}`, content: `Done after ${s.messages.length} messages.` })] }))
  .addEdge(START, "child")
  .addEdge("child", "final")
  .addEdge("final", END)
  .compile({ checkpointer: saver });
const subCfg = { configurable: { thread_id: "sub" } };
await outer.invoke({ messages: [new HumanMessage({ id: "s1", content: "octopuses" })] }, subCfg);
await outer.invoke(new Command({ resume: "yes" }), subCfg);

saver.db.pragma("wal_checkpoint(TRUNCATE)");
saver.db.close();
console.log(`wrote ${out}`);
