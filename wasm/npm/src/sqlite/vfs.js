// The JavaScript VFS adapter: an sqlite3_vfs and its sqlite3_io_methods,
// registered into the official SQLite wasm build (loaded by loader.js),
// whose methods call a file host: a plain JavaScript object with
// synchronous open/read/write/size/truncate/sync/close/remove/exists
// (the contract is in index.d.ts, `FileHost`, and the README). Node's
// files, OPFS and Durable Objects are such hosts.
//
// SQLite reaches JavaScript through the loader's callback module
// (sq.addFunction): each method is put into SQLite's function table once
// per loaded SQLite; every VFS registered here shares them and is told
// apart by the pointers SQLite passes (the sqlite3_vfs for VFS methods,
// the sqlite3_file for file methods).
//
// Locks live in this realm only, in a table per file name shared by the
// connections of this SQLite (SQLite's shared / reserved / pending /
// exclusive protocol, as in the unix VFS without fcntl), and so does the
// WAL-index ("shared memory": regions in SQLite's heap): nothing on disk
// records either, so a process that dies leaves no stale lock and no
// "-shm" file, and the next opener rebuilds the index from the WAL.
// Keeping other processes away is the host's business (an owner file,
// exclusive access handles, a Durable Object's single thread). The engine's
// files are thus in WAL mode as natively, whether its connection uses
// normal or exclusive locking (then SQLite keeps the index in the
// connection and never maps shared memory); a rollback journal works too.
//
// A host method that throws becomes an SQLITE_IOERR_* (SQLITE_CANTOPEN in
// xOpen; SQLITE_BUSY when the error's code is "BUSY"); the message is kept
// and returned by takeVfsError() for the error the caller reports.
const OK = 0;
const ERROR = 1;
const BUSY = 5;
const NOTFOUND = 12;
const CANTOPEN = 14;
const IOERR = 10;
const ioerr = (n) => IOERR | (n << 8);
export const SQLITE_IOERR_READ = ioerr(1);
export const SQLITE_IOERR_SHORT_READ = ioerr(2);
const IOERR_WRITE = ioerr(3);
const IOERR_FSYNC = ioerr(4);
const IOERR_TRUNCATE = ioerr(6);
const IOERR_FSTAT = ioerr(7);
const IOERR_UNLOCK = ioerr(8);
const IOERR_DELETE = ioerr(10);
const IOERR_ACCESS = ioerr(13);
const IOERR_CHECKRESERVEDLOCK = ioerr(14);
const IOERR_LOCK = ioerr(15);
const IOERR_CLOSE = ioerr(16);
const IOERR_SHMLOCK = ioerr(20);
const IOERR_SHMMAP = ioerr(21);
const NOMEM = 7;

const OPEN_READONLY = 0x1;
const OPEN_CREATE = 0x4;
const OPEN_DELETEONCLOSE = 0x8;
const OPEN_MAIN_DB = 0x100;
const OPEN_TEMP_DB = 0x200;
const OPEN_TRANSIENT_DB = 0x400;
const OPEN_MAIN_JOURNAL = 0x800;
const OPEN_TEMP_JOURNAL = 0x1000;
const OPEN_SUBJOURNAL = 0x2000;
const OPEN_SUPER_JOURNAL = 0x4000;
const OPEN_WAL = 0x80000;
const OPEN_TEMPORARY = OPEN_TEMP_DB | OPEN_TRANSIENT_DB | OPEN_TEMP_JOURNAL | OPEN_SUBJOURNAL | OPEN_DELETEONCLOSE;

export const LOCK_NONE = 0;
export const LOCK_SHARED = 1;
export const LOCK_RESERVED = 2;
export const LOCK_PENDING = 3;
export const LOCK_EXCLUSIVE = 4;
const LOCK_NAMES = ["none", "shared", "reserved", "pending", "exclusive"];

const SHM_SLOTS = 8;
const SHM_UNLOCK = 1;
const SHM_SHARED = 4;

const FCNTL_HAS_MOVED = 20;
const FCNTL_COMMIT_PHASETWO = 22;
const IOCAP_POWERSAFE_OVERWRITE = 0x1000;
const IOCAP_SUBPAGE_READ = 0x8000;

const MAX_PATHNAME = 1024;
const SZ_VFS = 88; // sqlite3_vfs up to version 3 on wasm32
const SZ_IO_METHODS = 76;
const SZ_FILE = 8; // sqlite3_file: pMethods, then nothing of ours (state is kept in JS)

/** Per loaded SQLite: the callback instance, the io methods, the VFSes and files. */
const states = new WeakMap();

// The signature of each method for sq.addFunction: parameters ("i" i32,
// "j" i64), then the result.
const METHODS = {
  xOpen: ["iiiii", "i"],
  xDelete: ["iii", "i"],
  xAccess: ["iiii", "i"],
  xFullPathname: ["iiii", "i"],
  xRandomness: ["iii", "i"],
  xSleep: ["ii", "i"],
  xCurrentTime: ["ii", "i"],
  xGetLastError: ["iii", "i"],
  xCurrentTimeInt64: ["ii", "i"],
  xClose: ["i", "i"],
  xRead: ["iiij", "i"],
  xWrite: ["iiij", "i"],
  xTruncate: ["ij", "i"],
  xSync: ["ii", "i"],
  xFileSize: ["ii", "i"],
  xLock: ["ii", "i"],
  xUnlock: ["ii", "i"],
  xCheckReservedLock: ["ii", "i"],
  xFileControl: ["iii", "i"],
  xSectorSize: ["i", "i"],
  xDeviceCharacteristics: ["i", "i"],
  xShmMap: ["iiiii", "i"],
  xShmLock: ["iiii", "i"],
  xShmBarrier: ["i", "v"],
  xShmUnmap: ["ii", "i"],
};
const VFS_SLOTS = { xOpen: 24, xDelete: 28, xAccess: 32, xFullPathname: 36, xRandomness: 56, xSleep: 60, xCurrentTime: 64, xGetLastError: 68, xCurrentTimeInt64: 72 };
const IO_SLOTS = ["xClose", "xRead", "xWrite", "xTruncate", "xSync", "xFileSize", "xLock", "xUnlock", "xCheckReservedLock", "xFileControl", "xSectorSize", "xDeviceCharacteristics",
  "xShmMap", "xShmLock", "xShmBarrier", "xShmUnmap"];

/** The struct layout written here, for a test against the build's own description (sq.structs()). */
export const LAYOUT = {
  vfs: { sizeof: SZ_VFS, iVersion: 0, szOsFile: 4, mxPathname: 8, zName: 16, ...VFS_SLOTS },
  io: { sizeof: SZ_IO_METHODS, iVersion: 0, ...Object.fromEntries(IO_SLOTS.map((n, i) => [n, 4 + 4 * i])) },
};

function stateOf(sq) {
  let st = states.get(sq);
  if (st) return st;
  const x = sq.x;
  const memory = sq.memory;
  if (!(memory instanceof WebAssembly.Memory) || typeof sq.addFunction !== "function") {
    throw new TypeError("agentstate: registerVfs needs a SQLite from loader.js (memory, addFunction)");
  }
  st = {
    sq,
    x,
    memory,
    vfses: new Map(), // sqlite3_vfs pointer -> Vfs
    files: new Map(), // sqlite3_file pointer -> open file
    tables: new Map(), // main database file name -> lock table
    shms: new Map(), // main database file name -> shared memory
    lastError: "",
    ptrs: {}, // method name -> function-table index
    ioMethods: 0,
    dec: new TextDecoder(),
    enc: new TextEncoder(),
  };
  st.u8 = () => new Uint8Array(memory.buffer);
  st.dv = () => new DataView(memory.buffer);
  st.cstr = (p) => {
    const u = st.u8();
    let e = p;
    while (u[e]) e++;
    return st.dec.decode(u.subarray(p, e));
  };
  const impl = methods(st);
  for (const [n, [params, result]] of Object.entries(METHODS)) st.ptrs[n] = sq.addFunction(impl[n], params, result);
  const io = x.sqlite3_malloc(SZ_IO_METHODS);
  if (!io) throw new Error("agentstate: out of memory in SQLite");
  st.u8().fill(0, io, io + SZ_IO_METHODS);
  const dv = st.dv();
  dv.setInt32(io, 2, true); // shared memory, no mmap
  IO_SLOTS.forEach((n, i) => dv.setUint32(io + 4 + 4 * i, st.ptrs[n], true));
  st.ioMethods = io;
  states.set(sq, st);
  return st;
}

/** The message of the last host exception a VFS of this SQLite turned into an error code, once. */
export function takeVfsError(sq) {
  const st = states.get(sq);
  if (!st || !st.lastError) return "";
  const m = st.lastError;
  st.lastError = "";
  return m;
}

function fail(st, e, code) {
  const msg = e?.message ?? String(e);
  st.lastError = msg;
  if (e?.code === "BUSY") return BUSY;
  return code;
}

/** A temporary file (statement journal, sorter spill, temp database): memory only. */
class MemFile {
  constructor() {
    this.data = new Uint8Array(0);
    this.n = 0;
  }
  read(into, off) {
    const n = Math.max(0, Math.min(into.length, this.n - off));
    if (n > 0) into.set(this.data.subarray(off, off + n));
    return n;
  }
  write(from, off) {
    const end = off + from.length;
    if (end > this.data.length) {
      const d = new Uint8Array(Math.max(end, this.data.length * 2, 4096));
      d.set(this.data.subarray(0, this.n));
      this.data = d;
    }
    if (off > this.n) this.data.fill(0, this.n, off);
    this.data.set(from, off);
    this.n = Math.max(this.n, end);
  }
  truncate(size) {
    if (size < this.n) this.n = size;
    else if (size > this.n) this.write(new Uint8Array(0), size);
  }
}

function methods(st) {
  const vfsOf = (p) => {
    const v = st.vfses.get(p);
    if (!v) throw new Error(`agentstate: no VFS at ${p}`);
    return v;
  };
  const fileOf = (p) => {
    const f = st.files.get(p);
    if (!f) throw new Error(`agentstate: no open file at ${p}`);
    return f;
  };
  const view = (ptr, n) => new Uint8Array(st.memory.buffer, ptr, n);
  // Every method catches: an exception thrown through wasm frames would
  // unwind SQLite without letting it clean up.
  const guard = (code, fn) => (...args) => {
    try {
      return fn(...args);
    } catch (e) {
      return fail(st, e, code);
    }
  };
  return {
    xOpen: guard(CANTOPEN, (pVfs, zName, pFile, flags, pOutFlags) => {
      st.dv().setUint32(pFile, 0, true); // no methods: SQLite will not call xClose on a failed open
      const v = vfsOf(pVfs);
      let f;
      if (!zName || flags & OPEN_TEMPORARY) {
        f = { mem: new MemFile(), vfs: v, lock: LOCK_NONE };
      } else {
        const name = st.cstr(zName);
        const kind = flags & OPEN_MAIN_DB ? "main" : flags & OPEN_MAIN_JOURNAL ? "journal" : flags & OPEN_WAL ? "wal" : flags & OPEN_SUPER_JOURNAL ? "super-journal" : "other";
        const readOnly = !!(flags & OPEN_READONLY);
        const id = v.host.open(name, { create: !!(flags & OPEN_CREATE) && !readOnly, readOnly, kind });
        if (typeof id !== "number" || id < 0) return CANTOPEN;
        f = { id, name, vfs: v, readOnly, kind, lock: LOCK_NONE, locks: kind === "main" ? lockTable(st, name) : null };
      }
      st.files.set(pFile, f);
      const dv = st.dv();
      dv.setUint32(pFile, st.ioMethods, true);
      if (pOutFlags) dv.setInt32(pOutFlags, flags, true);
      return OK;
    }),
    xDelete: guard(IOERR_DELETE, (pVfs, zName) => {
      vfsOf(pVfs).host.remove(st.cstr(zName));
      return OK;
    }),
    xAccess: guard(IOERR_ACCESS, (pVfs, zName, _flags, pOut) => {
      st.dv().setInt32(pOut, vfsOf(pVfs).host.exists(st.cstr(zName)) ? 1 : 0, true);
      return OK;
    }),
    xFullPathname: guard(CANTOPEN, (pVfs, zName, nOut, zOut) => {
      // The host resolves names before the engine opens them.
      const u = st.u8();
      let e = zName;
      while (u[e]) e++;
      const n = e - zName;
      if (n + 1 > nOut) return CANTOPEN;
      u.copyWithin(zOut, zName, e);
      u[zOut + n] = 0;
      return OK;
    }),
    xRandomness: (_pVfs, n, pOut) => {
      try {
        for (let o = 0; o < n; o += 65536) crypto.getRandomValues(view(pOut + o, Math.min(65536, n - o)));
      } catch {
        const u = st.u8();
        for (let i = 0; i < n; i++) u[pOut + i] = (Math.random() * 256) | 0;
      }
      return n;
    },
    xSleep: (_pVfs, us) => {
      // A blocking sleep exists only where Atomics.wait is allowed (Node,
      // workers); elsewhere SQLite's busy handler is off anyway (the
      // driver retries BUSY after yielding to the event loop).
      try {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, us / 1000);
        return us;
      } catch {
        return 0;
      }
    },
    xCurrentTime: (_pVfs, pOut) => {
      st.dv().setFloat64(pOut, Date.now() / 86400000 + 2440587.5, true);
      return OK;
    },
    xGetLastError: (_pVfs, n, zBuf) => {
      if (n > 0 && zBuf) {
        const b = st.enc.encode(st.lastError).subarray(0, n - 1);
        const u = st.u8();
        u.set(b, zBuf);
        u[zBuf + b.length] = 0;
      }
      return 0;
    },
    xCurrentTimeInt64: (_pVfs, pOut) => {
      st.dv().setBigInt64(pOut, 210866760000000n + BigInt(Date.now()), true);
      return OK;
    },

    xClose: guard(IOERR_CLOSE, (pFile) => {
      const f = st.files.get(pFile);
      if (!f) return OK;
      st.files.delete(pFile);
      if (f.mem) return OK;
      if (f.shm) shmUnmap(st, f);
      if (f.lock > LOCK_NONE) unlock(f, LOCK_NONE);
      if (f.locks) releaseLockTable(st, f.name);
      f.vfs.host.close(f.id);
      return OK;
    }),
    xRead: guard(SQLITE_IOERR_READ, (pFile, pBuf, n, off) => {
      const f = fileOf(pFile);
      const into = view(pBuf, n);
      const got = f.mem ? f.mem.read(into, Number(off)) : f.vfs.host.read(f.id, into, Number(off));
      if (got < n) {
        // SQLite requires the rest zeroed on a short read.
        new Uint8Array(st.memory.buffer, pBuf, n).fill(0, Math.max(0, got));
        return SQLITE_IOERR_SHORT_READ;
      }
      return OK;
    }),
    xWrite: guard(IOERR_WRITE, (pFile, pBuf, n, off) => {
      const f = fileOf(pFile);
      if (f.mem) f.mem.write(view(pBuf, n), Number(off));
      else f.vfs.host.write(f.id, view(pBuf, n), Number(off));
      return OK;
    }),
    xTruncate: guard(IOERR_TRUNCATE, (pFile, size) => {
      const f = fileOf(pFile);
      if (f.mem) f.mem.truncate(Number(size));
      else f.vfs.host.truncate(f.id, Number(size));
      return OK;
    }),
    xSync: guard(IOERR_FSYNC, (pFile) => {
      const f = fileOf(pFile);
      if (!f.mem) f.vfs.host.sync(f.id);
      return OK;
    }),
    xFileSize: guard(IOERR_FSTAT, (pFile, pOut) => {
      const f = fileOf(pFile);
      const n = f.mem ? f.mem.n : f.vfs.host.size(f.id);
      st.dv().setBigInt64(pOut, BigInt(n), true);
      return OK;
    }),
    xLock: guard(IOERR_LOCK, (pFile, level) => lock(fileOf(pFile), level)),
    xUnlock: guard(IOERR_UNLOCK, (pFile, level) => unlock(fileOf(pFile), level)),
    xCheckReservedLock: guard(IOERR_CHECKRESERVEDLOCK, (pFile, pOut) => {
      const f = fileOf(pFile);
      const held = !!f.locks && (f.lock >= LOCK_RESERVED || f.locks.reserved !== null);
      st.dv().setInt32(pOut, held ? 1 : 0, true);
      return OK;
    }),
    xFileControl: (pFile, op, pArg) => {
      if (op === FCNTL_HAS_MOVED) {
        st.dv().setInt32(pArg, 0, true);
        return OK;
      }
      if (op === FCNTL_COMMIT_PHASETWO) {
        // A transaction is committed (in WAL mode under synchronous=NORMAL
        // no xSync says so). SQLite ignores what this returns: a host
        // whose commit fails must fail its later calls itself.
        const f = st.files.get(pFile);
        if (f && !f.mem && typeof f.vfs.host.commit === "function") {
          try {
            f.vfs.host.commit(f.id);
          } catch (e) {
            fail(st, e, IOERR);
          }
        }
      }
      return NOTFOUND;
    },
    xSectorSize: () => 4096,
    xDeviceCharacteristics: () => IOCAP_POWERSAFE_OVERWRITE | IOCAP_SUBPAGE_READ,

    // Shared memory (the WAL-index): regions in SQLite's heap, one set per
    // database file name, shared by every connection of this SQLite; its
    // locks in the same table. Nothing of it is on disk, so no other
    // process can join it (the hosts keep other processes away) and a dead
    // process leaves none behind (the next opener rebuilds the index from
    // the WAL).
    xShmMap: guard(IOERR_SHMMAP, (pFile, region, size, extend, pp) => {
      const f = fileOf(pFile);
      if (!f.locks) return IOERR_SHMMAP;
      let m = f.shm;
      if (!m) {
        m = st.shms.get(f.name);
        if (!m) {
          m = { name: f.name, regions: [], refs: 0, shared: new Array(SHM_SLOTS).fill(0), exclusive: new Array(SHM_SLOTS).fill(null) };
          st.shms.set(f.name, m);
        }
        m.refs++;
        f.shm = m;
        f.shmHeld = new Array(SHM_SLOTS).fill(0); // 0 none, 1 shared, 2 exclusive
      }
      let p = m.regions[region] ?? 0;
      if (!p && extend) {
        for (let i = m.regions.length; i <= region; i++) {
          if (m.regions[i]) continue;
          const q = st.x.sqlite3_malloc(size);
          if (!q) return NOMEM;
          st.u8().fill(0, q, q + size);
          m.regions[i] = q;
        }
        p = m.regions[region];
      }
      st.dv().setUint32(pp, p, true);
      return OK;
    }),
    xShmLock: guard(IOERR_SHMLOCK, (pFile, offset, n, flags) => {
      const f = fileOf(pFile);
      const m = f.shm;
      if (!m || offset < 0 || offset + n > SHM_SLOTS) return IOERR_SHMLOCK;
      const held = f.shmHeld;
      if (flags & SHM_UNLOCK) {
        for (let i = offset; i < offset + n; i++) {
          if (held[i] === 1) m.shared[i]--;
          if (held[i] === 2) m.exclusive[i] = null;
          held[i] = 0;
        }
        return OK;
      }
      if (flags & SHM_SHARED) {
        // SQLite takes shared locks one slot at a time.
        for (let i = offset; i < offset + n; i++) if (held[i] === 0 && m.exclusive[i] !== null) return BUSY;
        for (let i = offset; i < offset + n; i++) {
          if (held[i] === 0) {
            m.shared[i]++;
            held[i] = 1;
          }
        }
        return OK;
      }
      for (let i = offset; i < offset + n; i++) {
        if (held[i] === 2) continue;
        if (m.exclusive[i] !== null || m.shared[i] - (held[i] === 1 ? 1 : 0) > 0) return BUSY;
      }
      for (let i = offset; i < offset + n; i++) {
        if (held[i] === 1) m.shared[i]--;
        m.exclusive[i] = f;
        held[i] = 2;
      }
      return OK;
    }),
    xShmBarrier: () => {}, // one thread
    xShmUnmap: guard(IOERR_SHMLOCK, (pFile) => {
      const f = st.files.get(pFile);
      if (f?.shm) shmUnmap(st, f);
      return OK;
    }),
  };
}

// Drops a connection's hold on a file's shared memory; the last one frees it.
function shmUnmap(st, f) {
  const m = f.shm;
  for (let i = 0; i < SHM_SLOTS; i++) {
    if (f.shmHeld[i] === 1) m.shared[i]--;
    if (f.shmHeld[i] === 2) m.exclusive[i] = null;
  }
  f.shm = null;
  f.shmHeld = null;
  if (--m.refs === 0) {
    for (const p of m.regions) if (p) st.x.sqlite3_free(p);
    st.shms.delete(m.name);
  }
}

// The lock table of one main database file, shared by the connections of
// one VFS: how many hold SHARED, and which file holds RESERVED and PENDING
// (a file that asked for EXCLUSIVE keeps PENDING until it gets it or
// unlocks, which keeps new readers out meanwhile).
function lock(f, level) {
  if (!f.locks) return f.mem ? OK : IOERR_LOCK;
  if (f.lock >= level) return OK;
  const l = f.locks;
  const before = { shared: l.shared, reserved: l.reserved, pending: l.pending, lock: f.lock };
  switch (level) {
    case LOCK_SHARED:
      if (l.pending !== null) return BUSY;
      l.shared++;
      break;
    case LOCK_RESERVED:
      if (l.reserved !== null && l.reserved !== f) return BUSY;
      l.reserved = f;
      break;
    case LOCK_EXCLUSIVE:
      if (l.pending !== null && l.pending !== f) return BUSY;
      l.pending = f;
      if (l.shared > 1) {
        f.lock = LOCK_PENDING;
        return BUSY;
      }
      break;
    default:
      return IOERR_LOCK;
  }
  // The host may refuse (a lock it keeps across processes, say): undo.
  const host = f.vfs.host;
  if (typeof host.lock === "function") {
    let ok;
    try {
      ok = host.lock(f.id, LOCK_NAMES[level]);
    } catch (e) {
      ok = e;
    }
    if (ok !== true && ok !== undefined) {
      Object.assign(l, { shared: before.shared, reserved: before.reserved, pending: before.pending });
      f.lock = before.lock;
      if (ok instanceof Error || (ok && typeof ok === "object")) return fail(f.vfs.st, ok, IOERR_LOCK);
      return BUSY;
    }
  }
  f.lock = level;
  return OK;
}

function unlock(f, level) {
  if (!f.locks) return f.mem ? OK : IOERR_UNLOCK;
  if (f.lock <= level) return OK;
  const l = f.locks;
  if (l.reserved === f) l.reserved = null;
  if (l.pending === f) l.pending = null;
  if (level === LOCK_NONE && f.lock >= LOCK_SHARED) l.shared--;
  f.lock = level;
  if (typeof f.vfs.host.unlock === "function") f.vfs.host.unlock(f.id, LOCK_NAMES[level]);
  return OK;
}

// Lock tables are per loaded SQLite and file name, not per VFS: two hosts
// serving one file (two opens of one path) still exclude each other.
function lockTable(st, name) {
  let t = st.tables.get(name);
  if (!t) {
    t = { refs: 0, shared: 0, reserved: null, pending: null };
    st.tables.set(name, t);
  }
  t.refs++;
  return t;
}

function releaseLockTable(st, name) {
  const t = st.tables.get(name);
  if (t && --t.refs === 0) st.tables.delete(name);
}

class Vfs {
  constructor(st, host, name) {
    this.st = st;
    this.host = host;
    this.name = name;
    this.ptr = 0;
  }
}

let nextName = 0;

/**
 * Registers a VFS over `host` in the loaded SQLite `sq` (loader.js). Returns its name (give it to
 * sqlite3_open_v2, or as `?vfs=` in a URI) and unregister(), which frees it
 * once no connection uses it.
 *
 * Options: `name` (default "agentstate-N").
 */
export function registerVfs(sq, host, { name } = {}) {
  checkHost(host);
  const st = stateOf(sq);
  const x = st.x;
  name ??= `agentstate-${++nextName}`;
  const v = new Vfs(st, host, name);
  const nameBytes = st.enc.encode(name);
  const p = x.sqlite3_malloc(SZ_VFS + nameBytes.length + 1);
  if (!p) throw new Error("agentstate: out of memory in SQLite");
  const u = st.u8();
  u.fill(0, p, p + SZ_VFS);
  u.set(nameBytes, p + SZ_VFS);
  u[p + SZ_VFS + nameBytes.length] = 0;
  const dv = st.dv();
  dv.setInt32(p, 2, true); // iVersion: up to xCurrentTimeInt64
  dv.setInt32(p + 4, SZ_FILE, true);
  dv.setInt32(p + 8, MAX_PATHNAME, true);
  dv.setUint32(p + 16, p + SZ_VFS, true);
  for (const [n, off] of Object.entries(VFS_SLOTS)) dv.setUint32(p + off, st.ptrs[n], true);
  v.ptr = p;
  st.vfses.set(p, v);
  const rc = x.sqlite3_vfs_register(p, 0);
  if (rc !== OK) {
    st.vfses.delete(p);
    x.sqlite3_free(p);
    throw new Error(`agentstate: sqlite3_vfs_register: rc ${rc}`);
  }
  let gone = false;
  return {
    name,
    unregister() {
      if (gone) return;
      for (const f of st.files.values()) {
        if (f.vfs === v) throw new Error(`agentstate: VFS ${name} still has ${f.name ?? "a temporary file"} open`);
      }
      gone = true;
      x.sqlite3_vfs_unregister(p);
      st.vfses.delete(p);
      x.sqlite3_free(p);
    },
  };
}

const HOST_METHODS = ["open", "read", "write", "size", "truncate", "sync", "close", "remove", "exists"];

/** Throws a TypeError naming what a host object lacks. */
export function checkHost(host) {
  if (!host || typeof host !== "object") throw new TypeError("agentstate: a file host must be an object");
  const missing = HOST_METHODS.filter((m) => typeof host[m] !== "function");
  if (missing.length) throw new TypeError(`agentstate: the file host lacks ${missing.join(", ")} (see FileHost in index.d.ts)`);
}

/**
 * Registers a VFS over a file host for one database handle: returns the
 * VFS name to open `path` (the host's database file) with, and detach(),
 * which unregisters the VFS and then calls host.dispose() if the host has
 * one (Node's host gives its owner file back there). Call detach once
 * every connection to the file is closed.
 */
export function attachHost(sq, host) {
  const v = registerVfs(sq, host);
  if (typeof host.path !== "string" || host.path === "") {
    v.unregister();
    throw new TypeError("agentstate: the file host has no path (the name of its database file)");
  }
  let done = false;
  return {
    vfs: v.name,
    path: host.path,
    detach() {
      if (done) return;
      v.unregister();
      done = true;
      host.dispose?.();
    },
  };
}

export { ERROR as SQLITE_ERROR, BUSY as SQLITE_BUSY, CANTOPEN as SQLITE_CANTOPEN, IOERR as SQLITE_IOERR };
