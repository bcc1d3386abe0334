// The isolate's memory and CPU per turn of a LangGraph.js graph on a
// Durable Object in workerd (from the `workerd` npm package):
// wasm/bench/langgraph.bench.mjs's graph (memory-worker.js), --turns turns
// on one thread of one SQLite-backed Durable Object, one turn per request.
//
//   node wasm/startup/edge/memory.mjs [--turns 400] [--channel default|delta] [--no-compat]
//                                     [--every 100] [--json FILE]
//
// Reported every --every turns:
// - the JS heap, from workerd's inspector (Runtime.getHeapUsage: used and
//   total of V8's heap, after HeapProfiler.collectGarbage);
// - every WebAssembly memory's byte length (the Go module's "mem" and
//   SQLite's), read in the isolate (memory-worker.js); the isolate's memory
//   is the heap's total plus these (Cloudflare's limit is 128 MB);
// - CPU per turn: workerd's process CPU time (all threads, from /proc)
//   over the turns since the last report, less the same process's CPU per
//   /ping request (the HTTP path without the object), measured alongside.
//   Inside a Worker the clocks stand still while JavaScript runs, so the
//   Worker cannot time itself.
// - workerd's RSS, for comparison with the isolate's figure.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { binary, durableObjectDir, freePort, here, start, waitHTTP } from "./hosts.mjs";

// Node 20 has WebSocket (for the inspector) behind a flag.
if (typeof WebSocket !== "function") {
  const r = spawnSync(process.execPath, ["--experimental-websocket", "--no-warnings", ...process.argv.slice(1)], { stdio: "inherit" });
  process.exit(r.status ?? 1);
}

function flag(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  if (typeof def === "boolean") return true;
  return typeof def === "number" ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
const turns = flag("turns", 400);
const channel = flag("channel", "default");
const nodejsCompat = !flag("no-compat", false);
const every = flag("every", 100);
const jsonOut = flag("json", "");

const { dir, port, config } = await durableObjectDir({
  prefix: "memory",
  entry: path.join(here, "memory-worker.js"),
  nodejsCompat,
  uniqueKey: "agentstate-memory",
});
const inspectorPort = await freePort();
const base = `http://127.0.0.1:${port}`;
const proc = start(binary("workerd"), ["serve", config, `--inspector-addr=127.0.0.1:${inspectorPort}`], { cwd: dir });

const tick = 100; // clock ticks per second of /proc/<pid>/stat (USER_HZ)
function procStat() {
  const f = fs.readFileSync(`/proc/${proc.child.pid}/stat`, "utf8").split(") ")[1].split(" ");
  const cpuMs = ((Number(f[11]) + Number(f[12])) * 1000) / tick;
  const rss = Number(fs.readFileSync(`/proc/${proc.child.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1]) * 1024;
  return { cpuMs, rss };
}
async function getJSON(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

// The inspector: one session on the worker's isolate.
async function inspector() {
  let targets;
  for (let i = 0; ; i++) {
    try {
      targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json();
      if (targets.length) break;
    } catch (e) {
      if (i > 100) throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let id = 0;
  const waiting = new Map();
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.id && waiting.has(m.id)) {
      const { resolve, reject } = waiting.get(m.id);
      waiting.delete(m.id);
      m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result);
    }
  };
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        waiting.set(++id, { resolve, reject });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

const MB = 1e6;
const rows = [];
try {
  await waitHTTP(`${base}/ping`, proc);
  const insp = await inspector();
  // The HTTP path alone: CPU per /ping request.
  const p0 = procStat();
  const pings = 400;
  for (let i = 0; i < pings; i++) await fetch(`${base}/ping`).then((r) => r.text());
  const pingMs = (procStat().cpuMs - p0.cpuMs) / pings;

  async function report(k, last) {
    const before = await insp.send("Runtime.getHeapUsage");
    await insp.send("HeapProfiler.collectGarbage");
    const heap = await insp.send("Runtime.getHeapUsage");
    const mem = await getJSON(`${base}/memory?channel=${channel}`);
    const st = procStat();
    const wasmBytes = Object.values(mem.wasmMemories).reduce((a, b) => a + b, 0);
    const row = {
      turns: k,
      heapUsedBeforeGC: before.usedSize,
      heapTotalBeforeGC: before.totalSize,
      heapUsed: heap.usedSize,
      heapTotal: heap.totalSize,
      backingStorage: heap.backingStorageSize,
      wasmMemories: mem.wasmMemories,
      isolate: heap.totalSize + wasmBytes,
      cpuPerTurnMs: last ? (st.cpuMs - last.cpuMs) / (k - last.turns) - pingMs : null,
      cpuMs: st.cpuMs,
      rss: st.rss,
      cache: mem.info?.cache,
    };
    rows.push(row);
    const w = Object.entries(mem.wasmMemories).map(([n, b]) => `${n} ${(b / MB).toFixed(1)}`).join(", ");
    console.log(
      `${String(k).padStart(4)} turns: isolate ${(row.isolate / MB).toFixed(1)} MB = JS heap ${(heap.totalSize / MB).toFixed(1)} (used ${(heap.usedSize / MB).toFixed(1)}; before GC ${(before.totalSize / MB).toFixed(1)}, used ${(before.usedSize / MB).toFixed(1)}) + wasm ${(wasmBytes / MB).toFixed(1)} (${w}); ` +
        `workerd RSS ${(st.rss / MB).toFixed(0)} MB` +
        (row.cpuPerTurnMs === null ? "" : `; CPU ${row.cpuPerTurnMs.toFixed(2)} ms/turn`),
    );
    return row;
  }

  await getJSON(`${base}/turn?channel=${channel}&k=0`);
  let last = await report(1);
  const t0 = procStat();
  for (let k = 1; k < turns; k++) {
    const r = await getJSON(`${base}/turn?channel=${channel}&k=${k}`);
    if (r.messages !== 2 * (k + 1)) throw new Error(`turn ${k}: ${r.messages} messages`);
    if ((k + 1) % every === 0 || k + 1 === turns) last = await report(k + 1, last);
  }
  const all = (last.cpuMs - t0.cpuMs) / (turns - 1) - pingMs;
  console.log(
    `workerd ${nodejsCompat ? "with" : "without"} nodejs_compat, ${channel} channel: CPU ${all.toFixed(2)} ms per turn over turns 2-${turns} ` +
      `(workerd process CPU less ${pingMs.toFixed(2)} ms per /ping request; the free plan gives 10 ms); isolate ${(last.isolate / MB).toFixed(1)} MB after ${turns} turns (goal 64)`,
  );
  insp.close();
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ channel, nodejsCompat, turns, pingMs, cpuPerTurnMs: all, rows }, null, 2));
} finally {
  await proc.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
