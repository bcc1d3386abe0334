// A design measured, not the package's: the engine module started in a
// worker thread before the main thread imports @langchain/langgraph-
// checkpoint (as AgentStateSaver's module does), so that the two starts
// overlap; then the first put and getTuple of engine.mjs, sent to the
// worker as messages. It answers whether moving the engine off the main
// thread would bring AgentStateSaver's first result near SqliteSaver's
// (docs/decisions/startup.md, section 10). The worker is this same file.
//   node engine-worker.mjs [PACKAGE_DIR]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { engineFirstResult, measure } from "./measure.mjs";

const here = fileURLToPath(import.meta.url);

if (isMainThread) {
  const pkg = path.resolve(process.argv[2] ?? path.join(path.dirname(here), "../../npm"));
  const m = measure();
  const worker = new Worker(here, { workerData: { pkg } });
  const replies = [];
  const waiting = [];
  worker.on("message", (msg) => (waiting.length ? waiting.shift()(msg) : replies.push(msg)));
  worker.on("error", (e) => {
    console.error(e);
    process.exit(1);
  });
  const next = () => (replies.length ? Promise.resolve(replies.shift()) : new Promise((r) => waiting.push(r)));
  await import(path.join(pkg, "node_modules/@langchain/langgraph-checkpoint/dist/index.js"));
  const ready = await next();
  if (ready.error) throw new Error(ready.error);
  // The Database's calls, each a message to the worker and its answer back.
  const db = {
    async call(op, args) {
      worker.postMessage({ op, args });
      const r = await next();
      if (r.error) throw new Error(r.error);
      return r.result;
    },
  };
  await engineFirstResult(db);
  m.first();
  await db.call("close");
  await worker.terminate();
  m.closed();
} else {
  let db;
  try {
    const { Database } = await import(path.join(workerData.pkg, "src/engine.js"));
    db = await Database.open({});
    parentPort.postMessage({ ready: true });
  } catch (e) {
    parentPort.postMessage({ error: String(e?.stack ?? e) });
  }
  parentPort.on("message", async ({ op, args }) => {
    try {
      parentPort.postMessage({ result: op === "close" ? await db.close() : await db.call(op, args) });
    } catch (e) {
      parentPort.postMessage({ error: String(e?.stack ?? e) });
    }
  });
}
