// Runs durable/worker.js in workerd with SQLite-backed Durable Objects on
// local disk: writes N pages of 4 KB in one transaction, restarts workerd,
// reads them back.   node durable.mjs [N]
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { binary, freePort, start, tmpdir, waitHTTP } from "../edge/hosts.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const n = Number(process.argv[2] ?? 300);
const dir = tmpdir("durable");
fs.copyFileSync(path.join(here, "durable/worker.js"), path.join(dir, "worker.js"));
fs.mkdirSync(path.join(dir, "store"));
const port = await freePort();
fs.writeFileSync(
  path.join(dir, "config.capnp"),
  `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker), (name = "disk", disk = (path = "${path.join(dir, "store")}", writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2025-09-01",
  durableObjectNamespaces = [ (className = "Pages", uniqueKey = "agentstate-probe", enableSql = true) ],
  durableObjectStorage = (localDisk = "disk"),
  bindings = [ (name = "PAGES", durableObjectNamespace = "Pages") ],
);
`,
);
const base = `http://127.0.0.1:${port}`;
const run = async (fn) => {
  const proc = start(binary("workerd"), ["serve", path.join(dir, "config.capnp")], { cwd: dir });
  try {
    await waitHTTP(`${base}/ping`, proc);
    return await fn();
  } finally {
    await proc.stop(); // by its pid
  }
};
const t0 = performance.now();
const wrote = await run(async () => (await fetch(`${base}/write?n=${n}`)).json());
const writeMs = performance.now() - t0;
const read = await run(async () => (await fetch(`${base}/read`)).json());
assert.deepEqual(wrote, { wrote: n });
assert.equal(read.pages, n);
assert.equal(read.ok, true);
console.log(JSON.stringify({ pages: n, afterRestart: read, firstRunMs: Math.round(writeMs) }));
fs.rmSync(dir, { recursive: true, force: true });
