// Typed handles on the engine's record surfaces, the same as Go's
// db.Runs(), db.Events() and db.Threads() (docs/records.md): a Database's
// `runs`, `events` and `threads`. Records cross in the engine's JSON shape
// (snake_case fields, as the export format and Go's JSON tags name them);
// ids and options are arguments. Each method is one engine call; the op
// names are the bridge's (wasm/bridge/records.go; test/records.test.js
// checks every name the package calls against the Go table).
//
// This module imports nothing of the package but its errors and argument
// checks, so that engine.js can import it without a circle.

import { idString } from "./args.js";
import { AgentStateError } from "./errors.js";

/** The owner that reaches every user's threads (admin tools only). */
export const ANY_OWNER = Object.freeze({ anyOwner: true });

/** A record id: a non-empty string (an integer is not taken: run and
 * thread records are named by strings). */
function id(what, v) {
  if (idString(v, what, false) === "") {
    throw new AgentStateError(`agentstate: ${what} must be a non-empty string`, "INVALID_ARGUMENT");
  }
  return v;
}

function options(what, v) {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) {
    throw new AgentStateError(`agentstate: ${what} must be an object, not ${Array.isArray(v) ? "an array" : `a ${typeof v}`}`, "INVALID_ARGUMENT");
  }
  return v;
}

/** An events call's user filter (the bridge's user_id, Go's Events.ForUser):
 * only the events written for that user; undefined, null or "" reads every
 * writer's events. */
function user(v) {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") {
    throw new AgentStateError(`agentstate: userId must be a string, null or undefined, not ${Array.isArray(v) ? "an array" : `a ${typeof v}`}`, "INVALID_ARGUMENT");
  }
  return v;
}

/** A thread call's owner: a user id, or ANY_OWNER. */
function owner(v) {
  if (v === ANY_OWNER) return { any_owner: true };
  return { owner: id("owner (a user id, or ANY_OWNER)", v) };
}

/** Run records: at most one pending or running run per thread, enforced by
 * the database; a run whose process is gone is reconciled to "error". */
export class Runs {
  #db;
  constructor(db) {
    this.#db = db;
  }

  /** Creates a run (`run.thread_id` required). Returns { run, new,
   * interrupted }: a run id or idempotency_key used before (a key on any
   * thread: keys are unique in the database) returns that run, unchanged,
   * with new false; with a multitask_strategy of
   * "interrupt" or "rollback" an active run is marked interrupted (its id
   * in `interrupted`); with "reject" (the default) it makes this CONFLICT. */
  async create(run) {
    const r = options("run", run);
    id("run.thread_id", r.thread_id);
    return this.#db.call("runs.create", r);
  }

  /** The run (NOT_FOUND when there is none). */
  async get(runId) {
    return (await this.#db.call("runs.get", { run_id: id("runId", runId) })).run;
  }

  /** The thread's runs, newest first. */
  async list(threadId) {
    return (await this.#db.call("runs.list", { thread_id: id("threadId", threadId) })).runs;
  }

  /** Moves a run to `status` (CONFLICT once it has ended, but an
   * interrupted run may end as "error": DeerFlow's rollback path). */
  async setStatus(runId, status, error = "") {
    await this.#db.call("runs.setStatus", { run_id: id("runId", runId), status: id("status", status), error });
  }

  /** Ends a run with its totals (`totals` left at zero are summed from
   * token_usage_by_model). */
  async complete(runId, status, { error = "", totals = {} } = {}) {
    await this.#db.call("runs.complete", { run_id: id("runId", runId), status: id("status", status), error, totals: options("totals", totals) });
  }

  async delete(runId) {
    await this.#db.call("runs.delete", { run_id: id("runId", runId) });
  }

  /** Sets the model a run uses (NOT_FOUND when there is no run). */
  async setModelName(runId, modelName) {
    await this.#db.call("runs.setModelName", { run_id: id("runId", runId), model_name: String(modelName ?? "") });
  }

  /** A running snapshot of an active run's totals (the keys of complete's
   * totals; those left out keep their values); CONFLICT once it has ended. */
  async progress(runId, progress) {
    await this.#db.call("runs.progress", { run_id: id("runId", runId), progress: options("progress", progress) });
  }

  /** The active runs of every thread, oldest first (pendingOnly: the
   * pending ones; before: created at or before, an RFC 3339 time). */
  async listActive({ pendingOnly = false, before, limit } = {}) {
    return (await this.#db.call("runs.listActive", { pending_only: !!pendingOnly, before, limit })).runs;
  }

  /** One worker-level change of a run, atomic in the database
   * (docs/records.md): op is "put" (run: the record written whole, with
   * status, error, stopReason), "renew" (worker, lease: an RFC 3339 time),
   * "cancel" (action "interrupt" or "rollback": the first one wins),
   * "finalize" (status, unless a cancellation came first), "takeover"
   * (graceSeconds, error: ends an active run whose worker lease expired) or
   * "status" (status, error, stopReason: DeerFlow's update_status; done is
   * false where the run's lifecycle refuses the move).
   * Resolves to { done, cancelAction }. */
  async apply({ op, runId, run, worker, lease, action, status, error, stopReason, graceSeconds } = {}) {
    const res = await this.#db.call("runs.apply", {
      op,
      run_id: id("runId", runId),
      run,
      worker,
      lease,
      action,
      status,
      error,
      stop_reason: stopReason,
      grace_seconds: graceSeconds,
    });
    return { done: !!res.done, cancelAction: res.cancel_action ?? null };
  }

  /** Token usage of the thread's ended runs (with includeActive, running ones too). */
  async tokenUsage(threadId, { includeActive = false } = {}) {
    return (await this.#db.call("runs.tokenUsage", { thread_id: id("threadId", threadId), include_active: !!includeActive })).usage;
  }
}

/** The event stream: seq is allocated inside the write, gap-free per thread.
 * An event records the user it was written for (its user_id); every read,
 * count and delete takes `userId`, which scopes it to that user's events (a
 * filter, not a permission: docs/deerflow.md). */
export class Events {
  #db;
  constructor(db) {
    this.#db = db;
  }

  /** Appends one event or a list of them in one transaction; returns them with seq and created_at. */
  async put(events) {
    const list = Array.isArray(events) ? events : [options("event", events)];
    for (const [i, e] of list.entries()) id(`events[${i}].thread_id`, options(`events[${i}]`, e).thread_id);
    const r = await this.#db.call("events.put", { events: list });
    return Array.isArray(events) ? r.events : r.events[0];
  }

  /** Stores one event unless its run already has one of its event_type;
   * returns { event, created } (the existing event and false then). */
  async putIfAbsent(event) {
    id("event.thread_id", options("event", event).thread_id);
    return this.#db.call("events.putIfAbsent", { event });
  }

  /** One run's events of category "message", oldest first, paged as listMessages. */
  async listRunMessages(threadId, runId, { limit, beforeSeq, afterSeq, userId } = {}) {
    return (
      await this.#db.call("events.listRunMessages", {
        thread_id: id("threadId", threadId),
        run_id: id("runId", runId),
        limit,
        before_seq: beforeSeq,
        after_seq: afterSeq,
        user_id: user(userId),
      })
    ).events;
  }

  /** Per run, the seq of its last AI reply a user sees (not a middleware's). */
  async lastVisibleAISeq(threadId, runIds, { userId } = {}) {
    const ids = [...runIds].map((r, i) => id(`runIds[${i}]`, r));
    return (await this.#db.call("events.lastVisibleAISeq", { thread_id: id("threadId", threadId), run_ids: ids, user_id: user(userId) })).seqs;
  }

  /** The thread's events of category "message", oldest first; `limit`,
   * `beforeSeq` and `afterSeq` page through them. */
  async listMessages(threadId, { limit, beforeSeq, afterSeq, userId } = {}) {
    return (
      await this.#db.call("events.listMessages", {
        thread_id: id("threadId", threadId),
        limit,
        before_seq: beforeSeq,
        after_seq: afterSeq,
        user_id: user(userId),
      })
    ).events;
  }

  /** One run's events in seq order, optionally of some types or one task. */
  async listRunEvents(threadId, runId, { types, taskId, afterSeq, limit, userId } = {}) {
    return (
      await this.#db.call("events.listRunEvents", {
        thread_id: id("threadId", threadId),
        run_id: id("runId", runId),
        types,
        task_id: taskId,
        after_seq: afterSeq,
        limit,
        user_id: user(userId),
      })
    ).events;
  }

  async countMessages(threadId, { userId } = {}) {
    return (await this.#db.call("events.countMessages", { thread_id: id("threadId", threadId), user_id: user(userId) })).count;
  }

  /** Deletes the thread's events (with userId, that user's only); returns how many. */
  async deleteThread(threadId, { userId } = {}) {
    return (await this.#db.call("events.deleteThread", { thread_id: id("threadId", threadId), user_id: user(userId) })).deleted;
  }

  /** Deletes one run's events (with userId, that user's only); returns how many. */
  async deleteRun(threadId, runId, { userId } = {}) {
    return (await this.#db.call("events.deleteRun", { thread_id: id("threadId", threadId), run_id: id("runId", runId), user_id: user(userId) })).deleted;
  }
}

/** Thread records, each scoped to an owner: another owner's thread is NOT_FOUND. */
export class Threads {
  #db;
  constructor(db) {
    this.#db = db;
  }

  /** Creates a thread record (`thread.thread_id` omitted: a new id). */
  async create(ownerId, thread = {}) {
    return (await this.#db.call("threads.create", { ...options("thread", thread), ...owner(ownerId) })).thread;
  }

  async get(ownerId, threadId) {
    return (await this.#db.call("threads.get", { ...owner(ownerId), thread_id: id("threadId", threadId) })).thread;
  }

  /** The owner's threads whose metadata holds every key of `metadata`
   * (values compared with their types), optionally of one status: pinned
   * threads (metadata pinned: true) first, then the most recently updated. */
  async search(ownerId, { metadata, status, limit, offset } = {}) {
    return (await this.#db.call("threads.search", { ...owner(ownerId), metadata, status, limit, offset })).threads;
  }

  /** Sets the display name and/or status, and/or merges a metadata patch
   * (`touch`: also bump updated_at). */
  async update(ownerId, threadId, { displayName, status, metadata, touch } = {}) {
    await this.#db.call("threads.update", {
      ...owner(ownerId),
      thread_id: id("threadId", threadId),
      display_name: displayName,
      status,
      metadata,
      touch: !!touch,
    });
  }

  /** Moves the thread to user `newOwner` (repair and migration). */
  async setOwner(ownerId, threadId, newOwner) {
    await this.#db.call("threads.setOwner", { ...owner(ownerId), thread_id: id("threadId", threadId), new_owner: id("newOwner", newOwner) });
  }

  async delete(ownerId, threadId) {
    await this.#db.call("threads.delete", { ...owner(ownerId), thread_id: id("threadId", threadId) });
  }
}
