// The other side of test-pg/faults.test.js, in a process of its own (while
// a call of the package runs, Node's main thread waits for it: the test
// cannot act then): waits until a session whose application_name is APP
// matches WHERE (a condition on pg_stat_activity), then ACTS: "terminate"
// ends those sessions (pg_terminate_backend), any other word is run as a
// command after them (JSON array: argv). Prints "ready" once connected,
// then what it did as one line.
import { execFileSync } from "node:child_process";
import pg from "pg";

const [url, app, where, act] = process.argv.slice(2);
const c = new pg.Client({ connectionString: url });
await c.connect();
console.log("ready");
const end = Date.now() + 20_000;
let rows = [];
while (Date.now() < end) {
  ({ rows } = await c.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND ${where}`, [app]));
  if (rows.length > 0) break;
  await new Promise((r) => setTimeout(r, 20));
}
if (rows.length === 0) {
  console.log("no such session");
  process.exit(1);
}
if (act === "terminate") {
  for (const { pid } of rows) await c.query("SELECT pg_terminate_backend($1)", [pid]);
  await c.end();
} else {
  await c.end();
  const [cmd, ...args] = JSON.parse(act);
  execFileSync(cmd, args, { stdio: "ignore" });
}
console.log(`${act === "terminate" ? "terminated" : "ran"} (${rows.length} sessions)`);
