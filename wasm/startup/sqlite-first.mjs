// What the first statements cost in the package's SQLite (dist/sqlite3.wasm
// through src/sqlite/loader.js), apart from the engine: load, open an
// in-memory database, then one of
//
//   none    nothing
//   attach  ATTACH ':memory:' AS x (the statement sqlite3_deserialize runs)
//   create  sql.js's case: CREATE TABLE with a primary key
//
// then SELECT 1, with V8's compile trace on, printing the wall times and
// which of SQLite's functions the optimising tier (TurboFan) compiled and
// for how long (docs/decisions/startup.md §11).
//
//   node wasm/startup/sqlite-first.mjs [none|attach|create] [RUNS]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(here, "../npm/dist");
const [mode = "attach", runsArg = "3"] = process.argv.slice(2);
const statements = { none: [], attach: ["ATTACH ':memory:' AS x"], create: ["CREATE TABLE checkpoints(thread_id TEXT, checkpoint_id TEXT, checkpoint BLOB, PRIMARY KEY(thread_id, checkpoint_id))"] };
if (!statements[mode]) throw new Error(`mode ${mode}: want none, attach or create`);

if (process.env.SQLITE_FIRST_CHILD) {
  const { loadSqlite } = await import("../npm/src/sqlite/loader.js");
  const t0 = performance.now();
  const sq = await loadSqlite({ wasm: fs.readFileSync(path.join(dist, "sqlite3.wasm")), callbacks: fs.readFileSync(path.join(dist, "sqlite-callbacks.wasm")) });
  const x = sq.x;
  const t1 = performance.now();
  const out = sq.malloc(8);
  const name = sq.allocCString(":memory:");
  if (x.sqlite3_open_v2(name, out, 6, 0) !== 0) throw new Error("open failed");
  const db = sq.view().getUint32(out, true);
  const t2 = performance.now();
  const exec = (sql) => {
    const p = sq.allocCString(sql);
    if (x.sqlite3_exec(db, p, 0, 0, 0) !== 0) throw new Error(`${sql}: ${sq.errmsg(db)}`);
    sq.free(p);
  };
  for (const s of statements[mode]) exec(s);
  const t3 = performance.now();
  if (mode !== "none") exec("SELECT 1");
  const t4 = performance.now();
  console.log(JSON.stringify({ load: t1 - t0, open: t2 - t1, first: t3 - t2, second: t4 - t3 }));
  process.exit(0);
}

const fmt = (x) => x.toFixed(1);
for (let i = 0; i < Number(runsArg); i++) {
  const text = execFileSync(process.execPath, ["--trace-wasm-compilation-times", fileURLToPath(import.meta.url), mode], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
    env: { ...process.env, SQLITE_FIRST_CHILD: "1" },
  });
  const lines = text.split("\n");
  const t = JSON.parse(lines.find((l) => l.startsWith("{")));
  const jobs = [];
  for (const l of lines) {
    const m = /^Compiled function \S+#(\d+) using TurboFan, took (\d+) ms.*bodysize (\d+)/.exec(l);
    if (m) jobs.push(`func[${m[1]}] ${m[3]} B ${m[2]} ms`);
  }
  console.log(`${mode}: load ${fmt(t.load)} ms, open ${fmt(t.open)}, first statement ${fmt(t.first)}, SELECT 1 ${fmt(t.second)}; TurboFan: ${jobs.join(", ") || "none"}`);
}
