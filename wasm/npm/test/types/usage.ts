// A program that uses every declaration of src/index.d.ts the way the
// README and the package's README do; test/types.test.js compiles it with
// tsc --strict (it is never run). A wrong or missing declaration fails it.
import {
  ANY_OWNER,
  AgentStateError,
  AgentStateSaver,
  AgentStateStore,
  Database,
  durableObjectHost,
  loadEngine,
  runtime,
  type ErrorCode,
  type Event,
  type FileHost,
  type Info,
  type Run,
  type Thread,
  type TokenUsage,
} from "../../src/index.js";

export async function main(storage: { exec(query: string, ...bindings: unknown[]): any }): Promise<void> {
  const where: "node" | "deno" | "workerd" | "browser" = runtime;
  await loadEngine({ trace: false });
  const host: FileHost = durableObjectHost(storage, "agent.db", { chunkSize: 4096 });
  const db = await Database.open({
    path: where === "node" ? "agent.db" : undefined,
    mode: "auto",
    cacheBytes: 1 << 20,
    readConns: 2,
    busyTimeoutMs: 1000,
    storeDefaultTtlMs: 60_000,
    storeRefreshOnRead: true,
    storeSweepIntervalMs: 0,
  });
  const other = await Database.open({ host });
  await other.close();

  const info: Info = await db.info();
  const image: Uint8Array = await db.image();
  console.log(info.schema_version, info.cache.bytes, image.byteLength, db.closed);

  const thread: Thread = await db.threads.create("alice", { display_name: "Trip", metadata: { topic: "x" } });
  const all: Thread[] = await db.threads.search(ANY_OWNER, { status: "idle", limit: 10 });
  await db.threads.update("alice", thread.thread_id, { displayName: "Trip plan", metadata: { n: 1 }, touch: true });
  const again: Thread = await db.threads.get("alice", thread.thread_id);

  const created = await db.runs.create({ thread_id: thread.thread_id, status: "running", model_name: "m" });
  const run: Run = created.run;
  const isNew: boolean = created.new;
  const one: Event = await db.events.put({ thread_id: thread.thread_id, run_id: run.run_id, category: "message", content: "hi" });
  const many: Event[] = await db.events.put([{ thread_id: thread.thread_id, content: { text: "hello" } }]);
  const page: Event[] = await db.events.listMessages(thread.thread_id, { limit: 50, afterSeq: 0 });
  const runEvents: Event[] = await db.events.listRunEvents(thread.thread_id, run.run_id, { types: ["ai"], limit: 5 });
  const count: number = await db.events.countMessages(thread.thread_id);
  await db.runs.setStatus(run.run_id, "running");
  await db.runs.complete(run.run_id, "success", { totals: { token_usage_by_model: { m: { input: 1, output: 2, total: 3 } } } });
  const usage: TokenUsage = await db.runs.tokenUsage(thread.thread_id, { includeActive: true });
  const runs: Run[] = await db.runs.list(thread.thread_id);
  const got: Run = await db.runs.get(run.run_id);
  const deleted: number = (await db.events.deleteRun(thread.thread_id, run.run_id)) + (await db.events.deleteThread(thread.thread_id));
  await db.runs.delete(run.run_id);
  await db.threads.delete("alice", thread.thread_id);
  console.log(all.length, again.status, isNew, one.seq, many.length, page.length, runEvents.length, count, usage.by_caller.lead_agent, runs.length, got.total_tokens, deleted);
  const raw: unknown = await db.call("info");
  console.log(raw);
  await db.close();

  const saver = await AgentStateSaver.open({ path: "agent.db" });
  const next: string | number = saver.getNextVersion(undefined);
  const report = await saver.prune(["t1"], "keep_latest");
  await saver.copyThread("t1", "t2");
  await saver.deleteForRuns(["run-1"]);
  const saverInfo: Info = await saver.info();
  console.log(next, report.checkpoints_kept, saverInfo.mode, await saver.getTuple({ configurable: { thread_id: "t1" } }));
  await saver.close();

  const store = await AgentStateStore.open({ path: "agent.db", ttl: { defaultTtl: 60, refreshOnRead: true, sweepIntervalMinutes: 5 } });
  await store.put(["users", "alice"], "k", { text: "likes tea" }, false, { ttl: null });
  const item = await store.get(["users", "alice"], "k", { refreshTtl: false });
  const swept: number = await store.sweep();
  console.log(item?.value.text, swept, store.db.closed);
  await store.close();

  // LangGraph.js's convention: made at once, opened by setup() or the first call.
  const lazySaver: AgentStateSaver = AgentStateSaver.fromConnString("agent.db", { mode: "auto" });
  await lazySaver.setup();
  await lazySaver.close();
  const lazyStore: AgentStateStore = AgentStateStore.fromConnString(":memory:", { ttl: { defaultTtl: 5 } });
  await lazyStore.setup();
  await lazyStore.close();

  try {
    await Database.open({ path: "" });
  } catch (e) {
    if (e instanceof AgentStateError) {
      const code: ErrorCode = e.code;
      console.log(code);
    }
  }
}
