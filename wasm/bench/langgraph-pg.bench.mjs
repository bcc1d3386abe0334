// The same LangGraph.js chat graph (chat-graph.mjs) on AgentStateSaver over
// a postgresql:// URL and on LangGraph.js's PostgresSaver
// (@langchain/langgraph-checkpoint-postgres 1.0.5 on node-postgres), on the
// same server, in one process, each in a fresh schema of its own; the JS
// twin of python/bench/langgraph_pg_bench.py:
//
//   AGENTSTATE_TEST_PG=postgres://... node langgraph-pg.bench.mjs [--turns 400] [--rounds 1]
//                                        [--channels default,delta] [--every 10] [--warmup 30]
//
// (.ci/with-postgres node langgraph-pg.bench.mjs starts a throwaway server.)
// Measured per run: the bytes of the schema's tables, indexes and TOAST
// (pg_total_relation_size after VACUUM FULL); this process's CPU per turn
// (process.cpuUsage: every thread, so AgentStateSaver's PostgreSQL worker
// too); the CPU of the server processes serving the saver's sessions (from
// /proc: the server must run on this machine, as .ci/with-postgres starts
// it) and the sum; wall time per turn; round trips per turn: both savers
// reach the server through a proxy process of this script that counts, per
// connection, each time the client sends after the server has answered (a
// batch the client sends in several writes is one). The proxy adds latency
// to the wall time of both. The final message lists must be equal.
// --rounds R alternates the savers and prints medians and the ratio of
// each pair.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import { z } from "zod/v4";
import { chatGraph, text } from "./chat-graph.mjs";

function flag(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`--${name} needs a value`);
  return typeof def === "number" ? Number(v) : v;
}
const turns = flag("turns", 400);
const rounds = flag("rounds", 1);
const every = flag("every", 10);
const warmTurns = flag("warmup", 30);
const channels = flag("channels", "default,delta").split(",");
const url = process.env.AGENTSTATE_TEST_PG;
if (!url) throw new Error("set AGENTSTATE_TEST_PG (.ci/with-postgres starts a server)");

const here = path.dirname(new URL(import.meta.url).pathname);
const { AgentStateSaver } = await import(pathToFileURL(path.join(here, "../npm/src/index.js")).href);
const lg = { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer, AIMessage, z };

async function admin(q, args) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(q, args)).rows;
  } finally {
    await c.end();
  }
}

// The counting proxy, a process of its own (while AgentStateSaver's call
// runs, this thread waits for it).
const PROXY = `
const net = require("node:net");
const [host, port] = [process.argv[1], Number(process.argv[2])];
let trips = 0;
const srv = net.createServer((c) => {
  const up = net.connect(port, host);
  let last = "s";
  c.on("data", (d) => { if (last === "s") trips++; last = "c"; up.write(d); });
  up.on("data", (d) => { last = "s"; c.write(d); });
  const end = () => { c.destroy(); up.destroy(); };
  c.on("error", end); up.on("error", end); c.on("close", end); up.on("close", end);
});
srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
require("node:readline").createInterface({ input: process.stdin }).on("line", () => console.log(trips));
`;
const u = new URL(url);
const proxy = spawn(process.execPath, ["-e", PROXY, u.hostname, u.port], { stdio: ["pipe", "pipe", "inherit"] });
const lines = readline.createInterface({ input: proxy.stdout })[Symbol.asyncIterator]();
u.host = `127.0.0.1:${(await lines.next()).value}`;
async function trips() {
  proxy.stdin.write("n\n");
  return Number((await lines.next()).value);
}

function serverCPU(pids) {
  const out = new Map();
  for (const pid of pids) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
      out.set(pid, (Number(f[11]) + Number(f[12])) * 10); // ms (100 ticks per second)
    } catch {}
  }
  return out;
}
const sessions = async (app) => (await admin("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [app])).map((r) => r.pid);

async function open(kind, schema, app) {
  const v = new URL(u);
  v.searchParams.set("application_name", app);
  if (kind === "agentstate") {
    const s = await AgentStateSaver.open({ url: v.toString(), schema });
    return { saver: s, close: () => s.close() };
  }
  const s = PostgresSaver.fromConnString(v.toString(), { schema });
  await s.setup();
  return { saver: s, close: () => s.end() };
}

async function drive(g, thread, n) {
  const config = { configurable: { thread_id: thread } };
  for (let k = 0; k < n; k++) await g.invoke({ messages: [new HumanMessage({ id: `human-${k}`, content: text(1000 + k, 200) })] }, config);
}

let runs = 0;
async function oneRun(kind, channel) {
  const schema = `jb_${process.pid}_${runs++}`;
  const app = `bench_${schema}`;
  await admin(`CREATE SCHEMA ${schema}`);
  try {
    const { saver, close } = await open(kind, schema, app);
    const g = chatGraph(lg, saver, channel, every);
    await drive(g, "warm", warmTurns);
    const before = serverCPU(await sessions(app));
    const r0 = await trips();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await drive(g, "t", turns);
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const r1 = await trips();
    const after = serverCPU(await sessions(app));
    let server = 0;
    for (const [pid, ms] of after) server += ms - (before.get(pid) ?? 0);
    const msgs = (await g.getState({ configurable: { thread_id: "t" } })).values.messages.map((m) => [m.getType(), m.id, m.content]);
    await close();
    for (const { tablename } of await admin("SELECT tablename FROM pg_tables WHERE schemaname = $1", [schema])) await admin(`VACUUM FULL "${schema}"."${tablename}"`);
    const [{ n }] = await admin("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'r'", [schema]);
    const cpu = (c.user + c.system) / 1000 / turns;
    return { bytes: Number(n), cpu, server: server / turns, total: cpu + server / turns, wall: wall / turns, trips: (r1 - r0 - 1) / turns, final: JSON.stringify(msgs) };
  } finally {
    await admin(`DROP SCHEMA ${schema} CASCADE`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const version = (p) => JSON.parse(fs.readFileSync(path.join(here, "node_modules", p, "package.json"), "utf8")).version;
console.log(`LangGraph.js ${version("@langchain/langgraph")} chat graph, ${turns} turns, ${rounds} round(s), AgentStateSaver (postgresql:// URL) vs PostgresSaver ${version("@langchain/langgraph-checkpoint-postgres")}, pg ${version("pg")}`);
for (const channel of channels) {
  const res = { agentstate: [], postgres: [] };
  for (let r = 0; r < rounds; r++) {
    for (const kind of Object.keys(res)) res[kind].push(await oneRun(kind, channel));
    if (res.agentstate.at(-1).final !== res.postgres.at(-1).final) throw new Error(`${channel}: the savers' final states differ`);
  }
  console.log(`\n${channel === "default" ? "default (MessagesValue)" : `DeltaChannel, K=${every}`}:`);
  for (const [key, what] of [
    ["bytes", "bytes in the schema"],
    ["cpu", "client CPU ms/turn"],
    ["server", "server CPU ms/turn"],
    ["total", "total CPU ms/turn"],
    ["wall", "wall ms/turn"],
    ["trips", "round trips/turn"],
  ]) {
    const a = res.agentstate.map((x) => x[key]);
    const b = res.postgres.map((x) => x[key]);
    const ratios = a.map((x, i) => (b[i] ? x / b[i] : Infinity));
    const f = (x) => x.toLocaleString("en-US", { maximumFractionDigits: 3 });
    console.log(`  ${what.padEnd(20)} agentstate ${f(median(a)).padStart(12)}  PostgresSaver ${f(median(b)).padStart(12)}  ratio ${median(ratios).toFixed(3)}x (${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)})`);
  }
}
proxy.kill();
