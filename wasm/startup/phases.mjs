// Where the engine module's first result goes on the main thread, phase by
// phase: fresh Node processes each import the package's src/engine.js, open
// an in-memory Database, put one checkpoint and read it back with getTuple
// (the work of cases/engine.mjs), and read /proc/thread-self/schedstat at
// each step. For each phase, the medians (min-max) of its wall time, of
// the time the main thread ran, and of the time it was runnable but waited
// for a core (on a 2-core machine: mostly V8's background compile jobs;
// docs/decisions/startup.md §12 and §14). The rest of a phase's wall time
// the thread was blocked (file reads, the module's compile). Linux only.
//
//   node wasm/startup/phases.mjs [RUNS] [PACKAGE_DIR]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

if (process.env.PHASES_CHILD) {
  const pkg = process.argv[2];
  const { enginePut, engineGet } = await import("./cases/measure.mjs");
  const stat = () => fs.readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
  const marks = [];
  const mark = (phase) => {
    const [run, wait] = stat();
    marks.push({ phase, at: performance.now(), run: run / 1e6, wait: wait / 1e6 });
  };
  mark("process start to the case's first line"); // performance.now() counts from the process's start
  const { Database } = await import(path.join(pkg, "src/engine.js"));
  mark("import src/engine.js");
  const db = await Database.open({});
  mark("Database.open (compile, instantiate, Go's start, open)");
  await enginePut(db);
  mark("first put");
  await engineGet(db);
  mark("first getTuple");
  await db.close();
  // The first mark's figures are the process's own until then (its wall
  // time is the mark's time); each later one is the difference from the
  // mark before it.
  const rows = marks.map((m, i) => (i === 0 ? { phase: m.phase, wall: m.at, run: m.run, wait: m.wait } : { phase: m.phase, wall: m.at - marks[i - 1].at, run: m.run - marks[i - 1].run, wait: m.wait - marks[i - 1].wait }));
  console.log(JSON.stringify({ rows, first: marks.at(-1).at }));
  process.exit(0);
}

const runs = Number(process.argv[2] ?? 9);
if (!(runs >= 1)) throw new Error(`RUNS must be a positive number, got ${process.argv[2]}`);
const pkg = path.resolve(process.argv[3] ?? path.join(here, "../npm"));
if (!fs.existsSync("/proc/thread-self/schedstat")) throw new Error("phases.mjs reads /proc/thread-self/schedstat: Linux only");
if (!fs.existsSync(path.join(pkg, "dist/agentstate.wasm"))) throw new Error(`${pkg}/dist/agentstate.wasm is missing: cd wasm/npm && npm ci && npm run build`);

const results = [];
for (let i = 0; i < runs; i++) {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), pkg], { env: { ...process.env, PHASES_CHILD: "1" }, encoding: "utf8" });
  results.push(JSON.parse(out.trim().split("\n").pop()));
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cell = (xs) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;
console.log(`Node ${process.version}, ${runs} fresh processes, ${pkg}; ms, median (min-max)\n`);
console.log("| phase | wall | main thread ran | main thread waited for a core |\n|---|---:|---:|---:|");
for (let p = 0; p < results[0].rows.length; p++) {
  const col = (k) => results.map((r) => r.rows[p][k]);
  console.log(`| ${results[0].rows[p].phase} | ${cell(col("wall"))} | ${cell(col("run"))} | ${cell(col("wait"))} |`);
}
console.log(`\nfirst result, ms from the process's start: ${cell(results.map((r) => r.first))}`);
