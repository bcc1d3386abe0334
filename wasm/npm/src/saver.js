// AgentStateSaver: a LangGraph.js checkpoint saver on the agentstate engine.
import { BaseCheckpointSaver, TASKS, getCheckpointId, maxChannelVersion } from "@langchain/langgraph-checkpoint";
import { idString } from "./args.js";
import { AgentStateError, Database, nextTurn } from "./engine.js";
import { LazyOpen, connOptions } from "./lazy.js";
import { MessageJSON } from "./message-json.js";

// Channel versions are strings in the engine. LangGraph's default integer
// versions cross as decimal text and come back as numbers; the versions
// getNextVersion makes are zero-padded ("000…0042.0.7316…") and never look
// like a canonical number, so the mapping is lossless for both.
function versionOut(v, what) {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new AgentStateError(`agentstate: ${what}: version ${v} is not finite`, "INVALID_ARGUMENT");
    return String(v);
  }
  if (typeof v === "string") return v;
  throw new AgentStateError(`agentstate: ${what}: version must be a number or a string, got ${typeof v}`, "INVALID_ARGUMENT");
}

function versionIn(s) {
  if (s !== "" && s.length < 24) {
    const n = Number(s);
    if (Number.isFinite(n) && String(n) === s) return n;
  }
  return s;
}

function versionsOut(m, what) {
  const res = {};
  for (const [k, v] of Object.entries(m ?? {})) res[k] = versionOut(v, `${what} ${k}`);
  return res;
}

function versionsIn(m) {
  const res = {};
  for (const [k, v] of Object.entries(m ?? {})) res[k] = versionIn(v);
  return res;
}

function seenOut(m) {
  const res = {};
  for (const [node, vs] of Object.entries(m ?? {})) res[node] = versionsOut(vs, `versions_seen ${node}`);
  return res;
}

function seenIn(m) {
  const res = {};
  for (const [node, vs] of Object.entries(m ?? {})) res[node] = versionsIn(vs);
  return res;
}

function threadOf(config, what) {
  const c = config?.configurable;
  if (!c) throw new AgentStateError(`agentstate: ${what}: config.configurable is missing`, "INVALID_ARGUMENT");
  const thread = c.thread_id;
  if (thread === undefined || thread === null || thread === "") {
    throw new AgentStateError(`agentstate: ${what}: config.configurable.thread_id is missing`, "INVALID_ARGUMENT");
  }
  return idString(thread, `${what}: config.configurable.thread_id`);
}

// A checkpoint namespace or id of a config: a string, or absent (undefined
// or null: the default).
function optString(v, what) {
  return v === undefined || v === null ? undefined : idString(v, what);
}

function wireConfig(config, what) {
  const c = config.configurable;
  return {
    thread_id: threadOf(config, what),
    checkpoint_ns: optString(c.checkpoint_ns, `${what}: config.configurable.checkpoint_ns`) ?? "",
    checkpoint_id: optString(getCheckpointId(config) || undefined, `${what}: config.configurable.checkpoint_id`),
  };
}

function lgConfig(c) {
  return { configurable: { thread_id: c.thread_id, checkpoint_ns: c.checkpoint_ns ?? "", checkpoint_id: c.checkpoint_id } };
}

/** Collects byte arrays for one engine call. */
class Bufs {
  list = [];
  add(type, bytes) {
    this.list.push(bytes);
    return { t: type, b: this.list.length - 1 };
  }
}

const cpKey = (c, id) => `${c.thread_id}\u0000${c.checkpoint_ns}\u0000${id}`;
const threadKey = (c) => `${c.thread_id}\u0000${c.checkpoint_ns}`;

// How many checkpoint keys a saver remembers having stored (a hint that a
// checkpoint exists, so its writes need not wait for puts in flight).
const STORED_KEYS = 1024;
const ACTIVE_THREADS = 256;

// The constructor's private way to make a saver whose database opens later.
const LAZY = Symbol("agentstate lazy open");

export class AgentStateSaver extends BaseCheckpointSaver {
  /** @type {Database} the database (of a fromConnString saver: once opened) */
  db;
  #ownsDb;
  /** @type {LazyOpen | undefined} */
  #lazy;

  /**
   * @param {Database} db an open database (AgentStateSaver.open opens one)
   * @param {object} [serde] a LangGraph SerializerProtocol
   */
  constructor(db, serde, { ownsDb = false, [LAZY]: lazy } = {}) {
    super(serde);
    if (lazy instanceof LazyOpen && db === undefined) {
      this.#lazy = lazy;
    } else {
      if (!(db instanceof Database)) throw new TypeError("AgentStateSaver: use AgentStateSaver.open(options) or pass a Database");
      this.db = db;
    }
    this.#ownsDb = ownsDb;
  }

  // The database for a call: this.db, or (a fromConnString saver's first
  // calls) the open they share.
  #conn() {
    return this.db ?? this.#lazy.get((db) => (this.db = db));
  }

  #call(method, req, bufs) {
    const db = this.db;
    return db ? db.call(method, req, bufs) : this.#conn().then((d) => d.call(method, req, bufs));
  }

  // serde.dumpsTyped, with message lists serialised in O(new messages).
  #dumper;
  get #dumps() {
    if (this.#dumper?.serde !== this.serde) this.#dumper = { serde: this.serde, mj: new MessageJSON(this.serde) };
    return this.#dumper.mj;
  }

  /**
   * Opens a saver. `options`: `path` (a file under Node, an OPFS name in a
   * browser worker; omitted: a fresh in-memory database), `serde`, and the
   * other Database.open options.
   *
   * `mode` ("full" | "delta" | "auto", the default: an existing file's own
   * mode) and `every` (K, with "delta" only) are the file's channel mode:
   * what the engine's thread API (Go's Commit and State, the CLI) writes to
   * the file, recorded in it and checked at every open (MODE_MISMATCH). They
   * do not change how this saver stores a LangGraph.js graph: LangGraph
   * serialises its channels itself, and each version of a value is stored
   * once, as a delta against the version before it when that is smaller, in
   * every mode. For a message list kept as its steps' writes with a snapshot
   * every K updates, give the graph a `DeltaValue` channel
   * (`snapshotFrequency: K`); the saver serves its history
   * (getDeltaChannelHistory) in every mode.
   */
  static async open(options = {}) {
    const db = await Database.open(options);
    return new AgentStateSaver(db, options.serde, { ownsDb: true });
  }

  /**
   * A saver on the file at `path` (":memory:": a fresh in-memory database),
   * made at once, as LangGraph.js's `SqliteSaver.fromConnString` makes one:
   * the file is opened by the first call that needs it, or by `setup()`,
   * and an error opening it (a typed AgentStateError, as open's) is thrown
   * by that call. `options` are open's, without `path`. A wrong argument
   * (a path that is not a string) is refused here.
   */
  static fromConnString(path, options = {}) {
    const opts = connOptions(path, options, "AgentStateSaver.fromConnString");
    const lazy = new LazyOpen(() => Database.open(opts), "saver");
    return new AgentStateSaver(undefined, opts.serde, { ownsDb: true, [LAZY]: lazy });
  }

  /**
   * LangGraph's set-up call: opens the file if it is not yet open (open
   * creates, migrates and verifies it; there is nothing else to set up).
   * Harmless to call again; on a closed saver it throws CLOSED.
   */
  async setup() {
    const db = await this.#conn();
    if (db.closed) throw new AgentStateError("agentstate: database is closed", "CLOSED");
  }

  /** Closes the database if this saver opened it (before its first call: nothing to close). */
  async close() {
    await this.#lazy?.close();
    if (this.#ownsDb && this.db) await this.db.close();
  }

  // learn: "learn" when the value likely goes on into a graph run that puts
  // it again (getTuple and delta histories of a thread this saver has been
  // putting checkpoints to), so the messages it holds are remembered with
  // their bytes (see message-json.js); learning costs a little on each read,
  // so reads of other threads (a UI looking at state) only "copy": message
  // lists are revived copying the messages revived before. list() does
  // neither.
  async #value(blob, bufs, learn = false) {
    return learn ? this.#dumps.loadsTyped(blob.t, bufs[blob.b], learn === "learn") : this.serde.loadsTyped(blob.t, bufs[blob.b]);
  }

  #readMode(c) {
    return this.#active.has(threadKey(c)) ? "learn" : "copy";
  }

  async #tuple(t, bufs, learn = false) {
    const cp = t.checkpoint;
    const values = {};
    for (const [ch, blob] of Object.entries(cp.values ?? {})) values[ch] = await this.#value(blob, bufs, learn);
    const checkpoint = {
      v: cp.v,
      id: cp.id,
      ts: cp.ts,
      channel_values: values,
      channel_versions: versionsIn(cp.versions),
      versions_seen: seenIn(cp.seen),
    };
    if (cp.updated) checkpoint.updated_channels = cp.updated;
    const tuple = {
      config: lgConfig(t.config),
      checkpoint,
      metadata: t.metadata ?? {},
      pendingWrites: await Promise.all(t.writes.map(async (w) => [w.taskId, w.channel, await this.#value(w.value, bufs, learn)])),
    };
    if (t.parent) {
      tuple.parentConfig = lgConfig(t.parent);
      if (checkpoint.v < 4) await this.#migratePendingSends(tuple);
    }
    return tuple;
  }

  // Checkpoints older than format 4 kept pending sends as writes to TASKS
  // on their parent; LangGraph expects them as a channel value now.
  async #migratePendingSends(tuple) {
    const r = await this.#call("getTuple", { config: wireConfig(tuple.parentConfig, "getTuple") });
    const sends = [];
    for (const w of r.tuple?.writes ?? []) {
      if (w.channel === TASKS) sends.push(await this.#value(w.value, r.bufs));
    }
    const cp = tuple.checkpoint;
    cp.channel_values[TASKS] = sends;
    const versions = Object.values(cp.channel_versions);
    cp.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }

  async getTuple(config) {
    const c = config?.configurable;
    if (!c || c.thread_id === undefined || c.thread_id === null || c.thread_id === "") return undefined;
    this.#prefetched = undefined;
    const r = await this.#call("getTuple", { config: wireConfig(config, "getTuple"), deltaHistory: true });
    if (!r.tuple) return undefined;
    if (r.history) {
      this.#prefetched = { key: cpKey(r.tuple.config, r.tuple.config.checkpoint_id), channels: new Set(r.historyChannels), history: r.history, bufs: r.bufs };
    }
    return this.#tuple(r.tuple, r.bufs, this.#readMode(r.tuple.config));
  }

  // The delta histories read with the last tuple: when LangGraph loads a
  // checkpoint with DeltaChannels it asks for them next, for that same
  // checkpoint. The engine read them in the same call as the tuple, so they
  // are what a separate call would have returned then; a checkpoint's
  // history does not change while it exists. Used once, and dropped by any
  // other call of this saver.
  #prefetched;

  async *list(config, options = {}) {
    this.#prefetched = undefined;
    const c = config?.configurable ?? {};
    const { limit, before, filter } = options;
    const only = optString(c.checkpoint_id ?? c.thread_ts, "list: config.configurable.checkpoint_id");
    const req = {
      threadId: optString(c.thread_id, "list: config.configurable.thread_id") ?? "",
      namespace: optString(c.checkpoint_ns, "list: config.configurable.checkpoint_ns") ?? null,
      filter: filter && Object.keys(filter).length > 0 ? filter : undefined,
      before: before ? optString(getCheckpointId(before) || undefined, "list: options.before's checkpoint_id") : undefined,
      limit: limit ?? 0,
    };
    if (limit !== undefined && limit <= 0) return;
    if (only) {
      // One named checkpoint: list just past it and keep it if it is there.
      if (req.before !== undefined && only >= req.before) return;
      req.before = `${only}\u0000`;
      req.limit = 0;
    }
    const { cursor } = await this.#call("list.open", req);
    let finished = false; // the engine closed the cursor itself
    try {
      for (let more = true; more; ) {
        const r = await this.#call("list.next", { cursor, n: only ? 8 : 32 });
        finished = r.done;
        more = !r.done;
        for (const t of r.tuples) {
          if (only && t.config.checkpoint_id !== only) {
            if (t.config.checkpoint_id < only) {
              more = false;
              break;
            }
            continue;
          }
          yield await this.#tuple(t, r.bufs);
        }
      }
    } finally {
      if (!finished) await this.#call("list.close", { cursor }).catch(() => {});
    }
  }

  // How writes meet their checkpoint. LangGraph chains each put() behind
  // the one before, but calls putWrites() as soon as a task ends, so the
  // writes of a task often arrive while the put of the checkpoint they belong
  // to is still waiting for the previous put (the engine refuses writes to a
  // checkpoint it does not have; MemorySaver takes them regardless), or just
  // after that put was called. Such writes are parked: the put of their
  // checkpoint sends them with it, in one crossing of the engine bridge
  // (writes.batch). Writes whose checkpoint's put has already gone to the
  // engine wait for it. Parked writes whose put has not come when the puts in
  // flight of their thread have finished are sent alone, so nothing waits on
  // a put that never comes.
  #inflight = new Map(); // checkpoint key -> promise settled when its put is
  #threadPuts = new Map(); // thread key -> Set of those promises
  #parked = new Map(); // checkpoint key -> [{ req, bufs, resolve, reject }]
  #undispatched = new Set(); // checkpoint keys whose put has not yet taken its parked writes
  #stored = new Set(); // checkpoint keys put by this saver (the latest STORED_KEYS)
  #active = new Set(); // thread keys this saver put checkpoints to (the latest ACTIVE_THREADS)

  async put(config, checkpoint, metadata, newVersions) {
    this.#prefetched = undefined;
    const cfg = wireConfig(config, "put");
    idString(checkpoint?.id, "put: checkpoint.id");
    const key = cpKey(cfg, checkpoint?.id);
    const tkey = threadKey(cfg);
    let done;
    const settled = new Promise((r) => {
      done = r;
    });
    this.#inflight.set(key, settled);
    this.#undispatched.add(key);
    let puts = this.#threadPuts.get(tkey);
    if (!puts) this.#threadPuts.set(tkey, (puts = new Set()));
    puts.add(settled);
    try {
      const r = await this.#put(cfg, key, checkpoint, metadata, newVersions);
      this.#remember(key, tkey);
      return r;
    } finally {
      this.#undispatched.delete(key);
      if (this.#inflight.get(key) === settled) this.#inflight.delete(key);
      puts.delete(settled);
      if (puts.size === 0 && this.#threadPuts.get(tkey) === puts) this.#threadPuts.delete(tkey);
      done();
    }
  }

  #remember(key, tkey) {
    for (const [set, k, max] of [
      [this.#stored, key, STORED_KEYS],
      [this.#active, tkey, ACTIVE_THREADS],
    ]) {
      set.delete(k);
      set.add(k);
      if (set.size > max) set.delete(set.values().next().value);
    }
  }

  async #put(cfg, key, checkpoint, metadata, newVersions) {
    const bufs = new Bufs();
    const values = {};
    for (const ch of Object.keys(newVersions ?? {})) {
      if (!Object.prototype.hasOwnProperty.call(checkpoint.channel_values ?? {}, ch)) continue;
      const v = checkpoint.channel_values[ch];
      if (v === undefined) continue;
      const [type, bytes] = await this.#dumps.dumpsTyped(v);
      values[ch] = bufs.add(type, bytes);
    }
    const cp = {
      v: checkpoint.v,
      id: checkpoint.id,
      ts: checkpoint.ts,
      values,
      versions: versionsOut(checkpoint.channel_versions, "channel_versions"),
      seen: seenOut(checkpoint.versions_seen),
    };
    if (Array.isArray(checkpoint.updated_channels)) cp.updated = checkpoint.updated_channels;
    const req = { config: cfg, checkpoint: cp, metadata: metadata ?? {}, newVersions: versionsOut(newVersions, "newVersions") };
    // The first task planned from this checkpoint often ends (and sends its
    // writes) right after LangGraph calls put: give it a turn of the event
    // loop to join.
    await nextTurn();
    this.#undispatched.delete(key);
    const parked = this.#parked.get(key);
    this.#parked.delete(key);
    if (!parked) {
      const r = await this.#call("put", req, bufs.list);
      return lgConfig(r.config);
    }
    const ops = [{ op: "put", req }];
    for (const w of parked) {
      // The batch shares one list of byte arrays: renumber the writes' blobs.
      const base = bufs.list.length;
      bufs.list.push(...w.bufs);
      ops.push({ op: "putWrites", req: { ...w.req, writes: w.req.writes.map((x) => ({ ...x, value: { t: x.value.t, b: x.value.b + base } })) } });
    }
    let r;
    try {
      r = await this.#call("writes.batch", { ops }, bufs.list);
    } catch (e) {
      for (const w of parked) w.reject(e);
      throw e;
    }
    parked.forEach((w, k) => {
      const res = r.results[k + 1];
      if (res.error !== undefined) w.reject(new AgentStateError(res.error, res.code));
      else w.resolve();
    });
    const res = r.results[0];
    if (res.error !== undefined) throw new AgentStateError(res.error, res.code);
    return lgConfig(res.ok.config);
  }

  async putWrites(config, writes, taskId, taskPath = "") {
    this.#prefetched = undefined;
    const cfg = wireConfig(config, "putWrites");
    if (!cfg.checkpoint_id) {
      throw new AgentStateError("agentstate: putWrites: config.configurable.checkpoint_id is missing", "INVALID_ARGUMENT");
    }
    const bufs = new Bufs();
    const ws = [];
    for (const [channel, value] of writes) {
      const ch = idString(channel, "putWrites: a write's channel");
      const [type, bytes] = await this.#dumps.dumpsTyped(value);
      ws.push({ channel: ch, value: bufs.add(type, bytes) });
    }
    const req = {
      config: cfg,
      writes: ws,
      taskId: idString(taskId, "putWrites: taskId"),
      taskPath: optString(taskPath, "putWrites: taskPath") ?? "",
    };
    const key = cpKey(cfg, cfg.checkpoint_id);
    const own = this.#inflight.get(key);
    if (own && this.#undispatched.has(key)) {
      return this.#park(key, [own], req, bufs.list); // the put takes them along
    } else if (own) {
      await own; // its put is on its way: go after it (even if it failed: the engine says why)
    } else if (!this.#stored.has(key)) {
      const puts = this.#threadPuts.get(threadKey(cfg));
      if (puts && puts.size > 0) return this.#park(key, [...puts], req, bufs.list);
    }
    return this.#sendWrites(req, bufs.list);
  }

  #park(key, puts, req, bufs) {
    return new Promise((resolve, reject) => {
      const w = { req, bufs, resolve, reject };
      let list = this.#parked.get(key);
      if (!list) this.#parked.set(key, (list = []));
      list.push(w);
      // Unless a put takes them (and settles them), send the writes once the
      // puts in flight have finished, then those that started meanwhile (the
      // put of this checkpoint may be chained behind writes that waited for
      // the puts before it), a few rounds at most.
      const taken = () => !this.#parked.get(key)?.includes(w);
      (async () => {
        for (let round = 0; round < 4 && puts.length > 0; round++) {
          await Promise.allSettled(puts);
          await nextTurn();
          if (taken()) return;
          puts = [...(this.#threadPuts.get(threadKey(req.config)) ?? [])];
        }
        if (taken()) return;
        const still = this.#parked.get(key);
        still.splice(still.indexOf(w), 1);
        if (still.length === 0) this.#parked.delete(key);
        const own = this.#inflight.get(key);
        if (own) await own;
        await this.#sendWrites(req, bufs);
        resolve();
      })().catch(reject);
    });
  }

  async #sendWrites(req, bufs) {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#call("putWrites", req, bufs);
        return;
      } catch (e) {
        // Only a missing checkpoint is worth waiting for, and only while
        // puts are in flight or LangGraph may still be about to send one.
        if (e.code !== "NOT_FOUND" || attempt >= 100) throw e;
        if (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.values()]);
        else await new Promise((r) => setTimeout(r, attempt < 10 ? 0 : 10));
      }
    }
  }

  async deleteThread(threadId) {
    this.#prefetched = undefined;
    await this.#call("deleteThread", { threadId: idString(threadId, "deleteThread: threadId") });
  }

  /** Deletes the checkpoints (and their writes) whose metadata run_id is listed. */
  async deleteForRuns(runIds) {
    this.#prefetched = undefined;
    await this.#call("deleteForRuns", { runIds: [...runIds].map((r) => idString(r, "deleteForRuns: a run id")) });
  }

  /** Copies every checkpoint, value and write of a thread to another thread id. */
  async copyThread(sourceThreadId, targetThreadId) {
    this.#prefetched = undefined;
    await this.#call("copyThread", {
      src: idString(sourceThreadId, "copyThread: sourceThreadId"),
      dst: idString(targetThreadId, "copyThread: targetThreadId"),
    });
  }

  /**
   * Prunes threads: "keep_latest" keeps the latest checkpoint of each
   * namespace (and what rebuilding it needs), "delete" removes everything.
   * Returns what was removed and kept.
   */
  async prune(threadIds, strategy = "keep_latest") {
    this.#prefetched = undefined;
    return this.#call("prune", { threadIds: [...threadIds].map((t) => idString(t, "prune: a thread id")), strategy });
  }

  /** Served by the engine's parent-link walk and its history cache. */
  async getDeltaChannelHistory({ config, channels }) {
    const pre = this.#prefetched;
    this.#prefetched = undefined;
    if (!channels || channels.length === 0) return {};
    const cfg = wireConfig(config, "getDeltaChannelHistory");
    let r;
    let bufs;
    if (pre && cfg.checkpoint_id && pre.key === cpKey(cfg, cfg.checkpoint_id) && channels.every((ch) => pre.channels.has(ch))) {
      r = pre.history;
      bufs = pre.bufs;
    } else {
      try {
        r = await this.#call("deltaHistory", { config: cfg, channels });
        bufs = r.bufs;
      } catch (e) {
        if (e.code !== "NOT_FOUND") throw e;
        r = {};
      }
    }
    const result = {};
    const learn = this.#readMode(cfg);
    for (const ch of channels) {
      const h = r[ch];
      const entry = { writes: [] };
      if (h) {
        entry.writes = await Promise.all(h.writes.map(async (w) => [w.taskId, w.channel, await this.#value(w.value, bufs, learn)]));
        if (h.seed) entry.seed = await this.#value(h.seed, bufs, learn);
      }
      result[ch] = entry;
    }
    return result;
  }

  /**
   * Versions are "<32-digit counter>.<random fraction>", as LangGraph
   * Python's savers make them: they compare as strings in counter order,
   * and two branches forked from one checkpoint never reuse a version (the
   * engine stores one value per version). A number (LangGraph.js's own
   * versions, in a thread imported from its SqliteSaver) continues as a
   * number, the next integer plus a random fraction: LangGraph compares
   * versions with `>`, and the versions_seen of such a thread hold numbers,
   * which a string like the above does not compare with.
   */
  getNextVersion(current) {
    if (typeof current === "number") {
      if (!Number.isFinite(current)) throw new AgentStateError(`agentstate: getNextVersion: cannot continue from version ${current}`, "INVALID_ARGUMENT");
      return Math.floor(current) + 1 + (0.05 + 0.9 * Math.random());
    }
    let n = 0;
    if (typeof current === "string") n = Number.parseInt(current.split(".")[0], 10);
    if (!Number.isFinite(n)) throw new AgentStateError(`agentstate: getNextVersion: cannot continue from version ${current}`, "INVALID_ARGUMENT");
    return `${String(Math.floor(n) + 1).padStart(32, "0")}.${Math.random().toFixed(16)}`;
  }

  /** Storage figures and history-cache counters. */
  async info() {
    return (await this.#conn()).info();
  }
}
