// The host SQLite protocol: the object the engine's GOOS=js driver
// (engine/internal/driver/hostsqlite) calls, one synchronous call per
// statement run. It drives SQLite (loader.js) through its C exports and
// moves data through scratch buffers in the Go module's memory: the driver
// passes (ptr, cap) of a buffer of its own on each call; arguments are read
// from it and rows written into it directly (Go's heap does not move). A
// call that grows the Go memory (a Go function called back from SQL)
// detaches the old ArrayBuffer, so views of Go memory are re-made whenever
// its buffer changed.
//
// Calls (ids are small integers; every one returns a number unless said):
//
//   open(name, flags, vfs, ptr, cap)  sqlite3_open_v2; vfs "" is the default
//                        VFS, "memdb" SQLite's in-memory VFS (name
//                        "file:/NAME?vfs=memdb" shares NAME between
//                        connections) -> conn id
//   close(conn)          finalizes the connection's statements, closes it
//   prepare(conn, ptr, cap, sqlLen)
//                        prepares the first statement of the UTF-8 SQL at
//                        ptr[0:sqlLen]; writes {stmt i32, tail i32 (bytes
//                        of SQL consumed), ncols i32, nparams i32,
//                        readonly i32} at ptr -> 0; 1 when the SQL held only
//                        comments and spaces (stmt 0)
//   run(stmt, ptr, cap, argLen, flags, deadline)
//                        resets the statement, binds the arguments encoded
//                        at ptr[0:argLen], steps it and writes the result
//                        at ptr -> its length. flags & 1 (FIRST_ROW): stop
//                        after the first row. deadline: Date.now() after
//                        which the statement is interrupted (0: none).
//                        flags & 2 (DISCARD): step to the end, write no
//                        rows (Exec)
//   runBatch(ptr, len, out, cap, flags, deadline)
//                        the statements of a transaction queued by the
//                        driver (driver.Conn.Queue) and the statement after
//                        them, in one call: ptr[0:len] holds entries {stmt
//                        i32, argLen u32, arguments}, run in order as run
//                        with DISCARD, the last one with flags; its result
//                        is written at out -> its length, as run's. The
//                        first statement that fails stops the batch: its
//                        error is written at out and the result is -(1 +
//                        i), i its index (0: -1); the statements after it
//                        do not run. When the last one's first row needs a
//                        larger buffer the result is -(1 + count), the
//                        size needed a u32 at out (the row stays pending,
//                        for next)
//   next(stmt, ptr, cap, deadline)
//                        continues a run whose result said "more rows"
//   reset(stmt), finalize(stmt)
//   shm(conn)            1 when the main file's VFS has shared memory
//   autocommit(conn)     1 outside a transaction (after an error: the
//                        result header is not written then)
//   createFunction(conn, name, nArg, fnId, ptr, cap)
//                        a deterministic scalar function: SQLite's calls
//                        reach the Go callback (setCallback) as
//                        call(0, fnId, argc, aux)
//   setCallback(fn), callbackBuffer(ptr, cap, res)
//                        the Go side's dispatcher: fn(0, fnId, argc, aux)
//                        runs a function (its arguments encoded at ptr),
//                        fn(1, n) grows the argument buffer (Go calls
//                        callbackBuffer again), fn(2, aux) frees a
//                        function's per-statement state; and the buffers
//                        in Go memory for arguments (ptr, cap) and the
//                        result (res: {aux u32, value})
//   serialize(conn, schema, ptr, cap) -> Uint8Array, or -1
//   deserialize(conn, schema, bytes, readOnly, ptr, cap)
//                        replaces the schema's database by a private
//                        in-memory copy of bytes (an image)
//
// Negative results: -1 is an error, described at ptr as {rc i32, extended
// i32, offset i32, msgLen u32, msg}; -(2 + n) from run/next says the next
// row needs a buffer of n bytes: the row stays pending and the driver calls
// next with a larger buffer.
//
// Values (arguments, columns, function arguments and results) are a tag
// byte then: 0 NULL; 1 INTEGER (int64 LE); 2 FLOAT (float64 LE); 3 TEXT
// (u32 LE length, UTF-8); 4 BLOB (u32 LE length, bytes). A result is a
// header of HEADER bytes {status u8 @0 (0 done, 1 more rows), autocommit u8
// @1, nrows u32 @4, ncols u32 @8, changes i64 @16, lastInsertRowid i64
// @24} then nrows x ncols values.
//
// Busy: no busy handler is set (one JavaScript thread cannot wait for a
// lock another connection of the same thread holds): a BUSY statement
// fails at once and the driver retries it after yielding to the event loop.

import { takeVfsError } from "./vfs.js";

export const HEADER = 32;
const ROW = 100;
const DONE = 101;
const FIRST_ROW = 1;
const DISCARD = 2;
const PREPARE_PERSISTENT = 1;
const STATIC = 0;
const UTF8 = 1;
const DETERMINISTIC = 0x800;
const INNOCUOUS = 0x200000;
const SERIALIZE_NOCOPY = 1;
const DESERIALIZE_FREEONCLOSE = 1;
const DESERIALIZE_RESIZEABLE = 2;
const DESERIALIZE_READONLY = 4;
const FCNTL_FILE_POINTER = 7;
const SQLITE_ERROR = 1;
const SQLITE_NOMEM = 7;
const SQLITE_INTERRUPT = 9;
const SQLITE_IOERR = 10;
const SQLITE_BUSY = 5;
const SQLITE_CANTOPEN = 14;
const PROGRESS_OPS = 1000;

/**
 * Makes the protocol object over a loaded SQLite (loader.js) for one Go
 * instance, whose WebAssembly.Memory is goMemory.
 */
export function makeHost(sq, goMemory) {
  const x = sq.x;
  const enc = new TextEncoder();

  // Views of Go memory, re-made when it grew.
  let gbuf = goMemory.buffer;
  let gu8 = new Uint8Array(gbuf);
  let gdv = new DataView(gbuf);
  const goViews = () => {
    if (goMemory.buffer !== gbuf) {
      gbuf = goMemory.buffer;
      gu8 = new Uint8Array(gbuf);
      gdv = new DataView(gbuf);
    }
  };

  // Ids: index into an array, 0 unused; freed ids are reused.
  const conns = [null];
  const freeConns = [];
  const stmts = [null];
  const freeStmts = [];

  // A block of SQLite heap for SQL text and for out-parameters.
  let sqlBuf = 0;
  let sqlCap = 0;
  const outs = sq.malloc(16);
  function sqlSpace(n) {
    if (n > sqlCap) {
      sqlBuf = sq.realloc(sqlBuf, n);
      sqlCap = n;
    }
    return sqlBuf;
  }

  function writeError(ptr, cap, rc, extended, offset, msg) {
    goViews();
    if (cap < 16) return -1;
    const m = enc.encode(msg).subarray(0, cap - 16);
    gdv.setInt32(ptr, rc, true);
    gdv.setInt32(ptr + 4, extended, true);
    gdv.setInt32(ptr + 8, offset, true);
    gdv.setUint32(ptr + 12, m.length, true);
    gu8.set(m, ptr + 16);
    return -1;
  }
  // SQLite says only "disk I/O error" when a file host threw: the VFS
  // adapter kept the exception's message (vfs.js, takeVfsError).
  function withHostMessage(rc, msg) {
    const primary = rc & 0xff;
    if (primary !== SQLITE_IOERR && primary !== SQLITE_CANTOPEN && primary !== SQLITE_BUSY) return msg;
    const extra = takeVfsError(sq);
    return extra ? `${msg}: ${extra}` : msg;
  }
  function dbError(db, ptr, cap) {
    const rc = x.sqlite3_errcode(db);
    const msg = withHostMessage(rc, sq.errmsg(db));
    return writeError(ptr, cap, rc & 0xff, x.sqlite3_extended_errcode(db), x.sqlite3_error_offset(db), msg);
  }
  // A JavaScript exception inside a call (a VFS that threw, out of memory
  // in the loader) reaches Go as SQLITE_IOERR with its message.
  function thrown(e, ptr, cap) {
    const rc = e instanceof RangeError ? SQLITE_NOMEM : SQLITE_IOERR;
    return writeError(ptr, cap, rc, rc, -1, `agentstate host: ${e?.message ?? e}`);
  }

  // Interrupts: one progress handler for every connection; its argument
  // is the connection id, whose deadline run() sets.
  const progressIdx = sq.addFunction((id) => (Date.now() >= (conns[id]?.deadline ?? Infinity) ? 1 : 0), 1, "i");
  function setDeadline(c, deadline) {
    if (deadline > 0) {
      if (!c.progress) {
        x.sqlite3_progress_handler(c.db, PROGRESS_OPS, progressIdx, c.id);
        c.progress = true;
      }
      c.deadline = deadline;
    } else {
      c.deadline = Infinity;
    }
  }

  // ---- running statements

  function bindArgs(s, ptr, argLen) {
    goViews();
    const p = s.p;
    // First pass: how much heap the text and blob arguments need.
    let need = 0;
    let nargs = 0;
    for (let o = ptr, end = ptr + argLen; o < end; nargs++) {
      const t = gu8[o++];
      if (t === 1 || t === 2) o += 8;
      else if (t === 3 || t === 4) {
        const n = gdv.getUint32(o, true);
        need += n || 1; // "" and an empty blob need a non-NULL pointer
        o += 4 + n;
      }
    }
    if (need > s.arenaCap) {
      sq.free(s.arena);
      s.arena = sq.malloc(Math.max(need, 256));
      s.arenaCap = Math.max(need, 256);
    }
    if (nargs < s.nparams) x.sqlite3_clear_bindings(p);
    const heap = sq.heap8u();
    let a = s.arena;
    let o = ptr;
    for (let i = 1; i <= nargs; i++) {
      const t = gu8[o++];
      let rc;
      if (t === 1) {
        rc = x.sqlite3_bind_int64(p, i, gdv.getBigInt64(o, true));
        o += 8;
      } else if (t === 2) {
        rc = x.sqlite3_bind_double(p, i, gdv.getFloat64(o, true));
        o += 8;
      } else if (t === 3 || t === 4) {
        const n = gdv.getUint32(o, true);
        o += 4;
        heap.set(gu8.subarray(o, o + n), a);
        // The arena belongs to this statement and is rewritten only by its
        // next run, which rebinds: SQLite may read it until then.
        rc = t === 3 ? x.sqlite3_bind_text(p, i, a, n, STATIC) : x.sqlite3_bind_blob(p, i, a, n, STATIC);
        a += n || 1;
        o += n;
      } else {
        rc = x.sqlite3_bind_null(p, i);
      }
      if (rc) return rc;
    }
    return 0;
  }

  // Column pointers and sizes of the current row, reused between rows.
  let colT = new Int32Array(16);
  let colP = new Int32Array(16);
  let colN = new Int32Array(16);

  // Writes the result of stepping s into ptr[0:cap]. The current row, if
  // s.pending, goes first.
  function steps(s, ptr, cap, flags) {
    const p = s.p;
    const ncols = s.ncols;
    if (ncols > colT.length) {
      colT = new Int32Array(ncols);
      colP = new Int32Array(ncols);
      colN = new Int32Array(ncols);
    }
    let o = ptr + HEADER;
    const end = ptr + cap;
    let nrows = 0;
    let status = 0;
    if (flags & DISCARD) {
      for (;;) {
        const rc = x.sqlite3_step(p);
        if (rc === DONE) break;
        if (rc !== ROW) {
          const r = dbError(s.c.db, ptr, cap);
          x.sqlite3_reset(p);
          return r;
        }
      }
    }
    for (; !(flags & DISCARD); ) {
      if (!s.pending) {
        const rc = x.sqlite3_step(p);
        if (rc === DONE) break;
        if (rc !== ROW) {
          const r = dbError(s.c.db, ptr, cap);
          x.sqlite3_reset(p);
          return r;
        }
        s.pending = true;
      }
      // Size the row before writing it.
      let size = 0;
      for (let c = 0; c < ncols; c++) {
        const t = x.sqlite3_column_type(p, c);
        colT[c] = t;
        if (t === 1 || t === 2) size += 9;
        else if (t === 3 || t === 4) {
          // column_text / column_blob first, then column_bytes: SQLite's
          // documented order (a conversion may change the size).
          colP[c] = t === 3 ? x.sqlite3_column_text(p, c) : x.sqlite3_column_blob(p, c);
          const n = x.sqlite3_column_bytes(p, c);
          colN[c] = n;
          size += 5 + n;
        } else size += 1;
      }
      if (o + size > end) {
        if (nrows === 0) return -(2 + HEADER + size);
        status = 1;
        break;
      }
      goViews();
      const heap = sq.heap8u();
      for (let c = 0; c < ncols; c++) {
        const t = colT[c];
        gu8[o] = t;
        if (t === 1) {
          gdv.setBigInt64(o + 1, x.sqlite3_column_int64(p, c), true);
          o += 9;
        } else if (t === 2) {
          gdv.setFloat64(o + 1, x.sqlite3_column_double(p, c), true);
          o += 9;
        } else if (t === 3 || t === 4) {
          const n = colN[c];
          gdv.setUint32(o + 1, n, true);
          if (n) gu8.set(heap.subarray(colP[c], colP[c] + n), o + 5);
          o += 5 + n;
        } else o += 1;
      }
      s.pending = false;
      nrows++;
      if (flags & FIRST_ROW) {
        status = 1;
        break;
      }
    }
    const db = s.c.db;
    if (status === 0) x.sqlite3_reset(p);
    goViews();
    gu8[ptr] = status;
    gu8[ptr + 1] = x.sqlite3_get_autocommit(db) ? 1 : 0;
    gdv.setUint32(ptr + 4, nrows, true);
    gdv.setUint32(ptr + 8, ncols, true);
    gdv.setBigInt64(ptr + 16, x.sqlite3_changes64(db), true);
    gdv.setBigInt64(ptr + 24, x.sqlite3_last_insert_rowid(db), true);
    return o - ptr;
  }

  // ---- Go functions called from SQL

  let goCall = null;
  let cbPtr = 0; // function arguments, written here
  let cbCap = 0;
  let resPtr = 0; // the function's result, written by Go

  // set_auxdata keeps the Go side's id of a function's per-statement state
  // (a compiled filter) as if it were a pointer; SQLite calls this when it
  // drops it, and Go frees the state.
  const auxFreeIdx = sq.addFunction((id) => {
    try {
      goCall(2, id, 0, 0);
    } catch {}
  }, 1, "v");
  const resultError = (ctx, msg) => {
    const m = sq.allocCString(msg);
    x.sqlite3_result_error(ctx, m, sq.lastCStringLength);
    sq.free(m);
  };
  const xFuncIdx = sq.addFunction((ctx, argc, argv) => {
    try {
      callGo(ctx, argc, argv);
    } catch (e) {
      resultError(ctx, `agentstate host: ${e?.message ?? e}`);
    }
  }, 3, "v");
  function callGo(ctx, argc, argv) {
    const fnId = x.sqlite3_user_data(ctx);
    let dv = sq.view();
    let need = 0;
    for (let i = 0; i < argc; i++) {
      const v = dv.getUint32(argv + 4 * i, true);
      const t = x.sqlite3_value_type(v);
      need += t === 3 || t === 4 ? 5 + x.sqlite3_value_bytes(v) : 9;
    }
    if (need > cbCap) goCall(1, need, 0, 0); // Go grows its buffer (callbackBuffer)
    goViews();
    let o = cbPtr;
    for (let i = 0; i < argc; i++) {
      dv = sq.view();
      const v = dv.getUint32(argv + 4 * i, true);
      const t = x.sqlite3_value_type(v);
      gu8[o] = t;
      if (t === 1) {
        gdv.setBigInt64(o + 1, x.sqlite3_value_int64(v), true);
        o += 9;
      } else if (t === 2) {
        gdv.setFloat64(o + 1, x.sqlite3_value_double(v), true);
        o += 9;
      } else if (t === 3 || t === 4) {
        const vp = t === 3 ? x.sqlite3_value_text(v) : x.sqlite3_value_blob(v);
        const n = x.sqlite3_value_bytes(v);
        gdv.setUint32(o + 1, n, true);
        if (n) gu8.set(sq.heap8u().subarray(vp, vp + n), o + 5);
        o += 5 + n;
      } else {
        gu8[o] = 0;
        o += 1;
      }
    }
    const auxArg = argc - 1;
    const aux = auxArg >= 0 ? x.sqlite3_get_auxdata(ctx, auxArg) : 0;
    // Go answers {newAux u32, value} in its result buffer; a negative
    // return -(1 + n) is an error whose n bytes of message follow newAux.
    const n = goCall(0, fnId, argc, aux);
    goViews();
    const newAux = gdv.getUint32(resPtr, true);
    if (n < 0) {
      const len = -n - 1;
      resultError(ctx, new TextDecoder().decode(gu8.subarray(resPtr + 4, resPtr + 4 + len)));
      return;
    }
    if (newAux) x.sqlite3_set_auxdata(ctx, auxArg, newAux, auxFreeIdx);
    goViews();
    const r = resPtr + 4;
    const t = gu8[r];
    if (t === 1) x.sqlite3_result_int64(ctx, gdv.getBigInt64(r + 1, true));
    else if (t === 2) x.sqlite3_result_double(ctx, gdv.getFloat64(r + 1, true));
    else if (t === 3 || t === 4) {
      const len = gdv.getUint32(r + 1, true);
      const m = sq.malloc(len || 1);
      sq.heap8u().set(gu8.subarray(r + 5, r + 5 + len), m);
      // SQLITE_TRANSIENT (-1): SQLite copies the value.
      if (t === 3) x.sqlite3_result_text(ctx, m, len, -1);
      else x.sqlite3_result_blob(ctx, m, len, -1);
      sq.free(m);
    } else x.sqlite3_result_null(ctx);
  }

  const host = {
    HEADER,

    open(name, flags, vfs, ptr, cap) {
      let db = 0;
      try {
        db = sq.open(name, flags, vfs || undefined);
      } catch (e) {
        return writeError(ptr, cap, e.rc ?? SQLITE_ERROR, e.rc ?? SQLITE_ERROR, -1, withHostMessage(e.rc ?? SQLITE_ERROR, e.message));
      }
      x.sqlite3_extended_result_codes(db, 1);
      const c = { id: 0, db, stmts: new Set(), progress: false, deadline: Infinity };
      c.id = freeConns.length ? freeConns.pop() : conns.length;
      conns[c.id] = c;
      return c.id;
    },

    close(id) {
      const c = conns[id];
      if (!c) return 0;
      for (const sid of c.stmts) host.finalize(sid);
      x.sqlite3_close_v2(c.db);
      conns[id] = null;
      freeConns.push(id);
      return 0;
    },

    prepare(id, ptr, cap, sqlLen) {
      const c = conns[id];
      try {
        const p = sqlSpace(sqlLen + 1);
        goViews();
        const heap = sq.heap8u();
        heap.set(gu8.subarray(ptr, ptr + sqlLen), p);
        heap[p + sqlLen] = 0;
        const rc = x.sqlite3_prepare_v3(c.db, p, sqlLen, PREPARE_PERSISTENT, outs, outs + 4);
        if (rc) return dbError(c.db, ptr, cap);
        const dv = sq.view();
        const sp = dv.getUint32(outs, true);
        const tail = dv.getUint32(outs + 4, true) - p;
        goViews();
        gdv.setInt32(ptr + 4, tail, true);
        if (!sp) {
          gdv.setInt32(ptr, 0, true);
          return 1;
        }
        const s = { id: 0, p: sp, c, ncols: x.sqlite3_column_count(sp), nparams: x.sqlite3_bind_parameter_count(sp), arena: 0, arenaCap: 0, pending: false };
        s.id = freeStmts.length ? freeStmts.pop() : stmts.length;
        stmts[s.id] = s;
        c.stmts.add(s.id);
        goViews();
        gdv.setInt32(ptr, s.id, true);
        gdv.setInt32(ptr + 8, s.ncols, true);
        gdv.setInt32(ptr + 12, s.nparams, true);
        gdv.setInt32(ptr + 16, x.sqlite3_stmt_readonly(sp), true);
        return 0;
      } catch (e) {
        return thrown(e, ptr, cap);
      }
    },

    run(id, ptr, cap, argLen, flags, deadline) {
      const s = stmts[id];
      try {
        setDeadline(s.c, deadline);
        x.sqlite3_reset(s.p);
        s.pending = false;
        const rc = bindArgs(s, ptr, argLen);
        if (rc) return dbError(s.c.db, ptr, cap);
        return steps(s, ptr, cap, flags);
      } catch (e) {
        x.sqlite3_reset(s.p);
        s.pending = false;
        return thrown(e, ptr, cap);
      }
    },

    runBatch(ptr, len, out, cap, flags, deadline) {
      let r = 0;
      let i = 0;
      for (let o = ptr, end = ptr + len; o < end; i++) {
        goViews();
        const id = gdv.getInt32(o, true);
        const argLen = gdv.getUint32(o + 4, true);
        const last = o + 8 + argLen >= end;
        const s = stmts[id];
        try {
          setDeadline(s.c, deadline);
          x.sqlite3_reset(s.p);
          s.pending = false;
          const rc = bindArgs(s, o + 8, argLen);
          r = rc ? dbError(s.c.db, out, cap) : steps(s, out, cap, last ? flags : DISCARD);
        } catch (e) {
          x.sqlite3_reset(s.p);
          s.pending = false;
          r = thrown(e, out, cap);
        }
        if (r <= -2) {
          goViews();
          gdv.setUint32(out, -r - 2, true);
          return -2 - i;
        }
        if (r < 0) return -1 - i;
        o += 8 + argLen;
      }
      return r;
    },

    next(id, ptr, cap, deadline) {
      const s = stmts[id];
      try {
        setDeadline(s.c, deadline);
        return steps(s, ptr, cap, 0);
      } catch (e) {
        x.sqlite3_reset(s.p);
        s.pending = false;
        return thrown(e, ptr, cap);
      }
    },

    // 1 when the main database file's VFS has shared memory (io methods
    // version 2 with xShmMap): WAL then works in normal locking mode.
    shm(id) {
      const c = conns[id];
      const pSchema = sq.allocCString("main");
      try {
        if (x.sqlite3_file_control(c.db, pSchema, FCNTL_FILE_POINTER, outs)) return 0;
        const dv = sq.view();
        const file = dv.getUint32(outs, true);
        const methods = file && dv.getUint32(file, true);
        if (!methods || dv.getInt32(methods, true) < 2) return 0;
        return dv.getUint32(methods + sq.structs().sqlite3_io_methods.members.xShmMap.offset, true) ? 1 : 0;
      } finally {
        sq.free(pSchema);
      }
    },

    autocommit(id) {
      return x.sqlite3_get_autocommit(conns[id].db) ? 1 : 0;
    },

    reset(id) {
      const s = stmts[id];
      s.pending = false;
      x.sqlite3_reset(s.p);
      return 0;
    },

    finalize(id) {
      const s = stmts[id];
      if (!s) return 0;
      x.sqlite3_finalize(s.p);
      sq.free(s.arena);
      s.c.stmts.delete(id);
      stmts[id] = null;
      freeStmts.push(id);
      return 0;
    },

    setCallback(fn) {
      goCall = fn;
      return 0;
    },

    callbackBuffer(ptr, cap, res) {
      cbPtr = ptr;
      cbCap = cap;
      resPtr = res;
      return 0;
    },

    createFunction(id, name, nArg, fnId, ptr, cap) {
      const c = conns[id];
      const pName = sq.allocCString(name);
      try {
        const rc = x.sqlite3_create_function_v2(c.db, pName, nArg, UTF8 | DETERMINISTIC | INNOCUOUS, fnId, xFuncIdx, 0, 0, 0);
        return rc ? dbError(c.db, ptr, cap) : 0;
      } finally {
        sq.free(pName);
      }
    },

    serialize(id, schema, ptr, cap) {
      const c = conns[id];
      const pSchema = sq.allocCString(schema);
      try {
        // An in-memory database hands out its own bytes (NOCOPY); any
        // other is read page by page into a fresh block.
        let data = x.sqlite3_serialize(c.db, pSchema, outs, SERIALIZE_NOCOPY);
        let owned = false;
        if (!data) {
          data = x.sqlite3_serialize(c.db, pSchema, outs, 0);
          owned = true;
        }
        const size = Number(sq.view().getBigInt64(outs, true));
        if (!data) {
          if (size === 0 || x.sqlite3_errcode(c.db) !== 0) return dbError(c.db, ptr, cap);
          return writeError(ptr, cap, SQLITE_NOMEM, SQLITE_NOMEM, -1, "sqlite3_serialize failed");
        }
        const out = sq.heap8u().slice(data, data + size);
        if (owned) sq.free(data);
        return out;
      } catch (e) {
        return thrown(e, ptr, cap);
      } finally {
        sq.free(pSchema);
      }
    },

    deserialize(id, schema, bytes, readOnly, ptr, cap) {
      const c = conns[id];
      const pSchema = sq.allocCString(schema);
      try {
        const n = bytes.length;
        const p = sq.malloc(n || 1);
        sq.heap8u().set(bytes, p);
        const flags = DESERIALIZE_FREEONCLOSE | (readOnly ? DESERIALIZE_READONLY : DESERIALIZE_RESIZEABLE);
        // On failure SQLite frees p itself (FREEONCLOSE).
        const rc = x.sqlite3_deserialize(c.db, pSchema, p, BigInt(n), BigInt(n), flags);
        return rc ? dbError(c.db, ptr, cap) : 0;
      } catch (e) {
        return thrown(e, ptr, cap);
      } finally {
        sq.free(pSchema);
      }
    },
  };
  return host;
}

export { SQLITE_INTERRUPT };
