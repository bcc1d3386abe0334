// The agentstate engine (Go, compiled to WebAssembly with GOOS=js) and the
// database handle every other class of this package is built on.
//
// One wasm instance serves the whole JavaScript realm; each Database is a
// handle inside it. Calls return Promises: the Go side runs each in its own
// goroutine, so the event loop is only busy while Go computes.

const isNode = typeof process !== "undefined" && !!process.versions?.node && typeof window === "undefined";

/** Error thrown by the engine. `code` is one of NOT_FOUND, CONFLICT,
 * INVALID_ARGUMENT, INVALID_OPTION, CLOSED, READ_ONLY, MODE_MISMATCH,
 * SCHEMA_TOO_NEW, NOT_AGENTSTATE, CORRUPT, BUSY, INTERNAL. */
export class AgentStateError extends Error {
  constructor(message, code, options) {
    super(message, options);
    this.name = "AgentStateError";
    this.code = code;
  }
}

function wrapError(e) {
  if (e instanceof AgentStateError) return e;
  if (e && typeof e === "object" && typeof e.code === "string") {
    return new AgentStateError(e.message, e.code, { cause: e });
  }
  return e;
}

let apiPromise;

/**
 * Loads and starts the wasm module once per realm. Options (first call
 * only): `wasmURL` (browsers: where agentstate.wasm is served; default: next
 * to this package's dist/), `wasmBytes` (the module's bytes).
 */
export function loadEngine(options = {}) {
  apiPromise ??= startEngine(options).catch((e) => {
    apiPromise = undefined;
    throw e;
  });
  return apiPromise;
}

// Calls in flight. While none is, the Go runtime's timers (the engine's
// lease renewal ticks every 20 s) must not keep Node alive: an open
// database is like an unreferenced socket, a pending call is not.
let inflight = 0;
let goInstance;

function setTimersRef(ref) {
  for (const t of goInstance?._scheduledTimeouts?.values() ?? []) (ref ? t.ref : t.unref)?.call(t);
}

function track(promise) {
  if (inflight++ === 0) setTimersRef(true);
  return promise.finally(() => {
    if (--inflight === 0) setTimersRef(false);
  });
}

async function startEngine({ wasmURL, wasmBytes } = {}) {
  if (isNode && !globalThis.fs) {
    // Go's os package reaches Node's fs through this global (the engine
    // only uses it for the WAL-index switch directory next to a database).
    globalThis.fs = (await import("node:fs")).default;
  }
  if (typeof globalThis.Go !== "function") await import("../dist/wasm_exec.js");
  const go = new globalThis.Go();
  goInstance = go;
  const schedule = go.importObject.gojs["runtime.scheduleTimeoutEvent"];
  go.importObject.gojs["runtime.scheduleTimeoutEvent"] = (sp) => {
    schedule(sp);
    if (inflight === 0) {
      const t = go._scheduledTimeouts.get(go._nextCallbackTimeoutID - 1);
      t?.unref?.();
    }
  };
  const name = `__agentstate_bridge_${Math.random().toString(36).slice(2)}`;
  go.argv = ["agentstate", `--bridge=${name}`];
  go.env = { AGENTSTATE_TRACE: globalThis.process?.env?.AGENTSTATE_TRACE ?? "" };
  const ready = new Promise((resolve) => {
    globalThis[name] = resolve;
  });
  let source;
  if (wasmBytes) {
    source = await WebAssembly.instantiate(wasmBytes, go.importObject);
  } else if (isNode) {
    const { readFile } = await import("node:fs/promises");
    const url = wasmURL ?? new URL("../dist/agentstate.wasm", import.meta.url);
    source = await WebAssembly.instantiate(await readFile(url), go.importObject);
  } else {
    const url = wasmURL ?? new URL("../dist/agentstate.wasm", import.meta.url);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`agentstate: fetch ${url}: HTTP ${res.status}`);
    source = await WebAssembly.instantiateStreaming(res, go.importObject).catch(async () =>
      WebAssembly.instantiate(await (await fetch(url)).arrayBuffer(), go.importObject),
    );
  }
  const instance = source.instance ?? source;
  go.run(instance).catch((e) => console.error("agentstate: wasm instance stopped:", e));
  const api = await ready;
  delete globalThis[name];
  return api;
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

  constructor(api, h, { release, key, options } = {}) {
    this.#api = api;
    this.#h = h;
    this.#release = release;
    this.#key = key;
    this.#options = options;
  }

  /**
   * Opens a database.
   * - `path`: a file (Node) or an OPFS file name (browser worker, with
   *   `opfs: true`); omitted: a fresh in-memory database;
   * - `image`: bytes of a database file, opened as a private in-memory copy;
   * - `mode`: "full", "delta" or "auto" (the mode an existing file records;
   *   full for a new one). Omitted: "auto". `every`: the delta snapshot
   *   cadence K of a new delta file (default 10);
   *   `cacheBytes` (history cache bound), `readOnly`, `busyTimeoutMs`,
   *   `storeDefaultTtlMs`, `storeRefreshOnRead`, `storeSweepIntervalMs`;
   * - `wasmURL` / `wasmBytes`: where to load the engine from (first open).
   */
  static async open(options = {}) {
    const api = await loadEngine(options);
    const req = {
      mode: options.mode,
      every: options.every,
      cacheBytes: options.cacheBytes,
      readOnly: options.readOnly,
      busyTimeoutMs: options.busyTimeoutMs,
      storeDefaultTtlMs: options.storeDefaultTtlMs,
      storeRefreshOnRead: options.storeRefreshOnRead,
      storeSweepIntervalMs: options.storeSweepIntervalMs,
      readConns: options.readConns,
    };
    if (options.path !== undefined && options.image !== undefined) {
      throw new AgentStateError("agentstate: open takes a path or an image, not both", "INVALID_ARGUMENT");
    }
    if (options.image !== undefined) {
      const r = await callApi(() => api.open(JSON.stringify({ ...req, image: 0 }), [toBytes(options.image)]));
      return new Database(api, r.h, { options: req });
    }
    if (options.path === undefined || options.path === null) {
      const r = await callApi(() => api.open(JSON.stringify(req), []));
      return new Database(api, r.h, { options: req });
    }
    if (typeof options.path !== "string" || options.path === "") {
      throw new AgentStateError("agentstate: path must be a non-empty string", "INVALID_ARGUMENT");
    }
    let key;
    let makeHost;
    if (options.opfs || !isNode) {
      const { openOpfsHost, opfsKey } = await import("./opfs-host.js");
      key = opfsKey(options.path);
      makeHost = () => openOpfsHost(options.path);
    } else {
      const { NodeFileHost, resolvePath } = await import("./node-host.js");
      key = `file:${resolvePath(options.path)}`;
      makeHost = () => new NodeFileHost(options.path, { readOnly: !!options.readOnly });
    }
    // Opens of one file share a handle; an open in progress is awaited.
    let pending = shared.get(key);
    if (!pending) {
      pending = (async () => {
        const host = await makeHost();
        let r;
        try {
          r = await callApi(() => api.open(JSON.stringify({ ...req, path: host.path, name: options.path }), [], host));
        } catch (e) {
          host.dispose();
          throw e;
        }
        // The mode the engine resolved ("auto" or no mode: the file's).
        const db = new Database(api, r.h, { release: () => host.dispose(), key, options: { ...req, mode: r.mode, every: r.every } });
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
    const defaults = { mode: "full", every: 10, readOnly: false };
    for (const k of ["mode", "every", "readOnly"]) {
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

  /** Sends one call to the engine: op name, JSON payload, byte arrays. */
  async call(op, payload = {}, bufs = []) {
    return this.#send(op, payload, bufs);
  }

  async #send(op, payload, bufs) {
    if (this.#closed) throw new AgentStateError("agentstate: database is closed", "CLOSED");
    return callApi(() => this.#api.call(this.#h, op, JSON.stringify(payload), bufs));
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
    try {
      await callApi(() => this.#api.close(this.#h));
    } finally {
      this.#release?.();
    }
  }
}

// The engine computes on this thread. Each call first lets the event loop
// turn (timers, I/O, other requests), so a burst of calls never starves it;
// a single call then runs for its own compute time only (put, get: about
// a millisecond once warm). For full isolation run it in a Worker.
const nextTurn = (() => {
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

async function callApi(fn) {
  let res;
  try {
    res = await track(nextTurn().then(fn));
  } catch (e) {
    throw wrapError(e);
  }
  const v = JSON.parse(res.json);
  if (v && typeof v === "object" && !Array.isArray(v)) Object.defineProperty(v, "bufs", { value: res.bufs, enumerable: false });
  return v;
}

function toBytes(b) {
  if (b instanceof Uint8Array) return b;
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  if (ArrayBuffer.isView(b)) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  throw new AgentStateError("agentstate: image must be a Uint8Array or ArrayBuffer", "INVALID_ARGUMENT");
}
