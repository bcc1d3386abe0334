// The agentstate engine (Go, compiled to WebAssembly with GOOS=js) and the
// database handle every other class of this package is built on.
//
// One wasm instance serves the whole JavaScript realm; each Database is a
// handle inside it. Calls return Promises: the Go side runs each in its own
// goroutine, so the event loop is only busy while Go computes.
//
// Nothing here imports node:* statically, and nothing reads the environment:
// the in-memory, image and host paths run unchanged in Node, Deno, browsers
// and Cloudflare workerd. Node's file host is imported on first use of a
// path, and only in Node.

import { AgentStateError } from "./errors.js";
import { Events, Runs, Threads } from "./records.js";
import { loadSqlite } from "./sqlite/loader.js";
import { makeHost } from "./sqlite/host.js";

/** Which kind of JavaScript host this is. workerd (with nodejs_compat) and
 * Deno define process.versions.node too, but have no Node file system to
 * offer the engine. */
export const runtime = (() => {
  if (typeof navigator !== "undefined" && navigator.userAgent === "Cloudflare-Workers") return "workerd";
  if (typeof Deno !== "undefined" && typeof Deno.version === "object") return "deno";
  if (typeof process !== "undefined" && !!process.versions?.node && typeof window === "undefined") return "node";
  return "browser";
})();
const isNode = runtime === "node";

export { AgentStateError };

// JSON.stringify writes a lone surrogate (half of a UTF-16 pair, alone) as
// a lowercase \udXXX escape, and nothing else as such an escape; the
// engine's JSON decoder would read it as U+FFFD, another string.
const LONE_SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// The first string (a key or a value) of v that is not valid UTF-16, as a
// path ("config.thread_id"), or undefined.
function illFormed(v, path) {
  if (typeof v === "string") return LONE_SURROGATE.test(v) ? path : undefined;
  if (v === null || typeof v !== "object") return undefined;
  if (typeof v.toJSON === "function") return illFormed(v.toJSON(), path);
  for (const [k, x] of Object.entries(v)) {
    const p = Array.isArray(v) ? `${path}[${k}]` : path === "" ? k : `${path}.${k}`;
    if (LONE_SURROGATE.test(k)) return `the key ${JSON.stringify(k)} of ${path || "the request"}`;
    const bad = illFormed(x, p);
    if (bad !== undefined) return bad;
  }
  return undefined;
}

/**
 * The JSON text of an engine call's request. A string in it (a thread id,
 * a namespace, a key, metadata) that is not valid UTF-16 (a lone surrogate)
 * is refused with INVALID_ARGUMENT: it is no text the engine can store, and
 * passed on it would read back as U+FFFD, under another id.
 */
export function requestJSON(op, payload) {
  const text = JSON.stringify(payload);
  if (text !== undefined && LONE_SURROGATE_ESCAPE.test(text)) {
    const where = illFormed(payload, "") ?? "a string";
    throw new AgentStateError(`agentstate: ${op}: ${where} is not valid Unicode (it holds a lone surrogate)`, "INVALID_ARGUMENT");
  }
  return text;
}

function wrapError(e) {
  if (e instanceof AgentStateError) return e;
  if (e && typeof e === "object" && typeof e.code === "string") {
    return new AgentStateError(e.message, e.code, { cause: e });
  }
  return e;
}

let apiPromise;
let pgApiPromise;

/**
 * Loads and starts the engine once per realm: the Go module
 * (agentstate.wasm) and SQLite (the official sqlite3.wasm, with its
 * callback module sqlite-callbacks.wasm), compiled in parallel. Options
 * (first call only), each module as a `WebAssembly.Module` (what workerd
 * and bundlers give for `import m from "langgraph-checkpoint-agentstate/agentstate.wasm"`) or
 * its bytes (ArrayBuffer, typed array), or a URL to fetch it from (default:
 * this package's dist/, read from disk in Node):
 * - `wasmBytes` / `wasmURL`: the engine, agentstate.wasm;
 * - `sqliteWasm` / `sqliteWasmURL`: SQLite, sqlite3.wasm;
 * - `callbacksWasm` / `callbacksWasmURL`: sqlite-callbacks.wasm;
 * - `trace`: print each engine call's time inside Go (the only thing that
 *   was read from AGENTSTATE_TRACE before; nothing reads the environment).
 *
 * If the engine stops (a Go panic outside a call, an out-of-memory abort),
 * every call in flight rejects, every open Database is marked closed, and
 * the next open starts a fresh instance.
 */
export function loadEngine(options = {}) {
  apiPromise ??= startEngine(options).catch((e) => {
    apiPromise = undefined;
    throw e;
  });
  return apiPromise;
}

/**
 * The engine's Node build with PostgreSQL (dist/agentstate-pg.wasm, its
 * host over node-postgres in src/pg/host.js), started on the first open of
 * a postgres:// URL: a second instance beside the SQLite one, so that
 * browsers and edge hosts, which never open a URL, never load it.
 */
function loadPGEngine(options = {}) {
  pgApiPromise ??= startEngine(options, true).catch((e) => {
    pgApiPromise = undefined;
    throw e;
  });
  return pgApiPromise;
}

// Calls in flight. While none is, the Go runtime's timers (the engine's
// lease renewal ticks every 20 s) must not keep Node alive: an open
// database is like an unreferenced socket, a pending call is not.
let inflight = 0;
let goInstance;
let goPGInstance;

function setTimersRef(ref) {
  for (const g of [goInstance, goPGInstance]) for (const t of g?._scheduledTimeouts?.values() ?? []) (ref ? t.ref : t.unref)?.call(t);
}

function track(promise) {
  if (inflight++ === 0) setTimersRef(true);
  return promise.finally(() => {
    if (--inflight === 0) setTimersRef(false);
  });
}

// What each started instance knows about itself, by its API object: the
// promise that settles when the Go program stops, and the databases to
// mark closed then.
const instances = new WeakMap();

// The module of one of the package's .wasm files, from the caller's
// Module or bytes, from a URL, or from dist/ next to this file.
async function wasmModule(what, bytes, url, file) {
  if (bytes instanceof WebAssembly.Module) return bytes;
  if (bytes) return WebAssembly.compile(toBytes(bytes, what));
  if (url === undefined) {
    try {
      url = new URL(`../dist/${file}`, import.meta.url);
    } catch (e) {
      throw new AgentStateError(
        `agentstate: cannot locate ${file} from this bundle; pass ${what} (a WebAssembly.Module imported from agentstate/${file}) or ${what === "wasmBytes" ? "wasmURL" : `${what}URL`}`,
        "INVALID_ARGUMENT",
        { cause: e },
      );
    }
  }
  if (isNode) {
    // One synchronous read (8 MB, a few ms, once a process): readFile's
    // 512 KiB steps, each a trip through the thread pool and the event
    // loop, started the engine module's compile about 10 ms later, and
    // nothing else runs on this thread while the first open waits for it.
    const { readFileSync } = await import("node:fs");
    return WebAssembly.compile(readFileSync(url));
  }
  const res = fetch(url);
  return WebAssembly.compileStreaming(res).catch(async () => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`agentstate: fetch ${url}: HTTP ${r.status}`);
    return WebAssembly.compile(await r.arrayBuffer());
  });
}

async function startEngine(options = {}, pg = false) {
  const { trace = false, testHooks = false } = options;
  // The three modules compile while wasm_exec.js loads.
  const modules = Promise.all([
    pg
      ? wasmModule("pgWasmBytes", options.pgWasmBytes, options.pgWasmURL, "agentstate-pg.wasm")
      : wasmModule("wasmBytes", options.wasmBytes, options.wasmURL, "agentstate.wasm"),
    wasmModule("sqliteWasm", options.sqliteWasm, options.sqliteWasmURL, "sqlite3.wasm"),
    wasmModule("callbacksWasm", options.callbacksWasm, options.callbacksWasmURL, "sqlite-callbacks.wasm"),
  ]);
  modules.catch(() => {}); // awaited below; not unhandled meanwhile
  if (typeof globalThis.Go !== "function") await import("../dist/wasm_exec.js");
  const go = new globalThis.Go();
  if (pg) goPGInstance = go;
  else goInstance = go;
  const gojs = go.importObject.gojs;
  const schedule = gojs["runtime.scheduleTimeoutEvent"];
  gojs["runtime.scheduleTimeoutEvent"] = (sp) => {
    schedule(sp);
    if (inflight === 0) {
      const t = go._scheduledTimeouts.get(go._nextCallbackTimeoutID - 1);
      t?.unref?.();
    }
  };
  // The tail of what Go writes to stderr, so that a panic's message reaches
  // the error the calls in flight reject with.
  let stderrTail = "";
  const decoder = new TextDecoder();
  const write = gojs["runtime.wasmWrite"];
  gojs["runtime.wasmWrite"] = (sp) => {
    const a = sp >>> 0;
    if (go.mem.getUint32(a + 8, true) === 2) {
      const p = go.mem.getUint32(a + 16, true) + go.mem.getUint32(a + 20, true) * 4294967296;
      const n = go.mem.getInt32(a + 24, true);
      stderrTail = (stderrTail + decoder.decode(new Uint8Array(go._inst.exports.mem.buffer, p, n))).slice(-4096);
    }
    write(sp);
  };
  const name = `__agentstate_bridge_${Math.random().toString(36).slice(2)}`;
  go.argv = ["agentstate", `--bridge=${name}`];
  if (testHooks) go.argv.push("--test-hooks");
  go.env = trace ? { AGENTSTATE_TRACE: "1" } : {};
  let failStart;
  const ready = new Promise((resolve, reject) => {
    globalThis[name] = resolve;
    failStart = reject;
  });
  // Everything about a stop happens synchronously, in the call that saw it:
  // workerd drops a promise settled in a request other than the one that
  // made it, so no long-lived promise may carry the news.
  const state = {
    sqlite: null, // the loaded SQLite (src/sqlite/loader.js), where file VFSes register
    dead: null,
    dbs: new Set(),
    pending: new Set(),
    stop(err) {
      if (state.dead) return;
      state.dead = err;
      if (goInstance === go) apiPromise = undefined;
      if (goPGInstance === go) pgApiPromise = undefined;
      failStart(err);
      for (const reject of state.pending) reject(err);
      state.pending.clear();
      for (const db of state.dbs) db._engineStopped();
      state.dbs.clear();
      state.pgHost?.abandon();
    },
  };
  go.exit = (code) => {
    state.stop(new AgentStateError(`agentstate: the engine stopped (exit code ${code})${stderrTail ? `: ${stderrTail.trim()}` : ""}`, "INTERNAL"));
  };
  let instance, sqlite;
  try {
    const [goModule, sqliteModule, callbacksModule] = await modules;
    [instance, sqlite] = await Promise.all([
      WebAssembly.instantiate(goModule, go.importObject),
      loadSqlite({ wasm: sqliteModule, callbacks: callbacksModule }),
    ]);
  } catch (e) {
    if (e instanceof WebAssembly.CompileError && /disallowed/i.test(e.message)) {
      throw new AgentStateError(
        "agentstate: this host does not compile WebAssembly from bytes at run time (Cloudflare Workers): import agentstate/agentstate.wasm, agentstate/sqlite3.wasm and agentstate/sqlite-callbacks.wasm as modules and pass them as wasmBytes, sqliteWasm and callbacksWasm",
        "INVALID_ARGUMENT",
        { cause: e },
      );
    }
    throw e;
  }
  state.sqlite = sqlite;
  // Go's syscall package takes `process` (pid, cwd, uid) once, as it
  // starts. Outside Node the global may be a partial look-alike (workerd's
  // nodejs_compat has no pid, and Go panics reading it; Deno asks for a
  // permission on cwd): Go gets the stub wasm_exec.js would have made.
  const realProcess = globalThis.process;
  if (!isNode && realProcess) globalThis.process = goProcessStub();
  // The Go driver takes its SQLite host from this global while the
  // program starts (package initialisation, before go.run first returns).
  // The PostgreSQL driver takes its host the same way (Node only), made
  // first: from setting the globals to go.run nothing awaits, so another
  // instance starting meanwhile never sees this one's hosts.
  const pgHost = pg ? await (await import("./pg/host.js")).makePGHost(instance.exports.mem) : undefined;
  globalThis.__agentstate_sqlite_host = makeHost(sqlite, instance.exports.mem);
  if (pgHost) globalThis.__agentstate_pg_host = pgHost;
  state.pgHost = pgHost;
  let run;
  try {
    run = go.run(instance); // synchronous until the program first waits
  } finally {
    delete globalThis.__agentstate_sqlite_host;
    delete globalThis.__agentstate_pg_host;
    if (!isNode && realProcess) globalThis.process = realProcess;
  }
  run.catch((e) => state.stop(new AgentStateError(`agentstate: the engine stopped: ${e?.message ?? e}`, "INTERNAL", { cause: e })));
  const api = await ready;
  delete globalThis[name];
  state.mem = instance.exports.mem;
  instances.set(api, state);
  return api;
}

function goProcessStub() {
  const enosys = () => Object.assign(new Error("not implemented"), { code: "ENOSYS" });
  return {
    pid: -1,
    ppid: -1,
    getuid: () => -1,
    getgid: () => -1,
    geteuid: () => -1,
    getegid: () => -1,
    getgroups() {
      throw enosys();
    },
    umask: () => 0o22,
    cwd() {
      throw enosys();
    },
    chdir() {
      throw enosys();
    },
  };
}


// Handles opened on a file, by resolved path: a second open of the same
// file in this process shares the handle (a saver and a store on one file),
// since two handles would each keep their own locks.
const shared = new Map();

/**
 * An open agentstate database: the five surfaces of one SQLite file.
 * Most code uses AgentStateSaver / AgentStateStore, which wrap it.
 */
export class Database {
  #api;
  #h;
  #closed = false;
  #refs = 1;
  #release;
  #key;
  #options;
  #autoRetain;

  constructor(api, h, { release, key, options, autoRetain } = {}) {
    this.#api = api;
    this.#h = h;
    this.#release = release;
    this.#key = key;
    this.#options = options;
    this.#autoRetain = autoRetain;
    instances.get(api)?.dbs.add(this);
  }

  /** @internal The engine instance stopped: this handle is gone with it. */
  _engineStopped() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#key) shared.delete(this.#key);
    this.#release?.();
  }

  /**
   * Opens a database.
   * - `path`: a file (Node) or an OPFS file name (browser worker, with
   *   `opfs: true`); omitted: a fresh in-memory database;
   * - `host`: a FileHost (see index.d.ts) that serves the database file it
   *   names in host.path: Durable Objects (durableObjectHost), or your own;
   * - `image`: bytes of a database file, opened as a private in-memory copy;
   * - `mode`: the file's channel mode (docs/contract.md §2.2), "full",
   *   "delta" or "auto" (the mode an existing file records; full for a new
   *   one). Omitted: "auto". It governs the engine's thread API on this file
   *   (Go's Commit and State; the CLI's views and conversions), not how
   *   AgentStateSaver stores a LangGraph.js graph (see AgentStateSaver.open).
   *   `every`: the snapshot cadence K with `mode: "delta"` (default 10;
   *   refused with any other mode, where it would mean nothing);
   *   `cacheBytes` (history cache bound), `readOnly`, `busyTimeoutMs`,
   *   `storeDefaultTtlMs`, `storeRefreshOnRead`, `storeSweepIntervalMs`;
   *   `autoRetain` (default true: delta threads keep a geometric series of
   *   snapshots, so storage stays linear; false keeps every snapshot);
   *   `synchronous`: "normal" (default) or "full", what a returned commit
   *   survives (docs/contract.md; on PostgreSQL synchronous_commit off/on);
   * - `wasmURL` / `wasmBytes` / `trace`: how to load the engine (first
   *   open; see loadEngine).
   */
  static async open(options = {}) {
    if (options.every !== undefined && options.mode !== "delta") {
      throw new AgentStateError(
        `agentstate: every (the snapshot cadence K) applies to mode: "delta" only, not to mode: ${JSON.stringify(options.mode ?? "auto")} ` +
          `(an existing delta file's K comes with it under "auto")`,
        "INVALID_ARGUMENT",
      );
    }
    if (options.url !== undefined && options.path !== undefined) {
      throw new AgentStateError("agentstate: open takes a url or a path, not both", "INVALID_ARGUMENT");
    }
    const url = options.url ?? options.path;
    if (typeof url === "string" && /^postgres(ql)?:\/\//.test(url)) {
      if (!isNode) {
        // Not a file name: refused before anything is created under it,
        // and shown without its password.
        throw new AgentStateError(
          `agentstate: ${redactURL(url)}: PostgreSQL URLs need Node (node-postgres); ${runtime} has no PostgreSQL client (see docs/postgresql.md)`,
          "INVALID_ARGUMENT",
        );
      }
      return openPG(url, options);
    }
    if (options.url !== undefined) {
      throw new AgentStateError(
        `agentstate: url must be a postgres:// or postgresql:// URL (a file goes in path), got ${typeof options.url === "string" ? redactURL(options.url) : typeof options.url}`,
        "INVALID_ARGUMENT",
      );
    }
    const api = await loadEngine(options);
    const req = openRequest(options);
    if (options.autoRetain !== undefined && typeof options.autoRetain !== "boolean") {
      throw new AgentStateError(`agentstate: autoRetain must be a boolean, got ${typeof options.autoRetain}`, "INVALID_ARGUMENT");
    }
    if ([options.path, options.image, options.host].filter((v) => v !== undefined && v !== null).length > 1) {
      throw new AgentStateError("agentstate: open takes one of path, image and host", "INVALID_ARGUMENT");
    }
    if (options.image !== undefined) {
      const r = await callApi(api, () => api.open(requestJSON("open", { ...req, image: 0 }), [toBytes(options.image, "image")]));
      return new Database(api, r.h, { options: req, autoRetain: r.autoRetain });
    }
    if (options.host !== undefined && options.host !== null) {
      if (options.opfs) throw new AgentStateError("agentstate: opfs applies to a path, not to a host", "INVALID_ARGUMENT");
      const { checkHost } = await import("./sqlite/vfs.js");
      try {
        checkHost(options.host);
      } catch (e) {
        throw new AgentStateError(e.message, "INVALID_ARGUMENT", { cause: e });
      }
      if (typeof options.host.path !== "string" || options.host.path === "") {
        throw new AgentStateError("agentstate: host.path must name the database file the host serves", "INVALID_ARGUMENT");
      }
    } else if (options.path === undefined || options.path === null) {
      const r = await callApi(api, () => api.open(requestJSON("open", req), []));
      return new Database(api, r.h, { options: req, autoRetain: r.autoRetain });
    } else if (typeof options.path !== "string" || options.path === "") {
      throw new AgentStateError("agentstate: path must be a non-empty string", "INVALID_ARGUMENT");
    }
    let key;
    let makeHost;
    let disk = false; // a file the native CLI can reach
    if (options.host) {
      // One handle per host object: two would keep separate caches of one file.
      key = options.host;
      makeHost = () => options.host;
    } else if (!options.opfs && (runtime === "workerd" || runtime === "deno")) {
      throw new AgentStateError(
        `agentstate: ${runtime} has no file host: open in memory, from an image, or pass a host (see the README)`,
        "INVALID_ARGUMENT",
      );
    } else if (options.opfs || !isNode) {
      const { openOpfsHost, opfsKey } = await import("./opfs-host.js");
      key = opfsKey(options.path);
      makeHost = () => openOpfsHost(options.path);
    } else {
      const { openNodeFileHost, resolvePath, loadNodeModules } = await import("./node-host.js");
      await loadNodeModules();
      key = `file:${resolvePath(options.path)}`;
      makeHost = () => openNodeFileHost(options.path, { readOnly: !!options.readOnly, busyTimeoutMs: options.busyTimeoutMs });
      disk = true;
    }
    // Opens of one file share a handle; an open in progress is awaited.
    let pending = shared.get(key);
    if (!pending) {
      pending = (async () => {
        const host = await makeHost();
        let r;
        let vfs;
        try {
          // SQLite reaches the host's files through a VFS of src/sqlite/vfs.js.
          const { registerVfs } = await import("./sqlite/vfs.js");
          vfs = registerVfs(instances.get(api).sqlite, host);
          r = await callApi(api, () =>
            api.open(requestJSON("open", { ...req, path: host.path, vfs: vfs.name, disk, name: options.path ?? host.path }), []),
          );
        } catch (e) {
          vfs?.unregister();
          host.dispose?.();
          throw e;
        }
        const release = () => {
          vfs.unregister();
          host.dispose?.();
        };
        // The mode the engine resolved ("auto" or no mode: the file's).
        const db = new Database(api, r.h, { release, key, options: { ...req, mode: r.mode, every: r.every }, autoRetain: r.autoRetain });
        db.host = host;
        return db;
      })();
      shared.set(key, pending);
      try {
        return await pending; // the first opener holds the first reference
      } catch (e) {
        shared.delete(key);
        throw e;
      }
    }
    return (await pending).#share(req);
  }

  #share(req) {
    if (this.#closed) throw new AgentStateError(`agentstate: ${this.#key} was closed while being opened again`, "CLOSED");
    const defaults = { mode: "full", every: 10, readOnly: false, autoRetain: true };
    for (const k of ["mode", "every", "readOnly", "autoRetain"]) {
      const want = req[k] ?? defaults[k];
      const have = this.#options[k] ?? defaults[k];
      // "auto" takes the mode the handle has; K matters in delta mode only.
      if (k === "mode" && want === "auto") continue;
      if (k === "every" && this.#options.mode !== "delta") continue;
      if (req[k] !== undefined && want !== have) {
        throw new AgentStateError(
          `agentstate: ${this.#key} is already open in this process with ${k}=${have}, not ${want}`,
          "MODE_MISMATCH",
        );
      }
    }
    this.#refs++;
    return this;
  }

  /** Whether the handle runs snapshot retention as it writes (the `autoRetain` open option; default true). */
  get autoRetain() {
    return this.#autoRetain;
  }

  /** Sends one call to the engine: op name, JSON payload, byte arrays. */
  async call(op, payload = {}, bufs = []) {
    return this.#send(op, payload, bufs);
  }

  async #send(op, payload, bufs) {
    if (this.#closed) throw new AgentStateError("agentstate: database is closed", "CLOSED");
    const text = requestJSON(op, payload);
    return callApi(this.#api, () => send(this.#api, this.#h, op, text, bufs));
  }

  /** Run records (records.js): the same calls as Go's db.Runs(). */
  get runs() {
    return new Runs(this);
  }

  /** The event stream (records.js): Go's db.Events(). */
  get events() {
    return new Events(this);
  }

  /** Thread records (records.js): Go's db.Threads(). */
  get threads() {
    return new Threads(this);
  }

  /** Schema version, sizes, row counts and history-cache counters. */
  async info() {
    const r = await this.call("info");
    return { ...r.info, cache: r.cache };
  }

  /** A consistent copy of the whole database file, as bytes. */
  async image() {
    const r = await this.call("image");
    return r.bufs[r.image];
  }

  get closed() {
    return this.#closed;
  }

  /** Closes the handle (when the last user of a shared file handle closes). */
  async close() {
    if (this.#closed) return;
    if (--this.#refs > 0) return;
    this.#closed = true;
    if (this.#key) shared.delete(this.#key);
    instances.get(this.#api)?.dbs.delete(this);
    try {
      if (!instances.get(this.#api)?.dead) await callApi(this.#api, () => this.#api.close(this.#h));
    } finally {
      this.#release?.();
    }
  }
}

// The engine computes on this thread. Each call first lets the event loop
// turn (timers, I/O, other requests), so a burst of calls never starves it;
// a single call then runs for its own compute time only (put, get: about
// a millisecond once warm). For full isolation run it in a Worker. Not
// setTimeout where there is better: browsers make nested timeouts wait 4 ms.
export const nextTurn = (() => {
  if (typeof setImmediate === "function") return () => new Promise((r) => setImmediate(r));
  if (typeof MessageChannel === "function") {
    const ch = new MessageChannel();
    const queue = [];
    ch.port1.onmessage = () => queue.shift()?.();
    return () =>
      new Promise((r) => {
        queue.push(r);
        ch.port2.postMessage(0);
      });
  }
  return () => new Promise((r) => setTimeout(r, 0));
})();

// api.send(frame, done): a call as one byte array (see wasm/js/bridge.go,
// readFrame and writeFrame), its result read out of the Go module's
// memory, which costs Go far fewer JavaScript objects than the transport
// before it (strings and arrays, answered with a Promise). The request is
// built in a buffer reused by every call: Go copies it before send returns.
const frameEncoder = new TextEncoder();
const frameDecoder = new TextDecoder();
const SCRATCH_KEEP = 1 << 20; // the largest request buffer kept between calls
let scratch = new Uint8Array(1 << 16);
let scratchView = new DataView(scratch.buffer);

function send(api, h, op, json, bufs) {
  // Sized for text that is one UTF-8 byte per UTF-16 unit (JSON is mostly
  // ASCII), and again at 3 bytes per unit if it did not fit: a 100 MB value
  // takes 100 MB here, not 300.
  const head = 16 + 4 * bufs.length;
  let bufBytes = 0;
  for (const b of bufs) {
    if (!(b instanceof Uint8Array)) throw new AgentStateError("agentstate: call: byte arrays must be Uint8Arrays", "INVALID_ARGUMENT");
    bufBytes += b.length;
  }
  let textRoom = op.length + json.length;
  let at, opLen, jsonLen;
  for (;;) {
    const size = head + textRoom + bufBytes;
    if (scratch.length < size) {
      scratch = new Uint8Array(size > SCRATCH_KEEP ? size : Math.max(size, 2 * scratch.length));
      scratchView = new DataView(scratch.buffer);
    }
    const room = scratch.subarray(0, head + textRoom);
    const o = frameEncoder.encodeInto(op, room.subarray(head));
    opLen = o.written;
    const j = frameEncoder.encodeInto(json, room.subarray(head + opLen));
    jsonLen = j.written;
    at = head + opLen + jsonLen;
    if (o.read === op.length && j.read === json.length) break;
    textRoom = 3 * (op.length + json.length); // UTF-8: at most 3 bytes per UTF-16 unit
  }
  const u8 = scratch;
  const dv = scratchView;
  dv.setUint32(0, h, true);
  dv.setUint32(4, opLen, true);
  dv.setUint32(8, jsonLen, true);
  dv.setUint32(12, bufs.length, true);
  for (let i = 0; i < bufs.length; i++) {
    dv.setUint32(16 + 4 * i, bufs[i].length, true);
    u8.set(bufs[i], at);
    at += bufs[i].length;
  }
  let done;
  const p = new Promise((resolve, reject) => {
    done = answer(instances.get(api).mem, resolve, reject);
  });
  api.send(u8.subarray(0, at), done);
  if (scratch.length > SCRATCH_KEEP) {
    // Go has copied the request: a large buffer is not kept for the next
    // call (a 100 MB value held 300 MB for the life of the process). Go
    // still holds a reference to the view it was given until its own
    // collector runs, so the buffer is also detached, which frees it now.
    const old = scratch.buffer;
    scratch = new Uint8Array(1 << 16);
    scratchView = new DataView(scratch.buffer);
    if (typeof old.transfer === "function") old.transfer(0);
    else if (typeof structuredClone === "function") structuredClone(old, { transfer: [old] });
  }
  return p;
}

// The callback Go answers a call with, made outside send so that it keeps
// nothing of send's scope alive (a closure there held the request buffer
// until Go let go of the callback: 100 MB after a 100 MB value).
function answer(mem, resolve, reject) {
  return (err, ptr, n) => (err ? reject(err) : resolve(readResult(mem, ptr, n)));
}

// A result in the Go module's memory as {json, bufs}; each buffer a copy
// of its own (Go's memory is reused once this returns).
function readResult(mem, ptr, n) {
  const buf = mem.buffer;
  const dv = new DataView(buf, ptr, n);
  const count = dv.getUint32(0, true);
  const jsonLen = dv.getUint32(4, true);
  const head = 8 + 8 * count;
  const json = frameDecoder.decode(new Uint8Array(buf, ptr + head, jsonLen));
  const bufs = new Array(count);
  for (let i = 0; i < count; i++) {
    const p = dv.getUint32(8 + 8 * i, true);
    bufs[i] = new Uint8Array(buf.slice(p, p + dv.getUint32(12 + 8 * i, true)));
  }
  return { json, bufs };
}

// A call settles when Go answers, or rejects when the engine stops first
// (state.stop rejects every pending call). A trap in the module (a wasm
// RuntimeError thrown out of Go) leaves the instance unusable: it stops too.
async function callApi(api, fn) {
  const state = instances.get(api);
  let res;
  try {
    if (state?.dead) throw state.dead;
    res = await new Promise((resolve, reject) => {
      state?.pending.add(reject);
      track(
        nextTurn().then(() => {
          if (state?.dead) throw state.dead;
          try {
            return fn();
          } catch (e) {
            if (e instanceof WebAssembly.RuntimeError) {
              state?.stop(new AgentStateError(`agentstate: the engine stopped: ${e.message}`, "INTERNAL", { cause: e }));
            }
            throw e;
          }
        }),
      )
        .then(resolve, reject)
        .finally(() => state?.pending.delete(reject));
    });
  } catch (e) {
    throw wrapError(e);
  }
  const v = JSON.parse(res.json);
  if (v && typeof v === "object" && !Array.isArray(v)) Object.defineProperty(v, "bufs", { value: res.bufs, enumerable: false });
  return v;
}

function toBytes(b, what) {
  if (b instanceof Uint8Array) return b;
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  if (ArrayBuffer.isView(b)) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  throw new AgentStateError(`agentstate: ${what} must be a Uint8Array or ArrayBuffer`, "INVALID_ARGUMENT");
}

// Opens a PostgreSQL database (Node): the engine's PostgreSQL build over
// node-postgres in a worker thread (src/pg/host.js). `schema` names the
// schema of the engine's tables (first in the URL's search_path).
async function openPG(url, options) {
  if (options.image !== undefined || options.host !== undefined || options.opfs) {
    throw new AgentStateError("agentstate: a PostgreSQL URL takes no image, host or opfs", "INVALID_ARGUMENT");
  }
  if (options.schema !== undefined) {
    if (typeof options.schema !== "string" || options.schema === "") {
      throw new AgentStateError("agentstate: schema must be a non-empty string", "INVALID_ARGUMENT");
    }
    const u = new URL(url);
    u.searchParams.set("search_path", `"${options.schema.replace(/"/g, '""')}"`);
    url = u.toString();
  }
  const { createRequire } = await import("node:module");
  try {
    createRequire(import.meta.url).resolve("pg");
  } catch {
    throw new AgentStateError(
      `agentstate: ${redactURL(url)}: PostgreSQL URLs need node-postgres, an optional peer dependency: npm install pg`,
      "MISSING_DEPENDENCY",
    );
  }
  const api = await loadPGEngine(options);
  const req = {
    ...openRequest(options),
    // Each call's deadline, the open's too (0: none): past it the host
    // gives the session up (a cancel request to the server) and the call
    // fails typed; the next call dials a new session.
    timeoutMs: options.timeoutMs ?? 30_000,
  };
  const r = await callApi(api, () => api.open(requestJSON("open", { ...req, path: url }), []));
  return new Database(api, r.h, { options: req, autoRetain: r.autoRetain });
}

/** url as messages show it: its password (user part or query) replaced. */
function redactURL(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = "xxxxx";
    if (u.searchParams.has("password")) u.searchParams.set("password", "xxxxx");
    return u.toString();
  } catch {
    return `${url.split("://")[0]}://(unparsable URL)`;
  }
}

/** The engine's open options that a file and a URL share. */
function openRequest(options) {
  return {
    mode: options.mode,
    every: options.every,
    cacheBytes: options.cacheBytes,
    readOnly: options.readOnly,
    busyTimeoutMs: options.busyTimeoutMs,
    storeDefaultTtlMs: options.storeDefaultTtlMs,
    storeRefreshOnRead: options.storeRefreshOnRead,
    storeSweepIntervalMs: options.storeSweepIntervalMs,
    readConns: options.readConns,
    autoRetain: options.autoRetain,
    synchronous: options.synchronous,
  };
}
