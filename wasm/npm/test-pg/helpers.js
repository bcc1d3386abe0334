// The server of the PostgreSQL tests: AGENTSTATE_TEST_PG (.ci/with-postgres
// exports it). Without it the tests are skipped with a note, and with
// AGENTSTATE_CI=1 (.ci/run) that is a failure, never a silent skip.
import pg from "pg";

export const url = process.env.AGENTSTATE_TEST_PG;
if (!url) {
  if (process.env.AGENTSTATE_CI === "1") throw new Error("AGENTSTATE_TEST_PG is not set: run the PostgreSQL tests under .ci/with-postgres");
  console.warn("test-pg: AGENTSTATE_TEST_PG is not set: the PostgreSQL tests are skipped (run them under .ci/with-postgres)");
}

let n = 0;
/** A fresh, empty schema on the server; its name. */
export async function freshSchema(prefix = "npm") {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${n++}`;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`CREATE SCHEMA ${name}`);
  } finally {
    await c.end();
  }
  return name;
}

export async function dropSchema(name) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA ${name} CASCADE`);
  } finally {
    await c.end();
  }
}
