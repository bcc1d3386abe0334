// One cold start of the agentstate package in a fresh Node process:
// import the LangGraph saver, open in memory, put one checkpoint, read it
// back, close. Prints one JSON line at exit (cases/measure.mjs).
//   node agentstate.mjs [PACKAGE_DIR]   (default: this repository's wasm/npm)
import path from "node:path";
import { fileURLToPath } from "node:url";
import { measure, saverFirstResult } from "./measure.mjs";

const pkg = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../npm"));
const m = measure();
const { AgentStateSaver } = await import(path.join(pkg, "src/index.js"));
const saver = await AgentStateSaver.open({});
await saverFirstResult(saver);
m.first();
await saver.close();
m.closed();
