// Opening a file in the wrong mode, or an old file read-only: the error says
// what works from JavaScript, with the caller's path, and following the
// advice works (the suggested CLI command is run as printed).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateSaver, Database } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
let dir;
let cli; // the native agentstate CLI, built from this repository
const cwd = process.cwd();

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-advice-"));
  cli = path.join(dir, "bin", "agentstate");
  execFileSync("go", ["build", "-o", cli, "./cmd/agentstate"], { cwd: repo, stdio: "inherit" });
  process.chdir(dir); // paths below are relative, as a user writes them
});

afterAll(() => {
  process.chdir(cwd);
  fs.rmSync(dir, { recursive: true, force: true });
});

async function writeOne(saver, thread) {
  const cp = emptyCheckpoint();
  cp.id = uuid6(-1);
  return saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp, { source: "input", step: -1, parents: {} }, {});
}

// shell runs a command line as printed, with the CLI on PATH.
function shell(line) {
  return execFileSync("sh", ["-c", line], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, PATH: `${path.dirname(cli)}${path.delimiter}${process.env.PATH}` },
  });
}

describe("channel modes", () => {
  it("opens an existing file in its own mode without a mode, and says what works on a mismatch", async () => {
    const file = "my agent.db"; // a space: the suggested command must quote it
    const first = await AgentStateSaver.open({ path: file, mode: "delta", every: 4 });
    await writeOne(first, "t1");
    await first.close();

    // No mode: the file's (delta, K=4).
    const auto = await AgentStateSaver.open({ path: file });
    expect(await auto.db.info()).toMatchObject({ mode: "delta", snapshot_every: 4 });
    // A second open in the same process with the file's mode shares the handle; another mode does not.
    const same = await AgentStateSaver.open({ path: file, mode: "delta", every: 4 });
    expect(same.db).toBe(auto.db);
    await expect(AgentStateSaver.open({ path: file, mode: "full" })).rejects.toMatchObject({ code: "MODE_MISMATCH" });
    await same.close();
    await auto.close();

    // An explicit other mode: MODE_MISMATCH, in JavaScript's terms.
    let err;
    try {
      await AgentStateSaver.open({ path: file, mode: "full" });
    } catch (e) {
      err = e;
    }
    expect(err?.code).toBe("MODE_MISMATCH");
    expect(err.message).toContain(`${file} was written in delta mode with K=4, not full mode`);
    expect(err.message).toContain(`mode: "auto"`);
    expect(err.message).toContain(`mode: "delta", every: 4`);
    expect(err.message).toContain("agentstate CLI (not in this package: go install ./cmd/agentstate in a clone of the repository)");
    expect(err.message).not.toMatch(/vfs=|file:|SnapshotEvery|Options\.|engine\./);
    const m = err.message.match(/agentstate convert .*$/);
    expect(m).not.toBeNull();
    expect(m[0]).toBe(`agentstate convert '${path.join(process.cwd(), file)}' --mode full`);

    // The first advice works...
    const viaAuto = await AgentStateSaver.open({ path: file, mode: "auto" });
    expect((await viaAuto.db.info()).mode).toBe("delta");
    await viaAuto.close();
    // ...and so does the second, pasted as printed; then the same open succeeds.
    expect(shell(m[0])).toMatch(/converted \d+ threads? to full/);
    const full = await AgentStateSaver.open({ path: file, mode: "full" });
    expect((await full.db.info()).mode).toBe("full");
    expect((await full.getTuple({ configurable: { thread_id: "t1" } }))?.checkpoint).toBeDefined();
    await full.close();
  });

  // What the saver's mode does not change, as its JSDoc and the READMEs
  // say: a LangGraph.js graph is stored the same in full and delta mode.
  it("stores a LangGraph.js graph the same in full and delta mode", async () => {
    const { MessagesAnnotation, START, StateGraph } = await import("@langchain/langgraph");
    const { AIMessage, HumanMessage } = await import("@langchain/core/messages");
    const stored = {};
    for (const mode of ["full", "delta"]) {
      const file = `graph-${mode}.db`;
      const saver = await AgentStateSaver.open({ path: file, mode, ...(mode === "delta" ? { every: 10 } : {}) });
      const graph = new StateGraph(MessagesAnnotation)
        .addNode("agent", (state) => ({ messages: [new AIMessage(`reply ${state.messages.length}: ${"x".repeat(200)}`)] }))
        .addEdge(START, "agent")
        .compile({ checkpointer: saver });
      for (let i = 0; i < 30; i++) {
        await graph.invoke({ messages: [new HumanMessage(`turn ${i}: ${"y".repeat(200)}`)] }, { configurable: { thread_id: "t" } });
      }
      const info = await saver.db.info();
      expect(info.mode).toBe(mode);
      stored[mode] = { rows: { blobs: info.rows.blobs, checkpoints: info.rows.checkpoints, writes: info.rows.writes, snapshots: info.rows.snapshots ?? 0 } };
      await saver.close();
      stored[mode].bytes = fs.statSync(file).size + (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0);
    }
    expect(stored.delta.rows).toEqual(stored.full.rows);
    expect(Math.abs(stored.delta.bytes - stored.full.bytes) / stored.full.bytes).toBeLessThanOrEqual(0.02);
  }, 120_000);

  it("refuses every (K) with any mode but delta, where it would mean nothing", async () => {
    for (const opts of [{ every: 4 }, { mode: "auto", every: 4 }, { mode: "full", every: 4 }]) {
      const err = await AgentStateSaver.open({ path: "k.db", ...opts }).catch((e) => e);
      expect(err, JSON.stringify(opts)).toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(err.message).toContain(`applies to mode: "delta" only`);
    }
    expect(fs.existsSync("k.db")).toBe(false);
    const db = await Database.open({ path: "k.db", mode: "delta", every: 4 });
    expect(await db.info()).toMatchObject({ mode: "delta", snapshot_every: 4 });
    await db.close();
  });

  it("creates a new file in full mode with mode auto or no mode", async () => {
    for (const [name, opts] of [["new-auto.db", { mode: "auto" }], ["new-none.db", {}]]) {
      const db = await Database.open({ path: name, ...opts });
      expect((await db.info()).mode).toBe("full");
      await db.close();
    }
  });

  it("names readOnly, not Go's option, for a file that needs an upgrade", async () => {
    const file = "old.db";
    fs.copyFileSync(path.join(repo, "testdata", "schema_v1.db"), file);
    let err;
    try {
      await Database.open({ path: file, readOnly: true });
    } catch (e) {
      err = e;
    }
    expect(err?.code).toBe("READ_ONLY");
    expect(err.message).toContain(`${file} cannot be opened with readOnly: true`);
    expect(err.message).toContain("open it once without readOnly");
    expect(err.message).not.toMatch(/vfs=|file:|Options\./);
    // Following it: one open without readOnly upgrades the file.
    const rw = await Database.open({ path: file });
    expect((await rw.info()).schema_version).toBeGreaterThan(1);
    await rw.close();
  });
});
