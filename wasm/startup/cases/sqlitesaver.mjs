// The peer of agentstate.mjs: the same cold start through LangGraph.js's
// SqliteSaver on better-sqlite3 (a native addon): import the saver, open
// in memory, put the same checkpoint, read it back, close. The saver is
// resolved from wasm/bench's node_modules (`cd wasm/bench && npm ci`; it
// compiles better-sqlite3 where no prebuilt binary fits).
//   node sqlitesaver.mjs [BENCH_DIR]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { measure, saverFirstResult } from "./measure.mjs";

const bench = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../bench"));
const m = measure();
// The package's ESM entry, as `import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"`
// in an ES module resolves it (agentstate.mjs imports ESM too).
const { SqliteSaver } = await import(path.join(bench, "node_modules/@langchain/langgraph-checkpoint-sqlite/dist/index.js"));
const saver = SqliteSaver.fromConnString(":memory:");
await saverFirstResult(saver);
m.first();
saver.db.close();
m.closed();
