// AgentStateSaver.fromConnString and AgentStateStore.fromConnString, for
// code written to LangGraph.js's conventions: made at once (no await), the
// file opened by the first call or by setup(), whose errors are open's.
import { END, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { z } from "zod/v4";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { vi } from "vitest";
import { AgentStateError, AgentStateSaver, AgentStateStore, Database } from "../src/index.js";

let dir;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-connstring-"));
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(dir, { recursive: true, force: true });
});

const State = new StateSchema({ turns: z.array(z.string()).default(() => []) });
const chat = (checkpointer, store) =>
  new StateGraph(State)
    .addNode("reply", async (state, config) => {
      if (store) await config.store.put(["seen"], String(state.turns.length), { n: state.turns.length });
      return { turns: [...state.turns, `reply ${state.turns.length + 1}`] };
    })
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer, store });

describe("AgentStateSaver.fromConnString", () => {
  it("returns a saver at once, and a graph compiled with it runs and persists", async () => {
    const file = path.join(dir, "agent.db");
    const saver = AgentStateSaver.fromConnString(file);
    expect(saver).toBeInstanceOf(AgentStateSaver);
    expect(fs.existsSync(file)).toBe(false); // nothing opened yet
    const graph = chat(saver);
    const cfg = { configurable: { thread_id: "t1" } };
    await graph.invoke({}, cfg);
    expect((await graph.invoke({}, cfg)).turns).toEqual(["reply 1", "reply 2"]);
    expect(saver.db).toBeInstanceOf(Database);
    await saver.close();

    // Another saver on the same file sees the thread.
    const again = AgentStateSaver.fromConnString(file);
    expect((await chat(again).getState(cfg)).values.turns).toEqual(["reply 1", "reply 2"]);
    await again.close();
  }, 60_000);

  it("takes \":memory:\" as LangGraph.js's SqliteSaver does: a fresh in-memory database", async () => {
    const saver = AgentStateSaver.fromConnString(":memory:");
    try {
      const cfg = { configurable: { thread_id: "m" } };
      expect((await chat(saver).invoke({}, cfg)).turns).toEqual(["reply 1"]);
      expect(fs.existsSync(":memory:")).toBe(false);
      const other = AgentStateSaver.fromConnString(":memory:");
      expect(await other.getTuple(cfg)).toBeUndefined(); // each is its own database
      await other.close();
    } finally {
      await saver.close();
    }
  });

  it("fails at its first call with open's typed error when the file cannot be opened, leaving the file as it was", async () => {
    const missing = AgentStateSaver.fromConnString(path.join(dir, "no such dir", "agent.db"));
    const err = await chat(missing).invoke({}, { configurable: { thread_id: "t" } }).catch((e) => e);
    expect(err).toBeInstanceOf(AgentStateError);
    const direct = await AgentStateSaver.open({ path: path.join(dir, "no such dir", "agent.db") }).catch((e) => e);
    expect(err.code).toBe(direct.code);
    expect(err.message).toBe(direct.message);

    const junk = path.join(dir, "notes.txt");
    const bytes = Buffer.from("these are not the pages of a database file\n".repeat(200));
    fs.writeFileSync(junk, bytes);
    const saver = AgentStateSaver.fromConnString(junk);
    await expect(saver.getTuple({ configurable: { thread_id: "t" } })).rejects.toMatchObject({ name: "AgentStateError", code: "NOT_AGENTSTATE" });
    await expect(saver.setup()).rejects.toMatchObject({ code: "NOT_AGENTSTATE" }); // tried again, fails again
    expect(fs.readFileSync(junk).equals(bytes)).toBe(true);
    await saver.close();
  });

  it("refuses a path that is not a string at once", () => {
    expect(() => AgentStateSaver.fromConnString(42)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => AgentStateSaver.fromConnString("")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => AgentStateSaver.fromConnString("a.db", { path: "b.db" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("opens once for concurrent first calls", async () => {
    const open = vi.spyOn(Database, "open");
    const saver = AgentStateSaver.fromConnString(path.join(dir, "agent.db"));
    await Promise.all([
      saver.setup(),
      saver.getTuple({ configurable: { thread_id: "a" } }),
      saver.getTuple({ configurable: { thread_id: "b" } }),
      saver.info(),
      saver.setup(),
    ]);
    expect(open).toHaveBeenCalledTimes(1);
    await saver.close();
  });

  it("setup() opens, can be called twice, and is refused once closed", async () => {
    const file = path.join(dir, "agent.db");
    const saver = AgentStateSaver.fromConnString(file);
    await saver.setup();
    expect(fs.existsSync(file)).toBe(true);
    const db = saver.db;
    await saver.setup();
    expect(saver.db).toBe(db);
    await saver.close();
    await expect(saver.setup()).rejects.toMatchObject({ code: "CLOSED" });

    // setup on a saver made by open is harmless too.
    const opened = await AgentStateSaver.open({ path: file });
    await opened.setup();
    await opened.setup();
    await opened.close();
  });

  it("close() before the first call opens nothing, and later calls say CLOSED", async () => {
    const file = path.join(dir, "agent.db");
    const open = vi.spyOn(Database, "open");
    const saver = AgentStateSaver.fromConnString(file);
    await saver.close();
    await saver.close();
    expect(open).not.toHaveBeenCalled();
    await expect(saver.getTuple({ configurable: { thread_id: "t" } })).rejects.toMatchObject({ code: "CLOSED" });
    expect(fs.existsSync(file)).toBe(false);
  });

  it("close() during the first open closes what it opened", async () => {
    const opened = [];
    const open = Database.open.bind(Database);
    vi.spyOn(Database, "open").mockImplementation(async (o) => {
      const db = await open(o);
      opened.push(db);
      return db;
    });
    const saver = AgentStateSaver.fromConnString(path.join(dir, "agent.db"));
    const first = saver.setup();
    await saver.close();
    await expect(first).rejects.toMatchObject({ code: "CLOSED" });
    expect(opened.length).toBe(1);
    expect(opened[0].closed).toBe(true); // the file is not held
  });
});

describe("AgentStateStore.fromConnString", () => {
  it("returns a store at once; a graph uses it beside a saver on the same file", async () => {
    const file = path.join(dir, "agent.db");
    const saver = AgentStateSaver.fromConnString(file);
    const store = AgentStateStore.fromConnString(file, { ttl: { defaultTtl: 60 } });
    expect(store).toBeInstanceOf(AgentStateStore);
    const graph = chat(saver, store);
    const cfg = { configurable: { thread_id: "t1" } };
    await graph.invoke({}, cfg);
    await graph.invoke({}, cfg);
    expect((await store.search(["seen"])).map((i) => i.value.n).sort()).toEqual([0, 1]);
    expect(store.db).toBe(saver.db); // one handle for the file
    await store.close();
    await saver.close();
  }, 60_000);

  it("fails at its first call with open's typed error, and setup() can be called twice", async () => {
    const junk = path.join(dir, "notes.txt");
    fs.writeFileSync(junk, "not a database\n".repeat(500));
    const bad = AgentStateStore.fromConnString(junk);
    await expect(bad.get(["a"], "k")).rejects.toMatchObject({ name: "AgentStateError", code: "NOT_AGENTSTATE" });
    await bad.close();

    const store = AgentStateStore.fromConnString(path.join(dir, "agent.db"));
    await store.setup();
    await store.setup();
    await store.put(["a"], "k", { v: 1 });
    expect((await store.get(["a"], "k")).value).toEqual({ v: 1 });
    await store.close();
    await expect(store.setup()).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("close() before the first call opens nothing; a wrong argument is refused at once", async () => {
    const open = vi.spyOn(Database, "open");
    const store = AgentStateStore.fromConnString(path.join(dir, "agent.db"));
    await store.close();
    expect(open).not.toHaveBeenCalled();
    await expect(store.search(["a"])).rejects.toMatchObject({ code: "CLOSED" });
    expect(() => AgentStateStore.fromConnString(["agent.db"])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => AgentStateStore.fromConnString("agent.db", { index: { dims: 3, embeddings: {}, fields: ["$"] } })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("index") }),
    );
  });
});
