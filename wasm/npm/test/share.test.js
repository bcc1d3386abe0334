// One file, two runtimes: the native CLI (go build ./cmd/agentstate) and
// this package in Node, on the same file, one after the other in both
// orders, at the same moment, and after a process of each kind was killed
// with its leftovers beside the file. Whoever comes second either opens
// the file or fails with the documented error naming the file and the
// holder (runtime, pid, host, since); the file always verifies.
//
// The CLI comes from AGENTSTATE_CLI (CI builds it once), else it is built
// here with the Go toolchain.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateSaver } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
const writer = path.join(here, "fixtures", "writer.mjs");

let work;
let cli;
let dump; // an export of the CLI's demo conversation (JSON lines)

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-share-"));
  cli = process.env.AGENTSTATE_CLI;
  if (!cli) {
    cli = path.join(work, "agentstate");
    execFileSync("go", ["build", "-o", cli, "./cmd/agentstate"], { cwd: repo, stdio: "inherit" });
  }
  execFileSync(cli, ["demo"], { cwd: work, stdio: "ignore" });
  dump = execFileSync(cli, ["export", path.join(work, "agentstate.db")], { encoding: "utf8" });
}, 300_000);

afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
});

let seq = 0;
function newFile() {
  const dir = path.join(work, `case${++seq}`);
  fs.mkdirSync(dir);
  return path.join(dir, "x.db");
}

/** Runs the CLI to completion: { code, stdout, stderr, ms }. */
function run(args, { input } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const c = spawn(cli, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.on("exit", (code) => resolve({ code, stdout, stderr, ms: performance.now() - t0 }));
    // A CLI refused at once may exit before its input is written: EPIPE is
    // then no failure of the test (its exit code and output say what happened).
    c.stdin.on("error", (e) => {
      if (e.code !== "EPIPE") throw e;
    });
    c.stdin.end(input ?? "");
  });
}

/** Starts a long-running child; waitFor(re) polls its output. */
function child(cmd, args) {
  const c = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  c.stdout.on("data", (d) => (out += d));
  c.stderr.on("data", (d) => (out += d));
  const exited = new Promise((resolve) => c.on("exit", (code, signal) => resolve({ code, signal })));
  const waitFor = async (test, ms = 120_000) => {
    const t0 = Date.now();
    for (;;) {
      const m = typeof test === "function" ? test() : out.match(test);
      if (m) return m;
      if (c.exitCode !== null || c.signalCode !== null) throw new Error(`child exited (${c.exitCode ?? c.signalCode}): ${out}`);
      if (Date.now() - t0 > ms) throw new Error(`timeout waiting for ${test}: ${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { c, exited, waitFor, output: () => out };
}

const natives = (file) => (fs.existsSync(`${file}.natives`) ? fs.readdirSync(`${file}.natives`) : []);
const host = os.hostname();
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The CLI's refusal while a Node process holds file. */
function heldByNode(file, pid) {
  return new RegExp(`${esc(file)} is open in node( \\([^)]*\\))? pid ${pid} on host ${esc(host)} since \\d{4}-\\d\\d-\\d\\dT[^;]*; a JavaScript process and the native engine cannot have one file open at once`);
}

/** The package's refusal while a native process holds file. */
function heldByNative(file, pid) {
  return new RegExp(`${esc(file)} is open in native \\(${esc(path.basename(cli))}\\) pid ${pid} on host ${esc(host)} since \\d{4}-\\d\\d-\\d\\dT[^;]*; a JavaScript process and the native engine cannot have one file open at once`);
}

async function putSteps(saver, thread, from, n) {
  let cfg = { configurable: { thread_id: thread, checkpoint_ns: "" } };
  const last = await saver.getTuple(cfg);
  if (last) cfg = last.config;
  for (let i = from; i < from + n; i++) {
    const v = saver.getNextVersion(undefined);
    const cp = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { x: i }, channel_versions: { x: v } };
    cfg = await saver.put(cfg, cp, { source: "loop", step: i, parents: {} }, { x: v });
  }
}

async function verify(file) {
  const r = await run(["verify", file]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

async function infoRows(file) {
  const r = await run(["info", "--json", file]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).rows;
}

describe("one file, the native CLI and the npm package", () => {
  it("Node first: the CLI's writes are refused at once, naming Node, its reads read a copy; then it reads what Node wrote", async () => {
    const file = newFile();
    const saver = await AgentStateSaver.open({ path: file });
    await putSteps(saver, "t", 0, 5);
    for (const cmd of [["import", file]]) {
      const r = await run(cmd, { input: dump });
      expect(r.code, r.stdout).toBe(1);
      expect(r.stderr).toMatch(heldByNode(file, process.pid));
      expect(r.stderr).not.toMatch(/is a directory|locking protocol/);
      expect(r.ms).toBeLessThan(10_000); // a second of grace, not the busy timeout
    }
    // Read-only commands read a consistent copy (docs/cli.md, "A file a
    // Node process has open"), saying so.
    for (const cmd of [["verify", file], ["info", "--json", file]]) {
      const r = await run(cmd);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stderr).toMatch(new RegExp(`${esc(file)} is open in node( \\([^)]*\\))? pid ${process.pid}; this reads a consistent copy`));
      if (cmd[0] === "info") expect(JSON.parse(r.stdout).rows.checkpoints).toBe(5);
    }
    expect(natives(file)).toEqual([]); // refused CLIs withdrew
    await saver.close();
    expect(fs.existsSync(`${file}.owner`)).toBe(false);
    await verify(file);
    expect((await infoRows(file)).checkpoints).toBe(5);
  });

  it("CLI first: Node is refused with BUSY, naming the CLI; then opens what the CLI wrote", async () => {
    const file = newFile();
    const lines = dump.split("\n");
    const imp = child(cli, ["import", file]);
    imp.c.stdin.write(`${lines[0]}\n`); // the header: the CLI has the file open, waiting for rows
    await imp.waitFor(() => natives(file).length === 1);
    await expect(AgentStateSaver.open({ path: file })).rejects.toMatchObject({ code: "BUSY", message: expect.stringMatching(heldByNative(file, imp.c.pid)) });
    expect(fs.existsSync(`${file}.owner`)).toBe(false); // the refused open withdrew
    imp.c.stdin.end(lines.slice(1).join("\n"));
    expect((await imp.exited).code, imp.output()).toBe(0);
    expect(natives(file)).toEqual([]);

    const saver = await AgentStateSaver.open({ path: file });
    const info = await saver.info();
    expect(info.rows.checkpoints).toBe(12);
    await putSteps(saver, "from-node", 0, 3);
    await saver.close();
    await verify(file);
    expect((await infoRows(file)).checkpoints).toBe(15);
  });

  it("after a read-only CLI command leaves -shm behind, Node opens the file", async () => {
    const file = newFile();
    expect((await run(["import", file], { input: dump })).code).toBe(0);
    expect((await run(["info", file])).code).toBe(0);
    const saver = await AgentStateSaver.open({ path: file });
    expect((await saver.info()).rows.checkpoints).toBe(12);
    await putSteps(saver, "n", 0, 2);
    await saver.close();
    await verify(file);
  });

  it("a CLI killed mid-run leaves -wal, -shm and its registration: Node clears them and recovers the file", async () => {
    const file = newFile();
    const imp = child(cli, ["import", file]);
    imp.c.stdin.write(`${dump.split("\n")[0]}\n`);
    await imp.waitFor(() => natives(file).length === 1 && fs.existsSync(`${file}-wal`) && fs.statSync(`${file}-wal`).size > 0);
    imp.c.kill("SIGKILL");
    expect((await imp.exited).signal).toBe("SIGKILL");
    expect(natives(file)).toHaveLength(1); // stale: names a dead pid
    expect(fs.existsSync(`${file}-shm`)).toBe(true);

    const saver = await AgentStateSaver.open({ path: file }); // the schema is only in the -wal frames
    expect((await saver.info()).schema_version).toBeGreaterThan(0);
    await putSteps(saver, "after-kill", 0, 4);
    expect(natives(file)).toEqual([]);
    await saver.close();
    await verify(file);
    expect((await infoRows(file)).checkpoints).toBe(4);
  });

  it("a Node process killed mid-write leaves its owner file and journal: the CLI clears them and reads the file, and Node opens it again", async () => {
    const file = newFile();
    const w = child(process.execPath, [writer, file, "loop"]);
    const m = await w.waitFor(/n=(\d+)/);
    await new Promise((r) => setTimeout(r, 40)); // into some transaction
    w.c.kill("SIGKILL");
    expect((await w.exited).signal).toBe("SIGKILL");
    expect(fs.existsSync(`${file}.owner`)).toBe(true); // names a dead pid

    await verify(file);
    const rows = await infoRows(file);
    expect(rows.checkpoints).toBeGreaterThanOrEqual(Number(m[1]));
    expect(fs.existsSync(`${file}.owner`)).toBe(false);
    expect(natives(file)).toEqual([]);

    const saver = await AgentStateSaver.open({ path: file });
    const head = await saver.getTuple({ configurable: { thread_id: "crash" } });
    expect(head.metadata.step + 1).toBe(rows.checkpoints);
    await saver.close();
    await verify(file);
  }, 180_000);

  it("started at the same moment: never both open; the other is refused with the documented error", async () => {
    const outcomes = [];
    const header = `${dump.split("\n")[0]}\n`;
    for (let round = 0; round < 6; round++) {
      const file = newFile();
      const node = child(process.execPath, [writer, file, "race"]);
      await node.waitFor(/ready/); // the engine is loaded: only the open is left
      // Both at once, the CLI a little later each round: the CLI holds
      // the file (an import waiting for rows) while Node opens it.
      node.c.stdin.write("go\n");
      await new Promise((r) => setTimeout(r, [0, 5, 20, 100, 300, 1000][round]));
      const imp = child(cli, ["import", file]);
      imp.c.stdin.write(header);
      const said = await node.waitFor(/\n(open|refused[^\n]*)\n/);
      // A refused CLI gives up within its second of grace.
      const cliDone = await Promise.race([imp.exited, new Promise((r) => setTimeout(() => r(null), 2500))]);
      const nodeOpen = said[1] === "open";
      const cliOpen = cliDone === null;
      outcomes.push({ node: nodeOpen ? "opened" : "refused", cli: cliOpen ? "opened" : "refused" });
      expect(nodeOpen && cliOpen, "both had the file open at once").toBe(false);
      expect(nodeOpen || cliOpen, `${JSON.stringify(outcomes)}\nnode: ${node.output()}\ncli: ${imp.output()}`).toBe(true);
      if (!nodeOpen) expect(said[1]).toMatch(new RegExp(`^refused BUSY agentstate: ${heldByNative(file, imp.c.pid).source}`));
      if (!cliOpen) expect(imp.output()).toMatch(heldByNode(file, node.c.pid));
      imp.c.stdin.end(dump.split("\n").slice(1).join("\n"));
      node.c.stdin.end();
      const [ni, ci] = await Promise.all([node.exited, imp.exited]);
      expect(ni.code, node.output()).toBe(nodeOpen ? 0 : 3);
      expect(ci.code, imp.output()).toBe(cliOpen ? 0 : 1);
      expect(fs.existsSync(`${file}.owner`)).toBe(false);
      expect(natives(file)).toEqual([]);
      if (fs.existsSync(file)) await verify(file);
    }
    console.log(`same-moment rounds: ${JSON.stringify(outcomes)}`);
  }, 300_000);

  it("while Node writes, the CLI's reads read consistent copies and its writes are refused; after it stops, the file verifies", async () => {
    const file = newFile();
    const w = child(process.execPath, [writer, file, "loop"]);
    await w.waitFor(/n=\d+/);
    let last = 0;
    for (let i = 0; i < 3; i++) {
      const r = await run(["verify", file]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stderr).toMatch(/this reads a consistent copy/);
      const rows = await infoRows(file);
      expect(rows.checkpoints).toBeGreaterThanOrEqual(last);
      last = rows.checkpoints;
    }
    const imp = await run(["import", file], { input: dump });
    expect(imp.code).toBe(1);
    expect(imp.stderr).toMatch(heldByNode(file, w.c.pid));
    w.c.kill("SIGTERM");
    await w.exited;
    await verify(file);
    expect((await infoRows(file)).checkpoints).toBeGreaterThanOrEqual(last);
  }, 180_000);
});
