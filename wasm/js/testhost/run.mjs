// Runs a GOOS=js Go program (a test binary of the engine) under Node with
// the SQLite host the npm package provides: the pinned official
// sqlite3.wasm loaded by the package's loader, the host protocol object
// (src/sqlite/host.js) in the global the Go driver reads as it starts, and
// a file VFS as SQLite's default (nodevfs.mjs), so that tests opening paths
// get real files.
//
//   GOOS=js GOARCH=wasm go test -c -o engine.test.wasm ./engine
//   node wasm/js/testhost/run.mjs engine.test.wasm -test.run X -test.v
//
// Needs wasm/npm's node_modules (npm ci) for sqlite3.wasm, or
// AGENTSTATE_SQLITE_WASM=path. Exits with the Go program's exit code.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const npm = path.resolve(here, "../../npm");
const { loadSqlite } = await import(path.join(npm, "src/sqlite/loader.js"));
const { makeHost } = await import(path.join(npm, "src/sqlite/host.js"));
const { callbackModuleBytes } = await import(path.join(npm, "scripts/callbacks.js"));
const { registerTestVfs } = await import("./nodevfs.mjs");

if (process.argv.length < 3) {
  console.error("usage: node run.mjs PROGRAM.wasm [arguments]");
  process.exit(2);
}
const sqliteWasm =
  process.env.AGENTSTATE_SQLITE_WASM ??
  [path.join(npm, "dist/sqlite3.wasm"), path.join(npm, "node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm")].find((f) => fs.existsSync(f));
if (!sqliteWasm) {
  console.error("sqlite3.wasm not found: run npm ci in wasm/npm, or set AGENTSTATE_SQLITE_WASM");
  process.exit(2);
}

// What wasm_exec_node.js provides to a Go program under Node.
const require = createRequire(import.meta.url);
globalThis.require = require;
globalThis.fs = fs;
globalThis.path = path;
globalThis.crypto ??= crypto;
const goroot = execFileSync("go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
await import(path.join(goroot, "lib/wasm/wasm_exec.js"));

const [sq, result] = await Promise.all([
  loadSqlite({ wasm: fs.readFileSync(sqliteWasm), callbacks: callbackModuleBytes() }),
  (async () => {
    const go = new globalThis.Go();
    go.argv = process.argv.slice(2);
    go.env = Object.assign({ TMPDIR: os.tmpdir() }, process.env);
    go.exit = process.exit;
    const { instance } = await WebAssembly.instantiate(fs.readFileSync(process.argv[2]), go.importObject);
    return { go, instance };
  })(),
]);
registerTestVfs(sq);
const { go, instance } = result;
globalThis.__agentstate_sqlite_host = makeHost(sq, instance.exports.mem);
process.on("exit", (code) => {
  // Node exits when nothing is pending: a deadlock in Go. Make Go print
  // its goroutines, as wasm_exec_node.js does.
  if (code === 0 && !go.exited) {
    go._pendingEvent = { id: 0 };
    go._resume();
  }
});
const run = go.run(instance);
// The driver took the host while the program started (package init runs
// before go.run first returns).
delete globalThis.__agentstate_sqlite_host;
await run.catch((err) => {
  console.error(err);
  process.exit(1);
});
