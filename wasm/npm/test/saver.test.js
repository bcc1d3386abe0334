// How AgentStateSaver meets LangGraph's call order: a task's writes often
// arrive before the put of the checkpoint they belong to (LangGraph chains
// puts, not writes). They must end up stored, in as few engine calls as
// possible, and never wait on a put that does not come.
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateSaver } from "../src/index.js";

function checkpoint(id) {
  return { ...emptyCheckpoint(), id, channel_values: { ch: `value of ${id}` }, channel_versions: { ch: `v-${id}` } };
}

const md = { source: "loop", step: 0, parents: {} };
const cfg = (id) => ({ configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: id } });

// Records the engine calls a saver makes and how they ended; log has when
// each started (">op") and ended ("<op").
let log;
function recordCalls(saver) {
  const calls = [];
  log = [];
  const call = saver.db.call.bind(saver.db);
  saver.db.call = async (op, payload, bufs) => {
    log.push(`>${op}`);
    try {
      const r = await call(op, payload, bufs);
      calls.push(r?.results ? `${op}[${r.results.map((x) => (x.error ? x.code : "ok")).join(",")}]` : op);
      return r;
    } catch (e) {
      calls.push(`${op}!${e.code}`);
      throw e;
    } finally {
      log.push(`<${op}`);
    }
  };
  return calls;
}

describe("AgentStateSaver: writes and their checkpoint", () => {
  let saver;
  let calls;
  let root;
  beforeEach(async () => {
    saver = await AgentStateSaver.open();
    const r = checkpoint(uuid6(-1));
    root = await saver.put(cfg(undefined), r, md, { ch: r.channel_versions.ch });
    calls = recordCalls(saver);
  });
  afterEach(async () => {
    await saver.close();
  });

  const put = (parent, cp) => saver.put(parent, cp, md, { ch: cp.channel_versions.ch });

  it("writes that arrive before their checkpoint's put go with it, in one engine call", async () => {
    const [a, b] = [checkpoint(uuid6(-1)), checkpoint(uuid6(-1))];
    // LangGraph's order: put(a) in flight, a task of b ends, put(b) chained on put(a).
    const pa = put(root, a);
    const pw = saver.putWrites(cfg(b.id), [["ch", "written"], ["other", 7]], "task-1", "~path");
    const pb = pa.then((ca) => put(ca, b));
    await Promise.all([pa, pw, pb]);
    expect(calls).toEqual(["put", "writes.batch[ok,ok]"]);
    const t = await saver.getTuple(cfg(b.id));
    expect(t.pendingWrites).toEqual([
      ["task-1", "ch", "written"],
      ["task-1", "other", 7],
    ]);
    expect(t.parentConfig.configurable.checkpoint_id).toBe(a.id);
  });

  it("writes that arrive just after their checkpoint's put go with it", async () => {
    const a = checkpoint(uuid6(-1));
    const pa = put(root, a);
    const pw = saver.putWrites(cfg(a.id), [["ch", "w"]], "task-1");
    await Promise.all([pa, pw]);
    expect(calls).toEqual(["writes.batch[ok,ok]"]);
    expect((await saver.getTuple(cfg(a.id))).pendingWrites).toEqual([["task-1", "ch", "w"]]);
  });

  it("writes to a checkpoint whose put has gone to the engine wait for it, and do not fail first", async () => {
    const a = checkpoint(uuid6(-1));
    const pa = put(root, a);
    while (!log.includes(">put")) await new Promise((r) => setImmediate(r));
    const pw = saver.putWrites(cfg(a.id), [["ch", "w"]], "task-1");
    await Promise.all([pa, pw]);
    expect(calls).toEqual(["put", "putWrites"]);
    expect((await saver.getTuple(cfg(a.id))).pendingWrites).toEqual([["task-1", "ch", "w"]]);
  });

  it("writes to a stored checkpoint are not held back by other puts", async () => {
    const a = checkpoint(uuid6(-1));
    const ca = await put(root, a);
    const b = checkpoint(uuid6(-1));
    log.length = 0;
    const pb = put(ca, b);
    await saver.putWrites(cfg(a.id), [["ch", "late"]], "task-2");
    await pb;
    expect(calls.toSorted()).toEqual(["put", "put", "putWrites"]);
    expect(log.indexOf(">putWrites")).toBeLessThan(log.lastIndexOf("<put")); // sent while put(b) was in flight
  });

  it("writes whose put never comes are sent alone and fail NOT_FOUND, without hanging", async () => {
    const a = checkpoint(uuid6(-1));
    const pa = put(root, a);
    const t0 = Date.now();
    await expect(saver.putWrites(cfg(uuid6(-1)), [["ch", "orphan"]], "task-1")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(Date.now() - t0).toBeLessThan(30_000);
    await pa;
    expect(calls[0]).toBe("put");
    expect(calls.filter((c) => c === "putWrites!NOT_FOUND").length).toBeGreaterThan(0);
  });

  it("a put that fails fails the writes it carried, each with its own error", async () => {
    const a = checkpoint(uuid6(-1));
    const early = checkpoint(uuid6(-1)); // sorts before b, so not after it: an invalid child of a
    const b = checkpoint(uuid6(-1));
    const ca = await put(root, a);
    const pb = put(ca, b); // in flight
    const pw = saver.putWrites(cfg(early.id), [["ch", "w"]], "task-1");
    const bad = pb.then((cb) => put(cb, early)); // parent b, id before b's: refused
    await expect(bad).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(pw).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(calls).toEqual(["put", "put", "writes.batch[INVALID_ARGUMENT,NOT_FOUND]"]);
  });

  it("a batch refuses ops it cannot hold", async () => {
    await expect(saver.db.call("writes.batch", { ops: [{ op: "deleteThread", req: { threadId: "t" } }] })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    expect(await saver.getTuple(cfg(undefined))).toBeDefined();
  });
});

describe("AgentStateSaver: delta histories read with the tuple", () => {
  it("serves LangGraph's next getDeltaChannelHistory from the getTuple call, equal to a fresh read", async () => {
    const { z } = await import("zod/v4");
    const { DeltaValue, END, START, StateGraph, StateSchema, messagesDeltaReducer } = await import("@langchain/langgraph");
    const { AIMessage, HumanMessage } = await import("@langchain/core/messages");
    const saver = await AgentStateSaver.open();
    try {
      const messages = new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: 3 });
      const g = new StateGraph(new StateSchema({ messages }))
        .addNode("agent", (s) => ({ messages: [new AIMessage({ id: `ai-${s.messages.length}`, content: `reply ${s.messages.length}` })] }))
        .addEdge(START, "agent")
        .addEdge("agent", END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: "d" } };
      for (let i = 0; i < 7; i++) await g.invoke({ messages: [new HumanMessage({ id: `h-${i}`, content: `q ${i}` })] }, config);
      const ids = [];
      for await (const t of saver.list(config)) ids.push(t.config.configurable.checkpoint_id);
      const calls = recordCalls(saver);
      let served = 0;
      for (const id of ids) {
        const c = { configurable: { thread_id: "d", checkpoint_ns: "", checkpoint_id: id } };
        const t = await saver.getTuple(c);
        const replay = "messages" in t.checkpoint.channel_values ? [] : ["messages"];
        if (replay.length === 0) continue;
        calls.length = 0;
        const pre = await saver.getDeltaChannelHistory({ config: c, channels: replay });
        if (calls.length === 0) served++;
        const fresh = await saver.getDeltaChannelHistory({ config: c, channels: replay });
        expect(calls).toContain("deltaHistory");
        expect(pre).toEqual(fresh);
      }
      expect(served).toBeGreaterThan(ids.length / 3);
      // The graph reads the same state both ways.
      expect((await g.getState(config)).values.messages).toHaveLength(14);
      // Another call in between drops what was read with the tuple.
      const head = await saver.getTuple(config);
      await saver.putWrites(head.config, [["x", 1]], "t-x");
      calls.length = 0;
      await saver.getDeltaChannelHistory({ config: head.config, channels: ["messages"] });
      expect(calls).toEqual(["deltaHistory"]);
    } finally {
      await saver.close();
    }
  });
});
