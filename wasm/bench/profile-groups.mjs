// Self time of V8 CPU profiles (langgraph.bench.mjs --cpu-prof DIR) grouped by
// component: each group's share of the sampled time, and in parentheses that
// share of a CPU ms/turn given after the file's name (the CPU median of a
// paired run; without it, the profile's own sampled ms/turn, which a loaded
// machine inflates). See docs/js-performance.md.
//
//   node profile-groups.mjs TURNS FILE[:CPU_MS_PER_TURN] ...
import fs from "node:fs";
const [turnsArg, ...files] = process.argv.slice(2);
const turns = Number(turnsArg);
function group(cf) {
  const u = cf.url || "", f = cf.functionName || "";
  if (f === "(garbage collector)") return "GC";
  if (f === "(program)" || f === "(idle)") return "V8 other ((program), idle)";
  if (u.startsWith("wasm://")) return /wasm\/0035/.test(u) ? "SQLite (sqlite3.wasm)" : "Go engine module (agentstate.wasm)";
  if (/wasm_exec/.test(u)) return "Go/JS glue (wasm_exec.js, syscall/js)";
  if (/npm\/src\/sqlite\/|node-host\.js/.test(u) || ["fsync", "writeBuffer", "read", "writeString", "fstat", "ftruncate"].includes(f) && u === "") return "file host and VFS (JS + node:fs)";
  if (/message-json\.js/.test(u)) return "saver JS (saver.js, message-json.js, engine.js)";
  if (/npm\/src\//.test(u)) return "saver JS (saver.js, message-json.js, engine.js)";
  if (/langgraph-checkpoint-sqlite|better-sqlite3/.test(u) || (u === "" && ["run", "Statement", "get", "all", "prepare", "exec", "iterate"].includes(f))) return "SqliteSaver + better-sqlite3 (JS + native SQLite)";
  if (/langgraph-checkpoint\//.test(u) || /@langchain\/core/.test(u)) return "serde + LangChain messages (JsonPlusSerializer, revive, toJSON)";
  if (u === "" && ["encodeUtf8String", "decodeUTF8"].includes(f)) return "serde + LangChain messages (JsonPlusSerializer, revive, toJSON)";
  if (/@langchain\/langgraph\/|langsmith|zod/.test(u)) return "LangGraph (graph loop, reducers, tracing hooks)";
  if (u.startsWith("node:") || u === "") return "Node internals (promise hooks, timers, builtins)";
  return "LangGraph (graph loop, reducers, tracing hooks)"; // the bench's own node body
}
const cols = files.map((spec) => {
  const [file, cpu] = spec.split(":");
  const p = JSON.parse(fs.readFileSync(file, "utf8"));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const g = new Map();
  let tot = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const k = group(byId.get(p.samples[i]).callFrame);
    const us = p.timeDeltas[i] ?? 0;
    g.set(k, (g.get(k) ?? 0) + us);
    tot += us;
  }
  return { name: file.split("/").pop().replace(".cpuprofile", ""), g, tot, cpu: cpu ? Number(cpu) : tot / 1000 / turns };
});
const keys = [...new Set(cols.flatMap((c) => [...c.g.keys()]))].sort((a, b) => (cols[0].g.get(b) ?? 0) - (cols[0].g.get(a) ?? 0));
console.log(`| component | ${cols.map((c) => c.name).join(" | ")} |`);
console.log(`|---|${cols.map(() => "---:").join("|")}|`);
for (const k of keys) console.log(`| ${k} | ${cols.map((c) => { const s = (c.g.get(k) ?? 0) / c.tot; return `${(100 * s).toFixed(1)}% (${(s * c.cpu).toFixed(2)})`; }).join(" | ")} |`);
console.log(`| whole turn (cpu ms) | ${cols.map((c) => c.cpu.toFixed(1)).join(" | ")} |`);
