// The package in Cloudflare's workerd (from the `workerd` npm package), on
// 127.0.0.1, with and without nodejs_compat: a real LangGraph.js graph
// checkpointed by AgentStateSaver in memory, three turns over three
// requests, an image of the database, and a path (which workerd cannot
// serve) refused with an error instead of a hung Worker.
//
//   node --test wasm/startup/edge/workerd.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { startWorkerd } from "./hosts.mjs";

async function getJSON(url) {
  const t0 = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
  const body = await res.json();
  return { status: res.status, body, ms: performance.now() - t0 };
}

for (const nodejsCompat of [false, true]) {
  test(`workerd ${nodejsCompat ? "with" : "without"} nodejs_compat: a LangGraph.js graph over three requests`, { timeout: 300_000 }, async () => {
    const w = await startWorkerd({ nodejsCompat });
    try {
      const turns = [];
      for (const text of ["hello", "how are you", "bye"]) {
        const r = await getJSON(`${w.base}/turn?thread=a&text=${encodeURIComponent(text)}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        turns.push(r);
      }
      assert.deepEqual(turns.map((t) => t.body.messages.length), [2, 4, 6]);
      assert.equal(turns[2].body.messages[5], "ai: turn 3: 6 messages");
      assert.ok(turns[2].body.checkpoints > turns[0].body.checkpoints, JSON.stringify(turns.map((t) => t.body.checkpoints)));
      const other = await getJSON(`${w.base}/turn?thread=b&text=x`);
      assert.deepEqual(other.body.messages, ["human: x", "ai: turn 1: 2 messages"]);
      const img = await getJSON(`${w.base}/image`);
      assert.ok(img.body.bytes >= 4096, JSON.stringify(img.body));
      const file = await getJSON(`${w.base}/file`);
      assert.equal(file.body.error, "INVALID_ARGUMENT", JSON.stringify(file.body));
      console.log(`workerd nodejs_compat=${nodejsCompat}: first request ${turns[0].ms.toFixed(0)} ms, then ${turns.slice(1).map((t) => t.ms.toFixed(0)).join(", ")} ms`);
    } finally {
      await w.stop();
    }
  });
}
