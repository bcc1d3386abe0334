// A Deno HTTP server on 127.0.0.1 (port from argv) that drives a
// LangGraph.js graph through the agentstate package, loaded from its
// source and node_modules as they are: no bundling, no environment access,
// read access only to the package directory (deno.test.mjs sets the
// permissions).
// LangGraph.js from the package's node_modules by path: Deno resolves a
// bare name by the package.json nearest to the importing file, and this
// directory's does not list LangGraph (their own imports resolve as usual).
import * as langgraph from "../../npm/node_modules/@langchain/langgraph/dist/web.js";
import * as messages from "../../npm/node_modules/@langchain/core/dist/messages/index.js";
import { AgentStateSaver } from "../../npm/src/index.js";
import { buildGraph, turn } from "./graph.js";

const port = Number(Deno.args[0]);
let ready;

Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, async (request) => {
  const url = new URL(request.url);
  if (url.pathname === "/ping") return new Response("ok");
  try {
    ready ??= AgentStateSaver.open({}).then((saver) => ({ saver, graph: buildGraph(langgraph, messages, saver) }));
    const { saver, graph } = await ready;
    if (url.pathname === "/turn") {
      const thread = url.searchParams.get("thread") ?? "t";
      const messages = await turn(graph, thread, url.searchParams.get("text") ?? "hi");
      let checkpoints = 0;
      for await (const _ of saver.list({ configurable: { thread_id: thread } })) checkpoints++;
      return Response.json({ messages, checkpoints });
    }
    if (url.pathname === "/file") {
      try {
        await AgentStateSaver.open({ path: "x.db" });
        return Response.json({ error: null });
      } catch (e) {
        return Response.json({ error: e.code, message: e.message });
      }
    }
    return new Response("not found", { status: 404 });
  } catch (e) {
    return Response.json({ error: e.code ?? "THROWN", message: String(e.stack ?? e) }, { status: 500 });
  }
});
