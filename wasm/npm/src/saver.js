// AgentStateSaver: a LangGraph.js checkpoint saver on the agentstate engine.
import { BaseCheckpointSaver, TASKS, getCheckpointId, maxChannelVersion } from "@langchain/langgraph-checkpoint";
import { AgentStateError, Database } from "./engine.js";

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
  return String(thread);
}

function wireConfig(config, what) {
  return {
    thread_id: threadOf(config, what),
    checkpoint_ns: config.configurable.checkpoint_ns ?? "",
    checkpoint_id: getCheckpointId(config) || undefined,
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

export class AgentStateSaver extends BaseCheckpointSaver {
  /** @type {Database} */
  db;
  #ownsDb;

  /**
   * @param {Database} db an open database (AgentStateSaver.open opens one)
   * @param {object} [serde] a LangGraph SerializerProtocol
   */
  constructor(db, serde, { ownsDb = false } = {}) {
    super(serde);
    if (!(db instanceof Database)) throw new TypeError("AgentStateSaver: use AgentStateSaver.open(options) or pass a Database");
    this.db = db;
    this.#ownsDb = ownsDb;
  }

  /**
   * Opens a saver. `options`: `path` (a file under Node, an OPFS name in a
   * browser worker; omitted: a fresh in-memory database), `mode` ("full" |
   * "delta" | "auto", the default: an existing file's own mode), `every`
   * (K), `serde`, and the other Database.open options.
   */
  static async open(options = {}) {
    const db = await Database.open(options);
    return new AgentStateSaver(db, options.serde, { ownsDb: true });
  }

  /** Closes the database if this saver opened it. */
  async close() {
    if (this.#ownsDb) await this.db.close();
  }

  async #value(blob, bufs) {
    return this.serde.loadsTyped(blob.t, bufs[blob.b]);
  }

  async #tuple(t, bufs) {
    const cp = t.checkpoint;
    const values = {};
    for (const [ch, blob] of Object.entries(cp.values ?? {})) values[ch] = await this.#value(blob, bufs);
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
      pendingWrites: await Promise.all(t.writes.map(async (w) => [w.taskId, w.channel, await this.#value(w.value, bufs)])),
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
    const r = await this.db.call("getTuple", { config: wireConfig(tuple.parentConfig, "getTuple") });
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
    const r = await this.db.call("getTuple", { config: wireConfig(config, "getTuple") });
    if (!r.tuple) return undefined;
    return this.#tuple(r.tuple, r.bufs);
  }

  async *list(config, options = {}) {
    const c = config?.configurable ?? {};
    const { limit, before, filter } = options;
    const only = c.checkpoint_id ?? c.thread_ts;
    const req = {
      threadId: c.thread_id === undefined || c.thread_id === null ? "" : String(c.thread_id),
      namespace: c.checkpoint_ns ?? null,
      filter: filter && Object.keys(filter).length > 0 ? filter : undefined,
      before: before ? getCheckpointId(before) || undefined : undefined,
      limit: limit ?? 0,
    };
    if (limit !== undefined && limit <= 0) return;
    if (only) {
      // One named checkpoint: list just past it and keep it if it is there.
      if (req.before !== undefined && only >= req.before) return;
      req.before = `${only}\u0000`;
      req.limit = 0;
    }
    const { cursor } = await this.db.call("list.open", req);
    let finished = false; // the engine closed the cursor itself
    try {
      for (let more = true; more; ) {
        const r = await this.db.call("list.next", { cursor, n: only ? 8 : 32 });
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
      if (!finished) await this.db.call("list.close", { cursor }).catch(() => {});
    }
  }

  async put(config, checkpoint, metadata, newVersions) {
    const p = this.#put(config, checkpoint, metadata, newVersions);
    this.#puts.add(p);
    try {
      return await p;
    } finally {
      this.#puts.delete(p);
    }
  }

  // Puts in flight. LangGraph chains put() behind earlier writes and calls
  // putWrites() for a task at once, so the writes of a fast task can arrive
  // before the put of the checkpoint they belong to (MemorySaver takes them
  // regardless; the engine refuses writes to an unknown checkpoint). Such
  // writes wait for the puts and try again.
  #puts = new Set();

  async #put(config, checkpoint, metadata, newVersions) {
    const cfg = wireConfig(config, "put");
    const bufs = new Bufs();
    const values = {};
    for (const ch of Object.keys(newVersions ?? {})) {
      if (!Object.prototype.hasOwnProperty.call(checkpoint.channel_values ?? {}, ch)) continue;
      const v = checkpoint.channel_values[ch];
      if (v === undefined) continue;
      const [type, bytes] = await this.serde.dumpsTyped(v);
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
    const r = await this.db.call(
      "put",
      { config: cfg, checkpoint: cp, metadata: metadata ?? {}, newVersions: versionsOut(newVersions, "newVersions") },
      bufs.list,
    );
    return lgConfig(r.config);
  }

  async putWrites(config, writes, taskId, taskPath = "") {
    const cfg = wireConfig(config, "putWrites");
    if (!cfg.checkpoint_id) {
      throw new AgentStateError("agentstate: putWrites: config.configurable.checkpoint_id is missing", "INVALID_ARGUMENT");
    }
    const bufs = new Bufs();
    const ws = [];
    for (const [channel, value] of writes) {
      const [type, bytes] = await this.serde.dumpsTyped(value);
      ws.push({ channel, value: bufs.add(type, bytes) });
    }
    const req = { config: cfg, writes: ws, taskId, taskPath: taskPath ?? "" };
    for (let attempt = 0; ; attempt++) {
      try {
        await this.db.call("putWrites", req, bufs.list);
        return;
      } catch (e) {
        // Only a missing checkpoint is worth waiting for, and only while
        // puts are in flight or LangGraph may still be about to send one.
        if (e.code !== "NOT_FOUND" || attempt >= 100) throw e;
        if (this.#puts.size > 0) await Promise.allSettled([...this.#puts]);
        else await new Promise((r) => setTimeout(r, attempt < 10 ? 0 : 10));
      }
    }
  }

  async deleteThread(threadId) {
    await this.db.call("deleteThread", { threadId: String(threadId) });
  }

  /** Deletes the checkpoints (and their writes) whose metadata run_id is listed. */
  async deleteForRuns(runIds) {
    await this.db.call("deleteForRuns", { runIds: [...runIds].map(String) });
  }

  /** Copies every checkpoint, value and write of a thread to another thread id. */
  async copyThread(sourceThreadId, targetThreadId) {
    await this.db.call("copyThread", { src: String(sourceThreadId), dst: String(targetThreadId) });
  }

  /**
   * Prunes threads: "keep_latest" keeps the latest checkpoint of each
   * namespace (and what rebuilding it needs), "delete" removes everything.
   * Returns what was removed and kept.
   */
  async prune(threadIds, strategy = "keep_latest") {
    return this.db.call("prune", { threadIds: [...threadIds].map(String), strategy });
  }

  /** Served by the engine's parent-link walk and its history cache. */
  async getDeltaChannelHistory({ config, channels }) {
    if (!channels || channels.length === 0) return {};
    const cfg = wireConfig(config, "getDeltaChannelHistory");
    let r;
    try {
      r = await this.db.call("deltaHistory", { config: cfg, channels });
    } catch (e) {
      if (e.code !== "NOT_FOUND") throw e;
      r = {};
    }
    const result = {};
    for (const ch of channels) {
      const h = r[ch];
      const entry = { writes: [] };
      if (h) {
        entry.writes = await Promise.all(h.writes.map(async (w) => [w.taskId, w.channel, await this.#value(w.value, r.bufs)]));
        if (h.seed) entry.seed = await this.#value(h.seed, r.bufs);
      }
      result[ch] = entry;
    }
    return result;
  }

  /**
   * Versions are "<32-digit counter>.<random fraction>", as LangGraph
   * Python's savers make them: they compare as strings in counter order,
   * and two branches forked from one checkpoint never reuse a version (the
   * engine stores one value per version). Integer versions from other savers
   * continue from their number.
   */
  getNextVersion(current) {
    let n = 0;
    if (typeof current === "number") n = current;
    else if (typeof current === "string") n = Number.parseInt(current.split(".")[0], 10);
    if (!Number.isFinite(n)) throw new AgentStateError(`agentstate: getNextVersion: cannot continue from version ${current}`, "INVALID_ARGUMENT");
    return `${String(Math.floor(n) + 1).padStart(32, "0")}.${Math.random().toFixed(16)}`;
  }

  /** Storage figures and history-cache counters. */
  async info() {
    return this.db.info();
  }
}
