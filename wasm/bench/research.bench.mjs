// A research-agent-shaped LangGraph.js graph on AgentStateSaver and on
// LangGraph's SqliteSaver (@langchain/langgraph-checkpoint-sqlite 1.0.4 on
// better-sqlite3), both kinds of messages channel, paired in one script: the
// twin of python/bench/research_bench.py (issue 39, item 4).
//
//   node research.bench.mjs [--turns 30] [--rounds 1] [--channels default,delta]
//                           [--savers agentstate,sqlite] [--every 10] [--warmup 10]
//                           [--limit 50] [--package DIR] [--wasm FILE] [--json FILE]
//   node research.bench.mjs --turns 200 --rounds 3      # the issue's size
//
// The graph (our own; the shape of a research agent's turn, not its code): a
// turn is one invoke, a human message (200-600 bytes) in; the agent answers
// with a tool call; the tool's output (2-40 KB of text) comes back as a tool
// message; the agent answers (300-1,500 bytes). Every 10th turn (7, 17, 27,
// ...) the tool's output also carries a 200 KB base64 image (an image_url content block);
// every 5th turn the agent fans out instead to 3 subagents with Send, each
// returning a tool message of 4-12 KB. title, todos, thread_data and
// artifacts are written by every node at every step (a reducer keeping the
// last write); seed (47 KB) is set once, by the first step. messages is
// LangGraph's default channel (messagesStateReducer: the whole list a channel
// value at every step) or a DeltaChannel (messagesDeltaReducer, a snapshot
// every --every updates). Content is deterministic (seeded by the turn), and
// the savers' final states must be equal or the run fails.
//
// Each measurement runs in a fresh child process (this script with --child),
// so that peak RSS belongs to one saver and one phase: "turns" (--warmup
// turns on a thread of their own in another file, then --turns turns: CPU
// and wall per turn, RSS after the turns after a GC with the saver still
// open, the file's bytes after close, the serialised size of the final
// messages) and "history" (a new process opens the file and collects
// getStateHistory(config, {limit: --limit}) into an array: its CPU, the
// process's peak RSS, the RSS before and after, the array dropped and a GC).
// The warm-up matters more here than in Python: V8 compiles the engine's
// WebAssembly lazily and optimises what runs often. Node runs with --expose-gc. --package DIR: the npm package to measure (a
// checkout's wasm/npm with node_modules and dist/; default ../npm); --wasm
// FILE: the engine module to load instead of the package's dist/ (a build of
// ./wasm/js, GOOS=js GOARCH=wasm).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

function flag(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`--${name} needs a value`);
  return typeof def === "number" ? Number(v) : v;
}
const here = path.dirname(new URL(import.meta.url).pathname);
const opts = {
  turns: flag("turns", 30),
  rounds: flag("rounds", 1),
  every: flag("every", 10),
  warmup: flag("warmup", 10),
  limit: flag("limit", 50),
  channels: flag("channels", "default,delta").split(","),
  savers: flag("savers", "agentstate,sqlite").split(","),
  pkg: path.resolve(flag("package", path.join(here, "../npm"))),
  wasm: flag("wasm", ""),
  json: flag("json", ""),
};
for (const c of opts.channels) if (!["default", "delta"].includes(c)) throw new Error(`--channels: unknown kind ${c}`);
for (const s of opts.savers) if (!["agentstate", "sqlite"].includes(s)) throw new Error(`--savers: unknown saver ${s}`);

// --- deterministic content
const WORDS = ("the agent model tool call result answer question search file plan step memory context thread " +
  "checkpoint state message summary source paper dataset figure table method claim evidence").split(" ");
function rng(seed) {
  // mulberry32
  let a = (seed * 2654435761) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function text(seed, n) {
  const r = rng(seed);
  const out = [];
  let size = 0;
  while (size < n) {
    const w = WORDS[Math.floor(r() * WORDS.length)];
    out.push(w);
    size += w.length + 1;
  }
  return out.join(" ").slice(0, n);
}
const sizeOf = (seed, lo, hi) => lo + Math.floor(rng(seed * 7919 + 17)() * (hi - lo + 1));
function imageB64(seed) {
  const r = rng(seed);
  const b = Buffer.alloc(150_000);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(r() * 256);
  return b.toString("base64");
}

// --- the graph
async function loadLangGraph() {
  const lg = await import("@langchain/langgraph");
  const msgs = await import("@langchain/core/messages");
  const { z } = await import("zod/v4");
  return { ...lg, ...msgs, z };
}

function researchGraph(L, checkpointer, channel, every) {
  const { StateGraph, StateSchema, ReducedValue, DeltaValue, MessagesValue, messagesDeltaReducer, Send, START, END, z } = L;
  const { AIMessage, HumanMessage, ToolMessage } = L;
  const last = (a, b) => b;
  const messages =
    channel === "delta"
      ? new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: every })
      : MessagesValue;
  const schema = new StateSchema({
    messages,
    title: new ReducedValue(z.custom().default(() => ""), { reducer: last }),
    todos: new ReducedValue(z.custom().default(() => []), { reducer: last }),
    thread_data: new ReducedValue(z.custom().default(() => ({})), { reducer: last }),
    artifacts: new ReducedValue(z.custom().default(() => []), { reducer: last }),
    seed: z.custom().optional(),
  });
  const typeOf = (m) => (typeof m.getType === "function" ? m.getType() : m.type);
  const turnOf = (s) => s.messages.filter((m) => typeOf(m) === "human").length;
  const small = (k, step, n) => ({
    title: `Research ${k}: ` + text(k, 40),
    todos: Array.from({ length: Math.min(20, 3 + Math.floor(k / 3)) }, (_, i) => ({
      id: i,
      content: text(k * 100 + i, 80),
      status: i < Math.floor(k / 2) ? "done" : "pending",
    })),
    thread_data: { workspace_path: `/mnt/user-data/workspace/${k}`, uploads_path: "/mnt/user-data/uploads", outputs_path: "/mnt/user-data/outputs", step, messages: n },
    artifacts: Array.from({ length: Math.floor(k / 5) + 1 }, (_, i) => `/mnt/user-data/outputs/report-${i}.md`),
  });
  const agent = (s) => {
    const k = turnOf(s);
    const n = s.messages.length;
    const lastMsg = s.messages[n - 1];
    const out = small(k, "agent", n);
    if (!s.seed) out.seed = text(7, 47 * 1024);
    if (typeOf(lastMsg) === "human") {
      const calls =
        k % 5 === 0
          ? [0, 1, 2].map((j) => ({ name: "task", args: { description: text(k * 10 + j, 120), subagent: `sub-${j}` }, id: `call-${k}-${j}`, type: "tool_call" }))
          : [{ name: "web_search", args: { query: text(k, 60) }, id: `call-${k}`, type: "tool_call" }];
      out.messages = [new AIMessage({ id: `ai-${k}-a`, content: text(k * 3, 300), tool_calls: calls })];
    } else {
      out.messages = [new AIMessage({ id: `ai-${k}-b`, content: text(k * 3 + 1, sizeOf(k, 300, 1500)) })];
    }
    return out;
  };
  const route = (s) => {
    const calls = s.messages[s.messages.length - 1].tool_calls;
    if (!calls || calls.length === 0) return END;
    if (calls.length > 1) return calls.map((c) => new Send("subagent", { call: c, k: turnOf(s), n: s.messages.length }));
    return "tools";
  };
  const tools = (s) => {
    const k = turnOf(s);
    const call = s.messages[s.messages.length - 1].tool_calls[0];
    const body = text(k * 5 + 2, sizeOf(k + 1, 2 * 1024, 40 * 1024));
    const content =
      k % 10 === 7 ? [{ type: "text", text: body }, { type: "image_url", image_url: { url: "data:image/png;base64," + imageB64(k) } }] : body;
    const out = small(k, "tools", s.messages.length);
    out.messages = [new ToolMessage({ id: `tool-${k}`, content, tool_call_id: call.id, name: call.name })];
    return out;
  };
  const subagent = (arg) => {
    const { call, k, n } = arg;
    const j = Number(call.id.split("-").pop());
    const out = small(k, `subagent-${j}`, n);
    out.messages = [new ToolMessage({ id: `tool-${k}-${j}`, content: text(k * 50 + j, sizeOf(k * 3 + j, 4 * 1024, 12 * 1024)), tool_call_id: call.id, name: "task" })];
    return out;
  };
  return new StateGraph(schema)
    .addNode("agent", agent)
    .addNode("tools", tools)
    .addNode("subagent", subagent)
    .addEdge(START, "agent")
    .addConditionalEdges("agent", route, ["tools", "subagent", END])
    .addEdge("tools", "agent")
    .addEdge("subagent", "agent")
    .compile({ checkpointer });
}

// --- savers
async function openSaver(kind, file) {
  if (kind === "agentstate") {
    const pkg = await import(pathToFileURL(path.join(opts.pkg, "src/index.js")).href);
    const { JsonPlusSerializer } = await import("@langchain/langgraph-checkpoint");
    const wasmBytes = opts.wasm ? fs.readFileSync(opts.wasm) : undefined;
    const s = await pkg.AgentStateSaver.open({ path: file, wasmBytes, serde: new JsonPlusSerializer() });
    return { s, close: () => s.close() };
  }
  const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
  const s = SqliteSaver.fromConnString(file);
  return { s, close: async () => s.db.close() };
}

const fileBytes = (f) => ["", "-wal", "-shm", "-journal"].reduce((n, x) => n + (fs.existsSync(f + x) ? fs.statSync(f + x).size : 0), 0);
const cpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const mb = (b) => b / (1024 * 1024);

async function drive(L, g, thread, first, n) {
  const config = { configurable: { thread_id: thread } };
  for (let k = first; k < first + n; k++) {
    await g.invoke({ messages: [new L.HumanMessage({ id: `human-${k}`, content: text(100_000 + k, sizeOf(k + 99, 200, 600)) })] }, config);
  }
}

async function childTurns(kind, channel, file) {
  const L = await loadLangGraph();
  const warm = file + ".warm";
  let o = await openSaver(kind, warm);
  await drive(L, researchGraph(L, o.s, channel, opts.every), "warm-up", 1, opts.warmup);
  await o.close();
  for (const x of ["", "-wal", "-shm", "-journal"]) fs.rmSync(warm + x, { force: true });
  o = await openSaver(kind, file);
  const g = researchGraph(L, o.s, channel, opts.every);
  global.gc();
  const c0 = cpuMs();
  const w0 = performance.now();
  await drive(L, g, "research", 1, opts.turns);
  const cpu = cpuMs() - c0;
  const wall = performance.now() - w0;
  global.gc();
  const rssAfter = mb(process.memoryUsage().rss);
  const st = (await g.getState({ configurable: { thread_id: "research" } })).values;
  await o.close();
  const { JsonPlusSerializer } = await import("@langchain/langgraph-checkpoint");
  const [, payload] = await new JsonPlusSerializer().dumpsTyped(st.messages);
  const typeOf = (m) => (typeof m.getType === "function" ? m.getType() : m.type);
  const final = JSON.stringify({
    messages: st.messages.map((m) => [typeOf(m), m.id, m.content]),
    title: st.title, todos: st.todos, thread_data: st.thread_data, artifacts: st.artifacts, seed: st.seed,
  });
  const { createHash } = await import("node:crypto");
  return {
    cpu_ms_per_turn: cpu / opts.turns,
    wall_ms_per_turn: wall / opts.turns,
    rss_after_turns_mb: rssAfter,
    bytes: fileBytes(file),
    message_bytes: payload.length,
    messages: st.messages.length,
    final_hash: createHash("sha256").update(final).digest("hex").slice(0, 16),
  };
}

async function childHistory(kind, channel, file) {
  const L = await loadLangGraph();
  const o = await openSaver(kind, file);
  const g = researchGraph(L, o.s, channel, opts.every);
  global.gc();
  const before = mb(process.memoryUsage().rss);
  const c0 = cpuMs();
  let hist = [];
  for await (const s of g.getStateHistory({ configurable: { thread_id: "research" } }, { limit: opts.limit })) hist.push(s);
  const cpu = cpuMs() - c0;
  const n = hist.length;
  const peak = process.resourceUsage().maxRSS / 1024;
  hist = null;
  global.gc();
  const after = mb(process.memoryUsage().rss);
  await o.close();
  return { history_cpu_ms: cpu, history_states: n, history_peak_rss_mb: peak, rss_before_history_mb: before, rss_after_history_mb: after };
}

function runChild(phase, kind, channel, file) {
  const args = ["--expose-gc", new URL(import.meta.url).pathname, "--child", phase, kind, channel, file,
    "--turns", String(opts.turns), "--every", String(opts.every), "--warmup", String(opts.warmup), "--limit", String(opts.limit), "--package", opts.pkg, ...(opts.wasm ? ["--wasm", opts.wasm] : [])];
  const r = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${phase} ${kind} ${channel} failed:\n${(r.stderr || "").slice(-4000)}`);
  return JSON.parse(r.stdout.trim().split("\n").pop());
}

const ROWS = [
  ["bytes", "file bytes", "fewer"],
  ["cpu_ms_per_turn", "CPU ms/turn", "ratio"],
  ["wall_ms_per_turn", "wall ms/turn", "ratio"],
  ["history_cpu_ms", "history CPU ms", "ratio"],
  ["history_peak_rss_mb", "history peak RSS MB", "ratio"],
  ["rss_after_history_mb", "RSS after history MB", "ratio"],
  ["rss_after_turns_mb", "RSS after turns MB", "ratio"],
];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function compare() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-research-js-"));
  const results = new Map();
  try {
    for (const channel of opts.channels) {
      for (let r = 0; r < opts.rounds; r++) {
        for (const kind of opts.savers) {
          const file = path.join(tmp, `${kind}-${channel}-${r}.db`);
          const res = { ...runChild("turns", kind, channel, file) };
          Object.assign(res, runChild("history", kind, channel, file));
          for (const x of ["", "-wal", "-shm", "-journal"]) fs.rmSync(file + x, { force: true });
          const key = `${kind}/${channel}`;
          if (!results.has(key)) results.set(key, []);
          results.get(key).push(res);
          console.error(`  [${channel} round ${r + 1} ${kind}] ` + ROWS.map(([k]) => `${k} ${res[k].toFixed(1)}`).join(", "));
        }
        const hashes = new Set(opts.savers.map((k) => results.get(`${k}/${channel}`).at(-1).final_hash));
        if (hashes.size !== 1) throw new Error(`${channel}: the savers' final states differ`);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const lgv = JSON.parse(fs.readFileSync(path.join(here, "node_modules/@langchain/langgraph/package.json"), "utf8")).version;
  console.log(`LangGraph.js ${lgv} research graph, ${opts.turns} turns, ${opts.rounds} round(s), history limit ${opts.limit}, ` +
    `savers ${opts.savers.join(", ")}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  const out = [];
  for (const channel of opts.channels) {
    console.log(`\n${channel === "default" ? "default (messagesStateReducer)" : `DeltaChannel, K=${opts.every}`}:`);
    const row = { channel };
    const A = results.get(`${opts.savers[0]}/${channel}`);
    row.message_bytes = A[0].message_bytes;
    for (const [key, what, how] of ROWS) {
      row[key] = {};
      let line = `  ${what.padEnd(22)}`;
      for (const k of opts.savers) {
        row[key][k] = median(results.get(`${k}/${channel}`).map((x) => x[key]));
        line += ` ${k} ${row[key][k].toFixed(1).padStart(14)}`;
      }
      if (opts.savers.length === 2) {
        const B = results.get(`${opts.savers[1]}/${channel}`);
        const ratios = A.map((a, i) => (how === "fewer" ? B[i][key] / a[key] : a[key] / B[i][key]));
        Object.assign(row[key], { ratio: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) });
        line += `  ${median(ratios).toFixed(2)}x ${how === "fewer" ? "fewer " : ""}(${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`;
      }
      console.log(line);
    }
    for (const k of opts.savers) {
      console.log(`  ${k}: file ${(row.bytes[k] / row.message_bytes).toFixed(2)}x the ${row.message_bytes} bytes of serialised messages`);
    }
    out.push(row);
  }
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify(out, null, 1));
}

const ci = process.argv.indexOf("--child");
if (ci >= 0) {
  const [phase, kind, channel, file] = process.argv.slice(ci + 1, ci + 5);
  const res = phase === "turns" ? await childTurns(kind, channel, file) : await childHistory(kind, channel, file);
  console.log(JSON.stringify(res));
  process.exit(0);
} else {
  await compare();
}
