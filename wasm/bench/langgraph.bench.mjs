// LangGraph.js chat graph, 400 turns, on AgentStateSaver and on LangGraph's
// SqliteSaver (@langchain/langgraph-checkpoint-sqlite 1.0.4, better-sqlite3),
// in one run of this script: ms per turn and bytes on disk after close.
//
//   node langgraph.bench.mjs [--turns N]
//
// Messages are a DeltaChannel with K=10 (snapshot every 10th update) on
// both savers; SqliteSaver is also run with the default full messages
// channel, the way most graphs use it. A turn is one invoke: a 200-byte
// human message in, an 800-byte AI message out. Both savers first warm up
// (V8 compiles hot code lazily) on a throwaway thread.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { z } from "zod/v4";
import { AgentStateSaver } from "../npm/src/index.js";

const i = process.argv.indexOf("--turns");
const turns = i > 0 ? Number(process.argv[i + 1]) : 400;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-lg-bench-"));

const words = "the agent model tool call result answer question search file plan step memory context thread checkpoint state message summary".split(" ");
function text(seed, n) {
  let s = "";
  let x = seed * 2654435761;
  while (s.length < n) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += (s ? " " : "") + words[x % words.length];
  }
  return s.slice(0, n);
}

function graph(checkpointer, delta) {
  const messages = delta
    ? new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: 10 })
    : MessagesValue;
  return new StateGraph(new StateSchema({ messages }))
    .addNode("agent", (s) => ({ messages: [new AIMessage({ id: `ai-${s.messages.length}`, content: text(s.messages.length, 800) })] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer });
}

async function drive(g, thread, n) {
  const config = { configurable: { thread_id: thread } };
  const t0 = performance.now();
  for (let t = 0; t < n; t++) await g.invoke({ messages: [new HumanMessage({ id: `human-${t}`, content: text(1000 + t, 200) })] }, config);
  const ms = (performance.now() - t0) / n;
  const state = await g.getState(config);
  if (state.values.messages.length !== 2 * n) throw new Error(`${thread}: ${state.values.messages.length} messages, want ${2 * n}`);
  return ms;
}

const size = (f) => ["", "-wal", "-shm", "-journal"].reduce((n, s) => n + (fs.existsSync(f + s) && fs.statSync(f + s).isFile() ? fs.statSync(f + s).size : 0), 0);

async function runAgentState() {
  const warm = await AgentStateSaver.open({ mode: "delta", every: 10 });
  await drive(graph(warm, true), "warm-up", 40);
  await warm.close();
  const file = path.join(tmp, "agentstate.db");
  const saver = await AgentStateSaver.open({ path: file, mode: "delta", every: 10 });
  const ms = await drive(graph(saver, true), "chat", turns);
  await saver.close();
  return { name: "AgentStateSaver (delta K=10)", ms, bytes: size(file) };
}

async function runSqlite(delta) {
  const warmFile = path.join(tmp, `warm-${delta}.sqlite`);
  const warm = SqliteSaver.fromConnString(warmFile);
  await drive(graph(warm, delta), "warm-up", 40);
  warm.db.close();
  const file = path.join(tmp, `sqlite-${delta ? "delta" : "full"}.sqlite`);
  const saver = SqliteSaver.fromConnString(file);
  const ms = await drive(graph(saver, delta), "chat", turns);
  saver.db.close();
  return { name: `SqliteSaver (${delta ? "delta K=10" : "full messages channel"})`, ms, bytes: size(file) };
}

const results = [await runAgentState(), await runSqlite(true), await runSqlite(false)];
const base = results[0];
console.log(`\nLangGraph.js 1.7.3 chat graph, ${turns} turns (200-byte human + 800-byte AI message each), files on disk, one run`);
console.log("| saver | ms/turn | bytes on disk | bytes vs AgentStateSaver | ms/turn vs AgentStateSaver |\n|---|---:|---:|---:|---:|");
for (const r of results) {
  console.log(`| ${r.name} | ${r.ms.toFixed(2)} | ${r.bytes.toLocaleString("en-US")} | ${(r.bytes / base.bytes).toFixed(1)}x | ${(r.ms / base.ms).toFixed(2)}x |`);
}
fs.rmSync(tmp, { recursive: true, force: true });
