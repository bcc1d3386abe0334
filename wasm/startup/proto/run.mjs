// Times the prototype: node run.mjs host.wasm|ncruces.wasm [loopN]
// From process start: the Go module and (for host.wasm) SQLite's wasm load
// in parallel; then the engine's Open + Put + GetTuple statements run.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
const here = path.dirname(fileURLToPath(import.meta.url));
const wasmPath = process.argv[2];
const loopN = Number(process.argv[3] ?? 0);
const T = { boot: +performance.now().toFixed(1) };
const mark = (k) => (T[k] = +performance.now().toFixed(1));
const useHost = !wasmPath.includes("ncruces");
const goroot = process.env.GOROOT_WASM_EXEC ?? path.join(here, "../../npm/dist/wasm_exec.js");
await import(goroot);

const sqliteWasm = path.join(here, "../node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm");
const sqlitePromise = useHost
  ? import("./sqlite-min.mjs").then((m) => m.loadSqlite(fs.readFileSync(sqliteWasm))).then((s) => (mark("sqlite_ready"), s))
  : null;
const go = new globalThis.Go();
const ready = new Promise((r) => (globalThis.__proto_ready = r));
const { instance } = await WebAssembly.instantiate(fs.readFileSync(wasmPath), go.importObject);
mark("go_instantiated");
if (useHost) {
  const { makeHost } = await import("./host.mjs");
  const { thunkBytes } = await import("./thunks.mjs");
  globalThis.__sqlhost = makeHost(await sqlitePromise, instance.exports.mem, new WebAssembly.Module(thunkBytes(3)));
}
go.run(instance);
const api = await ready;
mark("go_ready");
const r = api("first");
mark("first_result");
if (r.error) throw new Error(r.error);
T.inside_go = { open: r.open, put: r.put, get: r.get, rows: r.rows };
if (loopN) {
  // The first round also pays for compiling (and tiering up) what it runs;
  // the second is the warm cost.
  api("loop", loopN);
  const l = api("loop", loopN);
  if (l.error) throw new Error(l.error);
  T.loop = { n: loopN, select_us: +l.select_us.toFixed(2), select_blob1k_us: +l.select_blob1k_us.toFixed(2), read_tx_5stmts_us: +l.read_tx_5stmts_us.toFixed(2), go_func_call_us: +l.go_func_call_us.toFixed(2) };
}
T.rssMB = Math.round(process.memoryUsage().rss / 1e6);
console.log(JSON.stringify(T));
if (!process.env.NATURAL_EXIT) process.exit(0);
else { const done = performance.now(); process.on("exit", () => console.log(JSON.stringify({ exitAfterWorkMs: +(performance.now() - done).toFixed(1) }))); }
