// The same cold start without LangGraph.js: the package's engine module
// alone (Database), the same put and getTuple through its calls. What
// agentstate.mjs costs beyond this is importing @langchain/langgraph-
// checkpoint, which a LangGraph.js program loads anyway.
//   node engine.mjs [PACKAGE_DIR]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { measure } from "./measure.mjs";

const pkg = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../npm"));
const m = measure();
const { Database } = await import(path.join(pkg, "src/engine.js"));
const db = await Database.open({});
const config = { thread_id: "t1", checkpoint_ns: "" };
const id = "1ef0c2d4-0000-6000-8000-000000000001";
await db.call("put", {
  config,
  checkpoint: { v: 4, id, ts: new Date().toISOString(), channel_values: {}, channel_versions: { messages: "1" }, versions_seen: {} },
  metadata: { source: "input", step: -1, parents: {} },
  newVersions: {},
});
const r = await db.call("getTuple", { config });
if (r.tuple?.checkpoint?.id !== id) throw new Error(`getTuple did not return the checkpoint: ${JSON.stringify(r).slice(0, 200)}`);
m.first();
await db.close();
m.closed();
