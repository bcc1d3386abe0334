// A page for headless Chromium whose dedicated worker starts the engine in
// memory, as an application would: the package bundled (esbuild), the
// three modules fetched by URL and compiled in parallel, then open + put +
// getTuple. The page's title becomes a JSON line: ms from the worker's
// start to the open handle (the demo's "engine start (load + open)") and to
// the first result.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

const worker = (pkg) => `
import { AgentStateSaver } from ${JSON.stringify(path.join(pkg, "src/index.js"))};
const t0 = performance.now();
const at = (f) => new URL("./" + f, self.location.href).href;
try {
  const saver = await AgentStateSaver.open({ wasmURL: at("agentstate.wasm"), sqliteWasmURL: at("sqlite3.wasm"), callbacksWasmURL: at("sqlite-callbacks.wasm") });
  const openMs = performance.now() - t0;
  const config = { configurable: { thread_id: "t1", checkpoint_ns: "" } };
  const checkpoint = { v: 4, id: "1ef0c2d4-0000-6000-8000-000000000001", ts: new Date().toISOString(), channel_values: { messages: ["hello"] }, channel_versions: { messages: 1 }, versions_seen: {} };
  await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { messages: 1 });
  const t = await saver.getTuple(config);
  if (t?.checkpoint.id !== checkpoint.id) throw new Error("getTuple did not return the checkpoint");
  postMessage({ openMs, firstMs: performance.now() - t0 });
} catch (e) {
  postMessage({ error: String(e?.stack ?? e) });
}
`;
const page = `<!doctype html><script type="module">
const w = new Worker("./worker.js", { type: "module" });
w.onmessage = (e) => (document.title = JSON.stringify(e.data));
w.onerror = (e) => (document.title = JSON.stringify({ error: e.message }));
</script>`;

/** Bundles the worker with the package at pkg and serves it on 127.0.0.1. */
export async function serveMemoryPage(pkg) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-chromium-page-"));
  const npm = path.resolve(here, "../../npm");
  const esbuild = createRequire(path.join(npm, "package.json"))("esbuild");
  const entry = path.join(dir, "entry.js");
  fs.writeFileSync(entry, worker(pkg));
  await esbuild.build({
    entryPoints: [entry],
    outfile: path.join(dir, "worker.js"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    nodePaths: [path.join(npm, "node_modules")],
    external: ["node:*"],
    logLevel: "error",
  });
  const files = { "/": [page, "text/html"], "/worker.js": [path.join(dir, "worker.js"), "text/javascript"] };
  for (const f of ["agentstate.wasm", "sqlite3.wasm", "sqlite-callbacks.wasm", "wasm_exec.js"]) files[`/${f}`] = [path.join(pkg, "dist", f), f.endsWith(".js") ? "text/javascript" : "application/wasm"];
  const server = http.createServer((req, res) => {
    const f = files[req.url];
    if (!f) return res.writeHead(404).end();
    const body = req.url === "/" ? f[0] : fs.readFileSync(f[0]);
    res.writeHead(200, { "content-type": f[1], "cache-control": "no-store" }).end(body);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    async close() {
      await new Promise((r) => server.close(r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
