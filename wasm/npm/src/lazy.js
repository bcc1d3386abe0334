// The database of a saver or store made by fromConnString: opened by the
// first call that needs it (or by setup()), as LangGraph.js's own
// fromConnString savers open theirs. It imports only the package's errors
// and arguments, so saver.js and store.js both take it without a circle.

import { idString } from "./args.js";
import { AgentStateError } from "./errors.js";

/**
 * The path of fromConnString as Database.open's options: ":memory:" (as
 * LangGraph.js's SqliteSaver takes it) is a fresh in-memory database. The
 * path is checked now, so a wrong argument is refused where it was given;
 * everything that needs the engine or the file waits for the first call.
 */
export function connOptions(path, options, what) {
  idString(path, `${what}: path`, false);
  if (path === "") throw new AgentStateError(`agentstate: ${what}: path must be a non-empty string`, "INVALID_ARGUMENT");
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new AgentStateError(`agentstate: ${what}: options must be an object`, "INVALID_ARGUMENT");
  }
  for (const k of ["path", "image", "host"]) {
    if (options[k] !== undefined) {
      throw new AgentStateError(`agentstate: ${what}: the path is its first argument; ${k} is not an option of it (use open)`, "INVALID_ARGUMENT");
    }
  }
  return path === ":memory:" ? { ...options } : { ...options, path };
}

/**
 * Opens a database once, for every caller: the first call starts the open,
 * calls made meanwhile wait for that same open, and a failed open fails each
 * of them with its error (a typed AgentStateError, as open's) and is tried
 * again by the next call. close() before any call leaves nothing open and
 * makes later calls fail with CLOSED.
 */
export class LazyOpen {
  #open;
  #pending;
  #closed = false;
  #what;

  /** @param {() => Promise<any>} open  @param {string} what */
  constructor(open, what) {
    this.#open = open;
    this.#what = what;
  }

  /** The database, opened now if it was not yet. */
  get(onOpen) {
    if (this.#closed) return Promise.reject(new AgentStateError(`agentstate: this ${this.#what} is closed`, "CLOSED"));
    if (!this.#pending) {
      const p = (async () => {
        const db = await this.#open();
        if (this.#closed) {
          // close() came while the file was opening: close it again.
          await db.close();
          throw new AgentStateError(`agentstate: this ${this.#what} was closed while opening`, "CLOSED");
        }
        onOpen(db);
        return db;
      })();
      this.#pending = p;
      p.catch(() => {
        if (this.#pending === p) this.#pending = undefined;
      });
    }
    return this.#pending;
  }

  /** Marks it closed; waits for an open in progress (which closes what it opened). */
  async close() {
    this.#closed = true;
    const p = this.#pending;
    if (p) await p.catch(() => {});
  }
}
