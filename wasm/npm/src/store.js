// AgentStateStore: a LangGraph.js BaseStore on the agentstate engine.
import { AsyncBatchedStore, BaseStore, validateNamespace } from "@langchain/langgraph-checkpoint";
import { idString } from "./args.js";
import { AgentStateError, Database } from "./engine.js";

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

export class AgentStateStore extends BaseStore {
  /** @type {Database} */
  db;
  #ownsDb;

  constructor(db, { ownsDb = false } = {}) {
    super();
    if (!(db instanceof Database)) throw new TypeError("AgentStateStore: use AgentStateStore.open(options) or pass a Database");
    this.db = db;
    this.#ownsDb = ownsDb;
    forwardTtlThroughBatchedStore();
  }

  /**
   * Opens a store. `options`: `path` (omitted: in memory), and `ttl`:
   * `{ defaultTtl, refreshOnRead, sweepIntervalMinutes }` (minutes, as
   * LangGraph's TTLConfig); plus the other Database.open options. A saver
   * and a store opened on the same path share one handle.
   */
  static async open(options = {}) {
    const { ttl = {}, ...rest } = options;
    const db = await Database.open({
      ...rest,
      storeDefaultTtlMs: ttl.defaultTtl !== undefined && ttl.defaultTtl !== null ? ttl.defaultTtl * MINUTE : undefined,
      storeRefreshOnRead: ttl.refreshOnRead,
      storeSweepIntervalMs: ttl.sweepIntervalMinutes ? ttl.sweepIntervalMinutes * MINUTE : undefined,
    });
    return new AgentStateStore(db, { ownsDb: true });
  }

  async close() {
    if (this.#ownsDb) await this.db.close();
  }

  #op(op) {
    if ("namespacePrefix" in op) {
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
    const { results } = await this.db.call("store.batch", { ops });
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
   * $lte), newest first. There is no vector index: `query` is ignored, as
   * InMemoryStore ignores it without an index.
   */
  async search(namespacePrefix, options = {}) {
    validateNamespace(namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    const { filter, limit = 10, offset = 0, refreshTtl } = options;
    const [items] = await this.batch([{ namespacePrefix, filter, limit, offset, refreshTtl }]);
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
    return (await this.db.call("store.sweep")).deleted;
  }
}
