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
  const item = {
    namespace: i.namespace,
    key: i.key,
    value: i.value,
    createdAt: new Date(i.created_at),
    updatedAt: new Date(i.updated_at),
  };
  if (i.score !== undefined) item.score = i.score;
  return item;
}

const DISTANCES = ["cosine", "inner_product", "l2"];

// Index field paths, as LangGraph documents them: "$" (the whole value),
// dotted names, "[n]" / "[-n]" / "[*]" on arrays, "*" for every member, and
// "{a,b.c}" for several fields at once. The package's exported
// getTextAtPath reads only dotted names and "[*]" of strings, not the paths
// InMemoryStore reads, so the store splits and walks paths itself.
function splitPath(path) {
  const parts = [];
  let word = "";
  for (let i = 0; i < path.length; i++) {
    const ch = path[i];
    if (ch === "[" || ch === "{") {
      if (word) parts.push(word);
      const close = ch === "[" ? "]" : "}";
      let depth = 0;
      let j = i;
      for (; j < path.length; j++) {
        if (path[j] === ch) depth++;
        else if (path[j] === close && --depth === 0) break;
      }
      parts.push(path.slice(i, j + 1));
      word = "";
      i = j;
    } else if (ch === ".") {
      if (word) parts.push(word);
      word = "";
    } else word += ch;
  }
  if (word) parts.push(word);
  return parts;
}

const asText = (v) =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? [String(v)] : v !== null && typeof v === "object" ? [JSON.stringify(v, null, 2)] : [];

function textsAt(value, parts, at = 0) {
  if (at === 0 && (parts.length === 0 || (parts.length === 1 && parts[0] === "$"))) return [JSON.stringify(value, null, 2)];
  if (at >= parts.length) return value === undefined ? [] : asText(value);
  const part = parts[at];
  const out = [];
  if (part.startsWith("[")) {
    if (!Array.isArray(value)) return out;
    const sel = part.slice(1, -1);
    if (sel === "*") for (const v of value) out.push(...textsAt(v, parts, at + 1));
    else {
      let n = Number.parseInt(sel, 10);
      if (n < 0) n += value.length;
      if (n >= 0 && n < value.length) out.push(...textsAt(value[n], parts, at + 1));
    }
  } else if (part.startsWith("{")) {
    if (value === null || typeof value !== "object") return out;
    for (const field of part.slice(1, -1).split(",")) {
      let v = value;
      for (const name of splitPath(field.trim())) v = v !== null && typeof v === "object" && name in v ? v[name] : undefined;
      if (v !== undefined && v !== null) out.push(...asText(v));
    }
  } else if (part === "*") {
    const members = Array.isArray(value) ? value : value !== null && typeof value === "object" ? Object.values(value) : [];
    for (const v of members) out.push(...textsAt(v, parts, at + 1));
  } else if (value !== null && typeof value === "object" && part in value) {
    out.push(...textsAt(value[part], parts, at + 1));
  }
  return out;
}

// The index option (LangGraph.js's IndexConfig): dims, embeddings (an
// Embeddings: embedDocuments, embedQuery), fields (JSON paths, default
// ["$"]), and distanceType (cosine, the default; inner_product; l2).
function indexConfig(index, what) {
  if (index === undefined || index === null) return undefined;
  const bad = (msg) => new AgentStateError(`agentstate: ${what}: index ${msg}`, "INVALID_ARGUMENT");
  if (typeof index !== "object") throw bad("must be an object ({ dims, embeddings, fields })");
  const { dims, embeddings, fields = ["$"], distanceType = "cosine" } = index;
  if (!Number.isInteger(dims) || dims < 1 || dims > 16384) throw bad(`dims must be an integer from 1 to 16384, got ${dims}`);
  if (!embeddings || typeof embeddings.embedDocuments !== "function" || typeof embeddings.embedQuery !== "function") {
    throw bad("embeddings must be an Embeddings (embedDocuments and embedQuery)");
  }
  if (!DISTANCES.includes(distanceType)) throw bad(`distanceType ${JSON.stringify(distanceType)}: want cosine, inner_product or l2`);
  const list = typeof fields === "string" ? [fields] : fields;
  if (!Array.isArray(list)) throw bad("fields must be an array of JSON paths");
  return { ...index, dims, embeddings, fields: list, distanceType, tokenized: list.map((p) => [p, splitPath(p)]) };
}

// A vector as the bridge takes it: float32 little-endian bytes, one of the
// call's buffers (in JSON the engine would scan every character of it).
function wireVector(v, dims, what) {
  if (!v || typeof v.length !== "number" || v.length !== dims) {
    throw new AgentStateError(`agentstate: the embedder gave ${what} of ${v?.length} dimensions, the index has dims=${dims}`, "INVALID_ARGUMENT");
  }
  const bytes = new Uint8Array(new Float32Array(v).buffer);
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
    for (let i = 0; i < bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  }
  return bytes;
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
  #index;

  constructor(db, { ownsDb = false, index, [LAZY]: lazy } = {}) {
    super();
    this.#index = indexConfig(index, "AgentStateStore");
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
   * and a store opened on the same path share one handle. `index`:
   * `{ dims, embeddings, fields, distanceType }` for semantic search (the
   * store embeds puts' fields with `embeddings` and the engine ranks).
   */
  static async open(options = {}) {
    const index = indexConfig(options.index, "AgentStateStore.open");
    const db = await Database.open(storeOpenOptions(options));
    return new AgentStateStore(db, { ownsDb: true, index });
  }

  /** The index configuration given to open, or undefined. */
  get indexConfig() {
    return this.#index;
  }

  /**
   * A store on the file at `path` (":memory:": a fresh in-memory database),
   * made at once, as LangGraph.js's fromConnString stores and savers are:
   * the file is opened by the first call that needs it, or by `setup()`,
   * and an error opening it (a typed AgentStateError, as open's) is thrown
   * by that call. `options` are open's, without `path`. Wrong arguments (a
   * path that is not a string, a bad `index`) are refused here.
   */
  static fromConnString(path, options = {}) {
    const opts = connOptions(path, options, "AgentStateStore.fromConnString");
    const index = indexConfig(opts.index, "AgentStateStore.fromConnString");
    const dbOptions = storeOpenOptions(opts);
    const lazy = new LazyOpen(() => Database.open(dbOptions), "store");
    return new AgentStateStore(undefined, { ownsDb: true, index, [LAZY]: lazy });
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
      if (op.query !== undefined && op.query !== null && op.query !== "" && !this.#index) {
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

  // Embeds what the batch's puts index and its searches ask, in one
  // embedDocuments call (each distinct text once) and one embedQuery per
  // distinct query, and puts the vectors in the requests.
  async #embed(operations, ops) {
    const ix = this.#index;
    const bufs = [];
    if (!ix) return bufs;
    const docs = new Map(); // text -> [[request, path]]
    const queries = new Map(); // query -> [request]
    operations.forEach((op, i) => {
      const req = ops[i];
      if (req.op === "put" && req.value !== null && op.index !== false) {
        const paths = op.index === undefined || op.index === null ? ix.tokenized : op.index.map((p) => [p, splitPath(p)]);
        for (const [path, toks] of paths) {
          const texts = textsAt(op.value, toks);
          texts.forEach((text, j) => {
            if (!docs.has(text)) docs.set(text, []);
            docs.get(text).push([req, texts.length > 1 ? `${path}.${j}` : path]);
          });
        }
      } else if (req.op === "search" && op.query) {
        if (!queries.has(op.query)) queries.set(op.query, []);
        queries.get(op.query).push(req);
      }
    });
    const texts = [...docs.keys()];
    const [vectors, qvecs] = await Promise.all([
      texts.length ? ix.embeddings.embedDocuments(texts) : [],
      Promise.all([...queries.keys()].map((q) => ix.embeddings.embedQuery(q))),
    ]);
    if (vectors.length !== texts.length) {
      throw new AgentStateError(`agentstate: the embedder gave ${vectors.length} vectors for ${texts.length} texts`, "INVALID_ARGUMENT");
    }
    texts.forEach((text, i) => {
      bufs.push(wireVector(vectors[i], ix.dims, `the vector of ${JSON.stringify(text.slice(0, 40))}`));
      for (const [req, path] of docs.get(text)) (req.vectors ??= {})[path] = bufs.length - 1;
    });
    [...queries.values()].forEach((reqs, i) => {
      bufs.push(wireVector(qvecs[i], ix.dims, "the query's vector"));
      for (const req of reqs) Object.assign(req, { query: bufs.length - 1, distance: ix.distanceType });
    });
    return bufs;
  }

  /** Runs the operations in order, in one transaction (embedding first, with an index). */
  async batch(operations) {
    const ops = operations.map((op) => this.#op(op));
    const bufs = await this.#embed(operations, ops);
    const db = this.db ?? (await this.#conn());
    const { results } = await db.call("store.batch", { ops }, bufs);
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
   * $lte), newest first; with a `query` (and an index), ranked by the
   * items' vectors instead, each item with a `score` (higher first). Without
   * an index a `query` is refused (INVALID_ARGUMENT), not answered unranked.
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
