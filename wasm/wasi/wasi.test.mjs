// The GOOS=wasip1 build of the CLI under Node's WASI, against the native
// CLI: files cross both ways, and a WASI process killed mid-write leaves a
// file the next run opens.
//
//   AGENTSTATE_WASI=agentstate-wasi.wasm AGENTSTATE_CLI=agentstate node --test wasm/wasi/
import { spawn, spawnSync } from "node:child_process";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const runner = path.join(here, "run.mjs");
const wasm = process.env.AGENTSTATE_WASI;
const cli = process.env.AGENTSTATE_CLI;
if (!wasm || !cli) throw new Error("set AGENTSTATE_WASI (the wasip1 build) and AGENTSTATE_CLI (the native build)");

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-wasi-"));

function wasi(dir, ...args) {
  const r = spawnSync(process.execPath, ["--no-warnings", runner, "--dir", dir, wasm, ...args], { encoding: "utf8", timeout: 240_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function native(dir, ...args) {
  const r = spawnSync(cli, args, { cwd: dir, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function ok(r, what) {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\n${r.out}\n${r.err}`);
  return r;
}

test("a file written by the native CLI opens and verifies under WASI", () => {
  const dir = tmp();
  ok(native(dir, "demo", "--db", "native.db"), "native demo");
  const v = ok(wasi(dir, "verify", "native.db"), "wasi verify");
  assert.match(v.out, /native\.db: ok: 1 thread with checkpoints, 12 checkpoints/);
  const info = JSON.parse(ok(wasi(dir, "info", "--json", "native.db"), "wasi info").out);
  assert.equal(info.rows?.checkpoints ?? info.file?.rows?.checkpoints ?? 12, 12);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a file written under WASI opens natively", () => {
  const dir = tmp();
  ok(wasi(dir, "demo", "--db", "wasi.db"), "wasi demo");
  assert.deepEqual(fs.readdirSync(dir).sort(), ["wasi.db"]); // no lock, no -shm, no -wal left
  const v = ok(native(dir, "verify", "wasi.db"), "native verify");
  assert.match(v.out, /wasi\.db: ok: 1 thread with checkpoints, 12 checkpoints/);
  fs.rmSync(dir, { recursive: true, force: true });
});

async function killMidWrite(dir, db, delayMs) {
  const child = spawn(process.execPath, ["--no-warnings", runner, "--dir", dir, wasm, "bench", "--turns", "1500", "--mode", "delta", "--db", db], {
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const file = path.join(dir, db);
  const t0 = Date.now();
  // Wait until it is well into the conversation (past the schema set-up,
  // about 90 turns in), then a little more.
  const size = (f) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
  for (;;) {
    if (size(file) + size(`${file}-wal`) > 1_500_000) break;
    if (child.exitCode !== null) throw new Error(`bench exited early with ${child.exitCode}`);
    if (Date.now() - t0 > 180_000) throw new Error("bench never started writing");
    await new Promise((r) => setTimeout(r, 25));
  }
  await new Promise((r) => setTimeout(r, delayMs));
  child.kill("SIGKILL");
  assert.equal((await exited).signal, "SIGKILL");
}

test("a WASI process killed mid-write leaves a file the next run opens", async () => {
  const dir = tmp();
  for (const [round, delay] of [[1, 0], [2, 700]]) {
    const db = `killed${round}.db`;
    await killMidWrite(dir, db, delay);
    const left = fs.readdirSync(dir);
    // What a dead dot-lock process leaves: the lock file and the -shm switch directory.
    assert.ok(left.includes(`${db}.lock`), `round ${round}: expected a stale lock, found ${left}`);
    const v = ok(wasi(dir, "verify", db), `round ${round}: wasi verify after kill`);
    assert.match(v.out, new RegExp(`${db.replace(".", "\\.")}: ok:`));
    assert.match(v.err, /removed locks left by dead process/);
    assert.ok(!fs.readdirSync(dir).includes(`${db}.lock`));
    // The WASI read-only view saw every committed frame of the WAL.
    const n = ok(native(dir, "verify", db), `round ${round}: native verify after kill`);
    const count = (out) => Number(out.match(/(\d+) checkpoints/)?.[1]);
    assert.ok(count(v.out) > 50, v.out);
    assert.equal(count(v.out), count(n.out));
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test("one WASI process per directory", async () => {
  const dir = tmp();
  const child = spawn(process.execPath, ["--no-warnings", runner, "--dir", dir, wasm, "bench", "--turns", "5000", "--mode", "delta", "--db", "busy.db"], {
    stdio: "ignore",
  });
  const t0 = Date.now();
  while (!fs.existsSync(path.join(dir, ".agentstate-wasi.owner"))) {
    if (Date.now() - t0 > 60_000) throw new Error("first process never started");
    await new Promise((r) => setTimeout(r, 20));
  }
  const r = wasi(dir, "info", "busy.db");
  assert.equal(r.code, 1);
  assert.match(r.err, new RegExp(`in use by process ${child.pid}`));
  child.kill("SIGKILL");
  await new Promise((resolve) => child.on("exit", resolve));
  fs.rmSync(dir, { recursive: true, force: true });
});
