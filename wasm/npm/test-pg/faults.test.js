// Faults in the middle of a call (issue 40): the server ends a session
// while a call waits on it, the server stops (a throwaway server of the
// test's own), a COMMIT's answer never comes. Every call returns within its
// deadline + 100 ms with a typed error (an unknown COMMIT as
// OUTCOME_UNKNOWN, never as a plain timeout a caller would retry), and the
// handle works again afterwards. The Python package's twins are in
// python/tests/test_postgres.py.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { AgentStateError, AgentStateSaver } from "../src/index.js";
import pg from "pg";
import { dropSchema, freshSchema, url } from "./helpers.js";
import { ownServer } from "./own-server.js";

const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const pgTest = url ? test : test.skip;
const SLACK_MS = 100; // what a call may take past its deadline (the goal)

const cfg = (thread, id) => ({ configurable: { thread_id: thread, checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) } });
let n = 0;
const cp = (i) => ({ v: 4, id: `1ef00000-0000-6000-8000-${String(++n).padStart(12, "0")}`, ts: new Date().toISOString(), channel_values: { n: i }, channel_versions: { n: i + 1 }, versions_seen: {} });
const put = (saver, parent, i) => saver.put(parent, cp(i), { source: "loop", step: i, parents: {} }, { n: i + 1 });

// admin starts test-pg/admin.js, which acts on the sessions of app once
// one matches where (the call that follows blocks this thread), and
// returns once it is connected and looking; done() is its output once it
// exits.
async function admin(server, app, where, act) {
  const p = spawn(process.execPath, [here("./admin.js"), server, app, where, act], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  let ready;
  const isReady = new Promise((r) => (ready = r));
  p.stdout.on("data", (d) => {
    out += d;
    if (out.startsWith("ready\n")) ready();
  });
  const exited = new Promise((resolve, reject) => p.on("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`admin.js: exit ${code}: ${out}`)))));
  await Promise.race([isReady, exited]);
  return () => exited;
}

async function timed(fn) {
  const t0 = Date.now();
  const e = await fn().then(
    () => null,
    (err) => err,
  );
  return [e, Date.now() - t0];
}

async function sql(server, q) {
  const c = new pg.Client({ connectionString: server });
  await c.connect();
  try {
    return (await c.query(q)).rows;
  } finally {
    await c.end();
  }
}

function withApp(server, app) {
  const u = new URL(server);
  u.searchParams.set("application_name", app);
  return u.toString();
}

pgTest("a session terminated mid-call: a typed error within the deadline, and the handle goes on", async () => {
  const schema = await freshSchema("midcall");
  const app = `mid_${process.pid}_${Date.now().toString(36)}`;
  const timeoutMs = 2000;
  const saver = await AgentStateSaver.open({ url: withApp(url, app), schema, timeoutMs });
  try {
    const c = await put(saver, cfg("t"), 0);
    for (const [name, call] of [
      ["put", () => put(saver, c, 1)],
      ["getTuple", () => saver.getTuple(cfg("t"))],
    ]) {
      const locker = new pg.Client({ connectionString: url });
      await locker.connect();
      await locker.query("BEGIN");
      await locker.query(`LOCK TABLE ${schema}.checkpoints IN ACCESS EXCLUSIVE MODE`);
      const acted = await admin(url, app, "wait_event_type = 'Lock'", "terminate");
      const [e, took] = await timed(call);
      await acted();
      await locker.query("ROLLBACK");
      await locker.end();
      console.log(`${name}: session terminated mid-call: ${e?.code} after ${took} ms (deadline ${timeoutMs} ms)`);
      expect(e).toBeInstanceOf(AgentStateError);
      expect(["CONNECTION_LOST", "TIMEOUT"]).toContain(e.code);
      expect(took).toBeLessThan(timeoutMs + SLACK_MS);
    }
    expect((await saver.getTuple(cfg("t", c.configurable.checkpoint_id))).config).toEqual(c);
    const c2 = await put(saver, c, 2);
    expect((await saver.getTuple(cfg("t"))).config).toEqual(c2);
  } finally {
    await saver.close();
    await dropSchema(schema);
  }
});

pgTest("a COMMIT whose answer never comes is OUTCOME_UNKNOWN, within the deadline", async () => {
  const schema = await freshSchema("commit");
  const app = `uc_${process.pid}_${Date.now().toString(36)}`;
  const timeoutMs = 1500;
  const saver = await AgentStateSaver.open({ url: withApp(url, app), schema, timeoutMs });
  try {
    const c = await put(saver, cfg("t"), 0);
    // A deferred constraint trigger makes COMMIT take 30 s.
    await sql(
      url,
      `CREATE FUNCTION ${schema}.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$;
       CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON ${schema}.checkpoints DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${schema}.slow_commit()`,
    );
    let [e, took] = await timed(() => put(saver, c, 1));
    console.log(`deadline during COMMIT: ${e?.code} after ${took} ms (deadline ${timeoutMs} ms): ${e?.message}`);
    expect(e).toBeInstanceOf(AgentStateError);
    expect(e.code).toBe("OUTCOME_UNKNOWN");
    expect(took).toBeLessThan(timeoutMs + SLACK_MS);

    // The session is terminated during COMMIT, long before the deadline
    // of a handle that waits longer.
    const app2 = `${app}_long`;
    const patient = await AgentStateSaver.open({ url: withApp(url, app2), schema, timeoutMs: 20_000 });
    const acted = await admin(url, app2, "state = 'active' AND query ILIKE 'COMMIT%'", "terminate");
    [e, took] = await timed(() => put(patient, c, 2));
    console.log(`session terminated during COMMIT: ${e?.code} after ${took} ms`);
    await acted();
    await patient.close();
    expect(e).toBeInstanceOf(AgentStateError);
    expect(e.code).toBe("OUTCOME_UNKNOWN");
    expect(took).toBeLessThan(10_000);

    await sql(url, `DROP TRIGGER slow_commit ON ${schema}.checkpoints`);
    // COMMIT never finished here: the server rolled both back.
    const listed = [];
    for await (const t of saver.list(cfg("t"))) listed.push(t.config);
    expect(listed).toEqual([c]);
    const c3 = await put(saver, c, 3);
    expect((await saver.getTuple(cfg("t"))).config).toEqual(c3);
  } finally {
    await saver.close();
    await dropSchema(schema);
  }
});

pgTest("a server stopped mid-call: the call and every call after it fail typed within the deadline; back, nothing acknowledged lost", async () => {
  const server = await ownServer();
  const timeoutMs = 2000;
  let saver;
  try {
    saver = await AgentStateSaver.open({ url: server.url, timeoutMs });
    let c = await put(saver, cfg("t"), 0);
    c = await put(saver, c, 1);
    // The hosts commit with synchronous_commit=off (Synchronous normal,
    // docs/postgresql.md): a crash of the server may lose the commits of its
    // last fraction of a second, which the WAL writer flushes within
    // 3 x wal_writer_delay (600 ms). Those above are older than that.
    await new Promise((r) => setTimeout(r, 1000));
    const locker = new pg.Client({ connectionString: server.url });
    locker.on("error", () => {}); // the server it talks to stops
    await locker.connect();
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE");
    const acted = await admin(server.url, "agentstate", "wait_event_type = 'Lock'", JSON.stringify(server.stopArgv));
    let [e, took] = await timed(() => put(saver, c, 2));
    await acted();
    await locker.end().catch(() => {});
    console.log(`server stopped mid-call: ${e?.code} after ${took} ms`);
    expect(e).toBeInstanceOf(AgentStateError);
    expect(["CONNECTION_LOST", "OUTCOME_UNKNOWN", "TIMEOUT"]).toContain(e.code);
    expect(took).toBeLessThan(timeoutMs + SLACK_MS);
    for (const [name, call] of [
      ["getTuple", () => saver.getTuple(cfg("t"))],
      ["put", () => put(saver, c, 3)],
      ["putWrites", () => saver.putWrites(c, [["n", "w"]], "task")],
      [
        "list",
        async () => {
          for await (const _ of saver.list(cfg("t")));
        },
      ],
    ]) {
      [e, took] = await timed(call);
      console.log(`server down: ${name}: ${e?.code} after ${took} ms`);
      expect(e).toBeInstanceOf(AgentStateError);
      expect(["CONNECTION_LOST", "TIMEOUT"]).toContain(e.code);
      expect(took).toBeLessThan(timeoutMs + SLACK_MS);
    }
    server.start();
    expect((await saver.getTuple(cfg("t", c.configurable.checkpoint_id))).config).toEqual(c);
    const c4 = await put(saver, c, 4);
    expect((await saver.getTuple(cfg("t"))).config).toEqual(c4);
  } finally {
    await saver?.close().catch(() => {});
    server.close();
  }
});
