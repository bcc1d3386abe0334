// The JavaScript side of the prototype's host SQLite: the official SQLite
// WebAssembly build (@sqlite.org/sqlite-wasm), driven through its raw C
// exports, loaded by sqlite-min.mjs (no Emscripten glue). One call per
// statement: run() reads the bound arguments from the Go module's memory,
// steps the statement to the end and writes every row back there in one
// compact buffer (see driver_host.go for the layout).
const TRANSIENT = -1; // SQLite copies bound text and blobs

export function makeHost(sq, goMemory, thunkModule) {
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
      // Not `mem`: Go may have grown its memory meanwhile (a Go function
      // called back during the steps), which detaches the old buffer.
      new Uint8Array(goMemory.buffer, ptr, o).set(out.subarray(0, o));
      return o;
    },
    // A Go scalar function: SQLite calls xFunc, which writes the arguments
    // (encoded as one row) into Go's callback buffer and calls goFn(argc);
    // Go leaves one encoded value there and returns its length (-1: an
    // error, its message in the buffer).
    createFunction(dbId, name, nArg, goFn, ptr, cap) {
      const view = () => new DataView(goMemory.buffer, ptr, cap);
      const bytes = () => new Uint8Array(goMemory.buffer, ptr, cap);
      sq.createFunction(dbs[dbId], name, nArg, (ctx, argc, argv) => {
        const heap = sq.heap8u();
        const hv = new DataView(heap.buffer);
        const dv = view();
        const b = bytes();
        let o = 0;
        for (let i = 0; i < argc; i++) {
          const v = hv.getUint32(argv + 4 * i, true);
          const t = x.sqlite3_value_type(v);
          if (t === 1) { b[o] = 1; dv.setBigInt64(o + 1, x.sqlite3_value_int64(v), true); o += 9; }
          else if (t === 2) { b[o] = 2; dv.setFloat64(o + 1, x.sqlite3_value_double(v), true); o += 9; }
          else if (t === 3 || t === 4) {
            const p = t === 3 ? x.sqlite3_value_text(v) : x.sqlite3_value_blob(v);
            const n = x.sqlite3_value_bytes(v);
            b[o] = t; dv.setUint32(o + 1, n, true);
            b.set(sq.heap8u().subarray(p, p + n), o + 5);
            o += 5 + n;
          } else { b[o] = 0; o += 1; }
        }
        const n = goFn(argc);
        const r = view();
        const t = r.getUint8(0);
        if (n < 0) {
          const [m, len] = sq.allocCString(`${name} failed`);
          x.sqlite3_result_error(ctx, m, len);
          return x.sqlite3_free(m);
        }
        if (t === 0) return x.sqlite3_result_null(ctx);
        if (t === 1) return x.sqlite3_result_int64(ctx, r.getBigInt64(1, true));
        if (t === 2) return x.sqlite3_result_double(ctx, r.getFloat64(1, true));
        const len = r.getUint32(1, true);
        const m = x.sqlite3_malloc(len || 1);
        sq.heap8u().set(new Uint8Array(goMemory.buffer, ptr + 5, len), m);
        (t === 3 ? x.sqlite3_result_text : x.sqlite3_result_blob)(ctx, m, len, TRANSIENT);
        x.sqlite3_free(m);
      }, thunkModule);
      return 0;
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
