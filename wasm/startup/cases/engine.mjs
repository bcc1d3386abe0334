// The same cold start without LangGraph.js: the package's engine module
// alone (Database), the same put and getTuple through its calls. What
// agentstate.mjs costs beyond this is importing @langchain/langgraph-
// checkpoint, which a LangGraph.js program loads anyway.
//   node engine.mjs [PACKAGE_DIR]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { engineFirstResult, measure } from "./measure.mjs";

const pkg = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../npm"));
const m = measure();
const { Database } = await import(path.join(pkg, "src/engine.js"));
const db = await Database.open({});
await engineFirstResult(db);
m.first();
await db.close();
m.closed();
