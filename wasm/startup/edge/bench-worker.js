// The start-up benchmark's Worker: /putget opens an in-memory saver on
// first use, then puts one checkpoint and reads it back per request.
import wasm from "./agentstate.wasm";
import sqliteWasm from "./sqlite3.wasm";
import callbacksWasm from "./sqlite-callbacks.wasm";
import { AgentStateSaver } from "langgraph-checkpoint-agentstate";

let saver;
let n = 0;

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("ok");
    if (url.pathname !== "/putget") return new Response("not found", { status: 404 });
    try {
      saver ??= AgentStateSaver.open({ wasmBytes: wasm, sqliteWasm, callbacksWasm });
      const s = await saver;
      n++;
      const config = { configurable: { thread_id: "t1", checkpoint_ns: "" } };
      const id = `1ef0c2d4-0000-6000-8000-${String(n).padStart(12, "0")}`;
      const checkpoint = { v: 4, id, ts: new Date().toISOString(), channel_values: { messages: [`m${n}`] }, channel_versions: { messages: n }, versions_seen: {} };
      await s.put(config, checkpoint, { source: "loop", step: n, parents: {} }, { messages: n });
      const t = await s.getTuple(config);
      return Response.json({ ok: t?.checkpoint.id === id });
    } catch (e) {
      return Response.json({ ok: false, error: String(e.stack ?? e) }, { status: 500 });
    }
  },
};
