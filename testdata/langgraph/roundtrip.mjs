// The way back for LangGraph.js, with its real SqliteSaver: langgraph-js.sqlite
// is imported (`agentstate import-langgraph`), written back
// (`agentstate export-langgraph`), and both files are read with
// @langchain/langgraph-checkpoint-sqlite: every checkpoint the same (getTuple:
// checkpoint, metadata, parent, pending writes), and graphs resumed on each
// give the same states.
//
//   cd testdata/langgraph && npm ci && node roundtrip.mjs
//
// The CLI comes from AGENTSTATE_CLI, else it is built with the Go toolchain.
// CI does not run this (better-sqlite3 compiles from source).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Annotation, END, MessagesAnnotation, DeltaValue, START, StateGraph, StateSchema, messagesDeltaReducer } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { z } from "zod/v4";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "langgraph-js-roundtrip-"));
let cli = process.env.AGENTSTATE_CLI;
if (!cli) {
  cli = path.join(work, "agentstate");
  execFileSync("go", ["build", "-o", cli, "./cmd/agentstate"], { cwd: repo, stdio: "inherit" });
}
const src = path.join(work, "source.sqlite");
fs.copyFileSync(path.join(here, "langgraph-js.sqlite"), src);
execFileSync(cli, ["import-langgraph", src, path.join(work, "a.db")], { stdio: "inherit" });
const out = path.join(work, "out.sqlite");
execFileSync(cli, ["export-langgraph", path.join(work, "a.db"), out], { stdio: "inherit" });

// The same version, where the import renamed a version a fork reused
// (3 -> 3.11): it compares with LangGraph's > as the original did.
const sameVersion = (a, b) => a === b || (typeof a === "number" && typeof b === "number" && Math.floor(a) === Math.floor(b) && b > a);
function sameVersions(a = {}, b = {}) {
  const ka = Object.keys(a).sort();
  return JSON.stringify(ka) === JSON.stringify(Object.keys(b).sort()) && ka.every((k) => sameVersion(a[k], b[k]));
}

// JSON with map keys sorted: the order of a map's keys is not part of it
// (agentstate keeps metadata as a map).
const canon = (v) => JSON.stringify(v, (_k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0))) : x));

let problems = 0;
const fail = (msg) => {
  problems++;
  if (problems <= 20) console.log("DIFF", msg);
};

async function tuples(saver) {
  const out = new Map();
  const list = [];
  for await (const t of saver.list({})) list.push(t);
  for (const t of list) {
    const c = t.config.configurable;
    out.set(`${c.thread_id}|${c.checkpoint_ns}|${c.checkpoint_id}`, await saver.getTuple(t.config));
  }
  return out;
}

const a = await tuples(SqliteSaver.fromConnString(src));
const b = await tuples(SqliteSaver.fromConnString(out));
if (a.size !== b.size) fail(`${a.size} checkpoints in the source, ${b.size} exported`);
for (const [k, x] of a) {
  const y = b.get(k);
  if (!y) {
    fail(`${k}: not exported`);
    continue;
  }
  const cx = x.checkpoint;
  const cy = y.checkpoint;
  const checks = {
    parent: x.parentConfig?.configurable.checkpoint_id === y.parentConfig?.configurable.checkpoint_id,
    ids: cx.id === cy.id && cx.ts === cy.ts && cx.v === cy.v,
    // Values of channels without a version ([] and 0) are not kept: a
    // saver on agentstate stores none, and LangGraph starts such a channel
    // empty.
    channel_values: JSON.stringify(Object.fromEntries(Object.entries(cx.channel_values).filter(([ch]) => ch in cx.channel_versions).sort())) ===
      JSON.stringify(Object.fromEntries(Object.entries(cy.channel_values).sort())),
    channel_versions: sameVersions(cx.channel_versions, cy.channel_versions),
    versions_seen:
      JSON.stringify(Object.keys(cx.versions_seen).sort()) === JSON.stringify(Object.keys(cy.versions_seen).sort()) &&
      Object.keys(cx.versions_seen).every((n) => sameVersions(cx.versions_seen[n], cy.versions_seen[n])),
    metadata: canon(x.metadata) === canon(y.metadata),
    pending_writes: JSON.stringify(x.pendingWrites) === JSON.stringify(y.pendingWrites),
  };
  for (const [what, ok] of Object.entries(checks)) if (!ok) fail(`${k}: ${what} differs`);
}
console.log(`compared ${a.size} checkpoints: ${problems} differences`);

// A deterministic model, and the fixture's graphs with it.
function model(messages) {
  const last = messages[messages.length - 1];
  const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
  if (last._getType() === "human" && /weather/i.test(text)) {
    return new AIMessage({ id: `r-ai-${messages.length}`, content: "", tool_calls: [{ id: `r-call-${messages.length}`, name: "weather", args: { city: "Oslo" } }] });
  }
  return new AIMessage({ id: `r-ai-${messages.length}`, content: `(${messages.length}) ${text}` });
}
function graphs(checkpointer) {
  const tools = (s) => {
    const ai = s.messages[s.messages.length - 1];
    return { messages: ai.tool_calls.map((tc) => new ToolMessage({ id: `r-tool-${tc.id}`, tool_call_id: tc.id, name: tc.name, content: "5 degrees" })) };
  };
  const route = (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END);
  const ChatState = Annotation.Root({ ...MessagesAnnotation.spec, turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }), topic: Annotation() });
  const deltaMessages = new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: 3 });
  return {
    chat: new StateGraph(ChatState).addNode("agent", (s) => ({ messages: [model(s.messages)], turns: 1 })).addNode("tools", (s) => ({ ...tools(s), topic: "weather" }))
      .addEdge(START, "agent").addConditionalEdges("agent", route).addEdge("tools", "agent").compile({ checkpointer }),
    fork: new StateGraph(MessagesAnnotation).addNode("agent", (s) => ({ messages: [model(s.messages)] })).addEdge(START, "agent").addEdge("agent", END).compile({ checkpointer }),
    delta: new StateGraph(new StateSchema({ messages: deltaMessages, turns: z.number().default(0) }))
      .addNode("agent", (s) => ({ messages: [model(s.messages)], turns: s.turns + 1 })).addNode("tools", tools)
      .addEdge(START, "agent").addConditionalEdges("agent", route).addEdge("tools", "agent").compile({ checkpointer }),
  };
}
for (const thread of ["chat", "fork", "delta"]) {
  const states = [];
  for (const file of [src, out]) {
    const copy = path.join(work, `${thread}-${path.basename(file)}`);
    fs.copyFileSync(file, copy);
    const g = graphs(SqliteSaver.fromConnString(copy))[thread];
    const cfg = { configurable: { thread_id: thread } };
    await g.invoke({ messages: [new HumanMessage({ id: "resumed", content: "weather once more?" })] }, cfg);
    const s = await g.getState(cfg);
    states.push(JSON.stringify({ values: s.values, next: s.next }));
  }
  if (states[0] !== states[1]) fail(`${thread}: resumed states differ:\n${states[0]}\n${states[1]}`);
  else console.log(`resumed ${thread}: the same state on both`);
}
fs.rmSync(work, { recursive: true, force: true });
if (problems) process.exit(1);
console.log("langgraph-js.sqlite -> agentstate -> SqliteSaver: the same checkpoints, and the same states resumed");
