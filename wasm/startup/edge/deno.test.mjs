// The package in Deno (from the `deno` npm package), on 127.0.0.1: a real
// LangGraph.js graph checkpointed by AgentStateSaver in memory over three
// requests, with read access to the package directory only and no
// environment access (the package reads none; LangChain asks for the home
// directory, which it gets), and a path refused with an
// error (Deno has no file host yet).
//
//   node --test wasm/startup/edge/deno.test.mjs
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { binary, freePort, here, npmDir, start, waitHTTP } from "./hosts.mjs";

async function getJSON(url) {
  const t0 = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
  return { status: res.status, body: await res.json(), ms: performance.now() - t0 };
}

test("Deno: a LangGraph.js graph over three requests, no env access", { timeout: 300_000 }, async () => {
  const port = await freePort();
  const proc = start(binary("deno"), [
    "run",
    "--no-prompt",
    "--node-modules-dir=manual",
    `--allow-read=${npmDir},${here}`,
    `--allow-net=127.0.0.1:${port}`,
    // LangChain's tracing client (langsmith) looks for a profile in the home
    // directory; the package itself needs neither.
    "--allow-sys=homedir",
    path.join(here, "deno-server.mjs"),
    String(port),
  ], { cwd: npmDir, env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" } });
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitHTTP(`${base}/ping`, proc);
    const turns = [];
    for (const text of ["hello", "how are you", "bye"]) {
      const r = await getJSON(`${base}/turn?thread=a&text=${encodeURIComponent(text)}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      turns.push(r);
    }
    assert.deepEqual(turns.map((t) => t.body.messages.length), [2, 4, 6]);
    assert.equal(turns[2].body.messages[5], "ai: turn 3: 6 messages");
    assert.ok(turns[2].body.checkpoints > turns[0].body.checkpoints);
    const file = await getJSON(`${base}/file`);
    assert.equal(file.body.error, "INVALID_ARGUMENT", JSON.stringify(file.body));
    assert.doesNotMatch(proc.output(), /NotCapable|Requires .* access/);
    console.log(`deno: first request ${turns[0].ms.toFixed(0)} ms, then ${turns.slice(1).map((t) => t.ms.toFixed(0)).join(", ")} ms`);
  } finally {
    await proc.stop();
  }
});
