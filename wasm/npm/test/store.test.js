// AgentStateStore against LangGraph's InMemoryStore (the oracle) and on its
// own: namespaces, filters, batches, TTL, and a graph that uses the store.
import { InMemoryStore } from "@langchain/langgraph-checkpoint";
import { END, MemorySaver, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { z } from "zod/v4";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AgentStateSaver, AgentStateStore } from "../src/index.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A small deterministic PRNG so a failure can be replayed.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const plainItem = (i) => (i ? { namespace: i.namespace, key: i.key, value: i.value } : null);
const byKey = (a, b) => `${a.namespace.join("/")}|${a.key}`.localeCompare(`${b.namespace.join("/")}|${b.key}`);

describe("AgentStateStore", () => {
  let store;
  beforeEach(async () => {
    store = await AgentStateStore.open();
  });
  afterEach(async () => {
    await store.close();
  });

  it("matches InMemoryStore on 300 random operations", async () => {
    const oracle = new InMemoryStore();
    const rand = rng(42);
    const pick = (xs) => xs[Math.floor(rand() * xs.length)];
    const namespaces = [["users", "a"], ["users", "b"], ["users", "a", "prefs"], ["docs"], ["usersx"]];
    const keys = ["k1", "k2", "k3", "k4"];
    let checks = 0;
    for (let i = 0; i < 300; i++) {
      const r = rand();
      const ns = pick(namespaces);
      const key = pick(keys);
      if (r < 0.45) {
        const value = { n: Math.floor(rand() * 10), tag: pick(["x", "y"]), nested: { ok: rand() < 0.5 } };
        await store.put(ns, key, value);
        await oracle.put(ns, key, value);
      } else if (r < 0.55) {
        await store.delete(ns, key);
        await oracle.delete(ns, key);
      } else if (r < 0.75) {
        expect(plainItem(await store.get(ns, key))).toEqual(plainItem(await oracle.get(ns, key)));
        checks++;
      } else if (r < 0.92) {
        const prefix = pick([[], ["users"], ["users", "a"], ["docs"], ["user"]]);
        // Flat keys only: InMemoryStore reads item.value[key] and has no
        // dotted paths (ours does; see the next test).
        const filter = pick([undefined, { tag: "x" }, { n: { $gt: 4 } }, { n: { $ne: 3 } }, { n: { $lte: 2 }, tag: "y" }]);
        const ours = (await store.search(prefix, { filter, limit: 100 })).map(plainItem);
        const theirs = (await oracle.search(prefix, { filter, limit: 100 })).map(plainItem);
        expect(ours.sort(byKey)).toEqual(theirs.sort(byKey));
        checks++;
      } else {
        const opts = pick([{}, { prefix: ["users"] }, { suffix: ["prefs"] }, { maxDepth: 1 }, { prefix: ["users", "*"] }]);
        const ours = await store.listNamespaces({ ...opts, limit: 100 });
        const theirs = await oracle.listNamespaces({ ...opts, limit: 100 });
        const key = (n) => n.join("/");
        expect(ours.map(key).sort()).toEqual(theirs.map(key).sort());
        checks++;
      }
    }
    expect(checks).toBeGreaterThan(100);
  });

  it("filters on nested fields through dotted keys", async () => {
    await store.put(["p"], "a", { profile: { age: 30, city: "Oslo" } });
    await store.put(["p"], "b", { profile: { age: 41, city: "Lima" } });
    await store.put(["p"], "c", { profile: { age: 17 } });
    const keys = async (filter) => (await store.search(["p"], { filter })).map((i) => i.key).sort();
    expect(await keys({ "profile.city": "Oslo" })).toEqual(["a"]);
    expect(await keys({ "profile.age": { $gte: 30 } })).toEqual(["a", "b"]);
    expect(await keys({ "profile.age": { $lt: 40 }, "profile.city": { $ne: "Oslo" } })).toEqual(["c"]);
  });

  it("keeps created_at across updates and orders search newest first", async () => {
    await store.put(["a"], "one", { v: 1 });
    await sleep(5);
    await store.put(["a"], "two", { v: 2 });
    const first = await store.get(["a"], "one");
    await sleep(5);
    await store.put(["a"], "one", { v: 3 });
    const updated = await store.get(["a"], "one");
    expect(updated.value).toEqual({ v: 3 });
    expect(updated.createdAt.getTime()).toBe(first.createdAt.getTime());
    expect(updated.updatedAt.getTime()).toBeGreaterThan(first.updatedAt.getTime());
    expect((await store.search(["a"])).map((i) => i.key)).toEqual(["one", "two"]);
    expect((await store.search(["a"], { limit: 1, offset: 1 })).map((i) => i.key)).toEqual(["two"]);
  });

  // A store opened without an index cannot answer a query, and unranked
  // items would look like an answer, so it is refused, naming what it
  // needs, in search, in a batch and from a graph node.
  it("refuses a search with a query, naming index, instead of ignoring it", async () => {
    await store.put(["m"], "a", { text: "likes tea" });
    const refused = { name: "AgentStateError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/\bindex\b/) };
    await expect(store.search(["m"], { query: "what does she drink?" })).rejects.toMatchObject(refused);
    await expect(store.search(["m"], { query: "tea", filter: { text: "likes tea" } })).rejects.toMatchObject(refused);
    await expect(store.batch([{ namespacePrefix: ["m"], query: "tea", limit: 10, offset: 0 }])).rejects.toMatchObject(refused);
    const State = new StateSchema({ q: z.string() });
    const graph = new StateGraph(State)
      .addNode("recall", async (state, config) => {
        await config.store.search(["m"], { query: state.q });
        return {};
      })
      .addEdge(START, "recall")
      .compile({ store });
    await expect(graph.invoke({ q: "tea" })).rejects.toMatchObject(refused);
    // Without a query (or with an empty one) search answers as before.
    expect((await store.search(["m"], { query: "" })).map((i) => i.key)).toEqual(["a"]);
    expect((await store.search(["m"], { filter: { text: "likes tea" } })).map((i) => i.key)).toEqual(["a"]);
  });

  it("refuses a malformed index at open instead of ignoring it", async () => {
    const embeddings = { embedDocuments: async (t) => t.map(() => [0, 0, 1]), embedQuery: async () => [0, 0, 1] };
    const refused = { name: "AgentStateError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/\bindex\b/) };
    await expect(AgentStateStore.open({ index: {} })).rejects.toMatchObject(refused);
    await expect(AgentStateStore.open({ index: { dims: 3, embeddings: {} } })).rejects.toMatchObject(refused);
    await expect(AgentStateStore.open({ index: { dims: 3, embeddings, distanceType: "hamming" } })).rejects.toMatchObject(refused);
  });

  it("runs a mixed batch in order", async () => {
    const res = await store.batch([
      { namespace: ["b"], key: "x", value: { a: 1 } },
      { namespace: ["b"], key: "x" },
      { namespacePrefix: ["b"], limit: 10, offset: 0 },
      { matchConditions: [{ matchType: "prefix", path: ["b"] }], limit: 10, offset: 0 },
      { namespace: ["b"], key: "x", value: null },
      { namespace: ["b"], key: "x" },
    ]);
    expect(res[0]).toBeUndefined();
    expect(res[1].value).toEqual({ a: 1 });
    expect(res[2].map((i) => i.key)).toEqual(["x"]);
    expect(res[3]).toEqual([["b"]]);
    expect(res[4]).toBeUndefined();
    expect(res[5]).toBeNull();
  });

  it("refuses bad namespaces and a bad batch as a whole", async () => {
    await expect(store.put(["a.b"], "k", { v: 1 })).rejects.toThrow();
    await expect(store.put([], "k", { v: 1 })).rejects.toThrow();
    await expect(
      store.batch([
        { namespace: ["ok"], key: "k", value: { v: 1 } },
        { namespace: ["bad", ""], key: "k", value: { v: 1 } },
      ]),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(await store.get(["ok"], "k")).toBeNull();
  });

  // Real time, with margins wide enough for a loaded CI machine: "touched"
  // lives 3 s and is read every 0.6 s for 3.6 s, so only refreshing keeps it.
  it("expires items after their TTL and refreshes on read", async () => {
    const ms = 1 / 60_000; // one millisecond in minutes
    await store.put(["t"], "short", { v: 1 }, undefined, { ttl: 300 * ms });
    await store.put(["t"], "forever", { v: 2 }, undefined, { ttl: null });
    await store.put(["t"], "touched", { v: 3 }, undefined, { ttl: 3000 * ms });
    for (let i = 0; i < 6; i++) {
      await sleep(600);
      expect(await store.get(["t"], "touched"), `read ${i}`).not.toBeNull(); // each read pushes expiry back
    }
    expect(await store.get(["t"], "short")).toBeNull();
    expect((await store.search(["t"])).map((i) => i.key).sort()).toEqual(["forever", "touched"]);
    await sleep(3300);
    expect(await store.get(["t"], "touched", { refreshTtl: false })).toBeNull();
    expect(await store.sweep()).toBe(2);
    expect((await store.get(["t"], "forever")).value).toEqual({ v: 2 });
  }, 30_000);

  it("applies a default TTL from open options", async () => {
    const s = await AgentStateStore.open({ ttl: { defaultTtl: 1500 / 60_000, refreshOnRead: false } });
    try {
      await s.put(["d"], "k", { v: 1 });
      await s.put(["d"], "kept", { v: 1 }, undefined, { ttl: null });
      expect(await s.get(["d"], "k")).not.toBeNull();
      await sleep(2000);
      expect(await s.get(["d"], "k")).toBeNull();
      expect(await s.get(["d"], "kept")).not.toBeNull();
    } finally {
      await s.close();
    }
  });

  // LangGraph hands a node an AsyncBatchedStore whose own put drops the
  // TTL; through an AgentStateStore the TTL reaches the item, and an invalid
  // one fails the node instead of being ignored.
  it("honours a TTL put from inside a graph node", async () => {
    const ms = 1 / 60_000;
    const s = await AgentStateStore.open({});
    try {
      const State = new StateSchema({ ttl: z.any().optional() });
      const graph = new StateGraph(State)
        .addNode("remember", async (state, config) => {
          await config.store.put(["n"], "short", { v: 1 }, undefined, { ttl: state.ttl });
          await config.store.put(["n"], "forever", { v: 2 }, undefined, { ttl: null });
          await config.store.put(["n"], "default", { v: 3 });
          return {};
        })
        .addEdge(START, "remember")
        .addEdge("remember", END)
        .compile({ store: s });
      await graph.invoke({ ttl: 400 * ms });
      expect((await s.search(["n"])).map((i) => i.key).sort()).toEqual(["default", "forever", "short"]);
      await sleep(900);
      expect(await s.get(["n"], "short")).toBeNull();
      expect((await s.search(["n"])).map((i) => i.key).sort()).toEqual(["default", "forever"]);
      await expect(graph.invoke({ ttl: -1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      // Other stores keep LangGraph's own put.
      const mem = new InMemoryStore();
      const g2 = new StateGraph(State)
        .addNode("remember", async (_, config) => {
          await config.store.put(["n"], "k", { v: 1 }, undefined, { ttl: 1 });
          return {};
        })
        .addEdge(START, "remember")
        .compile({ store: mem });
      await g2.invoke({});
      expect((await mem.get(["n"], "k")).value).toEqual({ v: 1 });
    } finally {
      await s.close();
    }
  }, 30_000);

  it("serves a graph's memory, shared with the saver in one file", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-store-"));
    const file = path.join(dir, "agent.db");
    const State = new StateSchema({ fact: z.string().default(""), recalled: z.array(z.string()).default(() => []) });
    const build = (checkpointer, s) =>
      new StateGraph(State)
        .addNode("remember", async (state, config) => {
          const user = config.configurable.user;
          if (state.fact) await config.store.put([user, "facts"], `f${Date.now()}${Math.random()}`, { text: state.fact });
          const items = await config.store.search([user, "facts"], { limit: 100 });
          return { recalled: items.map((i) => i.value.text).sort() };
        })
        .addEdge(START, "remember")
        .addEdge("remember", END)
        .compile({ checkpointer, store: s });
    try {
      let saver = await AgentStateSaver.open({ path: file });
      let s = await AgentStateStore.open({ path: file });
      expect(s.db).toBe(saver.db); // one handle for the file
      let g = build(saver, s);
      await g.invoke({ fact: "likes tea" }, { configurable: { thread_id: "t1", user: "ann" } });
      const r = await g.invoke({ fact: "lives in Oslo" }, { configurable: { thread_id: "t2", user: "ann" } });
      expect(r.recalled).toEqual(["likes tea", "lives in Oslo"]);
      await s.close();
      await saver.close();

      saver = await AgentStateSaver.open({ path: file });
      s = await AgentStateStore.open({ path: file });
      g = build(saver, s);
      const again = await g.invoke({ fact: "" }, { configurable: { thread_id: "t3", user: "ann" } });
      expect(again.recalled).toEqual(["likes tea", "lives in Oslo"]);
      expect((await g.getState({ configurable: { thread_id: "t1" } })).values.recalled).toEqual(["likes tea"]);
      await s.close();
      await saver.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
