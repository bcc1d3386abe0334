#!/usr/bin/env node
// Runs the GOOS=wasip1 build of the agentstate CLI under Node's WASI.
//
//   node run.mjs [--dir DIR] agentstate-wasi.wasm [CLI arguments...]
//
// DIR (default: the current directory) is preopened as /data, which is also
// the working directory, so relative file names land in DIR.
//
// The WASI build locks files the only way WASI allows, with lock files
// (ncruces' sqlite3_dotlk build: "<db>.lock", and a "<db>-shm" directory
// while in WAL mode). A process that is killed leaves them behind and the
// next open would wait for a lock nobody holds. So this host owns DIR while
// the CLI runs (DIR/.agentstate-wasi.owner names its pid) and, when it
// takes DIR over from a process that died, removes the lock files that
// process left. The WAL itself is crash-safe: the next open recovers it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import { WASI } from "node:wasi";
import { acquireDir, refuseNativeWAL } from "./guard.mjs";

const argv = process.argv.slice(2);
let dir = process.cwd();
if (argv[0] === "--dir") {
  dir = argv[1];
  argv.splice(0, 2);
}
const [wasmPath, ...args] = argv;
if (!wasmPath) {
  console.error("usage: node run.mjs [--dir DIR] agentstate-wasi.wasm [arguments...]");
  process.exit(2);
}
dir = path.resolve(dir);

let release;
try {
  release = acquireDir(dir);
  refuseNativeWAL(dir, args);
} catch (e) {
  release?.();
  console.error(`agentstate (wasi): ${e.message}`);
  process.exit(1);
}

// Node 20 crashes (V8 fatal error in WasmMemoryGrow) when a WASI module's
// memory grows past about 512 MB unless the page limit is set explicitly.
v8.setFlagsFromString("--wasm-max-mem-pages=65536");

const wasi = new WASI({
  version: "preview1",
  args: ["agentstate", ...args],
  // WASI has no process ids: the engine names this process (pid and host)
  // in the registration it leaves beside a database it opens, so that
  // others can tell whether it is still alive.
  env: { PWD: "/data", HOME: "/data", TMPDIR: "/data", AGENTSTATE_HOST_PID: String(process.pid), AGENTSTATE_HOSTNAME: os.hostname() },
  preopens: { "/data": dir },
  returnOnExit: true,
});
const module = await WebAssembly.compile(fs.readFileSync(wasmPath));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
const code = wasi.start(instance);
release();
process.exitCode = code;
