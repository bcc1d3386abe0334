// The prototype in workerd: the Go module (host.wasm) and the official
// SQLite wasm build, both imported as modules (workerd compiles none at run
// time); the first request starts both and replays the engine's Open + Put +
// GetTuple statements. Timed from outside (workerd's clock stands still
// while a request computes).
import goModule from "./host.wasm";
import sqliteModule from "./sqlite3.wasm";
import thunkModule from "./thunk.wasm";
import { loadSqlite } from "./sqlite-min.mjs";
import "../../npm/dist/wasm_exec.js";
import { makeHost } from "./host.mjs";

let api;

async function start() {
  const sqlite3 = await loadSqlite(sqliteModule);
  const go = new globalThis.Go();
  const ready = new Promise((r) => (globalThis.__proto_ready = r));
  const instance = new WebAssembly.Instance(goModule, go.importObject);
  globalThis.__sqlhost = makeHost(sqlite3, instance.exports.mem, thunkModule);
  go.run(instance);
  return ready;
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("ok");
    try {
      api ??= start();
      const f = await api;
      const r = f(url.pathname === "/loop" ? "loop" : "first", 300);
      if (r.error) throw new Error(r.error);
      return Response.json({ ok: true, rows: r.rows, go_func_call_us: r.go_func_call_us });
    } catch (e) {
      return Response.json({ ok: false, error: String(e.stack ?? e) }, { status: 500 });
    }
  },
};
