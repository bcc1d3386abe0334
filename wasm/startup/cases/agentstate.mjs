// One cold start of the agentstate package in a fresh Node process:
// import the LangGraph saver, open in memory, put one checkpoint, read it
// back, close. Prints one JSON line at exit (cases/measure.mjs).
//   node agentstate.mjs [PACKAGE_DIR]   (default: this repository's wasm/npm)
import path from "node:path";
import { fileURLToPath } from "node:url";
import { measure } from "./measure.mjs";

const pkg = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../npm"));
const m = measure();
const { AgentStateSaver } = await import(path.join(pkg, "src/index.js"));
const saver = await AgentStateSaver.open({});
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
m.first();
await saver.close();
m.closed();
