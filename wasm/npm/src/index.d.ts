import type { BaseCheckpointSaver, BaseStore, Item, SerializerProtocol } from "@langchain/langgraph-checkpoint";

export type ErrorCode =
  | "NOT_FOUND" | "CONFLICT" | "INVALID_ARGUMENT" | "INVALID_OPTION" | "CLOSED" | "READ_ONLY"
  | "MODE_MISMATCH" | "SCHEMA_TOO_NEW" | "NOT_AGENTSTATE" | "CORRUPT" | "BUSY" | "CANCELED" | "TIMEOUT" | "INTERNAL";

export class AgentStateError extends Error {
  code: ErrorCode;
}

export interface OpenOptions {
  /** A file (Node) or an OPFS file name (browser worker); omitted: a fresh in-memory database. */
  path?: string;
  /** Bytes of a database file, opened as a private in-memory copy. */
  image?: Uint8Array | ArrayBuffer;
  /** Open `path` in the origin private file system (default in browsers). */
  opfs?: boolean;
  /**
   * Channel mode. "auto" (the default) opens an existing file in the mode
   * it records and creates a new one in full mode; "full" or "delta" must
   * match an existing file's mode (MODE_MISMATCH otherwise).
   */
  mode?: "full" | "delta" | "auto";
  /** Delta snapshot cadence K of a new delta file (default 10); an existing delta file's K must match. */
  every?: number;
  /** History cache bound in bytes (default 64 MiB; 0 disables). */
  cacheBytes?: number;
  readOnly?: boolean;
  busyTimeoutMs?: number;
  /** Where browsers fetch agentstate.wasm (default: next to this package's dist/). */
  wasmURL?: string | URL;
  /** The engine module: a WebAssembly.Module (workerd, bundlers: `import wasm from "agentstate/agentstate.wasm"`) or its bytes. */
  wasmBytes?: BufferSource | WebAssembly.Module;
  /** SQLite, the official sqlite3.wasm: a WebAssembly.Module (`import sqliteWasm from "agentstate/sqlite3.wasm"`) or its bytes. */
  sqliteWasm?: BufferSource | WebAssembly.Module;
  /** Where browsers fetch sqlite3.wasm (default: next to this package's dist/). */
  sqliteWasmURL?: string | URL;
  /** SQLite's callback module: a WebAssembly.Module (`import callbacksWasm from "agentstate/sqlite-callbacks.wasm"`) or its bytes. */
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

export class Database {
  static open(options?: OpenOptions): Promise<Database>;
  /** Low-level engine call (see wasm/js/checkpoints.go and records.go for the ops). */
  call(op: string, payload?: object, bufs?: Uint8Array[]): Promise<any>;
  info(): Promise<Info>;
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

export class AgentStateSaver extends BaseCheckpointSaver<string | number> {
  db: Database;
  constructor(db: Database, serde?: SerializerProtocol);
  static open(options?: OpenOptions & { serde?: SerializerProtocol }): Promise<AgentStateSaver>;
  close(): Promise<void>;
  deleteForRuns(runIds: Iterable<string>): Promise<void>;
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void>;
  prune(threadIds: Iterable<string>, strategy?: "keep_latest" | "delete"): Promise<PruneReport>;
  getNextVersion(current: string | number | undefined): string;
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

export class AgentStateStore extends BaseStore {
  db: Database;
  constructor(db: Database);
  static open(options?: OpenOptions & { ttl?: TTLConfig }): Promise<AgentStateStore>;
  close(): Promise<void>;
  get(namespace: string[], key: string, options?: { refreshTtl?: boolean }): Promise<Item | null>;
  /** `options.ttl`: minutes until expiry, null for never; omitted: the default TTL. */
  put(namespace: string[], key: string, value: Record<string, any>, index?: false | string[], options?: { ttl?: number | null }): Promise<void>;
  sweep(): Promise<number>;
}
