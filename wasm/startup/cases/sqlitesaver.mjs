// The peer of agentstate.mjs: the same cold start through LangGraph.js's
// SqliteSaver on better-sqlite3 (a native addon): import the saver, open
// in memory, put the same checkpoint, read it back, close. The saver is
// resolved from wasm/bench's node_modules (`cd wasm/bench && npm ci`; it
// compiles better-sqlite3 where no prebuilt binary fits).
//   node sqlitesaver.mjs [BENCH_DIR]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { measure } from "./measure.mjs";

const bench = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../bench"));
const m = measure();
// The package's ESM entry, as `import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"`
// in an ES module resolves it (agentstate.mjs imports ESM too).
const { SqliteSaver } = await import(path.join(bench, "node_modules/@langchain/langgraph-checkpoint-sqlite/dist/index.js"));
const saver = SqliteSaver.fromConnString(":memory:");
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
saver.db.close();
m.closed();
