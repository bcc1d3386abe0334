// The file hosts under the VFS adapter, with plain SQL: Node's files and
// the protocol that keeps a database to one kind of process at a time,
// and the Durable Objects host over a stand-in for ctx.storage (the real
// one runs in workerd: wasm/startup/edge/durable.test.mjs).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateSaver } from "../src/index.js";
import { durableObjectHost } from "../src/durable-host.js";
import { NodeFileHost, loadNodeModules, openNodeFileHost } from "../src/node-host.js";
import { attachHost } from "../src/sqlite/vfs.js";
import { connect, durableStorageDouble, freshSqlite, memoryHost } from "./helpers/sqlite.js";

let sq;
let dir;
beforeAll(async () => {
  sq = await freshSqlite();
  await loadNodeModules();
});
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-hosts-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Opens a database file through a host as the engine does: WAL, exclusive locking mode, synchronous=NORMAL (no sync per commit). */
function openDb(host, s = sq) {
  const a = attachHost(s, host);
  const c = connect(s, host.path, a.vfs);
  c.exec("PRAGMA locking_mode=EXCLUSIVE");
  c.get("PRAGMA journal_mode=WAL");
  c.exec("PRAGMA synchronous=NORMAL");
  return {
    ...c,
    close() {
      c.close();
      a.detach();
    },
  };
}

function sleeper() {
  const c = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
  return { pid: c.pid, kill: () => c.kill("SIGKILL"), exited: new Promise((r) => c.on("exit", r)) };
}

async function deadPid() {
  const c = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((r) => c.on("exit", r));
  return c.pid;
}

const writeJSON = (f, v) => fs.writeFileSync(f, JSON.stringify(v));

describe("Node files", () => {
  it("serves a database in WAL, owns it while open, and leaves only the file after close", async () => {
    const file = path.join(dir, "a.db");
    const host = await openNodeFileHost(file);
    const owner = JSON.parse(fs.readFileSync(`${file}.owner`, "utf8"));
    expect(owner).toMatchObject({ runtime: "node", pid: process.pid, host: os.hostname() });
    expect(Date.now() - Date.parse(owner.since)).toBeLessThan(60_000);
    let c = openDb(host);
    c.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    c.exec("BEGIN");
    for (let i = 0; i < 300; i++) c.all("INSERT INTO t VALUES (?, randomblob(1000))", i);
    c.exec("COMMIT");
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(300_000);
    c.close();
    host.dispose();
    expect(fs.readdirSync(dir)).toEqual(["a.db"]);
    const again = await openNodeFileHost(file, { readOnly: true });
    const ra = attachHost(sq, again);
    c = connect(sq, again.path, ra.vfs, { readOnly: true });
    c.exec("PRAGMA locking_mode=EXCLUSIVE"); // a WAL file without shared memory
    expect(c.get("SELECT count(*) FROM t")).toBe(300);
    expect(c.get("PRAGMA journal_mode")).toBe("wal");
    expect(() => c.exec("INSERT INTO t VALUES (1000, 1)")).toThrow(/readonly/);
    c.close();
    ra.detach();
  });

  it("reads a file a killed native process left in WAL mode, frames and -shm included", async () => {
    // The native engine's leftovers, made here by copying the files of an
    // open WAL database (its frames not yet checkpointed).
    const src = path.join(dir, "src.db");
    const h = await openNodeFileHost(src);
    const c = openDb(h);
    c.exec("PRAGMA wal_autocheckpoint=0; CREATE TABLE t(k INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3)");
    const file = path.join(dir, "b.db");
    fs.copyFileSync(src, file);
    fs.copyFileSync(`${src}-wal`, `${file}-wal`);
    fs.writeFileSync(`${file}-shm`, new Uint8Array(32768).fill(7)); // garbage WAL-index
    c.close();
    h.dispose();
    const host = await openNodeFileHost(file);
    expect(fs.existsSync(`${file}-shm`)).toBe(false); // a dead native's WAL-index, removed
    const d = openDb(host);
    expect(d.get("SELECT count(*) FROM t")).toBe(3);
    expect(d.get("PRAGMA integrity_check")).toBe("ok");
    d.close();
    host.dispose();
  });

  it("refuses a second open in this process, and a live process's file; waits out one that closes", async () => {
    const file = path.join(dir, "c.db");
    const host = await openNodeFileHost(file);
    await expect(openNodeFileHost(file)).rejects.toMatchObject({ code: "BUSY", message: expect.stringContaining("already open in this process") });
    host.dispose();

    const s = sleeper();
    writeJSON(`${file}.owner`, { runtime: "node", pid: s.pid, host: os.hostname(), since: "2026-12-01T10:00:00.000Z", program: "app.js" });
    const t0 = Date.now();
    await expect(openNodeFileHost(file, { busyTimeoutMs: 0 })).rejects.toMatchObject({
      code: "BUSY",
      message: `agentstate: ${file} is open in node (app.js) pid ${s.pid} on host ${os.hostname()} since 2026-12-01T10:00:00.000Z; close it there first`,
    });
    expect(Date.now() - t0).toBeLessThan(500);
    // Gone within the second of grace: the open goes through.
    setTimeout(() => fs.unlinkSync(`${file}.owner`), 200);
    const h2 = await openNodeFileHost(file, { busyTimeoutMs: 5000 });
    h2.dispose();
    // One that stays: refused after the grace, not after the busy timeout.
    writeJSON(`${file}.owner`, { runtime: "node", pid: s.pid, host: os.hostname() });
    const t1 = Date.now();
    await expect(openNodeFileHost(file, { busyTimeoutMs: 30_000 })).rejects.toMatchObject({ code: "BUSY" });
    expect(Date.now() - t1).toBeGreaterThanOrEqual(900);
    expect(Date.now() - t1).toBeLessThan(5000);
    s.kill();
    await s.exited;
    // Now stale: taken over.
    const h3 = await openNodeFileHost(file);
    expect(JSON.parse(fs.readFileSync(`${file}.owner`, "utf8")).pid).toBe(process.pid);
    h3.dispose();
    expect(fs.existsSync(`${file}.owner`)).toBe(false);
  });

  it("refuses while a native process is registered; clears dead ones' entries", async () => {
    const file = path.join(dir, "d.db");
    fs.mkdirSync(`${file}.natives`);
    const s = sleeper();
    const live = path.join(`${file}.natives`, `${os.hostname()}.${s.pid}.AAAA`);
    writeJSON(live, { runtime: "native", pid: s.pid, host: os.hostname(), since: "2026-12-01T10:00:00Z", program: "agentstate" });
    const stale = path.join(`${file}.natives`, `${os.hostname()}.1.BBBB`);
    writeJSON(stale, { runtime: "native", pid: await deadPid(), host: os.hostname() });
    // A WASI CLI run by wasm/wasi/run.mjs names the runner's pid and host.
    writeJSON(path.join(`${file}.natives`, "wasi"), { runtime: "wasi", pid: await deadPid(), host: os.hostname() });
    await expect(openNodeFileHost(file, { busyTimeoutMs: 0 })).rejects.toMatchObject({
      code: "BUSY",
      message: `agentstate: ${file} is open in native (agentstate) pid ${s.pid} on host ${os.hostname()} since 2026-12-01T10:00:00Z; a JavaScript process and the native engine cannot have one file open at once: close it there first`,
    });
    expect(fs.existsSync(`${file}.owner`)).toBe(false); // withdrew
    s.kill();
    await s.exited;
    const host = await openNodeFileHost(file);
    expect(fs.existsSync(`${file}.natives`)).toBe(false); // all stale now: cleared, directory gone
    host.dispose();

    // Another host's process, or a WASI one without a pid: cannot be
    // checked, so the error says what to remove.
    for (const h of [
      { runtime: "native", pid: 42, host: "elsewhere.example" },
      { runtime: "wasi", host: os.hostname() },
    ]) {
      fs.mkdirSync(`${file}.natives`, { recursive: true });
      const f = path.join(`${file}.natives`, "entry");
      writeJSON(f, h);
      await expect(openNodeFileHost(file, { busyTimeoutMs: 0 })).rejects.toMatchObject({ code: "BUSY", message: expect.stringContaining(`if that process is gone, remove ${f}`) });
      fs.unlinkSync(f);
    }
  });

  it("removes an earlier build's -shm directory, and reports a WASI build's lock file", async () => {
    const file = path.join(dir, "e.db");
    fs.mkdirSync(`${file}-shm`);
    const host = await openNodeFileHost(file);
    expect(fs.existsSync(`${file}-shm`)).toBe(false);
    host.dispose();
    fs.writeFileSync(`${file}.lock`, "");
    await expect(openNodeFileHost(file)).rejects.toMatchObject({ code: "BUSY", message: expect.stringContaining(`${file}.lock exists`) });
    expect(fs.existsSync(`${file}.owner`)).toBe(false);
  });

  it("turns a file system error into an I/O error that keeps its message", async () => {
    const file = path.join(dir, "f.db");
    const host = await openNodeFileHost(file);
    const c = openDb(host);
    c.exec("CREATE TABLE t(k)");
    const real = fs.writeSync;
    fs.writeSync = () => {
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    };
    try {
      expect(() => c.exec("INSERT INTO t VALUES (randomblob(100000))")).toThrow(
        expect.objectContaining({ rc: 10, message: expect.stringContaining("ENOSPC: no space left on device") }),
      );
    } finally {
      fs.writeSync = real;
    }
    c.exec("INSERT INTO t VALUES (1)");
    expect(c.get("SELECT count(*) FROM t")).toBe(1);
    c.close();
    host.dispose();
  });
});

describe("Durable Objects", () => {
  it("keeps files as chunks: random writes, truncates and reads agree with a plain byte array", async () => {
    const storage = await durableStorageDouble();
    const host = durableObjectHost(storage, "r.db", { chunkSize: 512 });
    let seed = 7;
    const rnd = (n) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const id = host.open("/r.db", { create: true, readOnly: false, kind: "main" });
    let ref = new Uint8Array(0);
    for (let step = 0; step < 400; step++) {
      const op = rnd(10);
      if (op < 6) {
        const off = rnd(3000);
        const data = Uint8Array.from({ length: 1 + rnd(700) }, () => rnd(256));
        host.write(id, data, off);
        if (off + data.length > ref.length) {
          const g = new Uint8Array(off + data.length);
          g.set(ref);
          ref = g;
        }
        ref.set(data, off);
      } else if (op < 8) {
        const n = rnd(2) ? rnd(3500) : rnd(7) * 512; // chunk boundaries too
        host.truncate(id, n);
        const g = new Uint8Array(n);
        g.set(ref.subarray(0, Math.min(n, ref.length)));
        ref = g;
      } else {
        const off = rnd(7000);
        const into = new Uint8Array(1 + rnd(2000)).fill(0xee);
        const got = host.read(id, into, off);
        const want = ref.subarray(off, off + into.length);
        expect(got, `step ${step}`).toBe(want.length);
        expect(into.subarray(0, got)).toEqual(want);
      }
      expect(host.size(id)).toBe(ref.length);
    }
    const largest = storage.sql.exec("SELECT max(length(data)) AS n FROM agentstate_chunks").one().n;
    expect(largest).toBeLessThanOrEqual(512);
    host.close(id);
    // A fresh host (a restarted object) sees the same bytes.
    const h2 = durableObjectHost(storage, "r.db", { chunkSize: 4096 }); // a file keeps its chunk size
    const id2 = h2.open("/r.db", { create: false, readOnly: true, kind: "main" });
    const all = new Uint8Array(ref.length);
    expect(h2.read(id2, all, 0)).toBe(ref.length);
    expect(all).toEqual(ref);
    expect(h2.open("/missing.db", { create: false, readOnly: false, kind: "main" })).toBe(-1);
    h2.remove("/r.db");
    expect(h2.exists("/r.db")).toBe(false);
  });

  it("runs a database across restarts and crashes, writing what a commit changed", async () => {
    const storage = await durableStorageDouble();
    let host = durableObjectHost(storage, "agent.db");
    const written = [];
    const count = (h) => {
      const w = h.write;
      h.write = (id, from, off) => {
        written.push(from.length);
        return w(id, from, off);
      };
      return h;
    };
    let c = openDb(count(host));
    c.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    for (let i = 0; i < 40; i++) c.all("INSERT INTO t VALUES (?, randomblob(3000))", i); // 40 commits
    const fileBefore = host.diskBytes();
    written.length = 0;
    c.all("UPDATE t SET v = randomblob(3000) WHERE k = 17");
    const oneCommit = written.reduce((a, b) => a + b, 0);
    expect(oneCommit).toBeGreaterThan(0);
    expect(oneCommit).toBeLessThan(fileBefore / 5); // the frames of the pages it changed, not the file
    // A crash in the middle of a transaction, then one after a commit.
    c.exec("BEGIN");
    c.all("UPDATE t SET v = x'00' WHERE k < 20");
    const midTx = await storage.copy();
    c.exec("COMMIT");
    const afterCommit = await storage.copy();
    c.close();
    for (const [s, smallOnes] of [
      [midTx, 0],
      [afterCommit, 20],
      [storage, 20], // closed cleanly: checkpointed
    ]) {
      const sq2 = await freshSqlite(); // the restarted object
      host = durableObjectHost(s, "agent.db");
      c = openDb(host, sq2);
      expect(c.get("SELECT count(*) FROM t")).toBe(40);
      expect(c.get("SELECT count(*) FROM t WHERE length(v) = 1")).toBe(smallOnes);
      expect(c.get("PRAGMA integrity_check")).toBe("ok");
      c.close();
    }
    const largest = storage.sql.exec("SELECT max(length(data)) AS n FROM agentstate_chunks").one().n;
    expect(largest).toBeLessThanOrEqual(4096);
  });

  it("stores a commit in one storage transaction, each chunk once; a failed store stops the host", async () => {
    const storage = await durableStorageDouble();
    const stored = [];
    let txs = 0;
    let failNext = false;
    const spy = {
      sql: {
        exec(q, ...b) {
          if (q.startsWith("INSERT OR REPLACE INTO agentstate_chunks")) {
            if (failNext) throw new Error("SQLITE_FULL: storage quota exceeded");
            stored.push(`${b[0]}#${b[1]}`);
          }
          return storage.sql.exec(q, ...b);
        },
      },
      transactionSync(fn) {
        txs++;
        return storage.transactionSync(fn);
      },
    };
    const host = durableObjectHost(spy, "b.db");
    const c = openDb(host);
    c.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    for (let i = 0; i < 20; i++) c.all("INSERT INTO t VALUES (?, randomblob(2500))", i);
    stored.length = 0;
    txs = 0;
    c.exec("BEGIN");
    for (let i = 20; i < 30; i++) c.all("INSERT INTO t VALUES (?, randomblob(2500))", i);
    expect(stored).toEqual([]); // nothing stored before the commit
    c.exec("COMMIT");
    expect(txs).toBe(1);
    expect(stored.length).toBeGreaterThan(5);
    expect(new Set(stored).size).toBe(stored.length); // each chunk once, though WAL frames straddle chunks

    failNext = true;
    expect(() => c.all("INSERT INTO t VALUES (100, 1)")).not.toThrow(); // SQLite ignores the commit hook's failure...
    failNext = false;
    // ...so the host refuses what follows (reads SQLite answers from its
    // cache do not reach it).
    expect(() => c.all("INSERT INTO t VALUES (101, 1)")).toThrow(
      expect.objectContaining({ rc: 10, message: expect.stringContaining("storing b.db in the Durable Object's storage failed; reopen the database: SQLITE_FULL") }),
    );
    const sq2 = await freshSqlite();
    const d = openDb(durableObjectHost(storage, "b.db"), sq2); // reopened from storage: the failed commit is not there
    expect(d.get("SELECT count(*) FROM t")).toBe(30);
    expect(d.get("PRAGMA integrity_check")).toBe("ok");
    d.close();
    try {
      c.close();
    } catch {}
  });

  it("refuses storage without SQL and bad names", () => {
    expect(() => durableObjectHost({})).toThrow(/SQLite-backed Durable Object/);
    expect(() => durableObjectHost({ sql: { exec() {} } }, "../x")).toThrow(/must be letters/);
  });
});

describe("open({ host }) through the package", () => {
  async function put(saver, cfg, i) {
    const v = saver.getNextVersion(undefined);
    return saver.put(cfg, { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { x: i }, channel_versions: { x: v } }, { source: "loop", step: i, parents: {} }, { x: v });
  }

  it("keeps the engine's file in a host's files, in WAL, and reopens it", async () => {
    const files = new Map();
    const cfg = { configurable: { thread_id: "h", checkpoint_ns: "" } };
    let saver = await AgentStateSaver.open({ host: memoryHost(files, { path: "/agent.db" }) });
    let c = cfg;
    for (let i = 0; i < 5; i++) c = await put(saver, c, i);
    expect([...files.keys()].sort()).toEqual(["/agent.db", "/agent.db-wal"]);
    await saver.close();
    saver = await AgentStateSaver.open({ host: memoryHost(files, { path: "/agent.db" }) });
    expect((await saver.getTuple(cfg)).checkpoint.channel_values).toEqual({ x: 4 });
    await saver.close();
  });

  it("turns a host's exception into an error that carries its message", async () => {
    const host = memoryHost(new Map(), { path: "/full.db" });
    const saver = await AgentStateSaver.open({ host });
    const cfg = await put(saver, { configurable: { thread_id: "f", checkpoint_ns: "" } }, 0);
    host.write = () => {
      throw new Error("ENOSPC: no space left on device, write");
    };
    await expect(put(saver, cfg, 1)).rejects.toMatchObject({ message: expect.stringContaining("ENOSPC: no space left on device") });
    await saver.close().catch(() => {});
  });

  it("refuses a host that lacks a method, or names no file", async () => {
    await expect(AgentStateSaver.open({ host: { path: "/x.db", open() {} } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("lacks read") });
    await expect(AgentStateSaver.open({ host: { ...memoryHost(), path: "" } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(AgentStateSaver.open({ host: memoryHost(), path: "x.db" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
