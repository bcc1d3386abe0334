// A minimal loader of the official SQLite WebAssembly build (sqlite3.wasm
// of @sqlite.org/sqlite-wasm, pinned below), without the Emscripten and
// sqlite-wasm JavaScript around it: that glue generates small wasm modules
// at run time to put JavaScript callbacks into SQLite's function table,
// which Cloudflare workerd refuses ("Wasm code generation disallowed by
// embedder"). This loader compiles nothing at run time when it is given
// compiled modules; JavaScript callbacks reach SQLite through the callback
// module (dist/sqlite-callbacks.wasm), built ahead of time by
// scripts/callbacks.js and shipped in the package.
//
// Files are not reachable through SQLite's own unix VFS here (its syscalls
// answer ENOSYS): databases live in memdb (memory and images) or in a VFS a
// host registers (src/sqlite/vfs.js over a file host).
//
// ---------------------------------------------------------------------------
// API (stable: the VFS adapter and the hosts are written against it)
//
//   loadSqlite({ wasm, callbacks, maxMemoryBytes }) -> Promise<Sqlite>
//     wasm:      sqlite3.wasm as a WebAssembly.Module, bytes (ArrayBuffer,
//                typed array), a Response or a Promise of one
//     callbacks: sqlite-callbacks.wasm, the same kinds
//     maxMemoryBytes: the most SQLite's memory may grow to (default 512
//                MiB): past it an allocation fails and the statement with
//                SQLITE_NOMEM, instead of taking the isolate's memory. Every
//                connection of the realm shares it; natively ncruces gives
//                each connection 256 MiB, and a native handle has two or more
//                connections (writer and readers)
//   One Sqlite per call: its own memory, heap and function table.
//
//   Sqlite
//     version            "3.54.1" (sqlite3_libversion of the loaded build)
//     x                  the raw exports: every sqlite3_* C function
//                        (pointers are i32 numbers, sqlite3_int64 is BigInt),
//                        malloc/free, __indirect_function_table
//     memory             the WebAssembly.Memory SQLite runs in
//     heap8u()           Uint8Array over all of memory
//     view()             DataView over all of memory
//                        Both are re-made after the memory grows (any call
//                        into SQLite may grow it): take them again after
//                        each call, never keep one across calls.
//     malloc(n) -> ptr   sqlite3_malloc; throws RangeError on out of memory
//     free(ptr)          sqlite3_free (0 is fine)
//     realloc(ptr, n)    sqlite3_realloc; throws RangeError on out of memory
//     cstring(ptr, n?)   the UTF-8 string at ptr: n bytes, or up to its NUL
//     allocCString(s) -> ptr
//                        s as a NUL-terminated UTF-8 string in a
//                        sqlite3_malloc'd block (the caller frees it);
//                        its byte length (without the NUL) is
//                        lastCStringLength right after the call
//     writeCString(ptr, cap, s) -> bytes written (without the NUL), or -1
//                        when s and its NUL do not fit in cap bytes
//     errmsg(db)         sqlite3_errmsg as a string
//     errstr(rc)         sqlite3_errstr as a string
//     addFunction(fn, params, returns) -> index
//                        puts the JavaScript function fn into SQLite's
//                        function table (for sqlite3_vfs / io_methods
//                        members, xFunc, destructors, progress handlers):
//                        params is the number of i32 parameters, or one
//                        letter per parameter: "i" i32 (pointers too),
//                        "j" i64 (fn receives a BigInt), "d" f64; returns
//                        is "i", "j", "d" or "v" (nothing). Only the
//                        signatures of callbackSignatures exist (every one
//                        SQLite's VFS, io methods, functions and hooks
//                        use); another throws.
//                        fn must not throw: an exception unwinds through
//                        SQLite's C frames and leaves the connection in an
//                        undefined state. Catch, and return an error code.
//     removeFunction(index)  frees a table slot made by addFunction
//     callbackSignatures ["ii", "iiiij", ...]: Emscripten-style, the result
//                        letter first, then the parameters
//     structs()          the C structs SQLite's wasm build describes
//                        (sqlite3_vfs, sqlite3_io_methods, sqlite3_file,
//                        ...): { name: { sizeof, members: { name: { offset,
//                        sizeof, signature } } } }, parsed on first use
//     constants()        SQLite's constants by name (SQLITE_OK,
//                        SQLITE_IOERR_READ, SQLITE_OPEN_CREATE, ...),
//                        parsed on first use
//     open(name, flags, vfs?) -> db pointer
//                        sqlite3_open_v2 (vfs: a registered VFS name, or
//                        undefined for the default); throws an Error with
//                        .rc on failure
//
//   SQLITE_WASM_VERSION, SQLITE_WASM_SHA256: the pinned build this loader
//   knows the imports of. loadSqlite refuses a module with an import it does
//   not know (a new build of sqlite-wasm must be checked against them).
// ---------------------------------------------------------------------------

/** The npm version of @sqlite.org/sqlite-wasm whose sqlite3.wasm this loader is written for. */
export const SQLITE_WASM_VERSION = "3.54.1-build1";
/** sha256 of that sqlite3.wasm (scripts/build.js checks the file it copies). */
export const SQLITE_WASM_SHA256 = "b8a92a19f441a90ff2339fe988fbe317c4adf3ed844096f12aee04aa72d58257";

const ENOSYS = 52;
const PAGE = 65536;

async function compile(src, what) {
  if (src instanceof WebAssembly.Module) return src;
  if (src && typeof src.then === "function") src = await src;
  if (typeof Response !== "undefined" && src instanceof Response) {
    if (!src.ok) throw new Error(`${what}: HTTP ${src.status}`);
    src = await src.arrayBuffer();
  }
  if (src instanceof ArrayBuffer || ArrayBuffer.isView(src)) return WebAssembly.compile(src);
  throw new TypeError(`${what} must be a WebAssembly.Module, bytes or a Response`);
}

/** Loads SQLite; see the API at the top of this file. */
export async function loadSqlite({ wasm, callbacks, maxMemoryBytes = 512 << 20 } = {}) {
  const [module, cbModule] = await Promise.all([compile(wasm, "sqlite3.wasm"), compile(callbacks, "sqlite-callbacks.wasm")]);
  // The build takes at least 128 pages (its import of env.memory) and at
  // most 2 GiB; SQLite grows it through emscripten_resize_heap.
  const maxPages = Math.max(128, Math.min(32768, Math.floor(maxMemoryBytes / PAGE)));
  const memory = new WebAssembly.Memory({ initial: 128, maximum: maxPages });
  let u8 = new Uint8Array(memory.buffer);
  let dv = new DataView(memory.buffer);
  const fresh = () => {
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
    emscripten_get_heap_max: () => maxPages * PAGE,
    emscripten_resize_heap(requested) {
      const pages = Math.ceil(((requested >>> 0) - memory.buffer.byteLength) / PAGE);
      try {
        if (pages > 0) memory.grow(pages);
        fresh();
        return 1;
      } catch {
        return 0;
      }
    },
    _tzset_js() {},
    _localtime_js(time, tmPtr) {
      // UTC: the engine asks SQLite for no 'localtime' modifier.
      fresh();
      const d = new Date(Number(time) * 1000);
      const f = [d.getUTCSeconds(), d.getUTCMinutes(), d.getUTCHours(), d.getUTCDate(), d.getUTCMonth(), d.getUTCFullYear() - 1900, d.getUTCDay()];
      for (let i = 0; i < f.length; i++) dv.setInt32(tmPtr + 4 * i, f[i], true);
    },
    _mmap_js: nosys,
    _munmap_js: nosys,
  };
  const wasi = {
    clock_time_get(id, _precision, out) {
      fresh();
      const ms = id === 0 ? Date.now() : performance.now();
      dv.setBigInt64(out, BigInt(Math.round(ms * 1e6)), true);
      return 0;
    },
    environ_sizes_get(countPtr, sizePtr) {
      fresh();
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
    if (!table) throw new Error(`sqlite3.wasm: unexpected import ${imp.module}.${imp.name} (not the build of ${SQLITE_WASM_VERSION}?)`);
    const v = table[imp.name] ?? (imp.name.startsWith("__syscall_") && imp.kind === "function" ? nosys : undefined);
    if (v === undefined) throw new Error(`sqlite3.wasm: unknown import ${imp.module}.${imp.name} (not the build of ${SQLITE_WASM_VERSION}?)`);
    imports[imp.module][imp.name] = v;
  }
  const instance = await WebAssembly.instantiate(module, imports);
  const x = instance.exports;
  x.__wasm_call_ctors?.();
  if (x.sqlite3_initialize() !== 0) throw new Error("sqlite3.wasm: sqlite3_initialize failed");

  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const table = x.__indirect_function_table;

  // The callback module imports one JavaScript function per signature
  // (cb.<sig>) and exports it again as a wasm function of that type, which
  // a funcref table can hold. An instance per addFunction binds the one
  // wanted; the others get a stub that is never called.
  const callbackSignatures = WebAssembly.Module.exports(cbModule)
    .filter((e) => e.kind === "function")
    .map((e) => e.name);
  const stubs = {};
  for (const s of callbackSignatures) {
    stubs[s] = () => {
      throw new Error(`sqlite-callbacks.wasm: unbound ${s}`);
    };
  }
  const freeSlots = [];

  const sq = {
    x,
    memory,
    callbackSignatures,
    lastCStringLength: 0,
    heap8u() {
      fresh();
      return u8;
    },
    view() {
      fresh();
      return dv;
    },
    malloc(n) {
      const p = x.sqlite3_malloc(n);
      if (!p && n > 0) throw new RangeError(`sqlite3.wasm: out of memory (${n} bytes)`);
      return p;
    },
    free(p) {
      if (p) x.sqlite3_free(p);
    },
    realloc(p, n) {
      const q = x.sqlite3_realloc(p, n);
      if (!q && n > 0) throw new RangeError(`sqlite3.wasm: out of memory (${n} bytes)`);
      return q;
    },
    cstring(p, n) {
      if (!p) return "";
      fresh();
      let e = p + (n ?? 0);
      if (n === undefined) while (u8[e]) e++;
      return dec.decode(u8.subarray(p, e));
    },
    allocCString(s) {
      const b = enc.encode(s);
      const p = sq.malloc(b.length + 1);
      fresh();
      u8.set(b, p);
      u8[p + b.length] = 0;
      sq.lastCStringLength = b.length;
      return p;
    },
    writeCString(p, cap, s) {
      const b = enc.encode(s);
      if (b.length + 1 > cap) return -1;
      fresh();
      u8.set(b, p);
      u8[p + b.length] = 0;
      return b.length;
    },
    errmsg: (db) => sq.cstring(x.sqlite3_errmsg(db)),
    errstr: (rc) => sq.cstring(x.sqlite3_errstr(rc)),
    addFunction(fn, params, returns) {
      if (typeof fn !== "function") throw new TypeError("addFunction: fn must be a function");
      const sig = `${returns}${typeof params === "number" ? "i".repeat(params) : params}`;
      if (!callbackSignatures.includes(sig)) {
        throw new Error(`addFunction: no callback of signature ${sig} (the callback module has ${callbackSignatures.join(" ")})`);
      }
      const inst = new WebAssembly.Instance(cbModule, { cb: { ...stubs, [sig]: fn } });
      const idx = freeSlots.length ? freeSlots.pop() : table.grow(1);
      table.set(idx, inst.exports[sig]);
      return idx;
    },
    removeFunction(idx) {
      table.set(idx, null);
      freeSlots.push(idx);
    },
    structs: once(() => jsonFromC(sq, x.sqlite3__wasm_enum_json).structs.reduce((all, s) => {
      const members = {};
      for (const [name, m] of Object.entries(s.members)) members[name] = { offset: m.offset, sizeof: m.sizeof, signature: m.signature };
      all[s.name] = { sizeof: s.sizeof, members };
      return all;
    }, {})),
    constants: once(() => {
      const out = {};
      for (const [group, entries] of Object.entries(jsonFromC(sq, x.sqlite3__wasm_enum_json))) {
        if (group === "structs" || typeof entries !== "object") continue;
        for (const [k, v] of Object.entries(entries)) if (typeof v === "number") out[k] = v;
      }
      return out;
    }),
    open(name, flags, vfs) {
      const pName = sq.allocCString(name);
      const pVfs = vfs ? sq.allocCString(vfs) : 0;
      const out = sq.malloc(4);
      try {
        const rc = x.sqlite3_open_v2(pName, out, flags, pVfs);
        const db = sq.view().getUint32(out, true);
        if (rc) {
          const msg = db ? sq.errmsg(db) : sq.errstr(rc);
          x.sqlite3_close_v2(db);
          throw Object.assign(new Error(msg), { rc });
        }
        return db;
      } finally {
        sq.free(out);
        sq.free(pVfs);
        sq.free(pName);
      }
    },
  };
  sq.version = sq.cstring(x.sqlite3_libversion());
  return sq;
}

function once(fn) {
  let v;
  return () => (v ??= fn());
}

function jsonFromC(sq, getter) {
  return JSON.parse(sq.cstring(getter()));
}
