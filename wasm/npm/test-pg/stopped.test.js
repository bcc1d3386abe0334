// A stopped engine (a Go panic: test.crash, which only the package's own
// tests can ask for) closes its PostgreSQL sessions: before, the worker
// kept them open until the process ended, with the owner's advisory lock
// and any transaction in flight. (A file of its own: the engine must start
// with its test hooks.) The Python twin is in python/tests/test_postgres.py.
import { AgentStateSaver, Database } from "../src/index.js";
import pg from "pg";
import { dropSchema, freshSchema, url } from "./helpers.js";

const pgTest = url ? test : test.skip;

async function sessions(app) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query("SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1", [app])).rows;
  } finally {
    await c.end();
  }
}

pgTest("a stopped engine closes its PostgreSQL sessions, and another handle writes at once", async () => {
  const schema = await freshSchema("stopped");
  const app = `stopped_${process.pid}_${Date.now().toString(36)}`;
  const u = new URL(url);
  u.searchParams.set("application_name", app);
  const cfg = { configurable: { thread_id: "t", checkpoint_ns: "" } };
  const cp = (i) => ({ v: 4, id: `1ef00000-0000-6000-8000-00000000000${i}`, ts: new Date().toISOString(), channel_values: { n: i }, channel_versions: { n: i }, versions_seen: {} });
  try {
    const db = await Database.open({ url: u.toString(), schema, testHooks: true });
    await new AgentStateSaver(db).put(cfg, cp(1), { source: "input", step: -1, parents: {} }, { n: 1 });
    expect((await sessions(app)).length).toBeGreaterThan(0);
    await expect(db.call("test.crash")).rejects.toMatchObject({ code: "INTERNAL" });
    expect(db.closed).toBe(true);
    let left = await sessions(app);
    for (let i = 0; i < 50 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      left = await sessions(app);
    }
    expect(left).toEqual([]);
    const other = await AgentStateSaver.open({ url, schema, timeoutMs: 3000 });
    await other.put(cfg, cp(2), { source: "input", step: -1, parents: {} }, { n: 2 });
    expect((await other.getTuple(cfg)).checkpoint.id).toBe(cp(2).id);
    await other.close();
  } finally {
    await dropSchema(schema);
  }
});
