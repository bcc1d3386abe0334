// Node's file host: synchronous node:fs calls on real files (the FileHost
// contract of index.d.ts, called by the VFS adapter in sqlite/vfs.js), and
// the protocol that keeps a database to one kind of process at a time.
//
// Sharing with the native engine and CLI. Node cannot take the POSIX locks
// native SQLite relies on, so a Node process and a native one take turns,
// by files beside the database that both sides maintain:
//
//   <db>.owner      this process's claim, created with O_EXCL: JSON naming
//                   it ({"runtime":"node","pid","host","since","program"});
//                   one Node process at a time; removed on close and exit.
//   <db>.natives/   one file per native handle open on the database, the
//                   same kind of JSON (written by the Go engine's open).
//
// Each side registers first, then looks for the other, and withdraws when
// it finds a live one: two processes starting at once cannot both miss
// each other. To keep them from both backing off, natives always give way
// to an owner file, and Node gives a native it finds 50 ms to do so. Entries of dead processes on this host are removed by
// whoever finds them; a process on another host (or a WASI one, whose pid
// means nothing) counts as live, and the error names the file to remove.
// The later opener retries for up to a second (min(busyTimeoutMs, 1000)),
// then fails with BUSY naming the file and the holder.
//
// Locks between the connections of this process live in the VFS adapter,
// never on disk, so a process that dies leaves only its owner file (taken
// over by the next open) and perhaps a hot journal, which SQLite rolls back.
//
// node:* modules are imported on first use, not statically: a bundler that
// inlines this file (no code splitting) must not hoist imports that hosts
// without them (workerd without nodejs_compat, browsers) fail to load.
import { AgentStateError } from "./errors.js";

let fs, os, path;

/** Imports the node:* modules this host needs; call before anything else. */
export async function loadNodeModules() {
  if (fs) return;
  const [f, o, p] = await Promise.all([import("node:fs"), import("node:os"), import("node:path")]);
  [fs, os, path] = [f.default, o.default, p.default];
}

export function resolvePath(p) {
  return path.resolve(p);
}

/** How long an open retries while another process holds the file. */
const SHARE_GRACE_MS = 1000;
/** How long a native that registered at the same moment gets to give way. */
const TIE_MS = 50;

/** Owner files of the databases this process has open, removed at exit. */
const owned = new Set();
let exitHook = false;

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/** "yes", "no" or "unknown": whether the process h names is alive. */
function liveness(h) {
  if (!h || typeof h.pid !== "number" || h.pid <= 0 || !h.host || h.host !== os.hostname()) return "unknown";
  return pidAlive(h.pid) ? "yes" : "no";
}

export function describeHolder(h) {
  let s = h?.runtime || "another process";
  if (h?.program) s += ` (${h.program})`;
  if (h?.pid > 0) s += ` pid ${h.pid}`;
  if (h?.host) s += ` on host ${h.host}`;
  if (h?.since) s += ` since ${h.since}`;
  return s;
}

function heldError(db, h, record, live) {
  const native = h?.runtime === "native" || h?.runtime === "wasi";
  let msg = `agentstate: ${db} is open in ${describeHolder(h)}`;
  msg += native ? "; a JavaScript process and the native engine cannot have one file open at once: close it there first" : "; close it there first";
  if (live === "unknown" && record) msg += `; if that process is gone, remove ${record}`;
  const e = new AgentStateError(msg, "BUSY");
  e.holder = h ?? null;
  e.retry = live !== "unknown" || !record;
  return e;
}

function readJSON(file) {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    if (e.code === "ENOENT") return { missing: true };
    throw e;
  }
  try {
    const v = JSON.parse(text);
    return { text, value: v && typeof v === "object" ? v : null };
  } catch {
    return { text, value: null }; // created, not yet filled
  }
}

function me() {
  const program = process.argv[1] ? path.basename(process.argv[1]) : undefined;
  return { runtime: "node", pid: process.pid, host: os.hostname(), since: new Date().toISOString(), ...(program ? { program } : {}) };
}

/**
 * Takes `${db}.owner` for this process and checks that no native process
 * has the file open; returns the function that gives it back. Throws BUSY
 * (with `retry` set when waiting may help) naming the holder.
 */
export function acquireOwner(db) {
  const release = takeOwner(db);
  try {
    checkNatives(db);
    clearLeftovers(db);
  } catch (e) {
    release();
    throw e;
  }
  return release;
}

/**
 * acquireOwner, but a native process that registered at the same moment
 * gets up to TIE_MS to see this owner file and withdraw (natives always
 * give way to an owner file they find) before this open gives up: of two
 * processes starting together, Node goes on instead of both backing off.
 */
async function acquireOwnerWaiting(db) {
  const release = takeOwner(db);
  try {
    const until = Date.now() + TIE_MS;
    for (;;) {
      try {
        checkNatives(db);
        break;
      } catch (e) {
        if (!(e instanceof AgentStateError) || !e.retry || Date.now() >= until) throw e;
      }
      await sleep(2);
    }
    clearLeftovers(db);
  } catch (e) {
    release();
    throw e;
  }
  return release;
}

function takeOwner(db) {
  const file = `${db}.owner`;
  const mine = JSON.stringify(me());
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      fs.writeFileSync(file, mine, { flag: "wx" });
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
          if (fs.readFileSync(file, "utf8") === mine) fs.unlinkSync(file);
        } catch {}
      };
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    const { missing, text, value: owner } = readJSON(file);
    if (missing) continue;
    if (!owner) throw heldError(db, { runtime: "a JavaScript process" }, file, "yes");
    if (owner.host === os.hostname() && owner.pid === process.pid) {
      throw new AgentStateError(`agentstate: ${db} is already open in this process`, "BUSY");
    }
    const live = liveness(owner);
    if (live !== "no") throw heldError(db, owner, file, live);
    // Stale: move it aside under a name of our own, and put it back if
    // another process replaced it in between.
    const aside = `${file}.stale.${process.pid}.${Math.random().toString(36).slice(2)}`;
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
    }
    fs.unlinkSync(aside);
  }
  throw new AgentStateError(`agentstate: could not take ${file}`, "BUSY");
}

/** Fails while a live native process is registered in `${db}.natives/`; removes dead ones' entries. */
function checkNatives(db) {
  const dir = `${db}.natives`;
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch (e) {
    if (e.code === "ENOENT" || e.code === "ENOTDIR") return;
    throw e;
  }
  for (const n of names) {
    const f = path.join(dir, n);
    const { missing, value: h } = readJSON(f);
    if (missing) continue;
    if (!h) throw heldError(db, { runtime: "native" }, f, "yes"); // being written
    const live = liveness(h);
    if (live === "no") {
      try {
        fs.unlinkSync(f);
      } catch {}
      continue;
    }
    throw heldError(db, h, f, live);
  }
  try {
    fs.rmdirSync(dir); // emptied of stale entries; a native that is about to register makes it again
  } catch {}
}

// What other processes leave beside a database, now that none holds it:
// the native engine's WAL-index ("-shm", a file; this package never uses
// one: its WAL-index lives in the connection), or the "-shm" directory
// earlier builds of this package kept as a switch against native opens.
// Frames in "-wal" stay: the next open recovers them. A ".lock" file
// belongs to a WASI build of the engine (ncruces' dot-file locks), which
// may be alive: it is reported, not removed.
function clearLeftovers(db) {
  const shm = `${db}-shm`;
  try {
    if (fs.lstatSync(shm).isDirectory()) fs.rmdirSync(shm);
    else fs.unlinkSync(shm);
  } catch (e) {
    if (e.code !== "ENOENT" && e.code !== "ENOTEMPTY") throw e;
  }
  if (fs.existsSync(`${db}.lock`)) {
    throw new AgentStateError(`agentstate: ${db}.lock exists: a WASI process may have ${db} open; if none has, remove that file`, "BUSY");
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const SQLITE_MAGIC = "SQLite format 3\0";

/**
 * Refuses, before anything is created beside it, a path that cannot be a
 * database file, as the native engine's Open does: a directory
 * (INVALID_ARGUMENT), a file in a directory that does not exist (NOT_FOUND:
 * open creates the file, not its directory), a file that is not an SQLite
 * database (NOT_AGENTSTATE). What it cannot tell is left to SQLite.
 */
function checkFilePath(given, db) {
  let st;
  try {
    st = fs.statSync(db);
  } catch (e) {
    if (e.code !== "ENOENT") return;
    const dir = path.dirname(given);
    if (!fs.existsSync(path.dirname(db))) {
      throw new AgentStateError(`agentstate: open ${given}: directory ${dir} does not exist (open creates the file, not its directory)`, "NOT_FOUND");
    }
    return;
  }
  if (st.isDirectory()) throw new AgentStateError(`agentstate: open ${given}: it is a directory, not a database file`, "INVALID_ARGUMENT");
  if (!st.isFile()) {
    // A named pipe, a socket or a device: reading its first bytes would
    // wait for a pipe's writer (blocking Node), and SQLite says "disk I/O error".
    const kind = st.isFIFO() ? "a named pipe" : st.isSocket() ? "a socket" : st.isCharacterDevice() ? "a character device" : "a device";
    throw new AgentStateError(`agentstate: open ${given}: it is not a regular file (${kind}), not a database file`, "INVALID_ARGUMENT");
  }
  let head;
  try {
    const fd = fs.openSync(db, "r");
    try {
      head = Buffer.alloc(SQLITE_MAGIC.length);
      head = head.subarray(0, fs.readSync(fd, head, 0, head.length, 0));
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return;
  }
  if (head.length > 0 && head.toString("latin1") !== SQLITE_MAGIC) {
    throw new AgentStateError(`agentstate: ${given} is not an SQLite database (it begins ${JSON.stringify(head.toString("latin1"))})`, "NOT_AGENTSTATE");
  }
}

/**
 * Opens the file host of a database file: takes it for this process,
 * retrying for up to min(busyTimeoutMs, 1000) while another process holds
 * it (one that is closing, or that started at the same moment).
 */
export async function openNodeFileHost(dbPath, { readOnly = false, busyTimeoutMs = 30_000 } = {}) {
  await loadNodeModules();
  const deadline = Date.now() + Math.min(Math.max(0, busyTimeoutMs ?? 0), SHARE_GRACE_MS);
  let delay = 5;
  const db = resolvePath(dbPath);
  checkFilePath(dbPath, db);
  for (;;) {
    try {
      return new NodeFileHost(db, { readOnly, release: await acquireOwnerWaiting(db) });
    } catch (e) {
      if (!(e instanceof AgentStateError) || !e.retry || Date.now() >= deadline) throw e;
    }
    // Jittered, so that two processes that keep meeting stop meeting.
    await sleep(Math.min(delay * (0.5 + Math.random()), Math.max(1, deadline - Date.now())));
    delay = Math.min(delay * 2, 100);
  }
}

/** The FileHost of one database file on Node's file system (see index.d.ts). */
export class NodeFileHost {
  /** `release`: the owner file is taken already (openNodeFileHost); else the constructor takes it. */
  constructor(dbPath, { readOnly = false, release } = {}) {
    if (!fs) throw new Error("agentstate: call loadNodeModules() first");
    this.path = resolvePath(dbPath);
    this.readOnly = readOnly;
    this.files = new Map();
    this.next = 0;
    // Read-only handles take the owner file too: a native writer beside
    // them would change pages under their feet.
    this.release = release ?? acquireOwner(this.path);
  }

  open(name, { create = false, readOnly = false } = {}) {
    const { O_RDWR, O_RDONLY, O_CREAT } = fs.constants;
    // A read-only handle keeps the database file read-only; SQLite still
    // needs a "-wal" beside a WAL file to read it (it writes no frames).
    if (this.readOnly && name === this.path) readOnly = true;
    let fd;
    try {
      fd = fs.openSync(name, readOnly ? O_RDONLY : O_RDWR | (create ? O_CREAT : 0), 0o644);
    } catch (e) {
      if (e.code === "ENOENT" && !create) return -1;
      throw e;
    }
    const id = ++this.next;
    this.files.set(id, { fd, name, dirSync: create && !readOnly && name !== this.path });
    return id;
  }

  file(id) {
    const f = this.files.get(id);
    if (f === undefined) throw new Error(`agentstate: no open file ${id}`);
    return f;
  }

  read(id, into, offset) {
    const { fd } = this.file(id);
    let done = 0;
    while (done < into.length) {
      const r = fs.readSync(fd, into, done, into.length - done, offset + done);
      if (r === 0) break;
      done += r;
    }
    return done;
  }

  write(id, from, offset) {
    const { fd } = this.file(id);
    let done = 0;
    while (done < from.length) done += fs.writeSync(fd, from, done, from.length - done, offset + done);
  }

  size(id) {
    return fs.fstatSync(this.file(id).fd).size;
  }

  truncate(id, n) {
    fs.ftruncateSync(this.file(id).fd, n);
  }

  sync(id) {
    const f = this.file(id);
    fs.fsyncSync(f.fd);
    if (f.dirSync) {
      // A journal just created: its directory entry must be durable
      // before the database is written, as SQLite's unix VFS does.
      f.dirSync = false;
      syncDir(f.name);
    }
  }

  close(id) {
    const f = this.files.get(id);
    if (f === undefined) return;
    this.files.delete(id);
    fs.closeSync(f.fd);
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

function syncDir(file) {
  let fd;
  try {
    fd = fs.openSync(path.dirname(file), "r");
    fs.fsyncSync(fd);
  } catch {
    // Not every file system can open or sync a directory (Windows).
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
