// A minimal loader of the official SQLite wasm build (sqlite3.wasm from
// @sqlite.org/sqlite-wasm, pinned): its 35 imports, without the 657 KB of
// Emscripten and sqlite-wasm JavaScript around it. That glue generates small
// wasm modules at run time to put JavaScript callbacks into the function
// table (jsFuncToWasm), which workerd refuses ("Wasm code generation
// disallowed by embedder"); this loader generates nothing. Files are not
// reachable through it (the syscalls answer ENOSYS): databases live in
// memory (memdb) or in a VFS of the host's.
//
// The import names are Emscripten's for this exact build: a new version of
// the package must be checked against them (loadSqlite throws on a missing
// or unexpected import).
const ENOSYS = 52;

export async function loadSqlite(source) {
  const module = source instanceof WebAssembly.Module ? source : await WebAssembly.compile(source);
  const memory = new WebAssembly.Memory({ initial: 256, maximum: 32768 });
  let u8 = new Uint8Array(memory.buffer);
  let dv = new DataView(memory.buffer);
  const views = () => {
    if (u8.buffer !== memory.buffer) {
      u8 = new Uint8Array(memory.buffer);
      dv = new DataView(memory.buffer);
    }
  };
  const nosys = () => -ENOSYS;
  const env = {
    memory,
    emscripten_date_now: () => Date.now(),
    emscripten_get_now: () => performance.now(),
    emscripten_get_heap_max: () => 2147483648,
    emscripten_resize_heap(requested) {
      requested >>>= 0;
      const pages = Math.ceil((requested - memory.buffer.byteLength) / 65536);
      try {
        if (pages > 0) memory.grow(pages);
        views();
        return 1;
      } catch {
        return 0;
      }
    },
    _tzset_js() {},
    _localtime_js(time, tmPtr) {
      // UTC: SQLite asks only for 'localtime' modifiers, which the engine does not use.
      views();
      const d = new Date(Number(time) * 1000);
      const f = [d.getUTCSeconds(), d.getUTCMinutes(), d.getUTCHours(), d.getUTCDate(), d.getUTCMonth(), d.getUTCFullYear() - 1900, d.getUTCDay()];
      f.forEach((v, i) => dv.setInt32(tmPtr + 4 * i, v, true));
    },
    _mmap_js: nosys,
    _munmap_js: nosys,
  };
  const wasi = {
    clock_time_get(id, _precision, out) {
      views();
      const ms = id === 0 ? Date.now() : performance.now();
      dv.setBigInt64(out, BigInt(Math.round(ms * 1e6)), true);
      return 0;
    },
    environ_sizes_get(countPtr, sizePtr) {
      views();
      dv.setUint32(countPtr, 0, true);
      dv.setUint32(sizePtr, 0, true);
      return 0;
    },
    environ_get: () => 0,
    fd_write: () => ENOSYS,
    fd_read: () => ENOSYS,
    fd_close: () => ENOSYS,
    fd_seek: () => ENOSYS,
    fd_sync: () => ENOSYS,
    fd_fdstat_get: () => ENOSYS,
  };
  const imports = { env: {}, wasi_snapshot_preview1: {} };
  for (const imp of WebAssembly.Module.imports(module)) {
    const table = imp.module === "env" ? env : imp.module === "wasi_snapshot_preview1" ? wasi : null;
    if (!table) throw new Error(`sqlite3.wasm: unexpected import ${imp.module}.${imp.name}`);
    const v = table[imp.name] ?? (imp.name.startsWith("__syscall_") && imp.kind === "function" ? nosys : undefined);
    if (v === undefined) throw new Error(`sqlite3.wasm: no import ${imp.module}.${imp.name} (a new build of sqlite-wasm?)`);
    imports[imp.module][imp.name] = v;
  }
  const instance = await WebAssembly.instantiate(module, imports);
  const x = instance.exports;
  x.__wasm_call_ctors?.();
  if (x.sqlite3_initialize() !== 0) throw new Error("sqlite3_initialize failed");
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const heap8u = () => (views(), u8);
  const cstr = (p) => {
    views();
    let e = p;
    while (u8[e]) e++;
    return dec.decode(u8.subarray(p, e));
  };
  const allocCString = (s) => {
    const b = enc.encode(s);
    const p = x.sqlite3_malloc(b.length + 1);
    views();
    u8.set(b, p);
    u8[p + b.length] = 0;
    return [p, b.length];
  };
  const scratch = x.sqlite3_malloc(16);
  const table = x.__indirect_function_table;
  return {
    x,
    heap8u,
    allocCString,
    errmsg: (db) => cstr(x.sqlite3_errmsg(db)),
    /** sqlite3_open_v2; returns the db pointer or throws. */
    open(name, flags = 0x2 | 0x4 | 0x40 /* READWRITE|CREATE|URI */) {
      const [p] = allocCString(name);
      const rc = x.sqlite3_open_v2(p, scratch, flags, 0);
      x.sqlite3_free(p);
      views();
      const db = dv.getUint32(scratch, true);
      if (rc) {
        const msg = db ? cstr(x.sqlite3_errmsg(db)) : `rc ${rc}`;
        x.sqlite3_close_v2(db);
        throw new Error(msg);
      }
      return db;
    },
    /**
     * Registers a deterministic scalar function: xFunc(ctx, argc, argv) is
     * a JavaScript function, reached through an instance of the callback
     * module (thunks.mjs), a WebAssembly.Module made ahead of time.
     */
    createFunction(db, name, nArg, xFunc, thunkModule) {
      const thunk = new WebAssembly.Instance(thunkModule, { cb: { fn: xFunc } });
      const idx = table.grow(1);
      table.set(idx, thunk.exports.fn);
      const [p] = allocCString(name);
      const rc = x.sqlite3_create_function_v2(db, p, nArg, 1 /* UTF8 */ | 0x800 /* DETERMINISTIC */, 0, idx, 0, 0, 0);
      x.sqlite3_free(p);
      if (rc) throw new Error(cstr(x.sqlite3_errmsg(db)));
    },
    /** sqlite3_prepare_v3 of the first statement of sql; 0 for comments only. */
    prepare(db, sql) {
      const [p, n] = allocCString(sql);
      const rc = x.sqlite3_prepare_v3(db, p, n, 1 /* PERSISTENT */, scratch, 0);
      x.sqlite3_free(p);
      if (rc) throw new Error(cstr(x.sqlite3_errmsg(db)));
      views();
      return dv.getUint32(scratch, true);
    },
  };
}
