// One cold start of the agentstate package in a fresh Node process:
// import, open in memory, put one checkpoint, read it back, close. Prints
// one JSON line at exit: times in ms since the process started.
//   node agentstate.mjs [PATH.wasm]   (default: the package's own dist/)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../npm/src/index.js");
const wasmPath = process.argv[2] ?? path.resolve(path.dirname(pkg), "../dist/agentstate.wasm");
const { AgentStateSaver } = await import(pkg);
const saver = await AgentStateSaver.open({ wasmBytes: fs.readFileSync(wasmPath) });
const config = { configurable: { thread_id: "t1", checkpoint_ns: "" } };
const checkpoint = {
  v: 4,
  id: "1ef0c2d4-0000-6000-8000-000000000001",
  ts: new Date().toISOString(),
  channel_values: { messages: ["hello"] },
  channel_versions: { messages: 1 },
  versions_seen: {},
};
await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { messages: 1 });
const tuple = await saver.getTuple(config);
if (tuple?.checkpoint.id !== checkpoint.id) throw new Error("getTuple did not return the checkpoint");
const first = performance.now();
await saver.close();
const closed = performance.now();
process.on("exit", () => {
  console.log(JSON.stringify({ first, closed, exit: performance.now(), maxRssMB: process.resourceUsage().maxRSS / 1024 }));
});
