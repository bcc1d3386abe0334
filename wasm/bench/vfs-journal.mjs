// Commits through the package's VFS adapter over Node files, by journal
// mode: what the engine's choice of WAL costs against a rollback journal.
// Each commit inserts two small rows in one transaction (synchronous=NORMAL,
// the engine's default), on a fresh file in the system's temp directory.
//
//   node wasm/bench/vfs-journal.mjs MODE [COMMITS]   (from the repository root, after wasm/npm's npm ci and build)
//   MODE: wal (normal locking, the WAL-index in SQLite's heap), walx
//   (exclusive locking), delete, truncate
//
// Prints one line: mode, commits, ms per commit. Time whole runs from
// outside (e.g. /usr/bin/time -v) to compare modes.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openNodeFileHost } from "../npm/src/node-host.js";
import { attachHost } from "../npm/src/sqlite/vfs.js";
import { connect, freshSqlite } from "../npm/test/helpers/sqlite.js";

const [mode = "wal", n = "300"] = process.argv.slice(2);
const commits = Number(n);
const setup = {
  wal: ["PRAGMA journal_mode=WAL"],
  walx: ["PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=WAL"],
  delete: ["PRAGMA journal_mode=DELETE"],
  truncate: ["PRAGMA journal_mode=TRUNCATE"],
}[mode];
if (!setup || !(commits > 0)) {
  console.error("usage: node wasm/bench/vfs-journal.mjs wal|walx|delete|truncate [COMMITS]");
  process.exit(2);
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-vfs-bench-"));
try {
  const sq = await freshSqlite();
  const host = await openNodeFileHost(path.join(dir, "bench.db"));
  const a = attachHost(sq, host);
  const c = connect(sq, host.path, a.vfs);
  for (const q of setup) c.exec(q);
  c.exec("PRAGMA synchronous=NORMAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
  const t0 = performance.now();
  for (let i = 0; i < commits; i++) c.exec("BEGIN IMMEDIATE; INSERT INTO t(v) VALUES (randomblob(2000)); INSERT INTO t(v) VALUES (randomblob(200)); COMMIT");
  const ms = performance.now() - t0;
  c.close();
  a.detach();
  console.log(`${mode} ${commits} commits: ${(ms / commits).toFixed(3)} ms per commit`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
