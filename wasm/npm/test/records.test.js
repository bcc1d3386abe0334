// The typed record handles (db.runs, db.events, db.threads: src/records.js)
// through every method, and the op names the package calls against the Go
// bridge's table, so neither side can rename an op alone.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ANY_OWNER, Database } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));

describe("record handles", () => {
  let db;
  beforeEach(async () => {
    db = await Database.open();
  });
  afterEach(async () => {
    await db.close();
  });

  it("threads: create, get, search, update and delete, scoped to an owner", async () => {
    const t = await db.threads.create("ann", { thread_id: "th", display_name: "Chat", metadata: { topic: "x", n: 1 } });
    expect(t).toMatchObject({ thread_id: "th", user_id: "ann", display_name: "Chat", status: "idle" });
    const fresh = await db.threads.create("ann");
    expect(fresh.thread_id).toMatch(/.+/);
    expect(fresh.thread_id).not.toBe("th");
    await expect(db.threads.get("bob", "th")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect((await db.threads.get(ANY_OWNER, "th")).user_id).toBe("ann");
    expect(await db.threads.search("ann", { metadata: { n: 1 } })).toHaveLength(1);
    expect(await db.threads.search("ann", { metadata: { n: "1" } })).toHaveLength(0);
    expect(await db.threads.search("bob")).toHaveLength(0);
    await db.threads.update("ann", "th", { displayName: "Trip", status: "busy", metadata: { n: 2 } });
    expect(await db.threads.get("ann", "th")).toMatchObject({ display_name: "Trip", status: "busy", metadata: { topic: "x", n: 2 } });
    await db.threads.delete("ann", "th");
    await expect(db.threads.get("ann", "th")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("runs and events: one active run per thread, gap-free seqs, totals", async () => {
    const c = await db.runs.create({ thread_id: "th", status: "running", model_name: "m1" });
    expect(c).toMatchObject({ new: true, run: { thread_id: "th", status: "running" } });
    const runId = c.run.run_id;
    await expect(db.runs.create({ thread_id: "th" })).rejects.toMatchObject({ code: "CONFLICT" });

    const one = await db.events.put({ thread_id: "th", run_id: runId, event_type: "human", category: "message", content: "hi" });
    expect(one.seq).toBe(1);
    const two = await db.events.put([
      { thread_id: "th", run_id: runId, event_type: "ai", category: "message", content: { text: "hello" } },
      { thread_id: "th", run_id: runId, event_type: "tool", category: "trace", content: "t" },
    ]);
    expect(two.map((e) => e.seq)).toEqual([2, 3]);
    expect((await db.events.listMessages("th")).map((e) => e.content)).toEqual(["hi", { text: "hello" }]);
    expect((await db.events.listMessages("th", { afterSeq: 1 })).map((e) => e.seq)).toEqual([2]);
    expect((await db.events.listMessages("th", { beforeSeq: 2, limit: 5 })).map((e) => e.seq)).toEqual([1]);
    expect((await db.events.listRunEvents("th", runId, { types: ["tool"] })).map((e) => e.seq)).toEqual([3]);
    expect(await db.events.countMessages("th")).toBe(2);

    await db.runs.setStatus(runId, "running");
    await db.runs.complete(runId, "success", { totals: { token_usage_by_model: { m1: { input: 10, output: 5, total: 15 } } } });
    expect(await db.runs.get(runId)).toMatchObject({ status: "success", total_tokens: 15, total_input_tokens: 10 });
    await expect(db.runs.setStatus(runId, "running")).rejects.toMatchObject({ code: "CONFLICT" });
    expect((await db.runs.list("th")).map((r) => r.run_id)).toEqual([runId]);
    const usage = await db.runs.tokenUsage("th");
    expect(usage).toMatchObject({ total_runs: 1, total_tokens: 15 });

    const later = await db.runs.create({ thread_id: "th", status: "running", model_name: "m1" });
    expect((await db.runs.tokenUsage("th", { includeActive: true })).total_runs).toBe(2);
    expect(await db.events.deleteRun("th", runId)).toBe(3);
    expect(await db.events.deleteThread("th")).toBe(0);
    await db.runs.delete(later.run.run_id);
    await expect(db.runs.get(later.run.run_id)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("runs.apply: leases renew for their worker, the first cancel wins, takeover needs an expired lease", async () => {
    const soon = new Date(Date.now() + 60_000).toISOString();
    const c = await db.runs.create({ thread_id: "tw", status: "running", worker: "w1", worker_lease: soon });
    const runId = c.run.run_id;
    const later = new Date(Date.now() + 120_000).toISOString();
    expect(await db.runs.apply({ op: "renew", runId, worker: "w2", lease: later })).toEqual({ done: false, cancelAction: null });
    expect(await db.runs.apply({ op: "renew", runId, worker: "w1", lease: later })).toEqual({ done: true, cancelAction: null });
    expect(await db.runs.apply({ op: "takeover", runId, graceSeconds: 0, error: "lost" })).toMatchObject({ done: false });
    expect(await db.runs.apply({ op: "cancel", runId, action: "rollback" })).toMatchObject({ done: true, cancelAction: "rollback" });
    // A later cancel changes nothing: the action stays the first one.
    expect(await db.runs.apply({ op: "cancel", runId, action: "interrupt" })).toMatchObject({ cancelAction: "rollback" });
    expect(await db.runs.apply({ op: "finalize", runId, status: "success" })).toMatchObject({ done: false, cancelAction: "rollback" });
    expect((await db.runs.get(runId)).status).toBe("running");
    await expect(db.runs.apply({ op: "nonsense", runId })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("events: userId scopes every read, count and delete to one user's events", async () => {
    await db.events.put([
      { thread_id: "tu", run_id: "r1", event_type: "human", category: "message", content: "ann's", user_id: "ann" },
      { thread_id: "tu", run_id: "r1", event_type: "llm.ai.response", category: "message", content: "bob's", user_id: "bob" },
      { thread_id: "tu", run_id: "r1", event_type: "tool", category: "trace", content: "t", user_id: "bob" },
    ]);
    expect((await db.events.listMessages("tu", { userId: "ann" })).map((e) => e.content)).toEqual(["ann's"]);
    expect((await db.events.listMessages("tu", { userId: "ann" }))[0].user_id).toBe("ann");
    expect((await db.events.listMessages("tu")).map((e) => e.content)).toEqual(["ann's", "bob's"]);
    expect((await db.events.listMessages("tu", { userId: null })).length).toBe(2);
    expect((await db.events.listRunMessages("tu", "r1", { userId: "bob" })).map((e) => e.content)).toEqual(["bob's"]);
    expect((await db.events.listRunEvents("tu", "r1", { userId: "bob" })).map((e) => e.event_type)).toEqual(["llm.ai.response", "tool"]);
    expect(await db.events.lastVisibleAISeq("tu", ["r1"], { userId: "ann" })).toEqual({});
    expect(await db.events.lastVisibleAISeq("tu", ["r1"], { userId: "bob" })).toEqual({ r1: 2 });
    expect(await db.events.countMessages("tu", { userId: "carol" })).toBe(0);
    expect(await db.events.countMessages("tu", { userId: "bob" })).toBe(1);
    await expect(db.events.countMessages("tu", { userId: 7 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(await db.events.deleteRun("tu", "r1", { userId: "bob" })).toBe(2);
    expect(await db.events.deleteThread("tu", { userId: "carol" })).toBe(0);
    expect((await db.events.listMessages("tu")).map((e) => e.content)).toEqual(["ann's"]);
    expect(await db.events.deleteThread("tu", { userId: "ann" })).toBe(1);
  });

  it("runs: idempotency keys span threads; status records the stop reason, interrupted may end as an error", async () => {
    const a = await db.runs.create({ thread_id: "k1", idempotency_key: "req" });
    const b = await db.runs.create({ thread_id: "k2", idempotency_key: "req" });
    expect(b).toMatchObject({ new: false, run: { run_id: a.run.run_id, thread_id: "k1" } });
    expect(await db.runs.list("k2")).toEqual([]);
    const runId = a.run.run_id;
    expect(await db.runs.apply({ op: "status", runId, status: "interrupted", stopReason: "user_cancel" })).toMatchObject({ done: true });
    expect(await db.runs.apply({ op: "status", runId, status: "error", error: "rolled back" })).toMatchObject({ done: true });
    expect(await db.runs.apply({ op: "status", runId, status: "success" })).toMatchObject({ done: false });
    expect(await db.runs.get(runId)).toMatchObject({ status: "error", error: "rolled back", stop_reason: "user_cancel" });
  });

  it("refuses ids that are not non-empty strings before calling the engine", async () => {
    for (const bad of [undefined, null, "", 7, { user: "alice" }, ["x"]]) {
      await expect(db.runs.get(bad)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(db.events.countMessages(bad)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(db.threads.get(bad, "th")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(db.runs.create({ thread_id: bad })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    await expect(db.events.put([{ thread_id: "th" }, { content: "no thread" }])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(await db.events.countMessages("th")).toBe(0); // the refused batch wrote nothing
  });
});

/** The op names the package's sources pass to Database.call (and to the
 * writes.batch op list). */
function jsOps() {
  const names = new Set();
  const src = path.join(here, "../src");
  for (const f of fs.readdirSync(src, { recursive: true }).filter((f) => f.endsWith(".js"))) {
    const text = fs.readFileSync(path.join(src, f), "utf8");
    for (const m of text.matchAll(/\bcall\("([\w.]+)"|\bop: "(put|putWrites)"/g)) names.add(m[1] ?? m[2]);
  }
  return names;
}

/** The op names of the Go bridge's table (wasm/bridge: map literal entries and ops["..."] assignments). */
function goOps() {
  const names = new Set();
  const dir = path.join(here, "../../bridge");
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".go") && !f.endsWith("_test.go"))) {
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    for (const m of text.matchAll(/^\s*"([\w.]+)":\s*op\w+,$|\bops\["([\w.]+)"\]\s*=/gm)) names.add(m[1] ?? m[2]);
  }
  return names;
}

describe("op names", () => {
  it("are the same in the package and in the Go bridge", () => {
    const js = jsOps();
    const go = goOps();
    // Ops of the Go table the package does not call: the bench (wasm/bench)
    // and the crash hook of the tests.
    const goOnly = new Set(["bench", "test.crash"]);
    expect(js.size).toBeGreaterThan(30);
    expect([...js].filter((n) => !go.has(n)), "called by the package, missing from the Go table").toEqual([]);
    expect([...go].filter((n) => !js.has(n) && !goOnly.has(n)), "in the Go table, never called by the package").toEqual([]);
  });
});
