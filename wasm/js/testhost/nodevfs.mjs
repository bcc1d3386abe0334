// A small file VFS for the GOOS=js test runner: SQLite's files are real
// files, reached with node:fs's synchronous calls, so that a test that
// reads or damages a database file with Go's os package sees what SQLite
// wrote. It is test plumbing, not the package's Node host (that one has an
// owner file, sharing with the native CLI and more): no fsync (the tests
// that are about durability run natively), locks in a table of this
// process only (SQLite's shared / reserved / pending / exclusive protocol),
// temporary files in memory.
//
// Version 2 io methods: the WAL-index ("shared memory") of a database lives
// in SQLite's own heap, one set of regions per database file shared by every
// connection of this SQLite instance, with its locks in the same table. So
// the engine's files are in WAL mode, as natively, and several handles of
// one file share it. Nothing of it is on disk: another process must not
// open the file meanwhile (the package's file hosts see to that).
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

const OK = 0;
const IOERR = 10;
const BUSY = 5;
const CANTOPEN = 14;
const NOTFOUND = 12;
const IOERR_SHORT_READ = IOERR | (2 << 8);
const IOERR_DELETE_NOENT = IOERR | (23 << 8);
const OPEN_READONLY = 0x1;
const OPEN_CREATE = 0x4;
const OPEN_DELETEONCLOSE = 0x8;
const OPEN_MAIN_DB = 0x100;
const LOCK_NONE = 0;
const LOCK_SHARED = 1;
const LOCK_RESERVED = 2;
const LOCK_PENDING = 3;
const LOCK_EXCLUSIVE = 4;
const SHM_SLOTS = 8;
const SHM_UNLOCK = 1;
const SHM_EXCLUSIVE = 8;

export function registerTestVfs(sq, name = "agentstate-test") {
  const x = sq.x;
  const S = sq.structs();
  const vfsT = S.sqlite3_vfs;
  const ioT = S.sqlite3_io_methods;
  const files = new Map(); // id -> file
  const locks = new Map(); // path -> lock table
  const shms = new Map(); // path -> { regions: [ptr], size, holds: Map(file -> [8 slot states]), refs }
  let nextId = 1;

  const fileOf = (pFile) => files.get(sq.view().getInt32(pFile + 4, true));
  const guard = (fn, code) => (...a) => {
    try {
      return fn(...a);
    } catch (e) {
      if (process.env.AGENTSTATE_TESTVFS_TRACE) console.error("testvfs:", e);
      return code;
    }
  };

  const io = {
    xClose: [1, "i", (pFile) => {
      const f = fileOf(pFile);
      if (!f) return OK;
      if (f.shm) io.xShmUnmap[2](pFile, 0);
      if (f.lockTable) {
        unlock(f, LOCK_NONE);
        if (--f.lockTable.refs === 0) locks.delete(f.path);
      }
      if (f.fd !== undefined) fs.closeSync(f.fd);
      if (f.deleteOnClose && f.path) fs.rmSync(f.path, { force: true });
      files.delete(f.id);
      return OK;
    }],
    xRead: ["iiij", "i", (pFile, buf, amt, off) => {
      const f = fileOf(pFile);
      const heap = sq.heap8u();
      const o = Number(off);
      let n = 0;
      if (f.mem) {
        const src = f.mem.subarray(Math.min(o, f.size), Math.min(o + amt, f.size));
        heap.set(src, buf);
        n = src.length;
      } else {
        while (n < amt) {
          const r = fs.readSync(f.fd, heap, buf + n, amt - n, o + n);
          if (r === 0) break;
          n += r;
        }
      }
      if (n < amt) {
        heap.fill(0, buf + n, buf + amt);
        return IOERR_SHORT_READ;
      }
      return OK;
    }],
    xWrite: ["iiij", "i", (pFile, buf, amt, off) => {
      const f = fileOf(pFile);
      const heap = sq.heap8u();
      const o = Number(off);
      if (f.mem) {
        grow(f, o + amt);
        f.mem.set(heap.subarray(buf, buf + amt), o);
        f.size = Math.max(f.size, o + amt);
      } else {
        let n = 0;
        while (n < amt) n += fs.writeSync(f.fd, heap, buf + n, amt - n, o + n);
      }
      return OK;
    }],
    xTruncate: ["ij", "i", (pFile, size) => {
      const f = fileOf(pFile);
      if (f.mem) f.size = Math.min(f.size, Number(size));
      else fs.ftruncateSync(f.fd, Number(size));
      return OK;
    }],
    xSync: [2, "i", () => OK],
    xFileSize: [2, "i", (pFile, out) => {
      const f = fileOf(pFile);
      const size = f.mem ? f.size : fs.fstatSync(f.fd).size;
      sq.view().setBigInt64(out, BigInt(size), true);
      return OK;
    }],
    xLock: [2, "i", (pFile, level) => lock(fileOf(pFile), level)],
    xUnlock: [2, "i", (pFile, level) => unlock(fileOf(pFile), level)],
    xCheckReservedLock: [2, "i", (pFile, out) => {
      const f = fileOf(pFile);
      const held = f.lockTable ? f.lock >= LOCK_RESERVED || f.lockTable.reserved !== null : false;
      sq.view().setInt32(out, held ? 1 : 0, true);
      return OK;
    }],
    xFileControl: [3, "i", () => NOTFOUND],
    xSectorSize: [1, "i", () => 4096],
    xDeviceCharacteristics: [1, "i", () => 0x1000 /* POWERSAFE_OVERWRITE */],
    xShmMap: [5, "i", (pFile, iPg, pgsz, bExtend, pp) => {
      const f = fileOf(pFile);
      let m = shms.get(f.path);
      if (!m) shms.set(f.path, (m = { regions: [], size: pgsz, holds: new Map(), refs: 0 }));
      if (!f.shm) {
        f.shm = m;
        m.refs++;
        m.holds.set(f, new Int8Array(SHM_SLOTS));
      }
      while (m.regions.length <= iPg && bExtend) {
        const r = sq.malloc(pgsz);
        sq.heap8u().fill(0, r, r + pgsz);
        m.regions.push(r);
      }
      sq.view().setInt32(pp, m.regions[iPg] ?? 0, true);
      return OK;
    }],
    xShmLock: [4, "i", (pFile, offset, n, flags) => {
      const f = fileOf(pFile);
      const m = f.shm;
      const mine = m.holds.get(f);
      if (flags & SHM_UNLOCK) {
        for (let i = offset; i < offset + n; i++) mine[i] = 0;
        return OK;
      }
      const excl = flags & SHM_EXCLUSIVE;
      for (let i = offset; i < offset + n; i++) {
        for (const [g, held] of m.holds) {
          if (g !== f && held[i] !== 0 && (excl || held[i] === -1)) return BUSY;
        }
      }
      for (let i = offset; i < offset + n; i++) mine[i] = excl ? -1 : 1;
      return OK;
    }],
    xShmBarrier: [1, "v", () => {}],
    xShmUnmap: [2, "i", (pFile) => {
      const f = fileOf(pFile);
      const m = f.shm;
      if (!m) return OK;
      m.holds.delete(f);
      f.shm = null;
      if (--m.refs === 0) {
        for (const r of m.regions) sq.free(r);
        shms.delete(f.path);
      }
      return OK;
    }],
  };

  function grow(f, n) {
    if (n <= f.mem.length) return;
    const m = new Uint8Array(Math.max(n, f.mem.length * 2, 4096));
    m.set(f.mem.subarray(0, f.size));
    f.mem = m;
  }

  function lock(f, level) {
    const t = f.lockTable;
    if (!t || f.lock >= level) return OK;
    switch (level) {
      case LOCK_SHARED:
        if (t.pending) return BUSY;
        t.shared++;
        break;
      case LOCK_RESERVED:
        if (t.reserved && t.reserved !== f) return BUSY;
        t.reserved = f;
        break;
      case LOCK_EXCLUSIVE:
        if (t.pending && t.pending !== f) return BUSY;
        t.pending = f;
        if (t.shared > 1) {
          f.lock = LOCK_PENDING;
          return BUSY;
        }
        break;
      default:
        return IOERR;
    }
    f.lock = level;
    return OK;
  }

  function unlock(f, level) {
    const t = f.lockTable;
    if (!t || f.lock <= level) return OK;
    if (t.reserved === f) t.reserved = null;
    if (t.pending === f) t.pending = null;
    if (level === LOCK_NONE && f.lock >= LOCK_SHARED) t.shared--;
    f.lock = level;
    return OK;
  }

  const ioPtr = sq.malloc(ioT.sizeof);
  sq.heap8u().fill(0, ioPtr, ioPtr + ioT.sizeof);
  // AGENTSTATE_TESTVFS_NOSHM=1: version 1, no shared memory, as the npm
  // package's VFS (the engine then opens files in exclusive locking mode).
  const noShm = !!process.env.AGENTSTATE_TESTVFS_NOSHM;
  if (noShm) for (const m of ["xShmMap", "xShmLock", "xShmBarrier", "xShmUnmap"]) delete io[m];
  sq.view().setInt32(ioPtr + ioT.members.iVersion.offset, noShm ? 1 : 2, true);
  for (const [m, [params, ret, fn]] of Object.entries(io)) {
    sq.view().setInt32(ioPtr + ioT.members[m].offset, sq.addFunction(guard(fn, IOERR), params, ret), true);
  }

  const vfs = {
    xOpen: [5, "i", (_vfs, zName, pFile, flags, pOutFlags) => {
      sq.view().setInt32(pFile, 0, true);
      const id = nextId++;
      const f = { id, lock: LOCK_NONE };
      if (!zName) {
        f.mem = new Uint8Array(0);
        f.size = 0;
      } else {
        f.path = sq.cstring(zName);
        f.deleteOnClose = !!(flags & OPEN_DELETEONCLOSE);
        const ro = flags & OPEN_READONLY;
        try {
          f.fd = fs.openSync(f.path, ro ? "r" : fs.constants.O_RDWR | (flags & OPEN_CREATE ? fs.constants.O_CREAT : 0), 0o644);
        } catch (e) {
          return CANTOPEN;
        }
        if (flags & OPEN_MAIN_DB) {
          let t = locks.get(f.path);
          if (!t) locks.set(f.path, (t = { refs: 0, shared: 0, reserved: null, pending: null }));
          t.refs++;
          f.lockTable = t;
        }
      }
      files.set(id, f);
      const dv = sq.view();
      dv.setInt32(pFile, ioPtr, true);
      dv.setInt32(pFile + 4, id, true);
      if (pOutFlags) dv.setInt32(pOutFlags, flags, true);
      return OK;
    }],
    xDelete: [3, "i", (_vfs, zName) => {
      try {
        fs.unlinkSync(sq.cstring(zName));
      } catch (e) {
        return e.code === "ENOENT" ? IOERR_DELETE_NOENT : IOERR;
      }
      return OK;
    }],
    xAccess: [4, "i", (_vfs, zName, _flags, pOut) => {
      let ok = false;
      try {
        ok = fs.statSync(sq.cstring(zName)).size > 0;
      } catch {}
      sq.view().setInt32(pOut, ok ? 1 : 0, true);
      return OK;
    }],
    xFullPathname: [4, "i", (_vfs, zName, nOut, zOut) => {
      const n = sq.writeCString(zOut, nOut, path.resolve(sq.cstring(zName)));
      return n < 0 ? CANTOPEN : OK;
    }],
    xRandomness: [3, "i", (_vfs, n, out) => {
      crypto.getRandomValues(sq.heap8u().subarray(out, out + n));
      return n;
    }],
    xSleep: [2, "i", (_vfs, us) => us],
    xCurrentTime: [2, "i", (_vfs, out) => {
      sq.view().setFloat64(out, 2440587.5 + Date.now() / 864e5, true);
      return OK;
    }],
    xGetLastError: [3, "i", () => 0],
    xCurrentTimeInt64: [2, "i", (_vfs, out) => {
      sq.view().setBigInt64(out, 210866760000000n + BigInt(Date.now()), true);
      return OK;
    }],
  };

  const p = sq.malloc(vfsT.sizeof);
  sq.heap8u().fill(0, p, p + vfsT.sizeof);
  const dv = sq.view();
  dv.setInt32(p + vfsT.members.iVersion.offset, 2, true);
  dv.setInt32(p + vfsT.members.szOsFile.offset, 8, true);
  dv.setInt32(p + vfsT.members.mxPathname.offset, 1024, true);
  dv.setInt32(p + vfsT.members.zName.offset, sq.allocCString(name), true);
  for (const [m, [params, ret, fn]] of Object.entries(vfs)) {
    sq.view().setInt32(p + vfsT.members[m].offset, sq.addFunction(guard(fn, m === "xOpen" ? CANTOPEN : IOERR), params, ret), true);
  }
  const rc = x.sqlite3_vfs_register(p, 1);
  if (rc) throw new Error(`sqlite3_vfs_register: ${rc}`);
  return name;
}
