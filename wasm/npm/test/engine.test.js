// The engine through the bridge: files, crashes, exclusion, images, the
// admin calls and the record surfaces.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateSaver, Database } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const writer = path.join(here, "fixtures", "writer.mjs");

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-engine-"));
}

function startChild(file, mode) {
  const child = spawn(process.execPath, [writer, file, mode], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const waitFor = (re, ms = 60_000) =>
    new Promise((resolve, reject) => {
      const t0 = Date.now();
      const tick = () => {
        const m = out.match(re);
        if (m) return resolve(m);
        if (child.exitCode !== null) return reject(new Error(`child exited ${child.exitCode}: ${err}`));
        if (Date.now() - t0 > ms) return reject(new Error(`timeout waiting for ${re}: ${out} ${err}`));
        setTimeout(tick, 20);
      };
      tick();
    });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, waitFor, exited, output: () => out };
}

async function put(saver, cfg, step, values) {
  const versions = {};
  for (const k of Object.keys(values)) versions[k] = saver.getNextVersion(undefined);
  const cp = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
  return saver.put(cfg, cp, { source: "loop", step, parents: {}, run_id: `run-${step}` }, versions);
}

describe("files under Node", () => {
  it("a process killed mid-write leaves a file the next open reads (5 kills)", async () => {
    const dir = tmpdir();
    const file = path.join(dir, "crash.db");
    try {
      let seen = 0;
      for (let round = 0; round < 5; round++) {
        const c = startChild(file, "loop");
        const m = await c.waitFor(new RegExp(`n=(${seen + 20}|[1-9]\\d{3,})`));
        // Let it run into the middle of some transaction, then SIGKILL.
        await new Promise((r) => setTimeout(r, 30 + round * 17));
        c.child.kill("SIGKILL");
        expect((await c.exited).signal).toBe("SIGKILL");
        expect(fs.existsSync(`${file}.owner`)).toBe(true); // left behind, names a dead pid

        const saver = await AgentStateSaver.open({ path: file });
        try {
          const head = await saver.getTuple({ configurable: { thread_id: "crash" } });
          expect(head).toBeDefined();
          const n = head.metadata.step;
          expect(n + 1).toBeGreaterThanOrEqual(Number(m[1]));
          expect(head.checkpoint.channel_values.log.endsWith(String(n))).toBe(true);
          let count = 0;
          let prev;
          for await (const t of saver.list({ configurable: { thread_id: "crash" } })) {
            if (prev !== undefined) expect(t.metadata.step).toBe(prev - 1);
            prev = t.metadata.step;
            count++;
          }
          expect(count).toBe(n + 1);
          seen = n + 1;
        } finally {
          await saver.close();
        }
      }
      expect(seen).toBeGreaterThanOrEqual(100);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("keeps a file to one process at a time, and says which", async () => {
    const dir = tmpdir();
    const file = path.join(dir, "busy.db");
    try {
      const c = startChild(file, "hold");
      await c.waitFor(/open/);
      await expect(AgentStateSaver.open({ path: file })).rejects.toMatchObject({
        code: "BUSY",
        message: expect.stringMatching(new RegExp(`is open in node \\(writer\\.mjs\\) pid ${c.child.pid} on host .* since `)),
      });
      c.child.stdin.end();
      expect((await c.exited).code).toBe(0);
      expect(fs.existsSync(`${file}.owner`)).toBe(false);
      const saver = await AgentStateSaver.open({ path: file });
      await saver.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("shares one handle between opens of one file in a process", async () => {
    const dir = tmpdir();
    const file = path.join(dir, "shared.db");
    try {
      const a = await AgentStateSaver.open({ path: file });
      const b = await AgentStateSaver.open({ path: path.join(dir, ".", "shared.db") });
      expect(b.db).toBe(a.db);
      await expect(AgentStateSaver.open({ path: file, mode: "delta" })).rejects.toMatchObject({ code: "MODE_MISMATCH" });
      await a.close();
      const cfg = await put(b, { configurable: { thread_id: "s" } }, 0, { x: 1 });
      expect((await b.getTuple(cfg)).checkpoint.channel_values).toEqual({ x: 1 });
      await b.close();
      expect(fs.existsSync(`${file}.owner`)).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  // As the native engine's Open (engine/open_errors_test.go): a code that
  // says why, a message that names the path and says agentstate: once, and
  // nothing left beside the path.
  it("refuses a directory, a missing directory, a named pipe and a file that is not SQLite with a code", async () => {
    const dir = tmpdir();
    try {
      const text = path.join(dir, "notes.txt");
      fs.writeFileSync(text, "hello, this is a plain text file\n");
      const sub = path.join(dir, "a dir");
      fs.mkdirSync(sub);
      const cases = [
        [sub, "INVALID_ARGUMENT", "it is a directory, not a database file"],
        [path.join(dir, "nope", "x.db"), "NOT_FOUND", `directory ${path.join(dir, "nope")} does not exist`],
        [text, "NOT_AGENTSTATE", `is not an SQLite database (it begins "hello, this is a")`],
      ];
      if (process.platform !== "win32") {
        // Reading a named pipe's first bytes waited for a writer forever.
        const fifo = path.join(dir, "pipe.db");
        execFileSync("mkfifo", [fifo]);
        cases.push([fifo, "INVALID_ARGUMENT", "it is not a regular file (a named pipe)"]);
      }
      for (const [file, code, says] of cases) {
        const before = fs.readdirSync(dir).sort();
        for (const readOnly of [false, true]) {
          const err = await AgentStateSaver.open({ path: file, readOnly }).catch((e) => e);
          expect(err, `${file} readOnly ${readOnly}`).toMatchObject({ name: "AgentStateError", code });
          expect(err.message).toContain(says);
          expect(err.message).toContain(file);
          expect(err.message.match(/agentstate:/g)).toHaveLength(1);
        }
        expect(fs.readdirSync(dir).sort()).toEqual(before);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("images", () => {
  it("exports a database as bytes and opens them again", async () => {
    const saver = await AgentStateSaver.open();
    let cfg = { configurable: { thread_id: "img" } };
    for (let i = 0; i < 5; i++) cfg = await put(saver, cfg, i, { n: i, text: `t${i}` });
    const image = await saver.db.image();
    expect(new TextDecoder().decode(image.subarray(0, 15))).toBe("SQLite format 3");
    await saver.close();
    const copy = await AgentStateSaver.open({ image });
    try {
      expect((await copy.getTuple({ configurable: { thread_id: "img" } })).checkpoint.channel_values).toEqual({ n: 4, text: "t4" });
    } finally {
      await copy.close();
    }
    await expect(Database.open({ image: new Uint8Array(10) })).rejects.toMatchObject({ code: "NOT_AGENTSTATE" });
  });
});

describe("admin calls", () => {
  let saver;
  beforeEach(async () => {
    saver = await AgentStateSaver.open();
  });
  afterEach(async () => {
    await saver.close();
  });

  async function thread(id, n) {
    let cfg = { configurable: { thread_id: id } };
    for (let i = 0; i < n; i++) cfg = await put(saver, cfg, i, { n: i });
    return cfg;
  }
  const count = async (thread_id) => {
    let n = 0;
    for await (const _ of saver.list({ configurable: { thread_id } })) n++;
    return n;
  };

  it("copyThread, deleteForRuns, prune and deleteThread", async () => {
    await thread("a", 4);
    await saver.copyThread("a", "b");
    expect(await count("b")).toBe(4);
    const [ha, hb] = [await saver.getTuple({ configurable: { thread_id: "a" } }), await saver.getTuple({ configurable: { thread_id: "b" } })];
    expect(hb.checkpoint).toEqual(ha.checkpoint);

    // run-3 is the head: deleting it leaves three, in every thread (the
    // copy keeps the run ids).
    await saver.deleteForRuns(["run-3"]);
    expect(await count("a")).toBe(3);
    expect(await count("b")).toBe(3);
    // run-1 has a descendant of another run: refused, nothing changes.
    await expect(saver.deleteForRuns(["run-1"])).rejects.toMatchObject({ code: "CONFLICT" });
    expect(await count("a")).toBe(3);

    const report = await saver.prune(["b"], "keep_latest");
    expect(report.checkpoints_kept).toBe(1);
    expect(report.checkpoints_removed).toBe(2);
    expect(await count("b")).toBe(1);
    expect((await saver.getTuple({ configurable: { thread_id: "b" } })).checkpoint.channel_values).toEqual({ n: 2 });

    await saver.deleteThread("a");
    expect(await count("a")).toBe(0);
    expect(await saver.getTuple({ configurable: { thread_id: "a" } })).toBeUndefined();
  });

  it("lists across threads and namespaces, newest first, and stops early", async () => {
    await thread("x", 3);
    await thread("y", 3);
    const all = [];
    for await (const t of saver.list({})) all.push(t.checkpoint.id);
    expect(all).toHaveLength(6);
    expect([...all].sort().reverse()).toEqual(all);
    let taken = 0;
    for await (const _ of saver.list({})) if (++taken === 2) break;
    // a broken-off listing closes its cursor; later calls still work
    expect(await count("x")).toBe(3);
    await expect(saver.list({}, { filter: { "bad key!": 1 } }).next()).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("getNextVersion is monotonic, string-comparable and never repeats across branches", () => {
    let v;
    const seen = new Set();
    for (let i = 0; i < 50; i++) {
      const next = saver.getNextVersion(v);
      if (v !== undefined) expect(next > v).toBe(true);
      seen.add(next);
      v = next;
    }
    const a = saver.getNextVersion(v);
    const b = saver.getNextVersion(v);
    expect(a).not.toBe(b); // siblings of one parent
    expect(a.split(".")[0]).toBe(b.split(".")[0]);
    // A number (LangGraph.js's versions, kept by an import) stays a number
    // that compares with `>`: past it, before the next integer, never twice.
    const n1 = saver.getNextVersion(7);
    const n2 = saver.getNextVersion(7);
    expect(typeof n1).toBe("number");
    expect(n1 > 7 && n1 < 9 && Math.floor(n1) === 8).toBe(true);
    expect(n1).not.toBe(n2);
    expect(saver.getNextVersion(n1) > n1).toBe(true);
    expect(seen.size).toBe(50);
  });

  it("typed errors for bad input", async () => {
    await expect(saver.put({}, emptyCheckpoint(), {}, {})).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(saver.putWrites({ configurable: { thread_id: "t" } }, [], "task")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const missingParent = { configurable: { thread_id: "t", checkpoint_id: "nope" } };
    await expect(saver.put(missingParent, { ...emptyCheckpoint(), id: "zzzz" }, {}, {})).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("records", () => {
  let db;
  beforeEach(async () => {
    db = await Database.open();
  });
  afterEach(async () => {
    await db.close();
  });

  it("runs, events and threads round-trip", async () => {
    const t = await db.call("threads.create", { owner: "ann", thread_id: "th", display_name: "Chat", metadata: { topic: "x", n: 1 } });
    expect(t.thread).toMatchObject({ thread_id: "th", user_id: "ann", display_name: "Chat", status: "idle" });
    await expect(db.call("threads.get", { owner: "bob", thread_id: "th" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect((await db.call("threads.search", { owner: "ann", metadata: { n: 1 } })).threads).toHaveLength(1);
    expect((await db.call("threads.search", { owner: "ann", metadata: { n: "1" } })).threads).toHaveLength(0);

    const r = await db.call("runs.create", { thread_id: "th", status: "running", model_name: "m1" });
    expect(r.new).toBe(true);
    await expect(db.call("runs.create", { thread_id: "th" })).rejects.toMatchObject({ code: "CONFLICT" });

    const evs = await db.call("events.put", {
      events: [
        { thread_id: "th", run_id: r.run.run_id, event_type: "human", category: "message", content: "hi" },
        { thread_id: "th", run_id: r.run.run_id, event_type: "ai", category: "message", content: { text: "hello" } },
      ],
    });
    expect(evs.events.map((e) => e.seq)).toEqual([1, 2]);
    expect((await db.call("events.listMessages", { thread_id: "th" })).events.map((e) => e.content)).toEqual(["hi", { text: "hello" }]);

    await db.call("runs.complete", {
      run_id: r.run.run_id,
      status: "success",
      totals: { total_input_tokens: 10, total_output_tokens: 5, total_tokens: 15, llm_call_count: 1, token_usage_by_model: { m1: { input: 10, output: 5, total: 15 } } },
    });
    const got = await db.call("runs.get", { run_id: r.run.run_id });
    expect(got.run).toMatchObject({ status: "success", total_tokens: 15 });
    await expect(db.call("runs.setStatus", { run_id: r.run.run_id, status: "running" })).rejects.toMatchObject({ code: "CONFLICT" });
    const usage = await db.call("runs.tokenUsage", { thread_id: "th" });
    expect(usage.usage.total_tokens).toBe(15);
  });
});

describe("the event loop", () => {
  it("keeps running while a long call is in flight", async () => {
    const saver = await AgentStateSaver.open();
    try {
      let cfg = { configurable: { thread_id: "loop" } };
      const big = "y".repeat(200_000);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const work = (async () => {
        for (let i = 0; i < 30; i++) cfg = await put(saver, cfg, i, { big: big + i });
      })();
      await work;
      clearInterval(timer);
      // Calls yield between each other: timers fired while they ran.
      expect(ticks).toBeGreaterThan(5);
    } finally {
      await saver.close();
    }
  });
});

// Delta mode keeps storage linear by default: the engine's AutoRetain is
// on unless the caller turns it off.
describe("autoRetain", () => {
  it("is on by default, off when asked, and refused when not a boolean", async () => {
    const on = await Database.open();
    expect(on.autoRetain).toBe(true);
    await on.close();
    const off = await Database.open({ autoRetain: false });
    expect(off.autoRetain).toBe(false);
    await off.close();
    await expect(Database.open({ autoRetain: "no" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("synchronous opens normal or full and refuses anything else with a code", async () => {
    for (const synchronous of ["normal", "full"]) {
      const db = await Database.open({ synchronous });
      await db.close();
    }
    await expect(Database.open({ synchronous: "FULL" })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(Database.open({ synchronous: 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("a second open of a shared file must not ask for another setting", async () => {
    const dir = tmpdir();
    try {
      const file = path.join(dir, "r.db");
      const a = await Database.open({ path: file });
      await expect(Database.open({ path: file, autoRetain: false })).rejects.toMatchObject({ code: "MODE_MISMATCH" });
      await a.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The request buffer (src/engine.js, send) is sized at a byte per UTF-16
// unit first and grown when the text is not ASCII; past 1 MiB it is not
// kept for the next call (issue 38: a 100 MB value held 300 MB for the
// life of the process).
describe("large requests", () => {
  it("cross intact, ASCII or not, and the calls after them still work", async () => {
    const db = await Database.open();
    try {
      const put = (key, value) => db.call("store.batch", { ops: [{ op: "put", namespace: ["ns"], key, value }] });
      const get = async (key) => (await db.call("store.batch", { ops: [{ op: "get", namespace: ["ns"], key }] })).results[0].item.value;
      const ascii = { v: "a".repeat(3 << 20) };
      const wide = { v: "é中😀".repeat(300_000) + "end" };
      await put("ascii", ascii);
      await put("wide", wide);
      await put("small", { v: 1 });
      expect(await get("ascii")).toEqual(ascii);
      expect(await get("wide")).toEqual(wide);
      expect(await get("small")).toEqual({ v: 1 });
      await expect(put("big", { v: "x".repeat(20 << 20) })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(await get("small")).toEqual({ v: 1 });
    } finally {
      await db.close();
    }
  });
});
