import type {
  BaseCheckpointSaver,
  BaseStore,
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  DeltaChannelHistory,
  Item,
  Operation,
  OperationResults,
  PendingWrite,
  SearchItem,
  SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";

export type ErrorCode =
  | "NOT_FOUND" | "CONFLICT" | "INVALID_ARGUMENT" | "INVALID_OPTION" | "CLOSED" | "READ_ONLY"
  | "MODE_MISMATCH" | "SCHEMA_TOO_NEW" | "NOT_AGENTSTATE" | "CORRUPT" | "DISK_FULL" | "BUSY" | "CANCELED" | "TIMEOUT" | "INTERNAL"
  | "CONNECTION_LOST" | "OUTCOME_UNKNOWN" | "MISSING_DEPENDENCY";

export class AgentStateError extends Error {
  code: ErrorCode;
}

/**
 * Where a database's files live when there is no file system the package
 * knows (a Durable Object, a key-value store, your own medium): an object
 * that SQLite's VFS calls, synchronously, for every read and write of the
 * database file and its companions ("<path>-wal", "<path>-journal"; never
 * temporary files, which stay in memory). Pass it as `open({ host })`.
 *
 * Every method is synchronous and may throw: the error becomes SQLite's
 * I/O error for that call (BUSY when the error's `code` is "BUSY") and its
 * message reaches the AgentStateError. Offsets and sizes are bytes
 * (numbers). Ids are the host's own (small integers).
 *
 * The engine opens `path` in WAL mode (the WAL-index in memory, never in
 * a file): a commit appends frames to "<path>-wal" and a checkpoint copies
 * pages into `path`. A write must be durable, or at least kept in order with the
 * later ones, by the time the next call returns; `sync` is where a host
 * that buffers must flush. Within one JavaScript realm the package keeps
 * connections apart itself; keeping other processes away is the host's
 * business (`lock`, or an exclusive medium).
 */
export interface FileHost {
  /** The database file this host serves (what the engine opens). */
  readonly path: string;
  /**
   * Opens `name` (`path` or a companion). Returns an id >= 0, or -1 when
   * the file does not exist and `create` is false.
   */
  open(name: string, options: { create: boolean; readOnly: boolean; kind: "main" | "wal" | "journal" | "super-journal" | "other" }): number;
  /** Reads into `into` from `offset`; returns the bytes read (fewer at the end of the file; the rest reads as zeros). */
  read(id: number, into: Uint8Array, offset: number): number;
  /** Writes all of `from` at `offset`, growing the file if needed. */
  write(id: number, from: Uint8Array, offset: number): void;
  /** The file's size in bytes. */
  size(id: number): number;
  /** Cuts (or extends with zeros) the file to `size` bytes. */
  truncate(id: number, size: number): void;
  /** Makes what was written durable. */
  sync(id: number): void;
  /**
   * Optional: called on `path`'s id after each committed transaction (in
   * WAL mode with synchronous=NORMAL no sync marks a commit). A host that
   * collects writes stores them here. SQLite ignores a failure here: such
   * a host must then fail its later calls.
   */
  commit?(id: number): void;
  close(id: number): void;
  /** Deletes a file (nothing when it does not exist). */
  remove(name: string): void;
  /** Whether `name` exists and is not empty. */
  exists(name: string): boolean;
  /**
   * Optional ownership hook, for hosts shared with other processes: called
   * when the engine's connection takes (`lock`) or drops (`unlock`)
   * SQLite's lock on `path` ("shared", "reserved", "exclusive"; "none",
   * "shared" on unlock). Return false (or throw an error with code "BUSY")
   * to refuse: SQLite reports BUSY.
   */
  lock?(id: number, level: "shared" | "reserved" | "exclusive"): boolean | void;
  unlock?(id: number, level: "none" | "shared"): void;
  /** Optional: called once when the database closes. */
  dispose?(): void;
}

/**
 * A FileHost over a SQLite-backed Durable Object's storage
 * (`ctx.storage`): the database `name` as 4 KiB chunks in the tables
 * `agentstate_files` and `agentstate_chunks` of `ctx.storage.sql`, written
 * as SQLite writes them (a step writes only the pages and WAL frames it
 * changed; every value is one chunk), one storage transaction per commit.
 */
export function durableObjectHost(storage: { sql: { exec(query: string, ...bindings: unknown[]): any } } | { exec(query: string, ...bindings: unknown[]): any }, name?: string, options?: { chunkSize?: number }): FileHost & { diskBytes(): number };

export interface OpenOptions {
  /** A file (Node) or an OPFS file name (browser worker); omitted: a fresh in-memory database. */
  path?: string;
  /**
   * A PostgreSQL database, `postgresql://user:password@host/db` (Node only,
   * with node-postgres installed: `npm install pg`; a `path` that is such a
   * URL works too). Browsers and edge hosts refuse it (INVALID_ARGUMENT);
   * without `pg` it is MISSING_DEPENDENCY. Messages never show the password.
   */
  url?: string;
  /** With `url`: the schema of the engine's tables (first in the search_path; it must exist). */
  schema?: string;
  /** With `url`: each call's deadline in milliseconds, the open's too (default 30 s; 0: none). */
  timeoutMs?: number;
  /** Files served by a FileHost (Durable Objects: `durableObjectHost(ctx.storage)`), in any runtime. */
  host?: FileHost;
  /** Bytes of a database file, opened as a private in-memory copy. */
  image?: Uint8Array | ArrayBuffer;
  /** Open `path` in the origin private file system (default in browsers). */
  opfs?: boolean;
  /**
   * The file's channel mode (docs/contract.md §2.2). "auto" (the default)
   * opens an existing file in the mode it records and creates a new one in
   * full mode; "full" or "delta" must match an existing file's mode
   * (MODE_MISMATCH otherwise). It governs the engine's thread API on the
   * file (Go's Commit and State, the CLI), not how AgentStateSaver stores a
   * LangGraph.js graph: every channel is stored as LangGraph serialises it,
   * each version once, in every mode; for a message list kept as deltas use
   * LangGraph's `DeltaValue` channel (`snapshotFrequency: K`).
   */
  mode?: "full" | "delta" | "auto";
  /**
   * Snapshot cadence K with `mode: "delta"` (default 10; an existing delta
   * file's K must match). Refused (INVALID_ARGUMENT) with any other mode.
   */
  every?: number;
  /** History cache bound in bytes (default 64 MiB; 0 disables). */
  cacheBytes?: number;
  /**
   * Snapshot retention as the engine's thread API writes delta snapshots
   * (and as puts store large whole values, docs/contract.md §2.5):
   * default true, so a delta thread's
   * storage stays linear in its messages; false keeps every snapshot (a
   * delta thread then grows as N^2/K).
   */
  autoRetain?: boolean;
  /**
   * What a returned commit survives: "normal" (default: the process's end;
   * on power loss, or a PostgreSQL server's crash, the last commits may go,
   * never part of one) or "full" (power loss too; PostgreSQL
   * synchronous_commit=on).
   */
  synchronous?: "normal" | "full";
  readOnly?: boolean;
  /** How long a call waits for another connection's lock (milliseconds; default 30 s). */
  busyTimeoutMs?: number;
  /** Reader connections (default 4). */
  readConns?: number;
  /** The store's default TTL in milliseconds (AgentStateStore's `ttl.defaultTtl` in minutes sets it). */
  storeDefaultTtlMs?: number;
  /** Store reads push back expiry (default true). */
  storeRefreshOnRead?: boolean;
  /** Milliseconds between background sweeps of expired store items (default: none). */
  storeSweepIntervalMs?: number;
  /** The engine's Node module with PostgreSQL, agentstate-pg.wasm, for `url` (default: dist/ of this package): a WebAssembly.Module or its bytes. */
  pgWasmBytes?: BufferSource | WebAssembly.Module;
  /** Where agentstate-pg.wasm is read from (default: next to this package's dist/). */
  pgWasmURL?: string | URL;
  /** Where browsers fetch agentstate.wasm (default: next to this package's dist/). */
  wasmURL?: string | URL;
  /** The engine module: a WebAssembly.Module (workerd, bundlers: `import wasm from "langgraph-checkpoint-agentstate/agentstate.wasm"`) or its bytes. */
  wasmBytes?: BufferSource | WebAssembly.Module;
  /** SQLite, the official sqlite3.wasm: a WebAssembly.Module (`import sqliteWasm from "langgraph-checkpoint-agentstate/sqlite3.wasm"`) or its bytes. */
  sqliteWasm?: BufferSource | WebAssembly.Module;
  /** Where browsers fetch sqlite3.wasm (default: next to this package's dist/). */
  sqliteWasmURL?: string | URL;
  /** SQLite's callback module: a WebAssembly.Module (`import callbacksWasm from "langgraph-checkpoint-agentstate/sqlite-callbacks.wasm"`) or its bytes. */
  callbacksWasm?: BufferSource | WebAssembly.Module;
  /** Where browsers fetch sqlite-callbacks.wasm (default: next to this package's dist/). */
  callbacksWasmURL?: string | URL;
  /** Print each engine call's time inside Go (first open only). */
  trace?: boolean;
}

export interface Info {
  path: string;
  schema_version: number;
  mode: string;
  snapshot_every: number;
  page_size: number;
  page_count: number;
  file_bytes: number;
  rows: Record<string, number>;
  cache: { hits: number; misses: number; evictions: number; entries: number; bytes: number; max_bytes: number };
  [key: string]: unknown;
}

export type RunStatus = "pending" | "running" | "success" | "error" | "timeout" | "interrupted";
export type ThreadStatus = "idle" | "busy" | "interrupted" | "error";

/** Token counts of one model. */
export interface ModelTokens {
  input: number;
  output: number;
  total: number;
}

/** What a run used, as Go's records.RunTotals (fields left at zero are summed from token_usage_by_model). */
export interface RunTotals {
  total_input_tokens?: number;
  total_output_tokens?: number;
  total_tokens?: number;
  llm_call_count?: number;
  lead_agent_tokens?: number;
  subagent_tokens?: number;
  middleware_tokens?: number;
  token_usage_by_model?: Record<string, ModelTokens>;
  message_count?: number;
  first_human_message?: string;
  last_ai_message?: string;
}

/** A run to create (Go's records.NewRun). */
export interface NewRun {
  thread_id: string;
  run_id?: string;
  assistant_id?: string;
  user_id?: string;
  status?: RunStatus;
  model_name?: string;
  multitask_strategy?: "reject" | "interrupt" | "rollback";
  metadata?: Record<string, unknown>;
  kwargs?: Record<string, unknown>;
  idempotency_key?: string;
}

/** A run record (Go's records.Run). */
export interface Run extends Required<RunTotals> {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  user_id: string;
  status: RunStatus;
  model_name: string;
  multitask_strategy: string;
  metadata: Record<string, unknown> | null;
  kwargs: Record<string, unknown> | null;
  error: string;
  created_at: string;
  updated_at: string;
  idempotency_key?: string;
  owner: string;
}

/** Token usage of a thread's runs (Go's records.TokenUsage). */
export interface TokenUsage {
  total_runs: number;
  total_input_tokens: number;
  total_output_tokens: number;
  total_tokens: number;
  llm_call_count: number;
  by_model: Record<string, ModelTokens & { runs: number }>;
  by_caller: { lead_agent: number; subagent: number; middleware: number };
}

/** An event to append, or one read back (Go's records.Event; seq and created_at are the engine's). */
export interface Event {
  thread_id: string;
  run_id?: string;
  event_type?: string;
  /** "message", "trace", "middleware", "outputs" or "error". */
  category?: string;
  content?: unknown;
  metadata?: Record<string, unknown> | null;
  /** The user the event was written for; reads with `userId` see only theirs. */
  user_id?: string;
  seq?: number;
  created_at?: string;
}

/** An events read, count or delete scoped to one user's events (Go's Events.ForUser); omitted, null or "": every writer's. */
export interface UserFilter {
  userId?: string | null;
}

/** A thread record (Go's records.Thread). */
export interface Thread {
  thread_id: string;
  assistant_id: string;
  user_id: string;
  display_name: string;
  status: ThreadStatus;
  metadata: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

/** The owner that reaches every user's threads (admin tools only). */
export const ANY_OWNER: { readonly anyOwner: true };
/** A thread call's owner: a user id, or ANY_OWNER. */
export type Owner = string | typeof ANY_OWNER;

/** Run records: at most one pending or running run per thread. */
export interface Runs {
  create(run: NewRun): Promise<{ run: Run; new: boolean; interrupted: string }>;
  get(runId: string): Promise<Run>;
  list(threadId: string): Promise<Run[]>;
  setStatus(runId: string, status: RunStatus, error?: string): Promise<void>;
  complete(runId: string, status: RunStatus, options?: { error?: string; totals?: RunTotals }): Promise<void>;
  delete(runId: string): Promise<void>;
  tokenUsage(threadId: string, options?: { includeActive?: boolean }): Promise<TokenUsage>;
  setModelName(runId: string, modelName: string): Promise<void>;
  progress(runId: string, progress: Partial<RunTotals>): Promise<void>;
  listActive(options?: { pendingOnly?: boolean; before?: string; limit?: number }): Promise<Run[]>;
  apply(op: {
    op: "put" | "renew" | "cancel" | "finalize" | "takeover" | "status";
    runId: string;
    run?: Record<string, unknown>;
    worker?: string;
    lease?: string;
    action?: "interrupt" | "rollback";
    status?: RunStatus;
    error?: string;
    stopReason?: string;
    graceSeconds?: number;
  }): Promise<{ done: boolean; cancelAction: string | null }>;
}

/** The event stream: seq is allocated inside the write, gap-free per thread. */
export interface Events {
  put(event: Event): Promise<Event>;
  put(events: Event[]): Promise<Event[]>;
  listMessages(threadId: string, options?: { limit?: number; beforeSeq?: number; afterSeq?: number } & UserFilter): Promise<Event[]>;
  listRunEvents(threadId: string, runId: string, options?: { types?: string[]; taskId?: string; afterSeq?: number; limit?: number } & UserFilter): Promise<Event[]>;
  putIfAbsent(event: Event): Promise<{ event: Event; created: boolean }>;
  listRunMessages(threadId: string, runId: string, options?: { limit?: number; beforeSeq?: number; afterSeq?: number } & UserFilter): Promise<Event[]>;
  lastVisibleAISeq(threadId: string, runIds: Iterable<string>, options?: UserFilter): Promise<Record<string, number>>;
  countMessages(threadId: string, options?: UserFilter): Promise<number>;
  deleteThread(threadId: string, options?: UserFilter): Promise<number>;
  deleteRun(threadId: string, runId: string, options?: UserFilter): Promise<number>;
}

/** Thread records, scoped to an owner: another owner's thread is NOT_FOUND. */
export interface Threads {
  create(owner: Owner, thread?: { thread_id?: string; assistant_id?: string; display_name?: string; status?: ThreadStatus; metadata?: Record<string, unknown> }): Promise<Thread>;
  get(owner: Owner, threadId: string): Promise<Thread>;
  search(owner: Owner, query?: { metadata?: Record<string, unknown>; status?: ThreadStatus; limit?: number; offset?: number }): Promise<Thread[]>;
  update(owner: Owner, threadId: string, patch: { displayName?: string; status?: ThreadStatus; metadata?: Record<string, unknown>; touch?: boolean }): Promise<void>;
  setOwner(owner: Owner, threadId: string, newOwner: string): Promise<void>;
  delete(owner: Owner, threadId: string): Promise<void>;
}

export class Database {
  static open(options?: OpenOptions): Promise<Database>;
  /** Run records: Go's db.Runs(). */
  readonly runs: Runs;
  /** The event stream: Go's db.Events(). */
  readonly events: Events;
  /** Thread records: Go's db.Threads(). */
  readonly threads: Threads;
  /** Low-level engine call (the ops of wasm/bridge; the typed handles above cover the record ops). */
  call(op: string, payload?: object, bufs?: Uint8Array[]): Promise<any>;
  info(): Promise<Info>;
  /** Whether the handle runs snapshot retention as it writes (OpenOptions.autoRetain; default true). */
  readonly autoRetain: boolean;
  /** A consistent copy of the whole database file. */
  image(): Promise<Uint8Array>;
  close(): Promise<void>;
  readonly closed: boolean;
}

export function loadEngine(
  options?: Pick<OpenOptions, "wasmURL" | "wasmBytes" | "sqliteWasm" | "sqliteWasmURL" | "callbacksWasm" | "callbacksWasmURL" | "trace">,
): Promise<unknown>;

/** The kind of JavaScript host the package detected. */
export const runtime: "node" | "deno" | "workerd" | "browser";

export interface PruneReport {
  threads: number;
  checkpoints_removed: number;
  checkpoints_kept: number;
  [key: string]: unknown;
}

/** The options of fromConnString: open's, with the path as its first argument. */
export type ConnStringOptions = Omit<OpenOptions, "path" | "image" | "host">;

export class AgentStateSaver extends BaseCheckpointSaver<string | number> {
  /** The database; of a saver made by fromConnString, set once its file is open. */
  db: Database;
  constructor(db: Database, serde?: SerializerProtocol);
  static open(options?: OpenOptions & { serde?: SerializerProtocol }): Promise<AgentStateSaver>;
  /**
   * A saver on `path` (":memory:": in memory), returned at once as
   * LangGraph.js's `SqliteSaver.fromConnString` returns one; the file opens
   * at the first call or at `setup()`, which throws open's errors
   * (AgentStateError). A path that is not a string is refused here.
   */
  static fromConnString(path: string, options?: ConnStringOptions & { serde?: SerializerProtocol }): AgentStateSaver;
  /** Opens the file if not yet open (open creates, migrates and verifies it); harmless twice; CLOSED once closed. */
  setup(): Promise<void>;
  /** Closes the database if this saver opened it; before the first call, nothing is open. */
  close(): Promise<void>;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig>;
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
  deleteThread(threadId: string): Promise<void>;
  getDeltaChannelHistory(options: { config: RunnableConfig; channels: string[] }): Promise<Record<string, DeltaChannelHistory>>;
  deleteForRuns(runIds: Iterable<string>): Promise<void>;
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void>;
  prune(threadIds: Iterable<string>, strategy?: "keep_latest" | "delete"): Promise<PruneReport>;
  getNextVersion(current: string | number | undefined): string | number;
  info(): Promise<Info>;
}

export interface TTLConfig {
  /** Minutes; items put without a TTL expire after it. */
  defaultTtl?: number;
  /** Reads push back expiry (default true). */
  refreshOnRead?: boolean;
  /** Minutes between background sweeps of expired items (default: none). */
  sweepIntervalMinutes?: number;
}

/**
 * Semantic search (LangGraph.js's IndexConfig): the store embeds the
 * `fields` of each put (JSON paths: "$", "a.b", "arr[*].f"; default ["$"])
 * with `embeddings`, the engine keeps the vectors with the item and ranks.
 */
export interface StoreIndexConfig {
  dims: number;
  embeddings: { embedDocuments(texts: string[]): Promise<number[][]>; embedQuery(text: string): Promise<number[]> };
  fields?: string[];
  /** cosine (default), inner_product, or l2 (score: minus the distance); higher scores rank first. */
  distanceType?: "cosine" | "inner_product" | "l2";
}

export class AgentStateStore extends BaseStore {
  /** The database; of a store made by fromConnString, set once its file is open. */
  db: Database;
  constructor(db: Database);
  /** `index`: semantic search (StoreIndexConfig); without it a search `query` is refused (INVALID_ARGUMENT). */
  static open(options?: OpenOptions & { ttl?: TTLConfig; index?: StoreIndexConfig }): Promise<AgentStateStore>;
  /** The index given to open, or undefined. */
  readonly indexConfig: StoreIndexConfig | undefined;
  /**
   * A store on `path` (":memory:": in memory), returned at once; the file
   * opens at the first call or at `setup()`, which throws open's errors
   * (AgentStateError). A path that is not a string, or a bad `index`, is
   * refused here.
   */
  static fromConnString(path: string, options?: ConnStringOptions & { ttl?: TTLConfig; index?: StoreIndexConfig }): AgentStateStore;
  /** Opens the file if not yet open (open creates, migrates and verifies it); harmless twice; CLOSED once closed. */
  setup(): Promise<void>;
  /** Closes the database if this store opened it; before the first call, nothing is open. */
  close(): Promise<void>;
  batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>>;
  /** Filters as LangGraph's ($eq $ne $gt $gte $lt $lte), newest first; with a `query` and an index, ranked by vectors (items carry `score`). Without an index a `query` is refused with INVALID_ARGUMENT, not answered unranked. */
  search(namespacePrefix: string[], options?: { filter?: Record<string, any>; limit?: number; offset?: number; query?: string; refreshTtl?: boolean }): Promise<SearchItem[]>;
  get(namespace: string[], key: string, options?: { refreshTtl?: boolean }): Promise<Item | null>;
  /** `options.ttl`: minutes until expiry, null for never; omitted: the default TTL. */
  put(namespace: string[], key: string, value: Record<string, any>, index?: false | string[], options?: { ttl?: number | null }): Promise<void>;
  sweep(): Promise<number>;
}
