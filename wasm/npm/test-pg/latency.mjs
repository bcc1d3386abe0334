// One step (put + putWrites + getTuple) on a SQLite file and on the
// PostgreSQL server of AGENTSTATE_TEST_PG, 300 steps each, medians:
//   .ci/with-postgres node wasm/npm/test-pg/latency.mjs
// (leaves its schema and file behind: a throwaway server's business).
import { AgentStateSaver } from "../src/index.js";
import pg from "pg";
import os from "node:os";
import path from "node:path";
const url = process.env.AGENTSTATE_TEST_PG;
const c = new pg.Client({connectionString: url}); await c.connect(); const schema = `lat_${process.pid}`;
await c.query(`CREATE SCHEMA ${schema}`); await c.end();
for (const [name, opts] of [["sqlite file", { path: path.join(os.tmpdir(), `agentstate-lat-${process.pid}.db`) }], ["postgresql", { url, schema }]]) {
  const saver = await AgentStateSaver.open(opts);
  const times = [];
  let cfg = { configurable: { thread_id: "t", checkpoint_ns: "" } };
  for (let i = 0; i < 300; i++) {
    const t0 = performance.now();
    const id = `1ef00000-0000-6000-8000-${String(i).padStart(12, "0")}`;
    cfg = await saver.put(cfg, { v: 4, id, ts: new Date().toISOString(), channel_values: { m: "x".repeat(200) + i }, channel_versions: { m: i + 1 }, versions_seen: {} }, { source: "loop", step: i, parents: {} }, { m: i + 1 });
    await saver.putWrites(cfg, [["m", "w" + i]], "task" + i);
    await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(`${name}: put + putWrites + getTuple, 300 steps: median ${times[150].toFixed(2)} ms, p90 ${times[270].toFixed(2)} ms`);
  await saver.close();
}
