// Which functions of the Go module V8 compiles with TurboFan (tier-up)
// during one Node start-up case, with their names and compile times: runs
// the case under --trace-wasm-compilation-times and names each job from
// the module's "name" section (so give a package whose dist/agentstate.wasm
// is a build without -ldflags=-s). Jobs of other modules (sqlite3.wasm) are
// counted apart: a function index is taken as the Go module's when its body
// size matches.
//
//   node wasm/startup/tierup.mjs PACKAGE_DIR [CASE] [TOP] [CASE_ARGS...]
//
// CASE is a file of wasm/startup/cases (default engine.mjs); CASE_ARGS
// follow PACKAGE_DIR on the case's command line.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readModule } from "./wasm-module.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(process.argv[2] ?? path.join(here, "../npm"));
const caseFile = path.join(here, "cases", process.argv[3] ?? "engine.mjs");
const top = Number(process.argv[4] ?? 30);

const buf = fs.readFileSync(path.join(pkg, "dist/agentstate.wasm"));
const { bodies, names } = readModule(buf);
const sizes = new Map(bodies.map((f) => [f.index, f.size]));
if (names.size === 0) throw new Error(`${pkg}/dist/agentstate.wasm has no name section: build it without -ldflags=-s`);

const t0 = performance.now();
const out = execFileSync(process.execPath, ["--trace-wasm-compilation-times", caseFile, pkg, ...process.argv.slice(5)], { encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
const wall = performance.now() - t0;
const jobs = [];
const others = [];
let liftoff = 0, liftoffBytes = 0;
for (const line of out.split("\n")) {
  const m = /^Compiled function \S+#(\d+) using (\w+), took (\d+) ms.*bodysize (\d+)/.exec(line);
  if (!m) continue;
  const [, idx, tier, ms, body] = [m[0], Number(m[1]), m[2], Number(m[3]), Number(m[4])];
  const ours = sizes.get(idx) === body;
  if (tier === "Liftoff") { if (ours) { liftoff++; liftoffBytes += body; } continue; }
  if (!ours) { others.push({ name: `func[${idx}]`, body, ms }); continue; }
  jobs.push({ name: names.get(idx) ?? `func[${idx}]`, body, ms });
}
const result = out.split("\n").filter((l) => l.startsWith("{")).pop();
jobs.sort((a, b) => b.ms - a.ms || b.body - a.body);
const sum = (xs, f) => xs.reduce((n, x) => n + f(x), 0);
console.log(`# ${path.basename(caseFile)}, ${pkg}: ${Math.round(wall)} ms wall; ${result ?? ""}`);
console.log(`Go module: Liftoff ${liftoff} functions (${liftoffBytes} body bytes); TurboFan ${jobs.length} functions (${sum(jobs, (j) => j.body)} body bytes, ${sum(jobs, (j) => j.ms)} ms of jobs); other modules (sqlite3.wasm): TurboFan ${others.length} functions (${sum(others, (j) => j.body)} body bytes, ${sum(others, (j) => j.ms)} ms of jobs)`);
console.log(`\n| TurboFan job (Go module) | body bytes | ms |\n|---|---:|---:|`);
for (const j of jobs.slice(0, top)) console.log(`| ${j.name} | ${j.body} | ${j.ms} |`);
others.sort((a, b) => b.ms - a.ms || b.body - a.body);
console.log(`\n| TurboFan job (other modules; unnamed) | body bytes | ms |\n|---|---:|---:|`);
for (const j of others.slice(0, Math.min(top, 10))) console.log(`| ${j.name} | ${j.body} | ${j.ms} |`);
