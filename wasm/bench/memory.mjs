// What the Node process keeps after a refused 100 MB store value (issue 38
// class 7): the JS host's request buffer (src/engine.js, send) and the Go
// module's memory. docs/memory.md, "The WebAssembly hosts".
//
//   node --expose-gc wasm/bench/memory.mjs [PACKAGE_ENTRY] [AGENTSTATE_WASM]
//
// PACKAGE_ENTRY defaults to this checkout's wasm/npm/src/index.js;
// AGENTSTATE_WASM to the package's dist/agentstate.wasm.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const entry = process.argv[2] ?? path.join(here, "..", "npm", "src", "index.js");
const { Database, loadEngine } = await import(pathToFileURL(path.resolve(entry)).href);
if (process.argv[3]) await loadEngine({ wasmBytes: fs.readFileSync(process.argv[3]) });
if (typeof global.gc !== "function") throw new Error("run with node --expose-gc");

const mb = (n) => `${Math.round(n / 1e6)} MB`;
const db = await Database.open();
const batch = (op) => db.call("store.batch", { ops: [{ namespace: ["ns"], ...op }] });
await batch({ op: "put", key: "small", value: { v: 1 } });
global.gc();
const before = process.memoryUsage();
let refused = "stored";
try {
  await batch({ op: "put", key: "big", value: { v: "x".repeat(100_000_000) } });
} catch (e) {
  refused = `refused (${e.code})`;
}
await batch({ op: "get", key: "small" });
global.gc();
const after = process.memoryUsage();
console.log(
  `100 MB store value ${refused}: RSS ${mb(before.rss)} -> ${mb(after.rss)}, ` +
    `array buffers ${mb(before.arrayBuffers)} -> ${mb(after.arrayBuffers)}`,
);
await db.close();
