// Semantic search in AgentStateStore (issue 41), against LangGraph.js's
// InMemoryStore given the same index and the same items: the same order and
// scores, with filters, pages and field paths; and the vectors kept in the
// file with their item.
import { InMemoryStore } from "@langchain/langgraph-checkpoint";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AgentStateStore } from "../src/index.js";

// A deterministic embedder: each of 16 letters' share of the text, with a
// fixed random projection so that no two short texts tie by accident.
function embedder(dims = 24) {
  let s = 7;
  const rand = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
  const proj = {};
  const one = (text) => {
    const v = new Array(dims).fill(0);
    for (const ch of text.toLowerCase()) {
      if (!(ch in proj)) proj[ch] = Array.from({ length: dims }, rand);
      proj[ch].forEach((p, i) => (v[i] += p));
    }
    return v;
  };
  const calls = { documents: 0, queries: 0 };
  return {
    calls,
    embedDocuments: async (texts) => {
      calls.documents++;
      return texts.map(one);
    },
    embedQuery: async (text) => {
      calls.queries++;
      return one(text);
    },
  };
}

const WORDS = ["tea", "coffee", "garden", "rain", "jazz", "hiking", "paris", "chess", "bread", "violin", "ocean", "winter"];

function items(n) {
  let s = 11;
  const pick = () => {
    s = (s * 1103515245 + 12345) >>> 0;
    return WORDS[s % WORDS.length];
  };
  return Array.from({ length: n }, (_, i) => ({
    ns: ["memories", `user${i % 3}`],
    key: `m${String(i).padStart(3, "0")}`,
    value: {
      text: `${pick()} ${pick()} ${pick()} no. ${i}`, // the number keeps texts apart: no ties to break

      kind: i % 4 === 0 ? "fact" : "preference",
      notes: [{ body: `${pick()} ${i}` }, { body: `${pick()} ${pick()} ${i * 7}` }],
    },
  }));
}

const ranked = (res) => res.map((i) => [i.key, i.score]);

function expectSameRanking(ours, theirs) {
  expect(ours.map((i) => i.key)).toEqual(theirs.map((i) => i.key));
  ours.forEach((item, i) => expect(item.score).toBeCloseTo(theirs[i].score, 5));
}

describe("AgentStateStore semantic search", () => {
  const stores = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  for (const fields of [["$"], ["text"], ["text", "notes[*].body"]]) {
    it(`ranks as InMemoryStore with fields ${JSON.stringify(fields)}`, async () => {
      const ours = await AgentStateStore.open({ index: { dims: 24, embeddings: embedder(), fields } });
      stores.push(ours);
      const theirs = new InMemoryStore({ index: { dims: 24, embeddings: embedder(), fields } });
      for (const it of items(60)) {
        await ours.put(it.ns, it.key, it.value);
        await theirs.put(it.ns, it.key, it.value);
      }
      for (const query of ["tea in the garden", "jazz", "winter ocean hiking", "chess"]) {
        for (const opts of [{}, { limit: 5 }, { limit: 4, offset: 3 }, { filter: { kind: "fact" } }, { filter: { kind: "preference" }, limit: 3, offset: 2 }]) {
          for (const prefix of [["memories"], ["memories", "user1"]]) {
            const a = await ours.search(prefix, { query, ...opts });
            const b = await theirs.search(prefix, { query, ...opts });
            expect(a.length).toBeGreaterThan(0);
            expectSameRanking(a, b);
          }
        }
      }
    });
  }

  it("ranks a per-put index override and leaves index: false items out, as InMemoryStore", async () => {
    const ours = await AgentStateStore.open({ index: { dims: 24, embeddings: embedder(), fields: ["text"] } });
    stores.push(ours);
    const theirs = new InMemoryStore({ index: { dims: 24, embeddings: embedder(), fields: ["text"] } });
    for (const s of [ours, theirs]) {
      await s.put(["d"], "a", { text: "tea", title: "jazz violin" }, ["title"]);
      await s.put(["d"], "b", { text: "jazz" });
      await s.put(["d"], "c", { text: "coffee" });
      await s.put(["d"], "d", { text: "jazz jazz" }, false);
    }
    const a = await ours.search(["d"], { query: "jazz", limit: 3 });
    expectSameRanking(a, await theirs.search(["d"], { query: "jazz", limit: 3 }));
    expect(a.map((i) => i.key)).not.toContain("d");
  });

  it("embeds a batch's texts in one call and keeps the vectors in the file", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-search-"));
    const file = path.join(dir, "store.db");
    const emb = embedder();
    const index = { dims: 24, embeddings: emb, fields: ["text"] };
    let store = await AgentStateStore.open({ path: file, index });
    await store.batch(items(10).map((it) => ({ namespace: it.ns, key: it.key, value: it.value })));
    expect(emb.calls.documents).toBe(1);
    const before = ranked(await store.search(["memories"], { query: "rain", limit: 4 }));
    await store.close();
    store = await AgentStateStore.open({ path: file, index });
    stores.push(store);
    expect(ranked(await store.search(["memories"], { query: "rain", limit: 4 }))).toEqual(before);
    // A deleted item takes its vectors with it.
    const [top] = await store.search(["memories"], { query: "rain", limit: 1 });
    await store.delete(top.namespace, top.key);
    expect((await store.search(["memories"], { query: "rain", limit: 10 })).map((i) => i.key)).not.toContain(top.key);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("refuses vectors of the wrong dimensions, writing nothing", async () => {
    const store = await AgentStateStore.open({ index: { dims: 3, embeddings: embedder(24) } });
    stores.push(store);
    await expect(store.put(["x"], "k", { t: "tea" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("dims=3") });
    expect(await store.get(["x"], "k")).toBeNull();
  });
});
