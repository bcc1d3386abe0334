// The package in a SQLite-backed Durable Object of Cloudflare's workerd
// (from the `workerd` npm package), on 127.0.0.1, storage on local disk:
// a LangGraph.js graph checkpointed by AgentStateSaver into the object's
// own storage (durableObjectHost), three turns, workerd killed (SIGKILL),
// started again, two more turns on the same thread: everything written
// before the kill reads back after it. Then one turn on each of 16 new
// threads: storage holds the database as chunks of at most 4 KiB (Durable
// Objects cap a value at 2 MB), and what a turn writes does not grow with
// the file (no whole-file copies).
//
//   node --test wasm/startup/edge/durable.test.mjs
import assert from "node:assert/strict";
import fs from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { test } from "node:test";
import { binary, durableObjectDir, here, start, waitHTTP } from "./hosts.mjs";

async function getJSON(url) {
  const t0 = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
  return { status: res.status, body: await res.json(), ms: performance.now() - t0 };
}

for (const nodejsCompat of [false, true]) {
  test(`Durable Object ${nodejsCompat ? "with" : "without"} nodejs_compat: a LangGraph.js thread survives a workerd kill`, { timeout: 300_000 }, async () => {
    const { dir, port, config } = await durableObjectDir({
      prefix: "durable",
      entry: path.join(here, "durable-worker.js"),
      nodejsCompat,
      uniqueKey: "agentstate-durable-test",
    });
    const base = `http://127.0.0.1:${port}`;
    const run = () => start(binary("workerd"), ["serve", config], { cwd: dir });
    let proc = run();
    try {
      await waitHTTP(`${base}/ping`, proc);
      const turns = [];
      for (const text of ["hello", "how are you", "bye"]) {
        const r = await getJSON(`${base}/turn?thread=a&text=${encodeURIComponent(text)}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        turns.push(r);
      }
      assert.deepEqual(turns.map((t) => t.body.messages.length), [2, 4, 6]);
      const before = await getJSON(`${base}/storage`);

      // A crash: no shutdown, no close.
      proc.child.kill("SIGKILL");
      await proc.exited;
      proc = run();
      await waitHTTP(`${base}/ping`, proc);

      const after = await getJSON(`${base}/storage`);
      assert.equal(after.status, 200, JSON.stringify(after.body));
      const more = [];
      for (const text of ["still there?", "good"]) {
        const r = await getJSON(`${base}/turn?thread=a&text=${encodeURIComponent(text)}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        more.push(r);
      }
      assert.deepEqual(more.map((t) => t.body.messages.length), [8, 10]);
      assert.deepEqual(more[1].body.messages.slice(0, 6), turns[2].body.messages);
      assert.equal(more[1].body.messages[9], "ai: turn 5: 10 messages");
      assert.ok(more[0].body.checkpoints > turns[2].body.checkpoints, `checkpoints ${turns[2].body.checkpoints} -> ${more[0].body.checkpoints}`);

      // One turn on each of 16 new threads: the same work per turn while
      // the file grows. What a turn writes (WAL frames, or journal and
      // pages) must not grow with the file: no whole-file copies.
      const single = [];
      // Random text, so that the engine's compression cannot shrink it: each
      // turn adds its own ~100 KB to the file.
      for (let i = 0; i < 16; i++) {
        const big = randomBytes(16 * 1024).toString("hex");
        const r = await getJSON(`${base}/turn?thread=t${i}&text=${big}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        single.push({ wrote: r.body.wrote, rows: r.body.rows, file: r.body.fileBytes });
      }
      const final = await getJSON(`${base}/storage`);
      const chunks = final.body.chunks;
      assert.ok(chunks.n > 0 && chunks.largest <= 4096, JSON.stringify(chunks));
      // Medians: a WAL checkpoint (every 1000 pages) lands in one turn.
      const median = (xs) => {
        const v = xs.map((s) => s.wrote).sort((a, b) => a - b);
        return (v[(v.length - 1) >> 1] + v[v.length >> 1]) / 2;
      };
      const first = single.slice(1, 6);
      const last = single.slice(-5);
      assert.ok(last.at(-1).file > 3 * first[0].file, `the file did not grow: ${JSON.stringify(single)}`);
      assert.ok(median(last) < 1.5 * median(first), `writes per turn grew with the file: ${JSON.stringify(single)}`);
      console.log(
        `durable nodejs_compat=${nodejsCompat}: first turn ${turns[0].ms.toFixed(0)} ms, after restart ${more[0].ms.toFixed(0)} ms; ` +
          `files before the kill ${JSON.stringify(before.body.files)}; chunks ${chunks.n} (largest ${chunks.largest} B); ` +
          `stored per one-turn thread (bytes/chunks) ${single.map((s) => `${s.wrote}/${s.rows}`).join(", ")}; files ${single[0].file} -> ${single.at(-1).file} B`,
      );
    } finally {
      await proc.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
