// Shared plumbing of the host harnesses: bundling the package with
// esbuild (from wasm/npm's dev dependencies), free ports on 127.0.0.1,
// and starting a runtime binary from its npm package.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export const here = path.dirname(fileURLToPath(import.meta.url));
export const npmDir = path.resolve(here, "../../npm");
export const wasmFile = process.env.AGENTSTATE_WASM_FILE ?? path.join(npmDir, "dist/agentstate.wasm");
const requireNpm = createRequire(path.join(npmDir, "package.json"));
const requireHere = createRequire(path.join(here, "../package.json"));

/** The binary an npm package ships (workerd, deno): nothing is downloaded. */
export function binary(pkg) {
  const bin = path.join(here, "../node_modules/.bin", pkg);
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run npm ci in wasm/startup`);
  return bin;
}

export function tmpdir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `agentstate-${prefix}-`));
}

/** Bundles entry as one ESM file, the way the package's README says to. */
export async function bundle(entry, outfile, { conditions = [], external = [], platform = "browser", alias = {} } = {}) {
  const esbuild = requireNpm("esbuild");
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    platform,
    target: "es2022",
    conditions,
    alias: { "langgraph-checkpoint-agentstate": path.join(npmDir, "src/index.js"), ...alias },
    nodePaths: [path.join(npmDir, "node_modules")],
    external: ["node:*", "*.wasm", ...external],
    logLevel: "error",
  });
  return outfile;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a child process, collecting its output; stop() kills it by pid. */
export function start(cmd, args, opts = {}) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    child,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Polls url until it answers (any status), or the process dies. */
export async function waitHTTP(url, proc, ms = 60_000) {
  const t0 = Date.now();
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`exited ${proc.child.exitCode}: ${proc.output()}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(2000) });
      return;
    } catch {}
    if (Date.now() - t0 > ms) throw new Error(`no answer from ${url} in ${ms} ms: ${proc.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Bundles a worker entry with the package, writes a workerd config that
 * serves it on 127.0.0.1 with the engine imported as a wasm module (the
 * only way workerd takes WebAssembly), and starts workerd.
 */
// The modules of a Worker on the package: its bundle, the engine and SQLite
// with its callbacks (config.capnp's modules list).
const workerModules = `(name = "worker.js", esModule = embed "worker.js"),
    (name = "agentstate.wasm", wasm = embed "agentstate.wasm"),
    (name = "sqlite3.wasm", wasm = embed "sqlite3.wasm"),
    (name = "sqlite-callbacks.wasm", wasm = embed "sqlite-callbacks.wasm"),`;

export async function startWorkerd({ nodejsCompat, entry = path.join(here, "worker.js"), pkg = npmDir, wasm, extraWasm = {} }) {
  const dir = tmpdir("workerd");
  await bundle(entry, path.join(dir, "worker.js"), {
    conditions: ["workerd", "worker", "browser"],
    alias: { "langgraph-checkpoint-agentstate": path.join(pkg, "src/index.js"), "langgraph-entry": nodejsCompat ? "@langchain/langgraph" : "@langchain/langgraph/web" },
  });
  fs.copyFileSync(wasm ?? (pkg === npmDir ? wasmFile : path.join(pkg, "dist/agentstate.wasm")), path.join(dir, "agentstate.wasm"));
  // SQLite and its callback module, imported as modules like the engine
  // (an older package without them gets this build's, and ignores them).
  for (const f of ["sqlite3.wasm", "sqlite-callbacks.wasm"]) {
    const own = path.join(pkg, "dist", f);
    fs.copyFileSync(fs.existsSync(own) ? own : path.join(npmDir, "dist", f), path.join(dir, f));
  }
  const extraModules = Object.entries(extraWasm).map(([name, file]) => {
    fs.copyFileSync(file, path.join(dir, name));
    return `(name = "${name}", wasm = embed "${name}")`;
  });
  const flags = nodejsCompat ? `"nodejs_compat"` : "";
  fs.writeFileSync(
    path.join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [
    ${workerModules}
    ${extraModules.map((m) => `${m},`).join("\n    ")}
  ],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = [${flags}],
);
`,
  );
  const port = await freePort();
  const proc = start(binary("workerd"), ["serve", path.join(dir, "config.capnp"), "--socket-addr", `http=127.0.0.1:${port}`], { cwd: dir });
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  await waitHTTP(`${base}/ping`, proc);
  const listeningMs = performance.now() - t0;
  return {
    base,
    proc,
    listeningMs,
    async stop() {
      await proc.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// durableObjectDir prepares a directory to serve entry (a Worker exporting
// a Durable Object class Agent, bound as AGENT) from workerd with SQLite-
// backed storage on local disk: the bundle, the three WebAssembly modules
// and config.capnp listening on a free port of 127.0.0.1. uniqueKey names
// the object namespace (its storage).
export async function durableObjectDir({ prefix, entry, nodejsCompat, uniqueKey }) {
  const dir = tmpdir(prefix);
  fs.mkdirSync(path.join(dir, "store"));
  await bundle(entry, path.join(dir, "worker.js"), {
    conditions: ["workerd", "worker", "browser"],
    alias: { "langgraph-entry": nodejsCompat ? "@langchain/langgraph" : "@langchain/langgraph/web" },
    external: ["cloudflare:*"],
  });
  fs.copyFileSync(wasmFile, path.join(dir, "agentstate.wasm"));
  // SQLite and its callback module, imported as modules like the engine.
  for (const f of ["sqlite3.wasm", "sqlite-callbacks.wasm"]) fs.copyFileSync(path.join(npmDir, "dist", f), path.join(dir, f));
  const port = await freePort();
  const config = path.join(dir, "config.capnp");
  fs.writeFileSync(
    config,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker), (name = "disk", disk = (path = "${path.join(dir, "store")}", writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [
    ${workerModules}
  ],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = [${nodejsCompat ? '"nodejs_compat"' : ""}],
  durableObjectNamespaces = [ (className = "Agent", uniqueKey = "${uniqueKey}", enableSql = true) ],
  durableObjectStorage = (localDisk = "disk"),
  bindings = [ (name = "AGENT", durableObjectNamespace = "Agent") ],
);
`,
  );
  return { dir, port, config };
}

export { requireNpm, requireHere };

