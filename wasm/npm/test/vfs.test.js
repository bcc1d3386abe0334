// The JavaScript VFS adapter (src/sqlite/vfs.js) under the official
// sqlite3.wasm, with plain SQL and no Go engine: layout, reads and writes,
// WAL in exclusive locking mode, the in-realm lock table, crashes (a copy
// of the files taken mid-way, opened by a fresh SQLite), errors from hosts.
import { LAYOUT, LOCK_EXCLUSIVE, attachHost, checkHost, registerVfs, takeVfsError } from "../src/sqlite/vfs.js";
import { connect, freshSqlite, memoryHost } from "./helpers/sqlite.js";

const SQLITE_BUSY = 5;
const SQLITE_IOERR = 10;
const SQLITE_CANTOPEN = 14;
const SQLITE_IOERR_WRITE = 778;
const SQLITE_IOERR_SHORT_READ = 522;

let sq;
beforeAll(async () => {
  sq = await freshSqlite();
});

function fill(c, n, from = 0) {
  c.exec("BEGIN");
  for (let i = from; i < from + n; i++) c.all("INSERT INTO t(k, v) VALUES (?, ?)", i, `value ${i} `.repeat(20));
  c.exec("COMMIT");
}

describe("layout", () => {
  it("matches the build's own description of sqlite3_vfs and sqlite3_io_methods", () => {
    const s = sq.structs();
    for (const [struct, mine] of [
      ["sqlite3_vfs", LAYOUT.vfs],
      ["sqlite3_io_methods", LAYOUT.io],
    ]) {
      expect(mine.sizeof, struct).toBe(s[struct].sizeof);
      for (const [member, off] of Object.entries(mine)) {
        if (member === "sizeof") continue;
        expect(off, `${struct}.${member}`).toBe(s[struct].members[member].offset);
      }
    }
  });
});

describe("files through a host", () => {
  it("creates, writes, reopens and reads a database, rollback journal and WAL", () => {
    for (const journal of ["DELETE", "WAL"]) {
      const host = memoryHost();
      const a = attachHost(sq, host);
      let c = connect(sq, host.path, a.vfs);
      if (journal === "WAL") c.exec("PRAGMA locking_mode=EXCLUSIVE");
      expect(c.get(`PRAGMA journal_mode=${journal}`)).toBe(journal.toLowerCase());
      c.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
      fill(c, 500);
      c.close();
      c = connect(sq, host.path, a.vfs);
      if (journal === "WAL") c.exec("PRAGMA locking_mode=EXCLUSIVE");
      expect(c.get("SELECT count(*) FROM t")).toBe(500);
      expect(c.get("SELECT v FROM t WHERE k = 321")).toBe("value 321 ".repeat(20));
      expect(c.get("PRAGMA integrity_check")).toBe("ok");
      c.close();
      a.detach();
      const names = [...host.files.keys()];
      expect(names).toContain(host.path);
      // Closing the last connection checkpoints the WAL and removes it;
      // a rollback journal is gone after each commit.
      expect(names.filter((n) => n !== host.path)).toEqual([]);
      expect(host.calls.some(([op, name]) => op === "remove" && name === `${host.path}${journal === "WAL" ? "-wal" : "-journal"}`)).toBe(true);
    }
  });

  it("runs WAL in normal locking mode: the WAL-index lives in SQLite's heap, shared by the connections", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const w = connect(sq, host.path, a.vfs);
    const r = connect(sq, host.path, a.vfs);
    expect(w.get("PRAGMA journal_mode=WAL")).toBe("wal");
    w.exec("PRAGMA wal_autocheckpoint=0; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    fill(w, 100);
    r.exec("BEGIN");
    expect(r.get("SELECT count(*) FROM t")).toBe(100); // a read snapshot
    fill(w, 50, 100); // the writer commits beside the reader: WAL, not a rollback journal
    expect(r.get("SELECT count(*) FROM t")).toBe(100);
    r.exec("COMMIT");
    expect(r.get("SELECT count(*) FROM t")).toBe(150);
    // A checkpoint cannot pass a reader's snapshot; once it can, it copies all.
    r.exec("BEGIN");
    r.get("SELECT count(*) FROM t");
    fill(w, 10, 150);
    expect(w.all("PRAGMA wal_checkpoint(TRUNCATE)")[0][0]).toBe(1); // busy: the reader holds frames
    r.exec("COMMIT");
    expect(w.all("PRAGMA wal_checkpoint(TRUNCATE)")[0]).toEqual([0, 0, 0]);
    // Two writers: the second waits (BUSY) until the first commits.
    w.exec("BEGIN IMMEDIATE");
    expect(() => r.exec("BEGIN IMMEDIATE")).toThrow(expect.objectContaining({ rc: SQLITE_BUSY }));
    w.exec("COMMIT");
    r.exec("BEGIN IMMEDIATE; INSERT INTO t(k, v) VALUES (1000, 'r'); COMMIT");
    expect(w.get("SELECT v FROM t WHERE k = 1000")).toBe("r");
    expect(w.get("PRAGMA integrity_check")).toBe("ok");
    w.close();
    r.close();
    a.detach();
    expect([...host.files.keys()]).toEqual([host.path]); // no -shm file, -wal removed by the last close
  });

  it("keeps temporary files in memory, away from the host", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    c.exec("PRAGMA temp_store=FILE; PRAGMA cache_size=10; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    fill(c, 2000);
    // A sort bigger than the cache spills to a temporary file; a temp table
    // lives in a temporary database.
    expect(c.all("SELECT v FROM t ORDER BY v DESC LIMIT 1")[0][0]).toBe("value 999 ".repeat(20));
    c.exec("CREATE TEMP TABLE x AS SELECT * FROM t");
    expect(c.get("SELECT count(*) FROM x")).toBe(2000);
    c.close();
    a.detach();
    const opened = [...new Set(host.calls.filter(([op]) => op === "open").map(([, name]) => name))];
    expect(opened.sort()).toEqual([host.path, `${host.path}-journal`]);
  });

  it("reports the current time and randomness", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    const jd = c.get("SELECT julianday('now')");
    expect(Math.abs((jd - 2440587.5) * 86400000 - Date.now())).toBeLessThan(5000);
    c.close();
    // xRandomness through the function table, as SQLite calls it.
    const p = sq.x.sqlite3_vfs_find(sq.allocCString(a.vfs));
    const xRandomness = sq.x.__indirect_function_table.get(sq.view().getUint32(p + LAYOUT.vfs.xRandomness, true));
    const buf = sq.malloc(64);
    sq.heap8u().fill(0, buf, buf + 64);
    expect(xRandomness(p, 64, buf)).toBe(64);
    expect(sq.heap8u().subarray(buf, buf + 64).some((b) => b !== 0)).toBe(true);
    sq.free(buf);
    a.detach();
  });
});

// The sqlite3_file of a connection's main database, and one io method.
function ioMethod(c, name) {
  const out = sq.malloc(4);
  const zMain = sq.allocCString("main");
  expect(sq.x.sqlite3_file_control(c.db, zMain, 7 /* SQLITE_FCNTL_FILE_POINTER */, out)).toBe(0);
  const pFile = sq.view().getUint32(out, true);
  sq.free(out);
  sq.free(zMain);
  const methods = sq.view().getUint32(pFile, true);
  return [pFile, sq.x.__indirect_function_table.get(sq.view().getUint32(methods + LAYOUT.io[name], true))];
}

describe("reads", () => {
  it("zero-fills a short read and says SQLITE_IOERR_SHORT_READ", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    c.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    const size = host.files.get(host.path).length;
    const [pFile, xRead] = ioMethod(c, "xRead");
    const buf = sq.malloc(8192);
    sq.heap8u().fill(0xaa, buf, buf + 8192);
    expect(xRead(pFile, buf, 8192, BigInt(size - 100))).toBe(SQLITE_IOERR_SHORT_READ);
    const got = sq.heap8u().slice(buf, buf + 8192);
    expect(got.subarray(0, 100)).toEqual(host.files.get(host.path).subarray(size - 100));
    expect(got.subarray(100).every((b) => b === 0)).toBe(true);
    sq.heap8u().fill(0xaa, buf, buf + 8192);
    expect(xRead(pFile, buf, 4096, 0n)).toBe(0);
    expect(sq.heap8u().subarray(buf, buf + 16)).toEqual(new TextEncoder().encode("SQLite format 3\0"));
    sq.free(buf);
    c.close();
    a.detach();
  });
});

describe("locks between the connections of one realm", () => {
  it("lets readers share, one writer reserve, and the commit wait for readers (rollback journal)", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const w = connect(sq, host.path, a.vfs);
    const r = connect(sq, host.path, a.vfs);
    w.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    fill(w, 10);
    r.exec("BEGIN");
    expect(r.get("SELECT count(*) FROM t")).toBe(10); // r holds SHARED
    w.exec("BEGIN IMMEDIATE"); // RESERVED beside a reader
    w.all("INSERT INTO t(k, v) VALUES (100, 'x')");
    const third = connect(sq, host.path, a.vfs);
    expect(() => third.exec("BEGIN IMMEDIATE")).toThrow(expect.objectContaining({ rc: SQLITE_BUSY }));
    third.close();
    // COMMIT needs EXCLUSIVE: busy while r reads, and new readers wait.
    expect(() => w.exec("COMMIT")).toThrow(expect.objectContaining({ rc: SQLITE_BUSY }));
    expect(r.get("SELECT count(*) FROM t")).toBe(10); // r still sees its snapshot
    r.exec("COMMIT");
    w.exec("COMMIT");
    expect(r.get("SELECT count(*) FROM t")).toBe(11);
    w.close();
    r.close();
    a.detach();
  });

  it("grants WAL-index locks as SQLite's xShmLock asks: shared beside shared, exclusive alone", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c1 = connect(sq, host.path, a.vfs);
    const c2 = connect(sq, host.path, a.vfs);
    c1.exec("PRAGMA journal_mode=WAL; CREATE TABLE t(k)");
    c2.get("SELECT count(*) FROM t"); // both have mapped the WAL-index
    const [f1, lock1] = ioMethod(c1, "xShmLock");
    const [f2, lock2] = ioMethod(c2, "xShmLock");
    const LOCK_SHARED = 2 | 4;
    const LOCK_EXCL = 2 | 8;
    const UNLOCK_SHARED = 1 | 4;
    const UNLOCK_EXCL = 1 | 8;
    expect(lock1(f1, 5, 1, LOCK_EXCL)).toBe(0);
    expect(lock2(f2, 5, 1, LOCK_SHARED)).toBe(SQLITE_BUSY);
    expect(lock2(f2, 4, 2, LOCK_EXCL)).toBe(SQLITE_BUSY); // all or nothing
    expect(lock2(f2, 4, 1, LOCK_SHARED)).toBe(0); // slot 4 was not taken by the refused range
    expect(lock1(f1, 5, 1, UNLOCK_EXCL)).toBe(0);
    expect(lock2(f2, 5, 1, LOCK_SHARED)).toBe(0);
    expect(lock1(f1, 5, 1, LOCK_SHARED)).toBe(0);
    expect(lock1(f1, 5, 1, LOCK_EXCL)).toBe(SQLITE_BUSY); // c2 still reads
    expect(lock2(f2, 5, 1, UNLOCK_SHARED)).toBe(0);
    expect(lock1(f1, 5, 1, LOCK_EXCL)).toBe(0); // its own shared lock does not stand in its way
    expect(lock1(f1, 5, 1, UNLOCK_EXCL)).toBe(0);
    expect(lock2(f2, 4, 1, UNLOCK_SHARED)).toBe(0);
    c1.close();
    c2.close(); // the last one frees the regions
    a.detach();
  });

  it("keeps a second connection out of a file in exclusive locking mode, across VFSes", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    c.exec("PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    // Another VFS over the same files (a second open of the same path).
    const b = registerVfs(sq, memoryHost(host.files, { path: host.path }));
    const other = connect(sq, host.path, b.name);
    expect(() => other.get("SELECT count(*) FROM t")).toThrow(expect.objectContaining({ rc: SQLITE_BUSY }));
    other.close();
    c.close();
    const again = connect(sq, host.path, b.name);
    again.exec("PRAGMA locking_mode=EXCLUSIVE");
    expect(again.get("SELECT count(*) FROM t")).toBe(0);
    again.close();
    b.unregister();
    a.detach();
  });

  it("refuses to unregister a VFS whose file is open", () => {
    const host = memoryHost();
    const v = registerVfs(sq, host);
    const c = connect(sq, host.path, v.name);
    c.get("SELECT count(*) FROM sqlite_master");
    expect(() => v.unregister()).toThrow(/still has \/mem.db open/);
    c.close();
    v.unregister();
  });
});

describe("crashes", () => {
  it.each([["exclusive"], ["normal"]])("recovers committed WAL frames and drops an unfinished transaction, in a fresh SQLite (%s locking)", async (locking) => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    c.exec(`PRAGMA locking_mode=${locking}; PRAGMA journal_mode=WAL; PRAGMA cache_size=20; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)`);
    fill(c, 300);
    fill(c, 300, 300);
    const afterCommits = host.snapshot();
    expect(afterCommits.get(`${host.path}-wal`)?.length).toBeGreaterThan(0);
    // A big transaction spills pages into the WAL before it commits.
    c.exec("BEGIN");
    for (let i = 600; i < 3000; i++) c.all("INSERT INTO t(k, v) VALUES (?, ?)", i, "y".repeat(300));
    const midTransaction = host.snapshot();
    c.exec("COMMIT");
    c.close();
    a.detach();
    for (const [files, want] of [
      [afterCommits, 600],
      [midTransaction, 600],
    ]) {
      const sq2 = await freshSqlite(); // a new process: nothing of the old heap
      const h2 = memoryHost(files);
      const a2 = attachHost(sq2, h2);
      const c2 = connect(sq2, h2.path, a2.vfs);
      c2.exec(`PRAGMA locking_mode=${locking}`);
      expect(c2.get("SELECT count(*) FROM t")).toBe(want);
      expect(c2.get("PRAGMA integrity_check")).toBe("ok");
      c2.close();
      a2.detach();
    }
  });

  it("rolls back a hot rollback journal left by a crash", async () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    c.exec("PRAGMA cache_size=10; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    fill(c, 400);
    const committed = host.files.get(host.path).slice();
    c.exec("BEGIN");
    for (let i = 0; i < 400; i++) c.all("UPDATE t SET v = ? WHERE k = ?", "changed".repeat(30), i);
    const mid = host.snapshot(); // pages spilled into the file, the journal holds the originals
    expect(mid.get(host.path)).not.toEqual(committed);
    c.exec("ROLLBACK");
    c.close();
    a.detach();
    expect(mid.get(`${host.path}-journal`)?.length).toBeGreaterThan(0);
    const sq2 = await freshSqlite();
    const h2 = memoryHost(mid);
    const a2 = attachHost(sq2, h2);
    const c2 = connect(sq2, h2.path, a2.vfs);
    expect(c2.get("SELECT count(*) FROM t WHERE v LIKE 'changed%'")).toBe(0);
    expect(c2.get("SELECT count(*) FROM t")).toBe(400);
    expect(c2.get("PRAGMA integrity_check")).toBe("ok");
    c2.close();
    a2.detach();
    expect(h2.files.has(`${h2.path}-journal`)).toBe(false);
  });
});

describe("errors from a host", () => {
  it("turns an exception into SQLITE_IOERR_* and keeps its message", () => {
    const host = memoryHost();
    const a = attachHost(sq, host);
    const c = connect(sq, host.path, a.vfs);
    c.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    const write = host.write;
    host.write = () => {
      throw new Error("EIO: the disk is on fire");
    };
    let err;
    try {
      fill(c, 10);
    } catch (e) {
      err = e;
    }
    expect(err?.rc).toBe(SQLITE_IOERR);
    expect(err.extended).toBe(SQLITE_IOERR_WRITE);
    expect(err.vfsMessage).toBe("EIO: the disk is on fire");
    expect(takeVfsError(sq)).toBe(""); // taken once
    host.write = write;
    try {
      c.exec("ROLLBACK");
    } catch {}
    fill(c, 10);
    expect(c.get("SELECT count(*) FROM t")).toBe(10);
    expect(c.get("PRAGMA integrity_check")).toBe("ok");
    c.close();
    a.detach();
  });

  it("turns a failed open into SQLITE_CANTOPEN, and a BUSY error into SQLITE_BUSY", () => {
    const host = memoryHost();
    host.open = () => {
      throw new Error("EACCES: permission denied, open '/mem.db'");
    };
    const a = attachHost(sq, host);
    expect(() => connect(sq, host.path, a.vfs).get("SELECT 1 FROM sqlite_master")).toThrow(
      expect.objectContaining({ rc: SQLITE_CANTOPEN, message: expect.stringContaining("EACCES: permission denied") }),
    );
    a.detach();
    const h2 = memoryHost();
    const a2 = attachHost(sq, h2);
    const c = connect(sq, h2.path, a2.vfs);
    c.exec("CREATE TABLE t(k)");
    h2.lock = (_id, level) => {
      if (level === "reserved") throw Object.assign(new Error("held elsewhere"), { code: "BUSY" });
    };
    expect(() => c.exec("INSERT INTO t VALUES (1)")).toThrow(expect.objectContaining({ rc: SQLITE_BUSY, vfsMessage: "held elsewhere" }));
    h2.lock = (_id, level) => level !== "exclusive"; // false: refuse quietly
    expect(() => c.exec("INSERT INTO t VALUES (1)")).toThrow(expect.objectContaining({ rc: SQLITE_BUSY }));
    delete h2.lock;
    c.exec("INSERT INTO t VALUES (1)");
    c.close();
    a2.detach();
    expect(LOCK_EXCLUSIVE).toBe(4);
  });

  it("names what a host object lacks", () => {
    expect(() => checkHost({ open() {}, read() {} })).toThrow(/lacks write, size, truncate, sync, close, remove, exists/);
    expect(() => attachHost(sq, { ...memoryHost(), path: undefined })).toThrow(/no path/);
  });
});
