// engine.mjs's start stopped after a stage, so that tierup.mjs can tell which
// stage makes V8 recompile which functions (docs/decisions/startup.md §14):
//
//   ready  the Go module compiled, instantiated and run until its bridge is
//          up (Go's runtime start and package initialisation; no database)
//   open   Database.open of an in-memory database
//   full   open, then the first put and getTuple (engine.mjs's work)
//
// Each stage then waits 300 ms, so that compile jobs it started finish (and
// are traced) before the process exits.
//   node engine-stage.mjs PACKAGE_DIR ready|open|full
//   node wasm/startup/tierup.mjs PACKAGE_DIR engine-stage.mjs 40 STAGE
import fs from "node:fs";
import path from "node:path";
import { engineFirstResult } from "./measure.mjs";

const pkg = path.resolve(process.argv[2]);
const stage = process.argv[3];
if (!["ready", "open", "full"].includes(stage)) throw new Error(`stage ${stage}: want ready, open or full`);
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

if (stage === "ready") {
  await import(path.join(pkg, "dist/wasm_exec.js"));
  const module = await WebAssembly.compile(fs.readFileSync(path.join(pkg, "dist/agentstate.wasm")));
  const go = new globalThis.Go();
  go.argv = ["agentstate", "--bridge=__engine_stage_ready"];
  const instance = await WebAssembly.instantiate(module, go.importObject);
  await new Promise((resolve) => {
    globalThis.__engine_stage_ready = resolve;
    go.run(instance);
  });
  await settle();
  process.exit(0);
}
const { Database } = await import(path.join(pkg, "src/engine.js"));
const db = await Database.open({});
if (stage === "full") await engineFirstResult(db);
await settle();
await db.close();
