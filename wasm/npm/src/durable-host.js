// A file host over a Cloudflare Durable Object's own SQLite storage
// (ctx.storage.sql of a SQLite-backed Durable Object): the FileHost
// contract of index.d.ts, so that the engine's database survives the
// object's restarts and evictions without an image of the whole file per
// step.
//
// Each file (the database, its "-wal", a journal) is a row of
// agentstate_files (name, size, chunk) and its bytes are chunks of
// `chunkSize` (4 KiB, the engine's page size) in agentstate_chunks (name,
// no, data): a commit writes the WAL frames it appends and, at a
// checkpoint, the pages it copies, each chunk a small value (Durable
// Objects cap one at 2 MB).
//
// Writes collect in memory per chunk and go to storage together, in one
// storage transaction (ctx.storage.transactionSync), when SQLite commits
// (the commit hook), syncs, truncates or closes: a WAL frame straddles two
// chunks, and writing through would store each chunk several times per
// commit. A commit is thus whole or absent in storage, and the WAL's
// checksummed frames would make it so even without that. If storing
// fails at a commit, SQLite has already counted the commit as done (it
// ignores the hook's answer): the host then refuses every later call
// (reads SQLite answers from its cache do not reach it), and the object
// must reopen the database from what storage holds.
//
// One Durable Object is one thread, and its storage belongs to it alone:
// no owner file, no cross-process lock. Its requests interleave at their
// awaits; the engine's connection and the VFS adapter's lock table keep
// them apart.
//
// Nothing here imports anything: it runs wherever `storage` has a `sql`
// with exec(query, ...bindings) (workerd; a stand-in elsewhere).

const DEFAULT_CHUNK = 4096;
// A transaction bigger than this (in changed chunks) is stored as it goes,
// not held in memory until its commit: uncommitted WAL frames are ignored
// by recovery, and a rollback journal is synced before the pages it covers.
const MAX_PENDING_BYTES = 8 << 20;

/**
 * A FileHost for the database `name` in a Durable Object's SQLite storage
 * (`ctx.storage`; or `ctx.storage.sql`, then without storage transactions).
 * Tables `agentstate_files` and `agentstate_chunks` are created in it if
 * missing; several databases (names) can share them.
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
  const inTransaction = typeof storage?.transactionSync === "function" ? (fn) => storage.transactionSync(fn) : (fn) => fn();
  sql.exec("CREATE TABLE IF NOT EXISTS agentstate_files (name TEXT PRIMARY KEY, size INTEGER NOT NULL, chunk INTEGER NOT NULL)");
  sql.exec("CREATE TABLE IF NOT EXISTS agentstate_chunks (name TEXT NOT NULL, no INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (name, no)) WITHOUT ROWID");

  const path = `/${name}`;
  const open = new Map(); // id -> file state
  const byName = new Map(); // name -> file state shared by its ids
  let next = 0;
  let pendingBytes = 0;
  let broken = null;

  const bytesOf = (v) => (v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(0));

  function load(n) {
    let f = byName.get(n);
    if (f) return f;
    const rows = sql.exec("SELECT size, chunk FROM agentstate_files WHERE name = ?", n).toArray();
    if (rows.length === 0) return null;
    // A file keeps the chunk size it was written with.
    const size = Number(rows[0].size);
    f = { name: n, size, stored: size, chunk: Number(rows[0].chunk), refs: 0, dirty: new Map(), clean: null };
    byName.set(n, f);
    return f;
  }

  function file(id) {
    if (broken) throw broken;
    const f = open.get(id);
    if (!f) throw new Error(`agentstate: no open file ${id}`);
    return f;
  }

  // A chunk as the file has it now: changed and not yet stored, the last
  // one stored (the WAL's tail, which the next commit extends), or storage's.
  function getChunk(f, no) {
    const d = f.dirty.get(no);
    if (d) return d;
    if (f.clean?.no === no) return f.clean.data;
    const rows = sql.exec("SELECT data FROM agentstate_chunks WHERE name = ? AND no = ?", f.name, no).toArray();
    return rows.length ? bytesOf(rows[0].data) : null;
  }

  function store() {
    if (broken) throw broken;
    if (pendingBytes === 0 && [...byName.values()].every((f) => f.size === f.stored)) return;
    try {
      inTransaction(() => {
        for (const f of byName.values()) {
          for (const [no, data] of f.dirty) sql.exec("INSERT OR REPLACE INTO agentstate_chunks (name, no, data) VALUES (?, ?, ?)", f.name, no, data);
          if (f.size !== f.stored) {
            sql.exec(
              "INSERT INTO agentstate_files (name, size, chunk) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET size = excluded.size",
              f.name,
              f.size,
              f.chunk,
            );
          }
        }
      });
    } catch (e) {
      broken = new Error(`agentstate: storing ${name} in the Durable Object's storage failed; reopen the database: ${e?.message ?? e}`, { cause: e });
      throw broken;
    }
    for (const f of byName.values()) {
      let last = -1;
      for (const no of f.dirty.keys()) last = Math.max(last, no);
      if (last >= 0) f.clean = { no: last, data: f.dirty.get(last) };
      f.dirty.clear();
      f.stored = f.size;
    }
    pendingBytes = 0;
  }

  return {
    path,
    open(n, { create = false } = {}) {
      if (broken) throw broken;
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
        return end - offset;
      }
      for (const r of sql.exec("SELECT no, data FROM agentstate_chunks WHERE name = ? AND no BETWEEN ? AND ?", f.name, first, last)) {
        const no = Number(r.no);
        if (!f.dirty.has(no)) put(no, f.clean?.no === no ? f.clean.data : bytesOf(r.data));
      }
      for (const [no, d] of f.dirty) if (no >= first && no <= last) put(no, d);
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
        let data = f.dirty.get(no);
        if (!data || data.length < hi) {
          const old = data ?? (lo === 0 && hi === cs ? null : getChunk(f, no));
          // Only as long as the file reaches into this chunk.
          const len = Math.max(old?.length ?? 0, hi, Math.min(cs, Math.max(0, f.size - start)));
          const grown = new Uint8Array(len);
          if (old) grown.set(old.subarray(0, Math.min(old.length, len)));
          if (!f.dirty.has(no)) pendingBytes += len;
          else pendingBytes += len - data.length;
          data = grown;
          f.dirty.set(no, data);
        }
        data.set(from.subarray(start + lo - offset, start + hi - offset), lo);
      }
      if (end > f.size) f.size = end;
      if (pendingBytes > MAX_PENDING_BYTES) store();
    },
    size: (id) => file(id).size,
    truncate(id, n) {
      const f = file(id);
      store();
      if (n >= f.size) {
        f.size = n;
        store();
        return;
      }
      const cs = f.chunk;
      const keep = Math.ceil(n / cs);
      sql.exec("DELETE FROM agentstate_chunks WHERE name = ? AND no >= ?", f.name, keep);
      if (f.clean && f.clean.no >= keep) f.clean = null;
      if (n % cs) {
        const no = keep - 1;
        const d = getChunk(f, no);
        if (d && d.length > n % cs) {
          const cut = d.slice(0, n % cs);
          sql.exec("INSERT OR REPLACE INTO agentstate_chunks (name, no, data) VALUES (?, ?, ?)", f.name, no, cut);
          if (f.clean?.no === no) f.clean = { no, data: cut };
        }
      }
      f.size = n;
      store();
    },
    sync() {
      store();
    },
    /** After each commit (the VFS adapter calls it): store what it wrote. */
    commit() {
      store();
    },
    close(id) {
      const f = open.get(id);
      if (!f) return;
      if (!broken) store();
      open.delete(id);
      if (--f.refs === 0) byName.delete(f.name);
    },
    remove(n) {
      if (broken) throw broken;
      const f = byName.get(n);
      if (f) {
        for (const d of f.dirty.values()) pendingBytes -= d.length;
        f.dirty.clear();
        f.clean = null;
        f.size = 0;
        f.stored = 0;
      }
      sql.exec("DELETE FROM agentstate_chunks WHERE name = ?", n);
      sql.exec("DELETE FROM agentstate_files WHERE name = ?", n);
    },
    exists(n) {
      if (broken) throw broken;
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
