// What a Go module's start costs before it does any work of its own, beside
// the engine module's: a minimal GOOS=js program (gofloor/main.go, built
// here into a temporary directory) and the package's dist/agentstate.wasm,
// each in fresh Node processes, runs alternating: the module's read and
// WebAssembly.compile, its instantiation, and go.run until the program
// signals it is ready (the engine module: its bridge handed to JavaScript,
// no database opened). Prints medians (min-max) and each module's bytes
// (docs/decisions/startup.md §12).
//
//   node wasm/startup/go-floor.mjs [RUNS]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(here, "../npm/dist");

if (process.env.GO_FLOOR_CHILD) {
  const [file, kind] = process.argv.slice(2);
  const t0 = performance.now();
  await import(path.join(dist, "wasm_exec.js"));
  const module = await WebAssembly.compile(fs.readFileSync(file));
  const t1 = performance.now();
  const go = new globalThis.Go();
  // The engine module hands its API to the global named by --bridge.
  if (kind === "engine") go.argv = ["agentstate", "--bridge=__go_floor_ready"];
  const instance = await WebAssembly.instantiate(module, go.importObject);
  const t2 = performance.now();
  await new Promise((resolve) => {
    globalThis.__go_floor_ready = resolve;
    go.run(instance);
  });
  const t3 = performance.now();
  console.log(JSON.stringify({ compile: t1 - t0, instantiate: t2 - t1, run: t3 - t2, total: t3 - t0 }));
  process.exit(0);
}

const runs = Number(process.argv[2] ?? 11);
if (!(runs >= 1)) throw new Error(`RUNS must be a positive number, got ${process.argv[2]}`);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "go-floor-"));
const floor = path.join(tmp, "gofloor.wasm");
try {
  execFileSync("go", ["build", "-trimpath", "-ldflags=-s -w", "-o", floor, "."], {
    cwd: path.join(here, "gofloor"),
    env: { ...process.env, GOOS: "js", GOARCH: "wasm" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const cases = [
    ["minimal Go program", floor, "floor"],
    ["engine module (dist/agentstate.wasm)", path.join(dist, "agentstate.wasm"), "engine"],
  ];
  const got = new Map(cases.map(([name]) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, file, kind] of cases) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), file, kind], { env: { ...process.env, GO_FLOOR_CHILD: "1" }, encoding: "utf8" });
      got.get(name).push(JSON.parse(out.trim().split("\n").pop()));
    }
  }
  const med = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[s.length >> 1];
  };
  const cell = (xs) => `${med(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;
  console.log(`Node ${process.version}, default flags, ${runs} fresh processes each, ms, median (min-max)\n`);
  console.log("| module | bytes | read + compile | instantiate | go.run until ready | total |\n|---|---:|---:|---:|---:|---:|");
  for (const [name, file] of cases) {
    const rs = got.get(name);
    const col = (k) => cell(rs.map((r) => r[k]));
    console.log(`| ${name} | ${fs.statSync(file).size.toLocaleString("en")} | ${col("compile")} | ${col("instantiate")} | ${col("run")} | ${col("total")} |`);
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
