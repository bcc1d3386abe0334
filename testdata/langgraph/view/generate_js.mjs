// Writes view-js-<LangGraph.js version>.db and .json: threads that real
// LangGraph.js graphs wrote through agentstate's AgentStateSaver, and what
// LangGraph.js's own getState returns for each of their checkpoints (the
// same graphs as generate_py.py). Run by generate.sh, from a directory
// whose node_modules is the npm package's (wasm/npm), so that the saver and
// the graphs share one @langchain/langgraph:
//
//   node generate_js.mjs NPM_DIR OUTDIR
//
// Messages are written in the neutral form of docs/cli.md by this file's
// own code (neutral()), from the message objects getState returns.
import { existsSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  StateGraph,
  StateSchema,
  MessagesValue,
  ReducedValue,
  DeltaValue,
  START,
  END,
  Send,
  Overwrite,
  interrupt,
  messagesDeltaReducer,
  REMOVE_ALL_MESSAGES,
} from "@langchain/langgraph";
import { z } from "zod/v4";
import { AIMessage, HumanMessage, ToolMessage, RemoveMessage, BaseMessage } from "@langchain/core/messages";

const [npmDir, outDir] = process.argv.slice(2);
const { AgentStateSaver } = await import(join(npmDir, "src/index.js"));
const version = JSON.parse(readFileSync(join(npmDir, "node_modules/@langchain/langgraph/package.json"), "utf8")).version;

const empty = (v) =>
  v === null || v === undefined || v === "" || (Array.isArray(v) && v.length === 0) ||
  (typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);

function neutralMessage(m) {
  const j = JSON.parse(JSON.stringify(m)); // LangChain's constructor JSON
  const kw = j.kwargs ?? {};
  const out = { type: m._getType() === "remove" ? "remove" : m._getType(), id: m.id ?? null, content: kw.content ?? "" };
  for (const [k, v0] of Object.entries(kw)) {
    let v = v0;
    if (["type", "id", "content", "tool_call_chunks", "chunk_position"].includes(k)) continue;
    if (k === "status" && v === "success") continue;
    if (k === "tool_calls" || k === "invalid_tool_calls") {
      v = v.map((tc) => Object.fromEntries(Object.entries(tc).filter(([a, b]) => !(a === "type" && (b === "tool_call" || b === "invalid_tool_call")))));
    }
    if (empty(v)) continue;
    out[k] = neutral(v);
  }
  return out;
}

function neutral(v) {
  if (v instanceof BaseMessage) return neutralMessage(v);
  if (Array.isArray(v)) return v.map(neutral);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, neutral(x)]));
  return v ?? null;
}

const concat = (a, b) => (a ?? []).concat(b);
const notesReducer = (state, writes) => {
  let out = [...(state ?? [])];
  for (const w of writes) out = out.concat(Array.isArray(w) ? w : [w]);
  return out;
};

let calls = 0;
function model(s) {
  calls++;
  const last = s.messages[s.messages.length - 1];
  if (last._getType() === "human" && String(last.content).includes("weather")) {
    return {
      messages: [new AIMessage({ id: `ai-${calls}`, content: "", tool_calls: [{ id: `call-${calls}`, name: "weather", args: { city: "Paris" } }],
        usage_metadata: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } })],
      turns: 1,
    };
  }
  if (last._getType() === "tool") return { messages: [new AIMessage({ id: `ai-${calls}`, content: `It is ${last.content}.` })], turns: 1 };
  return {
    messages: [new AIMessage({ id: `ai-${calls}`, content: [{ type: "text", text: `You said: ${last.content}` }], response_metadata: { model_name: "fake" } })],
    turns: 1,
    topic: "talk",
  };
}

function chatGraph(saver) {
  const state = new StateSchema({
    messages: MessagesValue,
    turns: new ReducedValue(z.number().default(0), { reducer: (a, b) => a + b }),
    topic: z.string().optional(),
  });
  return new StateGraph(state)
    .addNode("agent", model)
    .addNode("tools", (s) => {
      const call = s.messages[s.messages.length - 1].tool_calls[0];
      return { messages: [new ToolMessage({ id: `tool-${call.id}`, content: "21 C", tool_call_id: call.id, artifact: { src: "fake" } })] };
    })
    .addEdge(START, "agent")
    .addConditionalEdges("agent", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END), ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer: saver });
}

function fanGraph(saver, fail, stop) {
  const state = new StateSchema({
    messages: MessagesValue,
    results: new ReducedValue(z.array(z.number()).default(() => []), { inputSchema: z.array(z.number()), reducer: concat }),
  });
  return new StateGraph(state)
    .addNode("plan", () => ({}))
    .addNode("worker", (arg) => {
      if (fail.has(arg.n)) throw new Error(`worker ${arg.n} failed`);
      if (stop.has(arg.n)) interrupt({ worker: arg.n });
      return { messages: [new AIMessage({ id: `w-${arg.n}`, content: `worker ${arg.n} done` })], results: [arg.n] };
    })
    .addEdge(START, "plan")
    .addConditionalEdges("plan", () => [0, 1, 2, 3].map((n) => new Send("worker", { n })), ["worker"])
    .addEdge("worker", END)
    .compile({ checkpointer: saver });
}

function deltaGraph(saver, fail) {
  const state = new StateSchema({
    messages: new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: 3 }),
    notes: new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: notesReducer, snapshotFrequency: 2 }),
  });
  return new StateGraph(state)
    .addNode("agent", (s) => {
      const last = s.messages[s.messages.length - 1];
      const n = s.messages.length;
      return { messages: [new AIMessage({ id: `d-${n}`, content: `echo ${last.content}` })], notes: [{ n }] };
    })
    .addNode("side", () => {
      if (fail) throw new Error("side failed");
      return { notes: [{ side: true }] };
    })
    .addEdge(START, "agent")
    .addEdge(START, "side")
    .addEdge("agent", END)
    .addEdge("side", END)
    .compile({ checkpointer: saver });
}

const cfg = (t) => ({ configurable: { thread_id: t } });
async function run(g, t, input) {
  try {
    await g.invoke(input, cfg(t));
  } catch (e) {
    if (!/failed/.test(String(e?.message))) throw e;
  }
}

const path = join(outDir, `view-js-${version}.db`);
for (const f of [path, path + "-wal", path + "-shm"]) if (existsSync(f)) rmSync(f);
const saver = await AgentStateSaver.open({ path });
const threads = {};
const chat = chatGraph(saver);
await run(chat, "chat", { messages: [new HumanMessage({ id: "h1", content: "hello" })] });
await run(chat, "chat", { messages: [new HumanMessage({ id: "h2", content: "what is the weather?" })] });
await run(chat, "chat", { messages: [{ role: "user", content: "thanks", id: "h3" }] });
threads.chat = chat;
threads["fanout-failed"] = fanGraph(saver, new Set([1]), new Set());
await run(threads["fanout-failed"], "fanout-failed", { messages: [new HumanMessage({ id: "f1", content: "go" })] });
threads["fanout-interrupted"] = fanGraph(saver, new Set(), new Set([2]));
await run(threads["fanout-interrupted"], "fanout-interrupted", { messages: [new HumanMessage({ id: "f1", content: "go" })] });
const d = deltaGraph(saver, false);
for (let i = 0; i < 5; i++) await run(d, "delta", { messages: [new HumanMessage({ id: `u${i}`, content: `turn ${i}` })] });
await d.updateState(cfg("delta"), { messages: [new RemoveMessage({ id: "u1" })] }, "agent");
await run(d, "delta", { messages: [new HumanMessage({ id: "u5", content: "after remove" })] });
await run(d, "delta", { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), new HumanMessage({ id: "u6", content: "fresh" })] });
await run(d, "delta", { messages: [new HumanMessage({ id: "u7", content: "more" })], notes: new Overwrite([{ reset: true }]) });
threads.delta = d;
threads["delta-failed"] = deltaGraph(saver, true);
await run(threads["delta-failed"], "delta-failed", { messages: [new HumanMessage({ id: "u0", content: "first" })] });

const out = {
  generator: "testdata/langgraph/view/generate_js.mjs",
  language: "js",
  langgraph: version,
  reducers: { results: "concat", notes: "concat" },
  threads: {},
};
let n = 0;
for (const [t, g] of Object.entries(threads)) {
  const head = await g.getState(cfg(t));
  const states = [{ checkpoint_id: null, values: neutral(head.values) }];
  for await (const s of g.getStateHistory(cfg(t))) states.push({ checkpoint_id: s.config.configurable.checkpoint_id, values: neutral(s.values) });
  out.threads[t] = states;
  n += states.length;
}
await saver.close?.();
writeFileSync(join(outDir, `view-js-${version}.json`), JSON.stringify(out, null, 1) + "\n");
console.log(path, n, "states");
