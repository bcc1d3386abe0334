// Ids and keys given to the JS API are strings (thread ids also safe
// integers), each valid UTF-16: anything else is refused with
// INVALID_ARGUMENT, never turned into another id. String() made
// `{user: "alice"}` and `{user: "bob"}` one thread ("[object Object]"),
// `["x"]` the thread "x", and TextEncoder a lone surrogate U+FFFD.
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateError, AgentStateSaver, AgentStateStore } from "../src/index.js";

const md = { source: "loop", step: 0, parents: {} };
const cp = () => ({ ...emptyCheckpoint(), id: uuid6(-1), channel_values: { ch: "v" }, channel_versions: { ch: "1" } });
const conf = (thread_id, extra = {}) => ({ configurable: { thread_id, checkpoint_ns: "", ...extra } });

async function refused(p, match) {
  const e = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(e, "the call was not refused").toBeInstanceOf(AgentStateError);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.message).toMatch(match);
}

describe("AgentStateSaver: ids", () => {
  let saver;
  beforeEach(async () => {
    saver = await AgentStateSaver.open();
  });
  afterEach(async () => {
    await saver.close();
  });

  it("refuses a thread id that is not a string", async () => {
    for (const id of [{ user: "alice" }, ["x"], true, 1.5, Number.NaN]) {
      await refused(saver.put(conf(id), cp(), md, { ch: "1" }), /thread_id must be a string/);
      await refused(saver.getTuple(conf(id)), /thread_id must be a string/);
      await refused(saver.putWrites(conf(id, { checkpoint_id: "c" }), [["ch", 1]], "task"), /thread_id must be a string/);
      await refused(saver.list(conf(id)).next(), /thread_id must be a string/);
      await refused(saver.deleteThread(id), /threadId must be a string/);
      await refused(saver.copyThread(id, "y"), /sourceThreadId must be a string/);
      await refused(saver.prune([id]), /a thread id must be a string/);
    }
    await saver.put(conf("bob"), cp(), md, { ch: "1" });
    expect(await saver.getTuple(conf("[object Object]"))).toBeUndefined();
    // Nothing was stored under any of those ids.
    const threads = [];
    for await (const t of saver.list(undefined)) threads.push(t.config.configurable.thread_id);
    expect(threads).toEqual(["bob"]);
  });

  it("takes an integer thread id as its decimal text", async () => {
    await saver.put(conf(7), cp(), md, { ch: "1" });
    expect((await saver.getTuple(conf("7")))?.config.configurable.thread_id).toBe("7");
  });

  it("refuses a namespace or checkpoint id that is not a string", async () => {
    await refused(saver.put({ configurable: { thread_id: "t", checkpoint_ns: { a: 1 } } }, cp(), md, {}), /checkpoint_ns must be a string/);
    await refused(saver.getTuple(conf("t", { checkpoint_id: ["c"] })), /checkpoint_id must be a string/);
    await refused(saver.put(conf("t"), { ...cp(), id: { id: 1 } }, md, {}), /checkpoint\.id must be a string/);
    await refused(saver.putWrites(conf("t", { checkpoint_id: "c" }), [["ch", 1]], { task: 1 }), /taskId must be a string/);
  });

  it("refuses a lone surrogate instead of storing U+FFFD", async () => {
    for (const id of ["a\ud800", "\udc00b", "x\udbff"]) {
      await refused(saver.put(conf(id), cp(), md, { ch: "1" }), /config\.thread_id is not valid Unicode/);
      await refused(saver.getTuple(conf(id)), /not valid Unicode/);
    }
    await refused(saver.put(conf("t"), cp(), { ...md, note: "\ud800" }, { ch: "1" }), /metadata\.note is not valid Unicode/);
    await refused(saver.put(conf("t", { checkpoint_ns: "n\udfff" }), cp(), md, {}), /checkpoint_ns is not valid Unicode/);
    expect(await saver.getTuple(conf("a\ufffd"))).toBeUndefined();
    // A surrogate pair is valid UTF-16, and the text "\ud800" is six characters.
    for (const id of ["😀", "\\ud800"]) {
      await saver.put(conf(id), cp(), md, { ch: "1" });
      expect((await saver.getTuple(conf(id)))?.config.configurable.thread_id).toBe(id);
    }
  });
});

describe("AgentStateStore: keys", () => {
  let store;
  beforeEach(async () => {
    store = await AgentStateStore.open();
  });
  afterEach(async () => {
    await store.close();
  });

  it("refuses a key or namespace label that is not a string, saying which", async () => {
    await refused(store.put(["a"], 1, { v: 1 }), /put: key must be a string, got the number 1/);
    await refused(store.get(["a"], { k: 1 }), /get: key must be a string/);
    await refused(store.delete(["a"], ["k"]), /delete: key must be a string, got an array/);
    await refused(store.batch([{ namespace: "a", key: "k" }]), /get: namespace must be an array of strings/);
    await refused(store.batch([{ namespace: ["a", 2], key: "k", value: { v: 1 } }]), /put: namespace\[1\] must be a string/);
    await refused(store.batch([{ namespacePrefix: [{}] }]), /search: namespacePrefix\[0\] must be a string/);
    await refused(store.batch([{ matchConditions: [{ matchType: "prefix", path: [1] }] }]), /listNamespaces: a prefix\[0\] must be a string/);
    expect(await store.search([])).toEqual([]);
  });

  it("refuses a lone surrogate in a key, a namespace or a value", async () => {
    await refused(store.put(["a"], "k\ud800", { v: 1 }), /ops\[0\]\.key is not valid Unicode/);
    await refused(store.put(["a\udc00"], "k", { v: 1 }), /ops\[0\]\.namespace\[0\] is not valid Unicode/);
    await refused(store.put(["a"], "k", { "\ud800": 1 }), /not valid Unicode/);
    expect(await store.get(["a"], "k\ufffd")).toBeNull();
    expect(await store.search([])).toEqual([]);
  });

  it("names the argument the engine cannot read", async () => {
    // A wrong type that passes the JS checks reaches the engine, which
    // names the field in the request's terms (not a Go struct's).
    await refused(store.batch([{ namespacePrefix: [], limit: "ten" }]), /ops\.limit must be an integer, not a JSON string/);
  });
});
