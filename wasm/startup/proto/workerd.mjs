// The prototype in workerd: spawn to first answer, the first request
// (module instantiation, SQLite, the engine's Open+Put+GetTuple
// statements), the process's CPU seconds and RSS after it.
//   node workerd.mjs HOST.wasm [runs]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startWorkerd } from "../edge/hosts.mjs";
import { thunkBytes } from "./thunks.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const goWasm = path.resolve(process.argv[2]);
const runs = Number(process.argv[3] ?? 3);
const sqliteWasm = path.join(here, "../node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm");
// The callback module, made ahead of time: workerd compiles no wasm at run time.
const thunkFile = path.join(fs.mkdtempSync("/tmp/agentstate-thunk-"), "thunk.wasm");
fs.writeFileSync(thunkFile, thunkBytes(3));
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const w = await startWorkerd({
    nodejsCompat: false,
    entry: path.join(here, "worker.js"),
    extraWasm: { "host.wasm": goWasm, "sqlite3.wasm": sqliteWasm, "thunk.wasm": thunkFile },
  });
  try {
    const ta = performance.now();
    const r = await (await fetch(`${w.base}/first`)).json();
    const first = performance.now() - ta;
    if (!r.ok) throw new Error(r.error);
    // A Go scalar function called from SQLite through the callback module,
    // in workerd (timed inside Go; workerd's clock may stand still).
    const loop = await (await fetch(`${w.base}/loop`)).json();
    if (!loop.ok) throw new Error(loop.error);
    const st = fs.readFileSync(`/proc/${w.proc.child.pid}/stat`, "utf8").split(") ")[1].split(" ");
    const status = fs.readFileSync(`/proc/${w.proc.child.pid}/status`, "utf8");
    console.log(JSON.stringify({
      spawnToListeningMs: Math.round(w.listeningMs),
      firstRequestMs: Math.round(first),
      spawnToFirstMs: Math.round(ta - t0 + first),
      processCpuS: (Number(st[11]) + Number(st[12])) / 100,
      rssMB: Math.round(Number(status.match(/VmRSS:\s+(\d+)/)[1]) / 1024),
    }));
  } finally {
    await w.stop();
  }
}
