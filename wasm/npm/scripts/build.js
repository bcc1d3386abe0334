// Builds dist/agentstate.wasm (GOOS=js) with the Go toolchain and copies
// Go's wasm_exec.js beside it. With AGENTSTATE_WASM=path it copies that
// prebuilt module instead, so CI builds the wasm once and reuses it.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, "..");
const repo = path.resolve(pkg, "../..");
const dist = path.join(pkg, "dist");
fs.mkdirSync(dist, { recursive: true });

const goroot = execFileSync("go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
for (const dir of ["lib/wasm", "misc/wasm"]) {
  const src = path.join(goroot, dir, "wasm_exec.js");
  if (fs.existsSync(src)) {
    fs.copyFileSync(src, path.join(dist, "wasm_exec.js"));
    break;
  }
}
if (!fs.existsSync(path.join(dist, "wasm_exec.js"))) throw new Error(`wasm_exec.js not found under ${goroot}`);

const out = path.join(dist, "agentstate.wasm");
const prebuilt = process.env.AGENTSTATE_WASM;
const started = Date.now();
if (prebuilt) {
  fs.copyFileSync(prebuilt, out);
  console.log(`copied ${prebuilt} -> ${path.relative(pkg, out)}`);
} else {
  execFileSync("go", ["build", "-tags", "sqlite3_dotlk", "-trimpath", "-ldflags=-s -w", "-o", out, "./wasm/js"], {
    cwd: repo,
    stdio: "inherit",
    env: { ...process.env, GOOS: "js", GOARCH: "wasm" },
  });
  console.log(`built ${path.relative(pkg, out)} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
}
console.log(`${fs.statSync(out).size} bytes`);
