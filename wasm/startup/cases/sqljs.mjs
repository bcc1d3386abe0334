// The same cold start with sql.js (SQLite compiled with Emscripten, the
// package most JavaScript users would reach for): load, open in memory,
// create a table, insert a row with a blob, read it back, close.
import { createRequire } from "node:module";
import { measure } from "./measure.mjs";

const m = measure();
const require = createRequire(import.meta.url);
const initSqlJs = require("sql.js");
const SQL = await initSqlJs();
const db = new SQL.Database();
db.run("CREATE TABLE checkpoints(thread_id TEXT, checkpoint_id TEXT, checkpoint BLOB, PRIMARY KEY(thread_id, checkpoint_id))");
db.run("INSERT INTO checkpoints VALUES (?, ?, ?)", ["t1", "1ef0c2d4-0000-6000-8000-000000000001", new Uint8Array([1, 2, 3])]);
const r = db.exec("SELECT checkpoint FROM checkpoints WHERE thread_id = 't1'");
if (r[0].values[0][0].length !== 3) throw new Error("sql.js read back the wrong row");
m.first();
db.close();
m.closed();
