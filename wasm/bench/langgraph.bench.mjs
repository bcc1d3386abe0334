// The same LangGraph.js chat graph on AgentStateSaver and on LangGraph's
// SqliteSaver (@langchain/langgraph-checkpoint-sqlite 1.0.4 on
// better-sqlite3), for both kinds of messages channel, in one process:
//
//   node langgraph.bench.mjs [--turns 400] [--rounds 1] [--channels default,delta]
//                            [--savers agentstate,sqlite] [--every 10] [--warmup 100]
//                            [--baseline DIR] [--profile] [--json FILE] [--wasm FILE]
//                            [--cpu-prof DIR]
//
// A turn is one invoke: a 200-byte human message in, an 800-byte AI message
// out. The graph's messages channel is either LangGraph's default
// (MessagesValue, the messagesStateReducer: the whole list is a channel
// value at every step) or a DeltaChannel (messagesDeltaReducer, a full
// `delta_snapshot` every --every updates and the writes in between). Each
// saver runs the same graph, the same channel kind and the same messages; the
// final lists must serialise to the same bytes on every saver or the run
// fails.
//
// Measured per run: the bytes of the database files after close; ms per
// turn, wall time and this process's CPU time (the invokes only: the
// engine's start-up and a warm-up thread of --warmup turns per saver and
// channel kind, in its own file, come first and are not counted: V8 compiles
// the engine's WebAssembly lazily and optimises what runs often, which takes
// a few thousand engine calls); getState of the head after reopening the
// file (cold: the first call; warm: the median of the next five); and the
// raw payload, the bytes of the final message list as LangGraph's serde
// writes it. On a machine other processes load, CPU time moves much less
// than wall time. AgentStateSaver runs with its defaults.
//
// --rounds R runs every saver R times, alternating (A B A B ...), and prints
// medians with ranges and the ratio of each pair; the machine's drift then
// moves both sides of a pair alike. --baseline DIR adds another build of the
// npm package (a checkout's wasm/npm, built) as a third saver, for before /
// after comparisons. --profile wraps each saver's methods, its serde and (for
// AgentStateSaver) its engine calls with timers and prints where a turn's
// time goes. --wasm FILE loads the engine from FILE instead of the package's
// dist/ (a build with symbols, for profiles); --cpu-prof DIR writes a V8 CPU
// profile of each run's measured turns (not of start-up or warm-up) to DIR.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import inspector from "node:inspector/promises";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer } from "@langchain/langgraph";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { z } from "zod/v4";
import { chatGraph, text } from "./chat-graph.mjs";

function flag(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = process.argv[i + 1];
  if (typeof def === "boolean") return true;
  if (v === undefined || v.startsWith("--")) throw new Error(`--${name} needs a value`);
  return typeof def === "number" ? Number(v) : v;
}
const turns = flag("turns", 400);
const rounds = flag("rounds", 1);
const every = flag("every", 10);
const channels = flag("channels", "default,delta").split(",");
const saverKinds = flag("savers", "agentstate,sqlite").split(",");
const baselineDir = flag("baseline", "");
const profile = flag("profile", false);
const jsonOut = flag("json", "");
const wasmFile = flag("wasm", "");
const cpuProfDir = flag("cpu-prof", "");
const warmTurns = flag("warmup", 100);
for (const c of channels) if (!["default", "delta"].includes(c)) throw new Error(`--channels: unknown kind ${c}`);
if (!(turns > 0 && rounds > 0 && every > 0)) throw new Error("--turns, --rounds and --every must be positive");

const here = path.dirname(new URL(import.meta.url).pathname);
const current = await import(pathToFileURL(path.join(here, "../npm/src/index.js")).href);
const baseline = baselineDir ? await import(pathToFileURL(path.resolve(baselineDir, "src/index.js")).href) : undefined;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-lg-bench-"));

const lg = { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer, AIMessage, z };
const graph = (checkpointer, channel) => chatGraph(lg, checkpointer, channel, every);

// Wall and CPU time of fn. CPU time (this process's, all its threads) moves
// less than wall time when other processes compete for the cores.
async function timed(fn) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

async function drive(g, thread, n) {
  const config = { configurable: { thread_id: thread } };
  const t = await timed(async () => {
    for (let k = 0; k < n; k++) await g.invoke({ messages: [new HumanMessage({ id: `human-${k}`, content: text(1000 + k, 200) })] }, config);
  });
  return { wall: t.wall / n, cpu: t.cpu / n };
}

const size = (f) => ["", "-wal", "-shm", "-journal"].reduce((n, s) => n + (fs.existsSync(f + s) && fs.statSync(f + s).isFile() ? fs.statSync(f + s).size : 0), 0);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// --- savers: open a file, close it, say what it is.
function agentState(pkg, label, wasmBytes) {
  return {
    label,
    kind: "agentstate",
    async open(file) {
      // The serde of this script's own @langchain/langgraph-checkpoint, the
      // copy LangGraph here uses: as in an application, where there is one.
      return pkg.AgentStateSaver.open({ path: file, wasmBytes, serde: new JsonPlusSerializer() });
    },
    async close(s) {
      await s.close();
    },
  };
}
const sqlite = {
  label: "SqliteSaver",
  kind: "sqlite",
  async open(file) {
    return SqliteSaver.fromConnString(file);
  },
  async close(s) {
    s.db.close();
  },
};
const savers = [];
for (const k of saverKinds) {
  if (k === "agentstate") savers.push(agentState(current, "AgentStateSaver", wasmFile ? fs.readFileSync(wasmFile) : undefined));
  else if (k === "sqlite") savers.push(sqlite);
  else throw new Error(`--savers: unknown saver ${k}`);
}
if (baseline) savers.push(agentState(baseline, "AgentStateSaver (baseline)"));

// --- profiling: timers around the saver's methods, its serde and its
// engine calls. Times are inclusive (a put's time contains its serde and
// engine time) and asynchronous (an awaited call also counts time the event
// loop spent elsewhere), so they are shares of a turn, not exact costs.
class Timers {
  t = new Map();
  add(name, ms) {
    const e = this.t.get(name) ?? { n: 0, ms: 0 };
    e.n++;
    e.ms += ms;
    this.t.set(name, e);
  }
  wrap(obj, method, name) {
    const f = obj[method];
    const self = this;
    const wrapped = f.constructor.name === "AsyncGeneratorFunction"
      ? async function* (...a) {
          const t0 = performance.now();
          try {
            yield* f.apply(this, a);
          } finally {
            self.add(name, performance.now() - t0);
          }
        }
      : async function (...a) {
          const t0 = performance.now();
          try {
            return await f.apply(this, a);
          } finally {
            self.add(name, performance.now() - t0);
          }
        };
    obj[method] = wrapped;
  }
}

function instrument(s, kind, timers) {
  for (const m of ["getTuple", "put", "putWrites", "getDeltaChannelHistory", "list"]) timers.wrap(s, m, `saver.${m}`);
  timers.wrap(s.serde, "dumpsTyped", "serde.dumpsTyped");
  timers.wrap(s.serde, "loadsTyped", "serde.loadsTyped");
  if (kind === "agentstate") {
    const call = s.db.call.bind(s.db);
    s.db.call = async (op, payload, bufs) => {
      const t0 = performance.now();
      try {
        return await call(op, payload, bufs);
      } finally {
        timers.add(`engine.${op}`, performance.now() - t0);
      }
    };
  }
}

// --- one run: a fresh file, `turns` invokes, getState after a reopen.
const warmedUp = new Set();
async function run(saver, channel, round) {
  const tag = `${saver.label}-${channel}-${round}`.replace(/[^a-z0-9-]+/gi, "_");
  if (!warmedUp.has(`${saver.label}/${channel}`)) {
    const wf = path.join(tmp, `warm-${tag}.db`);
    const w = await saver.open(wf);
    await drive(graph(w, channel), "warm-up", warmTurns);
    await saver.close(w);
    warmedUp.add(`${saver.label}/${channel}`);
  }
  const file = path.join(tmp, `${tag}.db`);
  let s = await saver.open(file);
  const timers = profile ? new Timers() : undefined;
  if (timers) instrument(s, saver.kind, timers);
  const session = cpuProfDir ? new inspector.Session() : undefined;
  if (session) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  }
  const perTurn = await drive(graph(s, channel), "chat", turns);
  if (session) {
    const { profile: prof } = await session.post("Profiler.stop");
    fs.mkdirSync(cpuProfDir, { recursive: true });
    fs.writeFileSync(path.join(cpuProfDir, `${tag}.cpuprofile`), JSON.stringify(prof));
    session.disconnect();
  }
  await saver.close(s);
  const bytes = size(file);

  s = await saver.open(file);
  const g = graph(s, channel);
  const config = { configurable: { thread_id: "chat" } };
  let state;
  const cold = await timed(async () => {
    state = await g.getState(config);
  });
  const warm = [];
  for (let k = 0; k < 5; k++) warm.push(await timed(() => g.getState(config)));
  await saver.close(s);
  const messages = state.values.messages;
  if (messages.length !== 2 * turns) throw new Error(`${saver.label}, ${channel}: ${messages.length} messages, want ${2 * turns}`);
  const [, payload] = await new JsonPlusSerializer().dumpsTyped(messages);
  fs.rmSync(file, { force: true });
  for (const x of ["-wal", "-shm"]) fs.rmSync(file + x, { force: true });
  return {
    saver: saver.label,
    channel,
    round,
    msPerTurn: perTurn.wall,
    cpuPerTurn: perTurn.cpu,
    bytes,
    getStateCold: cold.wall,
    getStateWarm: median(warm.map((w) => w.wall)),
    getStateWarmCpu: median(warm.map((w) => w.cpu)),
    payload,
    timers,
  };
}

// --- the runs, alternating savers within each round.
const results = [];
for (let round = 0; round < rounds; round++) {
  for (const channel of channels) {
    const order = round % 2 === 0 ? savers : [...savers].reverse();
    for (const saver of order) {
      const r = await run(saver, channel, round);
      results.push(r);
      console.error(
        `round ${round + 1}/${rounds} ${channel} ${saver.label}: ${r.msPerTurn.toFixed(2)} ms/turn (cpu ${r.cpuPerTurn.toFixed(2)}), ${r.bytes.toLocaleString("en-US")} B, getState ${r.getStateCold.toFixed(1)} / ${r.getStateWarm.toFixed(1)} ms`,
      );
    }
  }
}

// Every saver must end with the same messages, byte for byte.
for (const channel of channels) {
  const rs = results.filter((r) => r.channel === channel);
  for (const r of rs) {
    if (Buffer.compare(Buffer.from(r.payload), Buffer.from(rs[0].payload)) !== 0) {
      throw new Error(`${channel}: ${r.saver} ends with other messages than ${rs[0].saver}`);
    }
  }
}

// --- report.
const fmtMs = (xs) => {
  const m = median(xs);
  const d = m < 10 ? 2 : 1;
  return xs.length > 1 ? `${m.toFixed(d)} (${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)})` : m.toFixed(d);
};
const fmtRatio = (xs) => {
  const m = median(xs);
  return xs.length > 1 ? `${m.toFixed(2)}x (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})` : `${m.toFixed(2)}x`;
};
const B = (n) => Math.round(n).toLocaleString("en-US");

console.log(
  `\nLangGraph.js 1.7.3 chat graph, ${turns} turns (a 200-byte human + an 800-byte AI message each), ` +
    `${rounds} round${rounds > 1 ? "s" : ""}, savers alternating; ms/turn excludes engine start-up and a ${warmTurns}-turn warm-up. ` +
    `Medians${rounds > 1 ? " (min-max)" : ""}.`,
);
console.log("\n| messages channel | saver | file bytes | file / payload | ms/turn | cpu ms/turn | getState cold ms | getState warm ms (cpu) |");
console.log("|---|---|---:|---:|---:|---:|---:|---:|");
const chLabel = { default: "default (messagesStateReducer)", delta: `DeltaChannel, K=${every}` };
for (const channel of channels) {
  for (const saver of savers) {
    const rs = results.filter((r) => r.channel === channel && r.saver === saver.label);
    const payload = rs[0].payload.length;
    console.log(
      `| ${chLabel[channel]} | ${saver.label} | ${B(median(rs.map((r) => r.bytes)))} | ${(median(rs.map((r) => r.bytes)) / payload).toFixed(1)}x | ` +
        `${fmtMs(rs.map((r) => r.msPerTurn))} | ${fmtMs(rs.map((r) => r.cpuPerTurn))} | ${fmtMs(rs.map((r) => r.getStateCold))} | ` +
        `${fmtMs(rs.map((r) => r.getStateWarm))} (${fmtMs(rs.map((r) => r.getStateWarmCpu))}) |`,
    );
  }
  console.log(`| ${chLabel[channel]} | raw payload (final message list, serde bytes) | ${B(results.find((r) => r.channel === channel).payload.length)} | 1.0x | | | | |`);
}

// Ratios of each pair (same round, same channel): against SqliteSaver, and
// against the baseline build when there is one.
const pairs = [];
const ref = savers.find((s) => s.kind === "sqlite");
for (const s of savers) {
  if (ref && s !== ref) pairs.push([s, ref]);
}
if (baseline && savers[0].kind === "agentstate") pairs.push([savers[0], savers.find((s) => s.label.endsWith("(baseline)"))]);
if (pairs.length > 0) {
  console.log("\n| messages channel | ratio | file bytes | ms/turn | cpu ms/turn | getState cold | getState warm | getState warm cpu |");
  console.log("|---|---|---:|---:|---:|---:|---:|---:|");
  for (const channel of channels) {
    for (const [a, b] of pairs) {
      const ra = [];
      for (let round = 0; round < rounds; round++) {
        const x = results.find((r) => r.channel === channel && r.saver === a.label && r.round === round);
        const y = results.find((r) => r.channel === channel && r.saver === b.label && r.round === round);
        ra.push({
          bytes: x.bytes / y.bytes,
          ms: x.msPerTurn / y.msPerTurn,
          cpu: x.cpuPerTurn / y.cpuPerTurn,
          cold: x.getStateCold / y.getStateCold,
          warm: x.getStateWarm / y.getStateWarm,
          warmCpu: x.getStateWarmCpu / y.getStateWarmCpu,
        });
      }
      console.log(
        `| ${chLabel[channel]} | ${a.label} / ${b.label} | ${fmtRatio(ra.map((r) => r.bytes))} | ${fmtRatio(ra.map((r) => r.ms))} | ` +
          `${fmtRatio(ra.map((r) => r.cpu))} | ${fmtRatio(ra.map((r) => r.cold))} | ${fmtRatio(ra.map((r) => r.warm))} | ${fmtRatio(ra.map((r) => r.warmCpu))} |`,
      );
    }
  }
  console.log("(below 1.0x: the first saver uses fewer bytes / less time)");
}

if (profile) {
  for (const channel of channels) {
    for (const saver of savers) {
      const rs = results.filter((r) => r.channel === channel && r.saver === saver.label);
      const names = new Set(rs.flatMap((r) => [...r.timers.t.keys()]));
      console.log(`\nprofile: ${chLabel[channel]}, ${saver.label}, per turn (inclusive, median over rounds)`);
      console.log("| timer | calls/turn | ms/turn | ms/call |\n|---|---:|---:|---:|");
      for (const n of [...names].sort()) {
        const ms = median(rs.map((r) => (r.timers.t.get(n)?.ms ?? 0) / turns));
        const calls = median(rs.map((r) => (r.timers.t.get(n)?.n ?? 0) / turns));
        console.log(`| ${n} | ${calls.toFixed(2)} | ${ms.toFixed(2)} | ${calls ? (ms / calls).toFixed(3) : "-"} |`);
      }
      console.log(`| whole turn | | ${fmtMs(rs.map((r) => r.msPerTurn))} | |`);
    }
  }
}

if (jsonOut) {
  fs.writeFileSync(
    jsonOut,
    JSON.stringify(
      results.map(({ payload, timers, ...r }) => ({ ...r, payloadBytes: payload.length, timers: timers ? Object.fromEntries(timers.t) : undefined })),
      null,
      1,
    ),
  );
}
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(0);
