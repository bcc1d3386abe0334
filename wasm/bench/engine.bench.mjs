// The README's engine numbers for WebAssembly, from one run of this script:
// sizes of the two wasm builds (raw, gzip -9), and the CLI's bench workload
// (400 turns, delta, K=10) natively and through the js build in Node.
//
//   node engine.bench.mjs [--turns N] [--runs R]
// Needs: wasm/npm built (npm run build), Go on PATH (builds the native CLI
// and the wasip1 module into a temporary directory).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Database } from "../npm/src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const turns = arg("--turns", 400);
const runs = arg("--runs", 3);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-bench-"));

const cli = path.join(tmp, "agentstate");
execFileSync("go", ["build", "-o", cli, "./cmd/agentstate"], { cwd: repo, stdio: "inherit" });
const wasi = path.join(tmp, "agentstate-wasi.wasm");
execFileSync("go", ["build", "-tags", "sqlite3_dotlk", "-trimpath", "-ldflags=-s -w", "-o", wasi, "./cmd/agentstate"], {
  cwd: repo,
  stdio: "inherit",
  env: { ...process.env, GOOS: "wasip1", GOARCH: "wasm" },
});
const jsWasm = path.resolve(here, "../npm/dist/agentstate.wasm");

const gz = (f) => execFileSync("gzip", ["-9", "-c", f], { maxBuffer: 1 << 30 }).length;
const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
console.log("\n| module | raw | gzip -9 |\n|---|---:|---:|");
for (const [name, f] of [["js (wasm/npm/dist/agentstate.wasm)", jsWasm], ["wasip1 (cmd/agentstate)", wasi]]) {
  console.log(`| ${name} | ${mb(fs.statSync(f).size)} | ${mb(gz(f))} |`);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// CPU time of this process's main thread (Linux), where the engine runs:
// under load, and while V8 optimises the module on its background threads
// in a fresh process, the wall time per turn is several times this.
const mainThreadMs = () => {
  try {
    const f = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * 10; // USER_HZ 100
  } catch {
    return NaN;
  }
};
const native = [];
const js = [];
for (let r = 0; r < runs; r++) {
  const nf = path.join(tmp, `native-${r}.db`);
  const out = execFileSync(cli, ["bench", "--turns", String(turns), "--mode", "delta", "--every", "10", "--db", nf, "--json"], { encoding: "utf8" });
  native.push(JSON.parse(out.trim().split("\n").at(-1)));
  const db = await Database.open({ path: path.join(tmp, `js-${r}.db`), mode: "delta", every: 10 });
  const cpu0 = mainThreadMs();
  const res = await db.call("bench", { turns });
  js.push({ ...res, cpu_ms_per_turn: (mainThreadMs() - cpu0) / turns });
  await db.close();
}
const row = (name, xs) => ({ name, ms: median(xs.map((x) => x.ms_per_turn)), head: median(xs.map((x) => x.head_read_ms_warm)) });
const n = row("native (go build)", native);
const j = row("js build in Node 20", js);
console.log(`\nbench workload: ${turns} turns, delta, K=10, files on disk; median of ${runs} runs`);
console.log("| build | ms/turn | head read warm ms |\n|---|---:|---:|");
for (const x of [n, j]) console.log(`| ${x.name} | ${x.ms.toFixed(3)} | ${x.head.toFixed(3)} |`);
console.log(`| ratio js/native | ${(j.ms / n.ms).toFixed(1)}x | ${(j.head / n.head).toFixed(1)}x |`);
// The js runs share one process: the first includes V8's optimisation of
// the module (Liftoff code meanwhile, TurboFan jobs competing for the
// cores); later ones run warm.
const f = (x) => x.toFixed(3);
console.log(`\njs build per run (one process): ms/turn ${js.map((x) => f(x.ms_per_turn)).join(", ")}; main-thread CPU ms/turn ${js.map((x) => f(x.cpu_ms_per_turn)).join(", ")}`);
fs.rmSync(tmp, { recursive: true, force: true });
