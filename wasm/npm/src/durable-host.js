// A file host over a Cloudflare Durable Object's own SQLite storage
// (ctx.storage.sql of a SQLite-backed Durable Object): the FileHost
// contract of index.d.ts, so that the engine's database survives the
// object's restarts and evictions without an image of the whole file per
// step.
//
// Each file (the database, its "-wal", a journal) is a row of
// agentstate_files (name, size) and its bytes are chunks of `chunkSize`
// (4 KiB, the engine's page size) in agentstate_chunks (name, no, data):
// a commit writes the WAL frames it appends and, at a checkpoint, the
// pages it copies, each a small value (Durable Objects cap one at 2 MB).
// Writes go through at once, in order; each statement of ctx.storage.sql
// is atomic and durable in order, and the WAL's checksummed frames make a
// commit whole or absent after a restart, as on a disk.
//
// One Durable Object is one thread, and its storage belongs to it alone:
// no owner file, no cross-process lock. Its requests interleave at their
// awaits; the engine's connection and the VFS adapter's lock table keep
// them apart.
//
// Nothing here imports anything: it runs wherever `storage` has a `sql`
// with exec(query, ...bindings) (workerd; a test double elsewhere).

const DEFAULT_CHUNK = 4096;

/**
 * A FileHost for the database `name` in a Durable Object's SQLite storage
 * (`ctx.storage`, or `ctx.storage.sql`). Tables `agentstate_files` and
 * `agentstate_chunks` are created in it if missing; several databases
 * (names) can share them.
 */
export function durableObjectHost(storage, name = "agentstate.db", { chunkSize = DEFAULT_CHUNK } = {}) {
  const sql = storage?.sql ?? storage;
  if (!sql || typeof sql.exec !== "function") {
    throw new TypeError("agentstate: durableObjectHost needs ctx.storage of a SQLite-backed Durable Object (its .sql.exec)");
  }
  if (typeof name !== "string" || !/^[A-Za-z0-9._-]+$/.test(name)) {
    throw new TypeError(`agentstate: database name ${JSON.stringify(name)} must be letters, digits, '.', '_' or '-'`);
  }
  if (!Number.isInteger(chunkSize) || chunkSize < 512 || chunkSize > 1 << 20) {
    throw new RangeError("agentstate: chunkSize must be an integer from 512 to 1 MiB");
  }
  sql.exec("CREATE TABLE IF NOT EXISTS agentstate_files (name TEXT PRIMARY KEY, size INTEGER NOT NULL, chunk INTEGER NOT NULL)");
  sql.exec("CREATE TABLE IF NOT EXISTS agentstate_chunks (name TEXT NOT NULL, no INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (name, no)) WITHOUT ROWID");

  const path = `/${name}`;
  const open = new Map(); // id -> file state
  const byName = new Map(); // name -> file state shared by its ids
  let next = 0;

  const bytesOf = (v) => (v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(0));

  function load(n) {
    let f = byName.get(n);
    if (f) return f;
    const rows = sql.exec("SELECT size, chunk FROM agentstate_files WHERE name = ?", n).toArray();
    if (rows.length === 0) return null;
    // A file keeps the chunk size it was written with.
    f = { name: n, size: Number(rows[0].size), chunk: Number(rows[0].chunk), refs: 0, tail: null };
    byName.set(n, f);
    return f;
  }

  function file(id) {
    const f = open.get(id);
    if (!f) throw new Error(`agentstate: no open file ${id}`);
    return f;
  }

  // The chunk last written, kept: the WAL grows by frames that straddle
  // chunk boundaries, and each would otherwise read its chunk back first.
  function getChunk(f, no) {
    if (f.tail?.no === no) return f.tail.data;
    const rows = sql.exec("SELECT data FROM agentstate_chunks WHERE name = ? AND no = ?", f.name, no).toArray();
    return rows.length ? bytesOf(rows[0].data) : null;
  }

  function putChunk(f, no, data) {
    sql.exec("INSERT OR REPLACE INTO agentstate_chunks (name, no, data) VALUES (?, ?, ?)", f.name, no, data);
    f.tail = { no, data };
  }

  function setSize(f, size) {
    if (size === f.size) return;
    sql.exec(
      "INSERT INTO agentstate_files (name, size, chunk) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET size = excluded.size",
      f.name,
      size,
      f.chunk,
    );
    f.size = size;
  }

  return {
    path,
    open(n, { create = false } = {}) {
      let f = load(n);
      if (!f) {
        if (!create) return -1;
        sql.exec("INSERT INTO agentstate_files (name, size, chunk) VALUES (?, 0, ?)", n, chunkSize);
        f = load(n);
      }
      f.refs++;
      open.set(++next, f);
      return next;
    },
    read(id, into, offset) {
      const f = file(id);
      const end = Math.min(offset + into.length, f.size);
      if (end <= offset) return 0;
      const cs = f.chunk;
      const first = Math.floor(offset / cs);
      const last = Math.floor((end - 1) / cs);
      into.fill(0, 0, end - offset); // chunks never written read as zeros
      const put = (no, data) => {
        const start = no * cs;
        const from = Math.max(offset, start);
        const to = Math.min(end, start + data.length);
        if (to > from) into.set(data.subarray(from - start, to - start), from - offset);
      };
      if (first === last) {
        const d = getChunk(f, first);
        if (d) put(first, d);
      } else {
        for (const r of sql.exec("SELECT no, data FROM agentstate_chunks WHERE name = ? AND no BETWEEN ? AND ?", f.name, first, last)) {
          put(Number(r.no), f.tail?.no === Number(r.no) ? f.tail.data : bytesOf(r.data));
        }
      }
      return end - offset;
    },
    write(id, from, offset) {
      const f = file(id);
      const cs = f.chunk;
      const end = offset + from.length;
      for (let no = Math.floor(offset / cs); no * cs < end; no++) {
        const start = no * cs;
        const lo = Math.max(offset, start) - start;
        const hi = Math.min(end, start + cs) - start;
        let data;
        if (lo === 0 && hi === cs) {
          data = from.slice(start - offset, start - offset + cs);
        } else {
          const old = getChunk(f, no);
          // Only as long as the file reaches into this chunk.
          const len = Math.max(old?.length ?? 0, hi, Math.min(cs, Math.max(0, f.size - start)));
          data = new Uint8Array(len);
          if (old) data.set(old.subarray(0, Math.min(old.length, len)));
          data.set(from.subarray(start + lo - offset, start + hi - offset), lo);
        }
        putChunk(f, no, data);
      }
      if (end > f.size) setSize(f, end);
    },
    size: (id) => file(id).size,
    truncate(id, n) {
      const f = file(id);
      if (n >= f.size) {
        setSize(f, n);
        return;
      }
      const cs = f.chunk;
      const keep = Math.ceil(n / cs);
      sql.exec("DELETE FROM agentstate_chunks WHERE name = ? AND no >= ?", f.name, keep);
      if (f.tail && f.tail.no >= keep) f.tail = null;
      if (n % cs) {
        const no = keep - 1;
        const d = getChunk(f, no);
        if (d && d.length > n % cs) putChunk(f, no, d.slice(0, n % cs));
      }
      setSize(f, n);
    },
    // Each statement is durable when it returns.
    sync() {},
    close(id) {
      const f = open.get(id);
      if (!f) return;
      open.delete(id);
      if (--f.refs === 0) byName.delete(f.name);
    },
    remove(n) {
      sql.exec("DELETE FROM agentstate_chunks WHERE name = ?", n);
      sql.exec("DELETE FROM agentstate_files WHERE name = ?", n);
      const f = byName.get(n);
      if (f) {
        f.size = 0;
        f.tail = null;
      }
    },
    exists(n) {
      const f = load(n);
      return !!f && f.size > 0;
    },
    /** Bytes of this database's files in storage. */
    diskBytes() {
      const rows = sql
        .exec("SELECT coalesce(sum(size), 0) AS n FROM agentstate_files WHERE name = ? OR substr(name, 1, ?) = ?", path, path.length + 1, `${path}-`)
        .toArray();
      return Number(rows[0].n);
    },
  };
}
