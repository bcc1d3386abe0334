// Plain SQL over the host SQLite (sqlite3.wasm through src/sqlite/loader.js),
// for tests of the VFS adapter and the file hosts that need no Go engine.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { callbackModuleBytes } from "../../scripts/callbacks.js";
import { loadSqlite } from "../../src/sqlite/loader.js";
import { takeVfsError } from "../../src/sqlite/vfs.js";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export function sqliteWasmBytes() {
  for (const f of [path.join(pkg, "dist/sqlite3.wasm"), path.join(pkg, "node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm")]) {
    if (fs.existsSync(f)) return fs.readFileSync(f);
  }
  throw new Error("sqlite3.wasm not found: run npm ci (and npm run build) in wasm/npm");
}

let wasmModule;
let cbModule;

/** A fresh SQLite (its own memory: like a new process). */
export async function freshSqlite() {
  wasmModule ??= new WebAssembly.Module(sqliteWasmBytes());
  cbModule ??= new WebAssembly.Module(callbackModuleBytes());
  return loadSqlite({ wasm: wasmModule, callbacks: cbModule });
}

const ROW = 100;
const DONE = 101;

/** An SQLite error with its codes and the VFS's message, if any. */
export class SqlError extends Error {
  constructor(sq, db, rc, what) {
    const ext = db ? sq.x.sqlite3_extended_errcode(db) : rc;
    const vfs = takeVfsError(sq);
    super(`${what}: ${db ? sq.errmsg(db) : sq.errstr(rc)}${vfs ? `: ${vfs}` : ""}`);
    this.rc = rc & 0xff;
    this.extended = ext;
    this.vfsMessage = vfs;
  }
}

/** A connection: open(sq, name, vfs, {readOnly}) -> { all, exec, get, close, db }. */
export function connect(sq, name, vfs, { readOnly = false, create = true } = {}) {
  const flags = readOnly ? 0x1 : 0x2 | (create ? 0x4 : 0);
  let db;
  try {
    db = sq.open(name, flags, vfs);
  } catch (e) {
    const vfsMsg = takeVfsError(sq);
    throw Object.assign(new Error(`open ${name}: ${e.message}${vfsMsg ? `: ${vfsMsg}` : ""}`), { rc: e.rc, vfsMessage: vfsMsg });
  }
  const x = sq.x;
  const all = (q, ...args) => {
    const pq = sq.allocCString(q);
    const pst = sq.malloc(4);
    let rc = x.sqlite3_prepare_v2(db, pq, -1, pst, 0);
    const st = sq.view().getUint32(pst, true);
    sq.free(pq);
    sq.free(pst);
    if (rc) throw new SqlError(sq, db, rc, q);
    try {
      args.forEach((a, i) => {
        if (a === null) x.sqlite3_bind_null(st, i + 1);
        else if (typeof a === "number") x.sqlite3_bind_double(st, i + 1, a);
        else if (typeof a === "bigint") x.sqlite3_bind_int64(st, i + 1, a);
        else if (a instanceof Uint8Array) {
          const p = sq.malloc(a.length || 1);
          sq.heap8u().set(a, p);
          x.sqlite3_bind_blob(st, i + 1, p, a.length, -1);
          sq.free(p);
        } else {
          const p = sq.allocCString(String(a));
          x.sqlite3_bind_text(st, i + 1, p, sq.lastCStringLength, -1);
          sq.free(p);
        }
      });
      const rows = [];
      const names = [];
      for (let i = 0; i < x.sqlite3_column_count(st); i++) names.push(sq.cstring(x.sqlite3_column_name(st, i)));
      rows.columns = names;
      while ((rc = x.sqlite3_step(st)) === ROW) {
        const row = [];
        for (let i = 0; i < x.sqlite3_column_count(st); i++) {
          const t = x.sqlite3_column_type(st, i);
          if (t === 1) row.push(Number(x.sqlite3_column_int64(st, i)));
          else if (t === 2) row.push(x.sqlite3_column_double(st, i));
          else if (t === 3) row.push(sq.cstring(x.sqlite3_column_text(st, i), x.sqlite3_column_bytes(st, i)));
          else if (t === 4) {
            const p = x.sqlite3_column_blob(st, i);
            row.push(sq.heap8u().slice(p, p + x.sqlite3_column_bytes(st, i)));
          } else row.push(null);
        }
        rows.push(row);
      }
      if (rc !== DONE) throw new SqlError(sq, db, rc, q);
      return rows;
    } finally {
      x.sqlite3_finalize(st);
    }
  };
  return {
    db,
    all,
    get: (q, ...args) => all(q, ...args)[0]?.[0],
    exec(script) {
      const p = sq.allocCString(script);
      const rc = x.sqlite3_exec(db, p, 0, 0, 0);
      sq.free(p);
      if (rc) throw new SqlError(sq, db, rc, script);
    },
    close() {
      const rc = x.sqlite3_close_v2(db);
      if (rc) throw new SqlError(sq, 0, rc, "close");
    },
  };
}

/** A FileHost of plain memory: files by name, as Uint8Arrays (for crash copies). */
export function memoryHost(files = new Map(), { path: p = "/mem.db" } = {}) {
  const open = new Map();
  let next = 0;
  const calls = [];
  const host = {
    path: p,
    files,
    calls,
    open(name, o) {
      calls.push(["open", name, o.kind]);
      if (!files.has(name)) {
        if (!o.create) return -1;
        files.set(name, new Uint8Array(0));
      }
      open.set(++next, name);
      return next;
    },
    read(id, into, off) {
      const d = files.get(open.get(id));
      const n = Math.max(0, Math.min(into.length, d.length - off));
      into.set(d.subarray(off, off + n));
      return n;
    },
    write(id, from, off) {
      const name = open.get(id);
      let d = files.get(name);
      if (off + from.length > d.length) {
        const g = new Uint8Array(off + from.length);
        g.set(d);
        d = g;
        files.set(name, d);
      }
      d.set(from, off);
    },
    size: (id) => files.get(open.get(id)).length,
    truncate(id, n) {
      const name = open.get(id);
      const d = files.get(name);
      const g = new Uint8Array(n);
      g.set(d.subarray(0, Math.min(n, d.length)));
      files.set(name, g);
    },
    sync(id) {
      calls.push(["sync", open.get(id)]);
    },
    close(id) {
      open.delete(id);
    },
    remove(name) {
      calls.push(["remove", name]);
      files.delete(name);
    },
    exists(name) {
      calls.push(["exists", name]);
      return (files.get(name)?.length ?? 0) > 0;
    },
    /** A copy of every file: what a disk holds if the process died now. */
    snapshot() {
      return new Map([...files].map(([k, v]) => [k, v.slice()]));
    },
  };
  return host;
}

/**
 * A stand-in for a SQLite-backed Durable Object's `ctx.storage` (its
 * `sql.exec(query, ...bindings)`, rows as objects, blobs as ArrayBuffer),
 * on an in-memory database of a SQLite of its own. copy() is what storage
 * holds if the object died now.
 */
export async function durableStorageDouble() {
  const sq = await freshSqlite();
  const c = connect(sq, ":memory:");
  const storage = {
    statements: 0,
    sql: {
      exec(q, ...bindings) {
        storage.statements++;
        const rows = c.all(q, ...bindings);
        const objs = rows.map((r) => Object.fromEntries(r.map((v, i) => [rows.columns[i], v instanceof Uint8Array ? v.slice().buffer : v])));
        return {
          toArray: () => objs,
          one() {
            if (objs.length !== 1) throw new Error(`expected one row, got ${objs.length}`);
            return objs[0];
          },
          [Symbol.iterator]: () => objs[Symbol.iterator](),
        };
      },
    },
    /** ctx.storage.transactionSync: fn's statements commit together, or not at all. */
    transactionSync(fn) {
      c.exec("SAVEPOINT ts");
      try {
        const r = fn();
        c.exec("RELEASE ts");
        return r;
      } catch (e) {
        c.exec("ROLLBACK TO ts; RELEASE ts");
        throw e;
      }
    },
    /** What storage would hold if the object died now. */
    async copy() {
      const d = await durableStorageDouble();
      for (const t of ["agentstate_files", "agentstate_chunks"]) {
        const schema = c.get("SELECT sql FROM sqlite_master WHERE name = ?", t);
        if (!schema) continue;
        d.conn.exec(schema);
        for (const r of c.all(`SELECT * FROM ${t}`)) d.conn.all(`INSERT INTO ${t} VALUES (${r.map(() => "?").join(", ")})`, ...r);
      }
      return d;
    },
    conn: c,
  };
  return storage;
}
