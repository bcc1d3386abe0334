// Generates langgraph-js.sqlite: a LangGraph.js SqliteSaver file written by
// real graphs, the fixture of `agentstate import-langgraph`, and
// langgraph-js.states.json: every checkpoint of that file as LangGraph.js
// itself reads it back.
//
//   cd testdata/langgraph && npm ci && node generate.mjs
//
// The model is a deterministic fake (no network), so the conversations are
// fixed; checkpoint ids and timestamps are not, so the two files are only
// valid together. CI never runs this script: the committed files are the
// fixture.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import {
  StateGraph,
  StateSchema,
  MessagesAnnotation,
  MessagesValue,
  Annotation,
  DeltaValue,
  MemorySaver,
  START,
  END,
  Command,
  interrupt,
  messagesDeltaReducer,
  REMOVE_ALL_MESSAGES,
} from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { z } from "zod/v4";
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

// --- 4. delta: the messages channel is a DeltaChannel with K=3, so its
// checkpoints hold a `delta_snapshot` of the list every third update and no
// value in between (the state is the last snapshot plus the writes since).
// A tool loop, a removal, a counter channel beside it, and time travel to
// the end of an earlier turn followed by a new branch. The same
// conversation also runs on a plain messages channel in memory; both must
// end with the same messages.
const K = 3;
function deltaGraph(checkpointer, delta) {
  const messages = delta
    ? new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: K })
    : MessagesValue;
  return new StateGraph(new StateSchema({ messages, turns: z.number().default(0) }))
    .addNode("agent", (s) => {
      const last = s.messages[s.messages.length - 1];
      if (last._getType() === "human" && last.content === "forget the weather") {
        const ids = s.messages.filter((m) => m._getType() === "tool" || m.tool_calls?.length).map((m) => m.id);
        return { messages: [...ids.map((id) => new RemoveMessage({ id })), new AIMessage({ id: `ai-d${++calls}`, content: "Forgotten." })], turns: s.turns + 1 };
      }
      return { messages: [fakeModel(s.messages)], turns: s.turns + 1 };
    })
    .addNode("tools", (s) => {
      const ai = s.messages[s.messages.length - 1];
      return { messages: ai.tool_calls.map((tc) => new ToolMessage({ id: `tool-${tc.id}`, tool_call_id: tc.id, name: tc.name, content: "18 degrees" })) };
    })
    .addEdge(START, "agent")
    .addConditionalEdges("agent", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END))
    .addEdge("tools", "agent")
    .compile({ checkpointer });
}
const delta = deltaGraph(saver, true);
const twin = deltaGraph(new MemorySaver(), false);
const deltaCfg = { configurable: { thread_id: "delta" } };
const deltaTurns = [
  () => new HumanMessage({ id: "d1", content: "hi" }),
  () => new HumanMessage({ id: "d2", content: "weather in Lisbon?" }),
  () => new HumanMessage({ id: "d3", content: "and in Porto, weather?" }),
  () => new HumanMessage({ id: "d4", content: "forget the weather" }),
  () => new HumanMessage({ id: "d5", content: "tell me a joke" }),
];
// One fake model serves both graphs: the twin replays each turn with the
// same call counter, so both get the same answers.
async function bothInvoke(input, cfgDelta, cfgTwin) {
  const before = calls;
  await delta.invoke(input(), cfgDelta);
  const after = calls;
  calls = before;
  await twin.invoke(input(), cfgTwin);
  if (calls !== after) throw new Error("the twin graph took another path");
}
for (const t of deltaTurns) await bothInvoke(() => ({ messages: [t()] }), deltaCfg, deltaCfg);
// Time travel: continue from the end of turn two on a new branch.
async function endOfTurn(g, n) {
  for await (const s of g.getStateHistory(deltaCfg)) {
    if (s.next.length === 0 && s.values.messages.filter((m) => m._getType() === "human").length === n) return s.config;
  }
  throw new Error(`no end of turn ${n}`);
}
const [branchDelta, branchTwin] = [await endOfTurn(delta, 2), await endOfTurn(twin, 2)];
await bothInvoke(() => ({ messages: [new HumanMessage({ id: "d6", content: "a different question" })] }), branchDelta, branchTwin);
await bothInvoke(() => ({ messages: [new HumanMessage({ id: "d7", content: "weather in Faro?" })] }), deltaCfg, deltaCfg);
const plainIds = async (g) => (await g.getState(deltaCfg)).values.messages.map((m) => `${m._getType()}:${m.id}:${JSON.stringify(m.content)}`);
const [dIds, tIds] = [await plainIds(delta), await plainIds(twin)];
if (JSON.stringify(dIds) !== JSON.stringify(tIds)) throw new Error(`delta thread ${dIds} differs from its twin ${tIds}`);

saver.db.pragma("wal_checkpoint(TRUNCATE)");
const snapshots = saver.db.prepare(`SELECT count(*) AS n FROM checkpoints WHERE thread_id = 'delta' AND CAST(checkpoint AS TEXT) LIKE '%"delta_snapshot"%'`).get().n;
if (snapshots < 3) throw new Error(`the delta thread holds ${snapshots} snapshots, want several`);

// --- The expected states: for every checkpoint of every thread and
// namespace, what LangGraph.js reads back. `values` is graph.getState at
// that checkpoint (DeltaChannel values rebuilt by LangGraph from the last
// snapshot and the writes since; pending writes not applied), `next` and
// `tasks` its plan; `channel_values`, `metadata`, `parent_checkpoint_id` and
// `pending_writes` are checkpointer.getTuple's. Values are in the JSON form
// of LangGraph's serde (messages as {"lc":1,"type":"constructor",...});
// byte values as {"$bytes": base64}.
const graphs = { chat, fork, sub: outer, delta };
const decoder = new TextDecoder();
async function asJSON(v) {
  const [type, bytes] = await saver.serde.dumpsTyped(v);
  return type === "bytes" ? { $bytes: Buffer.from(bytes).toString("base64") } : JSON.parse(decoder.decode(bytes));
}
const states = { generator: "testdata/langgraph/generate.mjs", langgraph: "1.7.3", checkpoint_sqlite: "1.0.4", threads: {} };
for (const [thread, g] of Object.entries(graphs)) {
  const tuples = [];
  for await (const t of saver.list({ configurable: { thread_id: thread } })) tuples.push(t);
  tuples.sort((a, b) => a.config.configurable.checkpoint_ns.localeCompare(b.config.configurable.checkpoint_ns) || a.config.configurable.checkpoint_id.localeCompare(b.config.configurable.checkpoint_id));
  const cps = [];
  for (const t of tuples) {
    const { checkpoint_ns, checkpoint_id } = t.config.configurable;
    const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns, checkpoint_id } });
    const st = await g.getState({ configurable: { thread_id: thread, checkpoint_ns, checkpoint_id } });
    if (st.config.configurable.checkpoint_id !== checkpoint_id) throw new Error(`${thread} ${checkpoint_ns} ${checkpoint_id}: getState read ${st.config.configurable.checkpoint_id}`);
    cps.push({
      checkpoint_ns,
      checkpoint_id,
      parent_checkpoint_id: tuple.parentConfig?.configurable.checkpoint_id ?? null,
      metadata: await asJSON(tuple.metadata),
      values: await asJSON(st.values),
      next: [...st.next],
      tasks: await Promise.all(st.tasks.map(async (x) => ({ name: x.name, interrupts: await asJSON(x.interrupts.map((i) => i.value)) }))),
      channel_values: await asJSON(tuple.checkpoint.channel_values),
      pending_writes: await Promise.all(tuple.pendingWrites.map(async ([task, channel, value]) => [task, channel, await asJSON(value)])),
    });
  }
  states.threads[thread] = cps;
}
const statesOut = new URL("./langgraph-js.states.json", import.meta.url).pathname;
// One checkpoint per line: diffs of a regenerated file stay readable.
const lines = Object.entries(states.threads).map(
  ([thread, cps]) => `  ${JSON.stringify(thread)}: [\n${cps.map((c) => `    ${JSON.stringify(c)}`).join(",\n")}\n  ]`,
);
const { threads: _, ...head } = states;
writeFileSync(statesOut, `${JSON.stringify(head).slice(0, -1)},\n "threads": {\n${lines.join(",\n")}\n}}\n`);
JSON.parse((await import("node:fs")).readFileSync(statesOut, "utf8")); // well-formed

saver.db.pragma("wal_checkpoint(TRUNCATE)");
saver.db.exec("VACUUM");
saver.db.close();
console.log(`wrote ${out} (${snapshots} delta snapshots in thread "delta") and ${statesOut}`);
