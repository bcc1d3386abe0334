// AgentStateStore: a LangGraph.js BaseStore on the agentstate engine.
import { AsyncBatchedStore, BaseStore, validateNamespace } from "@langchain/langgraph-checkpoint";
import { idString } from "./args.js";
import { AgentStateError, Database } from "./engine.js";
import { LazyOpen, connOptions } from "./lazy.js";

const MINUTE = 60_000;

function ttlFields(ttl) {
  // undefined: the store's default TTL; null: never expires; minutes > 0.
  if (ttl === undefined) return {};
  if (ttl === null) return { noExpiry: true };
  if (typeof ttl !== "number" || !(ttl > 0)) {
    throw new AgentStateError(`agentstate: ttl must be a positive number of minutes or null, got ${ttl}`, "INVALID_ARGUMENT");
  }
  return { ttlMs: ttl * MINUTE };
}

// A namespace (or prefix, or match path) of a store call: an array of
// strings (LangGraph's validateNamespace checks those its methods take; a
// batch is checked here), "*" allowed as a match path's wildcard.
function namespaceOf(ns, what) {
  if (!Array.isArray(ns)) {
    throw new AgentStateError(`agentstate: ${what} must be an array of strings, got ${ns === null ? "null" : typeof ns}`, "INVALID_ARGUMENT");
  }
  return ns.map((label, i) => idString(label, `${what}[${i}]`, false));
}

function toItem(i) {
  if (!i) return null;
  return {
    namespace: i.namespace,
    key: i.key,
    value: i.value,
    createdAt: new Date(i.created_at),
    updatedAt: new Date(i.updated_at),
  };
}

// LangGraph runs a graph's nodes against an AsyncBatchedStore wrapping the
// store given to compile(), and its put(namespace, key, value) drops put's
// fourth and fifth arguments: `config.store.put(ns, key, value, undefined,
// { ttl: 60 })` in a node stored the item with the default TTL, silently.
// For an AgentStateStore behind it, put forwards the TTL into the batch
// (which this store reads; an invalid one is refused there, as by put);
// every other store, and every call without options, gets LangGraph's own
// put. The peer dependency is pinned, so the wrapper's queue is the one this
// was written against; test/store.test.js checks it in a graph.
function forwardTtlThroughBatchedStore() {
  const proto = AsyncBatchedStore?.prototype;
  if (!proto || typeof proto.put !== "function" || proto.put.forwardsAgentStateTtl) return;
  const put = proto.put;
  const forwarding = function (namespace, key, value, index, options) {
    if (this.store instanceof AgentStateStore && options?.ttl !== undefined && typeof this.enqueueOperation === "function") {
      validateNamespace(namespace);
      return this.enqueueOperation({ namespace, key, value, ttl: options.ttl });
    }
    return put.call(this, namespace, key, value, index, options);
  };
  forwarding.forwardsAgentStateTtl = true;
  proto.put = forwarding;
}

// There is no semantic search yet (issue 41): an index given to open, or a
// query given to search, is refused rather than ignored, since a caller
// cannot tell unranked items from an answer.
function noIndex(options, what) {
  if (options?.index !== undefined && options.index !== null) {
    throw new AgentStateError(
      `agentstate: ${what}: the index option (semantic search) is not supported by AgentStateStore yet; open it without index and search with a filter`,
      "INVALID_ARGUMENT",
    );
  }
}

// Store options as Database.open's: LangGraph's TTLConfig in minutes.
function storeOpenOptions(options) {
  const { ttl = {}, index, ...rest } = options;
  return {
    ...rest,
    storeDefaultTtlMs: ttl.defaultTtl !== undefined && ttl.defaultTtl !== null ? ttl.defaultTtl * MINUTE : undefined,
    storeRefreshOnRead: ttl.refreshOnRead,
    storeSweepIntervalMs: ttl.sweepIntervalMinutes ? ttl.sweepIntervalMinutes * MINUTE : undefined,
  };
}

// The constructor's private way to make a store whose database opens later.
const LAZY = Symbol("agentstate lazy open");

export class AgentStateStore extends BaseStore {
  /** @type {Database} the database (of a fromConnString store: once opened) */
  db;
  #ownsDb;
  /** @type {LazyOpen | undefined} */
  #lazy;

  constructor(db, { ownsDb = false, [LAZY]: lazy } = {}) {
    super();
    if (lazy instanceof LazyOpen && db === undefined) {
      this.#lazy = lazy;
    } else {
      if (!(db instanceof Database)) throw new TypeError("AgentStateStore: use AgentStateStore.open(options) or pass a Database");
      this.db = db;
    }
    this.#ownsDb = ownsDb;
    forwardTtlThroughBatchedStore();
  }

  /**
   * Opens a store. `options`: `path` (omitted: in memory), and `ttl`:
   * `{ defaultTtl, refreshOnRead, sweepIntervalMinutes }` (minutes, as
   * LangGraph's TTLConfig); plus the other Database.open options. A saver
   * and a store opened on the same path share one handle. `index` (semantic
   * search) is not supported yet and is refused (INVALID_ARGUMENT).
   */
  static async open(options = {}) {
    noIndex(options, "AgentStateStore.open");
    const db = await Database.open(storeOpenOptions(options));
    return new AgentStateStore(db, { ownsDb: true });
  }

  /**
   * A store on the file at `path` (":memory:": a fresh in-memory database),
   * made at once, as LangGraph.js's fromConnString stores and savers are:
   * the file is opened by the first call that needs it, or by `setup()`,
   * and an error opening it (a typed AgentStateError, as open's) is thrown
   * by that call. `options` are open's, without `path`. Wrong arguments (a
   * path that is not a string, an `index`) are refused here.
   */
  static fromConnString(path, options = {}) {
    const opts = connOptions(path, options, "AgentStateStore.fromConnString");
    noIndex(opts, "AgentStateStore.fromConnString");
    const dbOptions = storeOpenOptions(opts);
    const lazy = new LazyOpen(() => Database.open(dbOptions), "store");
    return new AgentStateStore(undefined, { ownsDb: true, [LAZY]: lazy });
  }

  #conn() {
    return this.db ?? this.#lazy.get((db) => (this.db = db));
  }

  /**
   * LangGraph's set-up call: opens the file if it is not yet open (open
   * creates, migrates and verifies it; there is nothing else to set up).
   * Harmless to call again; on a closed store it throws CLOSED.
   */
  async setup() {
    const db = await this.#conn();
    if (db.closed) throw new AgentStateError("agentstate: database is closed", "CLOSED");
  }

  /** Closes the database if this store opened it (before its first call: nothing to close). */
  async close() {
    await this.#lazy?.close();
    if (this.#ownsDb && this.db) await this.db.close();
  }

  #op(op) {
    if ("namespacePrefix" in op) {
      if (op.query !== undefined && op.query !== null && op.query !== "") {
        throw new AgentStateError(
          "agentstate: search with a query needs an index (semantic search): this store has no index; search with a filter instead",
          "INVALID_ARGUMENT",
        );
      }
      return {
        op: "search",
        prefix: namespaceOf(op.namespacePrefix, "search: namespacePrefix"),
        filter: op.filter && Object.keys(op.filter).length > 0 ? op.filter : undefined,
        limit: op.limit ?? 10,
        offset: op.offset ?? 0,
        refresh: op.refreshTtl,
      };
    }
    if ("value" in op) {
      const what = op.value === null ? "delete" : "put";
      return {
        op: "put",
        namespace: namespaceOf(op.namespace, `${what}: namespace`),
        key: idString(op.key, `${what}: key`, false),
        value: op.value ?? null,
        ...ttlFields(op.ttl),
      };
    }
    if ("key" in op && "namespace" in op) {
      return { op: "get", namespace: namespaceOf(op.namespace, "get: namespace"), key: idString(op.key, "get: key", false), refresh: op.refreshTtl };
    }
    if ("matchConditions" in op || "maxDepth" in op || "limit" in op) {
      const req = { op: "list", maxDepth: op.maxDepth ?? 0, limit: op.limit ?? 100, offset: op.offset ?? 0 };
      for (const c of op.matchConditions ?? []) {
        if (c.matchType === "prefix") req.prefix = namespaceOf(c.path, "listNamespaces: a prefix");
        else if (c.matchType === "suffix") req.suffix = namespaceOf(c.path, "listNamespaces: a suffix");
        else throw new AgentStateError(`agentstate: unknown match type ${c.matchType}`, "INVALID_ARGUMENT");
      }
      return req;
    }
    throw new AgentStateError(`agentstate: unknown store operation ${JSON.stringify(op)}`, "INVALID_ARGUMENT");
  }

  /** Runs the operations in order, in one transaction. */
  async batch(operations) {
    const ops = operations.map((op) => this.#op(op));
    const db = this.db ?? (await this.#conn());
    const { results } = await db.call("store.batch", { ops });
    return results.map((r, i) => {
      switch (ops[i].op) {
        case "get":
          return toItem(r.item);
        case "search":
          return r.items.map(toItem);
        case "list":
          return r.namespaces;
        default:
          return undefined;
      }
    });
  }

  /** `options.refreshTtl` overrides the store's refreshOnRead for this read. */
  async get(namespace, key, options = {}) {
    validateNamespace(namespace, { allowEmpty: true, allowReservedRoot: true });
    const [item] = await this.batch([{ namespace, key, refreshTtl: options.refreshTtl }]);
    return item;
  }

  /**
   * Search by namespace prefix and value filter ($eq $ne $gt $gte $lt
   * $lte), newest first. There is no vector index yet: a `query` is
   * refused (INVALID_ARGUMENT), not answered with unranked items.
   */
  async search(namespacePrefix, options = {}) {
    validateNamespace(namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    const { filter, limit = 10, offset = 0, query, refreshTtl } = options;
    const [items] = await this.batch([{ namespacePrefix, filter, limit, offset, query, refreshTtl }]);
    return items;
  }

  /** `options.ttl`: minutes until expiry, null for never; omitted: the default TTL. */
  async put(namespace, key, value, index, options = {}) {
    validateNamespace(namespace);
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new AgentStateError("agentstate: store values must be objects", "INVALID_ARGUMENT");
    }
    await this.batch([{ namespace, key, value, index, ttl: options.ttl }]);
  }

  /** Deletes every expired item; returns how many. */
  async sweep() {
    return (await (await this.#conn()).call("store.sweep")).deleted;
  }
}
