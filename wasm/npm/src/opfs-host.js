// The browser's file host (the FileHost contract of index.d.ts): the origin
// private file system through synchronous access handles, which exist only
// in dedicated workers. SQLite writes pages in place, so a commit costs
// only the pages it changed plus the WAL (or journal), never a copy of the
// whole file.
//
// Access handles are created asynchronously, and SQLite's calls are
// synchronous: the handles of every file a database may use (NAME,
// NAME-wal, NAME-journal) are taken when the host opens. They are
// exclusive: a second tab opening the same database gets BUSY instead of
// sharing it, and a tab that dies releases them, so nothing stale is left
// behind; frames in NAME-wal or a hot NAME-journal are recovered by the
// next open.
import { AgentStateError } from "./errors.js";

export function opfsKey(name) {
  return `opfs:${name}`;
}

const SUFFIXES = ["", "-wal", "-journal"];

export async function openOpfsHost(name) {
  if (typeof navigator === "undefined" || !navigator.storage?.getDirectory) {
    throw new AgentStateError("agentstate: this environment has no origin private file system", "INVALID_ARGUMENT");
  }
  if (!/^[A-Za-z0-9._-]+$/.test(name)) {
    throw new AgentStateError(`agentstate: OPFS database name ${JSON.stringify(name)} must be letters, digits, '.', '_' or '-'`, "INVALID_ARGUMENT");
  }
  const root = await navigator.storage.getDirectory();
  const files = new Map();
  try {
    for (const suffix of SUFFIXES) {
      const fh = await root.getFileHandle(name + suffix, { create: true });
      if (typeof fh.createSyncAccessHandle !== "function") {
        throw new AgentStateError("agentstate: OPFS databases must be opened in a dedicated worker", "INVALID_ARGUMENT");
      }
      let access;
      try {
        access = await fh.createSyncAccessHandle();
      } catch (e) {
        throw new AgentStateError(`agentstate: ${name} is open in another tab or worker (${e.name})`, "BUSY", { cause: e });
      }
      files.set(`/${name}${suffix}`, access);
    }
  } catch (e) {
    for (const a of files.values()) a.close();
    throw e;
  }
  const open = new Map();
  let next = 0;
  const handle = (id) => {
    const a = open.get(id);
    if (!a) throw new Error(`agentstate: no open OPFS file ${id}`);
    return a;
  };
  return {
    path: `/${name}`,
    open(p, { create = false } = {}) {
      const a = files.get(p);
      if (!a) {
        if (!create) return -1;
        throw new Error(`agentstate: OPFS host serves ${[...files.keys()].join(", ")}, not ${p}`);
      }
      open.set(++next, a);
      return next;
    },
    read(id, into, offset) {
      return handle(id).read(into, { at: offset });
    },
    write(id, from, offset) {
      const a = handle(id);
      let done = 0;
      while (done < from.length) done += a.write(from.subarray(done), { at: offset + done });
    },
    size: (id) => handle(id).getSize(),
    truncate: (id, n) => handle(id).truncate(n),
    sync: (id) => handle(id).flush(),
    close: (id) => void open.delete(id),
    // Files stay while their handle is open: "deleted" is "empty".
    remove(p) {
      const a = files.get(p);
      if (a) {
        a.truncate(0);
        a.flush();
      }
    },
    exists(p) {
      const a = files.get(p);
      return !!a && a.getSize() > 0;
    },
    /** Bytes of the database's files in OPFS. */
    diskBytes() {
      let n = 0;
      for (const a of files.values()) n += a.getSize();
      return n;
    },
    dispose() {
      for (const a of files.values()) a.close();
      files.clear();
    },
  };
}
