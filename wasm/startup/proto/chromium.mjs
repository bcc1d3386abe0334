// The prototype in headless Chromium (Debian's /usr/bin/chromium through
// playwright-core): a page fetches and instantiates the Go module and
// sqlite3.wasm in parallel, then replays the engine's Open + Put + GetTuple
// statements; the page reports ms from navigation start to the first
// result, the figure the demo shows as "engine start (load + open)".
//   node chromium.mjs HOST.wasm [runs]
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { thunkBytes } from "./thunks.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const goWasm = path.resolve(process.argv[2]);
const runs = Number(process.argv[3] ?? 3);
const { chromium } = createRequire(path.join(here, "../../npm/package.json"))("playwright-core");
const files = {
  "/host.wasm": [goWasm, "application/wasm"],
  "/sqlite3.wasm": [path.join(here, "../node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm"), "application/wasm"],
  "/wasm_exec.js": [path.join(here, "../../npm/dist/wasm_exec.js"), "text/javascript"],
  "/sqlite-min.mjs": [path.join(here, "sqlite-min.mjs"), "text/javascript"],
  "/host.mjs": [path.join(here, "host.mjs"), "text/javascript"],
};
const page = `<!doctype html><script src="/wasm_exec.js"></script><script type="module">
const t0 = performance.now();
import { loadSqlite } from "/sqlite-min.mjs";
import { makeHost } from "/host.mjs";
const thunk = new WebAssembly.Module(new Uint8Array(${JSON.stringify([...thunkBytes(3)])}));
const marks = {};
const sq = fetch("/sqlite3.wasm").then((r) => WebAssembly.compileStreaming(r)).then(loadSqlite).then((s) => ((marks.sqlite = performance.now() - t0), s));
const go = new Go();
const ready = new Promise((r) => (globalThis.__proto_ready = r));
const { instance } = await WebAssembly.instantiateStreaming(fetch("/host.wasm"), go.importObject);
marks.goInstantiated = performance.now() - t0;
globalThis.__sqlhost = makeHost(await sq, instance.exports.mem, thunk);
go.run(instance);
const api = await ready;
marks.goReady = performance.now() - t0;
const r = api("first");
marks.first = performance.now() - t0;
document.title = JSON.stringify({ ms: performance.now(), marks, error: r.error ?? null, rows: r.rows, inside: { open: r.open, put: r.put, get: r.get, goTotal: r.go_total } });
</script>`;
const server = http.createServer((req, res) => {
  const f = files[req.url];
  if (req.url === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
  if (!f) return res.writeHead(404).end();
  res.writeHead(200, { "content-type": f[1] }).end(fs.readFileSync(f[0]));
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${server.address().port}/`;
try {
  for (let i = 0; i < runs; i++) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-chromium-"));
    const ctx = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    });
    try {
      const p = ctx.pages()[0] ?? (await ctx.newPage());
      await p.goto(url);
      await p.waitForFunction(() => document.title.startsWith("{"), null, { timeout: 120_000 });
      const r = JSON.parse(await p.title());
      if (r.error) throw new Error(r.error);
      const m = Object.fromEntries(Object.entries(r.marks).map(([k, v]) => [k, Math.round(v)]));
      console.log(JSON.stringify({ sinceNavigationMs: Math.round(r.ms), engineStartMs: m.first, ...m, rows: r.rows, insideGo: r.inside }));
    } finally {
      await ctx.close();
      fs.rmSync(profile, { recursive: true, force: true });
    }
  }
} finally {
  server.close();
}
