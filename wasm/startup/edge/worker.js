// A Cloudflare Worker (run by workerd in the harness) that drives a
// LangGraph.js graph through the agentstate package. The engine's module
// is imported at build time, as workerd requires: it compiles no
// WebAssembly from bytes at run time.
import wasm from "./agentstate.wasm";
import sqliteWasm from "./sqlite3.wasm";
import callbacksWasm from "./sqlite-callbacks.wasm";
// "@langchain/langgraph" with nodejs_compat (node:async_hooks), its "/web"
// entry without: the harness aliases this name to one of them.
import * as langgraph from "langgraph-entry";
import * as messages from "@langchain/core/messages";
import { AgentStateSaver } from "langgraph-checkpoint-agentstate";
import { buildGraph, turn } from "./graph.js";

let ready; // one saver and graph per isolate, in memory

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("ok");
    try {
      ready ??= AgentStateSaver.open({ wasmBytes: wasm, sqliteWasm, callbacksWasm }).then((saver) => ({ saver, graph: buildGraph(langgraph, messages, saver) }));
      const { saver, graph } = await ready;
      if (url.pathname === "/turn") {
        const messages = await turn(graph, url.searchParams.get("thread") ?? "t", url.searchParams.get("text") ?? "hi");
        const checkpoints = [];
        for await (const t of saver.list({ configurable: { thread_id: url.searchParams.get("thread") ?? "t" } })) checkpoints.push(t.checkpoint.id);
        return Response.json({ messages, checkpoints: checkpoints.length });
      }
      if (url.pathname === "/image") {
        const image = await saver.db.image();
        return Response.json({ bytes: image.length });
      }
      if (url.pathname === "/file") {
        // A path has no meaning here: the package must say so, not crash.
        try {
          await AgentStateSaver.open({ path: "x.db", wasmBytes: wasm, sqliteWasm, callbacksWasm });
          return Response.json({ error: null });
        } catch (e) {
          return Response.json({ error: e.code, message: e.message });
        }
      }
      return new Response("not found", { status: 404 });
    } catch (e) {
      return Response.json({ error: e.code ?? "THROWN", message: String(e.stack ?? e) }, { status: 500 });
    }
  },
};
