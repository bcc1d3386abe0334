// The JavaScript side of the prototype's host SQLite: the official SQLite
// WebAssembly build (@sqlite.org/sqlite-wasm), driven through its raw C
// exports, loaded by sqlite-min.mjs (no Emscripten glue). One call per
// statement: run() reads the bound arguments from the Go module's memory,
// steps the statement to the end and writes every row back there in one
// compact buffer (see driver_host.go for the layout).
const TRANSIENT = -1; // SQLite copies bound text and blobs

export function makeHost(sq, goMemory) {
  const x = sq.x;
  const dbs = [null];
  const stmts = [];
  let pending = null;
  const enc = new TextEncoder();
  let out = new Uint8Array(64 * 1024);
  let outView = new DataView(out.buffer);
  function grow(need) {
    if (need <= out.length) return;
    const n = new Uint8Array(Math.max(need, out.length * 2));
    n.set(out);
    out = n;
    outView = new DataView(out.buffer);
  }
  const host = {
    lastError: "",
    open(name) {
      try {
        dbs.push(sq.open(name));
        return dbs.length - 1;
      } catch (e) {
        return String(e.message);
      }
    },
    prepare(dbId, sql) {
      try {
        stmts.push({ p: sq.prepare(dbs[dbId], sql), db: dbs[dbId] });
        return stmts.length - 1;
      } catch (e) {
        return String(e.message);
      }
    },
    run(id, ptr, cap, argLen, nargs) {
      const { p, db } = stmts[id];
      const mem = goMemory.buffer;
      const args = new DataView(mem, ptr, argLen);
      x.sqlite3_reset(p);
      x.sqlite3_clear_bindings(p);
      let off = 0;
      for (let i = 1; i <= nargs; i++) {
        const t = args.getUint8(off++);
        let rc = 0;
        if (t === 1) { rc = x.sqlite3_bind_int64(p, i, args.getBigInt64(off, true)); off += 8; }
        else if (t === 2) { rc = x.sqlite3_bind_double(p, i, args.getFloat64(off, true)); off += 8; }
        else if (t === 3 || t === 4) {
          const n = args.getUint32(off, true); off += 4;
          const m = x.sqlite3_malloc(n || 1);
          sq.heap8u().set(new Uint8Array(mem, ptr + off, n), m);
          rc = t === 3 ? x.sqlite3_bind_text(p, i, m, n, TRANSIENT) : x.sqlite3_bind_blob(p, i, m, n, TRANSIENT);
          x.sqlite3_free(m);
          off += n;
        } else rc = x.sqlite3_bind_null(p, i);
        if (rc) { host.lastError = sq.errmsg(db); return -1; }
      }
      const ncols = x.sqlite3_column_count(p);
      let o = 8, nrows = 0;
      for (;;) {
        const rc = x.sqlite3_step(p);
        if (rc === 101) break;
        if (rc !== 100) { host.lastError = sq.errmsg(db); x.sqlite3_reset(p); return -1; }
        nrows++;
        for (let c = 0; c < ncols; c++) {
          const t = x.sqlite3_column_type(p, c);
          if (t === 1) { grow(o + 9); out[o] = 1; outView.setBigInt64(o + 1, x.sqlite3_column_int64(p, c), true); o += 9; }
          else if (t === 2) { grow(o + 9); out[o] = 2; outView.setFloat64(o + 1, x.sqlite3_column_double(p, c), true); o += 9; }
          else if (t === 3 || t === 4) {
            const cp = t === 3 ? x.sqlite3_column_text(p, c) : x.sqlite3_column_blob(p, c);
            const n = x.sqlite3_column_bytes(p, c);
            grow(o + 5 + n);
            out[o] = t; outView.setUint32(o + 1, n, true);
            out.set(sq.heap8u().subarray(cp, cp + n), o + 5);
            o += 5 + n;
          } else { grow(o + 1); out[o] = 0; o += 1; }
        }
      }
      x.sqlite3_reset(p);
      outView.setUint32(0, nrows, true);
      outView.setUint32(4, ncols, true);
      if (o > cap) { pending = out.subarray(0, o); return -o; }
      new Uint8Array(mem, ptr, o).set(out.subarray(0, o));
      return o;
    },
    take(ptr) {
      const n = pending.length;
      new Uint8Array(goMemory.buffer, ptr, n).set(pending);
      pending = null;
      return n;
    },
    close(dbId) {
      for (const s of stmts) if (s.db === dbs[dbId]) x.sqlite3_finalize(s.p);
      x.sqlite3_close_v2(dbs[dbId]);
    },
  };
  return host;
}
