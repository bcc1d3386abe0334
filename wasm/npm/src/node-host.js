// Node's side of the engine's file VFS: synchronous fs calls on real files,
// plus the owner file that keeps a database to one process at a time.
//
// Locks live inside the wasm instance, never on disk, so a process that
// dies leaves no stale lock: the owner file it leaves names a dead pid and
// the next open takes it over; a half-written transaction leaves a hot
// journal, which SQLite rolls back on that open.
//
// node:* modules are imported on first use, not statically: a bundler that
// inlines this file (no code splitting) must not hoist imports that hosts
// without them (workerd without nodejs_compat, browsers) fail to load.
import { AgentStateError } from "./engine.js";

let fs, os, path;
let O_RDWR, O_RDONLY, O_CREAT;

/** Imports the node:* modules this host needs; call before anything else. */
export async function loadNodeModules() {
  if (fs) return;
  const [f, o, p] = await Promise.all([import("node:fs"), import("node:os"), import("node:path")]);
  [fs, os, path] = [f.default, o.default, p.default];
  ({ O_RDWR, O_RDONLY, O_CREAT } = fs.constants);
}

export function resolvePath(p) {
  return path.resolve(p);
}

/** Owner files of the databases this process has open, removed at exit. */
const owned = new Set();
let exitHook = false;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

function readOwner(file) {
  try {
    const text = fs.readFileSync(file, "utf8");
    return { text, owner: JSON.parse(text) };
  } catch (e) {
    if (e.code === "ENOENT") return { text: null, owner: null };
    return { text: null, owner: null, unreadable: true };
  }
}

/**
 * Takes `${db}.owner` for this process, or throws BUSY naming the live
 * process that has the database open. An owner file left by a dead process
 * (same host, pid gone) is taken over.
 */
export function acquireOwner(db) {
  const release = takeOwner(db);
  try {
    checkSwitches(db);
  } catch (e) {
    release();
    throw e;
  }
  return release;
}

// Leftovers of a WebAssembly process that used WAL (ncruces' in-process
// WAL-index): a "-shm" directory, and for WASI builds a ".lock" file. With
// the owner file ours, a -shm directory left by a dead owner of ours is
// removed; one without an owner file belongs to another kind of process
// (a WASI build), which may still be running: refuse rather than share.
const tookOverStale = new Set();

function checkSwitches(db) {
  const shm = `${db}-shm`;
  let st;
  try {
    st = fs.lstatSync(shm);
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
  }
  if (st?.isDirectory()) {
    if (tookOverStale.has(db)) {
      fs.rmdirSync(shm);
    } else {
      throw new AgentStateError(
        `agentstate: ${shm} is a directory: another WebAssembly process may have ${db} open; if none has, remove that directory`,
        "BUSY",
      );
    }
  }
  tookOverStale.delete(db);
  if (fs.existsSync(`${db}.lock`)) {
    throw new AgentStateError(
      `agentstate: ${db}.lock exists: a WASI process may have ${db} open; if none has, remove that file`,
      "BUSY",
    );
  }
}

function takeOwner(db) {
  const file = `${db}.owner`;
  const me = JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() });
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      fs.writeFileSync(file, me, { flag: "wx" });
      owned.add(file);
      if (!exitHook) {
        exitHook = true;
        process.on("exit", () => {
          for (const f of owned) {
            try {
              fs.unlinkSync(f);
            } catch {}
          }
        });
      }
      return () => {
        owned.delete(file);
        try {
          fs.unlinkSync(file);
        } catch {}
      };
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    const { text, owner } = readOwner(file);
    if (text === null) continue; // vanished or half-written: look again
    if (owner?.host === os.hostname() && owner.pid === process.pid) {
      throw new AgentStateError(`agentstate: ${db} is already open in this process`, "BUSY");
    }
    if (owner?.host !== os.hostname()) {
      throw new AgentStateError(
        `agentstate: ${db} is open on host ${owner?.host} (pid ${owner?.pid}); if that process is gone, remove ${file}`,
        "BUSY",
      );
    }
    if (alive(owner.pid)) {
      throw new AgentStateError(`agentstate: ${db} is open in process ${owner.pid}`, "BUSY");
    }
    // Stale: move it aside under a name of our own, and put it back if
    // another process replaced it in between.
    const aside = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    try {
      fs.renameSync(file, aside);
    } catch (e) {
      if (e.code === "ENOENT") continue;
      throw e;
    }
    const moved = fs.readFileSync(aside, "utf8");
    if (moved !== text) {
      try {
        fs.linkSync(aside, file);
      } catch {}
      fs.unlinkSync(aside);
      continue;
    }
    fs.unlinkSync(aside);
    tookOverStale.add(db);
  }
  throw new AgentStateError(`agentstate: could not take ${file}`, "BUSY");
}

/** The host object the Go VFS calls (see wasm/js/vfs.go). */
export class NodeFileHost {
  constructor(dbPath, { readOnly = false } = {}) {
    this.path = resolvePath(dbPath);
    this.readOnly = readOnly;
    this.buf = new Uint8Array(64 * 1024);
    this.wal = true;
    this.files = new Map();
    this.next = 0;
    // Read-only handles take the owner file too: locks are per process, so
    // a reader beside a writer in another process could see a torn page.
    this.release = acquireOwner(this.path);
  }

  reserve(n) {
    if (this.buf.length < n) this.buf = new Uint8Array(Math.max(n, this.buf.length * 2));
  }

  open(name, create, readOnly) {
    let fd;
    try {
      fd = fs.openSync(name, readOnly || this.readOnly ? O_RDONLY : O_RDWR | (create ? O_CREAT : 0), 0o644);
    } catch (e) {
      if (e.code === "ENOENT" && !create) return -1;
      throw e;
    }
    const id = ++this.next;
    this.files.set(id, fd);
    return id;
  }

  fd(id) {
    const fd = this.files.get(id);
    if (fd === undefined) throw new Error(`agentstate: no open file ${id}`);
    return fd;
  }

  read(id, n, offset) {
    const fd = this.fd(id);
    let done = 0;
    while (done < n) {
      const r = fs.readSync(fd, this.buf, done, n - done, offset + done);
      if (r === 0) break;
      done += r;
    }
    return done;
  }

  write(id, n, offset) {
    const fd = this.fd(id);
    let done = 0;
    while (done < n) done += fs.writeSync(fd, this.buf, done, n - done, offset + done);
  }

  size(id) {
    return fs.fstatSync(this.fd(id)).size;
  }

  truncate(id, n) {
    fs.ftruncateSync(this.fd(id), n);
  }

  sync(id) {
    fs.fsyncSync(this.fd(id));
  }

  close(id) {
    const fd = this.files.get(id);
    if (fd === undefined) return;
    this.files.delete(id);
    fs.closeSync(fd);
  }

  remove(name) {
    try {
      fs.unlinkSync(name);
    } catch (e) {
      if (e.code !== "ENOENT") throw e;
    }
  }

  exists(name) {
    try {
      return fs.statSync(name).size > 0;
    } catch (e) {
      if (e.code === "ENOENT") return false;
      throw e;
    }
  }

  /** Bytes of the database file and its journal on disk. */
  diskBytes() {
    let n = 0;
    for (const f of [this.path, `${this.path}-journal`, `${this.path}-wal`]) {
      try {
        n += fs.statSync(f).size;
      } catch {}
    }
    return n;
  }

  dispose() {
    for (const id of [...this.files.keys()]) this.close(id);
    this.release();
  }
}
