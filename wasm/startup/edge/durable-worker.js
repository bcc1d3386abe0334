// A Cloudflare Worker with a SQLite-backed Durable Object (run by workerd
// in durable.test.mjs) whose agentstate database lives in the object's own
// storage through durableObjectHost: a LangGraph.js graph checkpointed by
// AgentStateSaver, one thread per request parameter, state that survives
// a restart of the object (or of workerd).
import wasm from "./agentstate.wasm";
import sqliteWasm from "./sqlite3.wasm";
import callbacksWasm from "./sqlite-callbacks.wasm";
import * as langgraph from "langgraph-entry";
import * as messages from "@langchain/core/messages";
import { DurableObject } from "cloudflare:workers";
import { AgentStateSaver, durableObjectHost } from "langgraph-checkpoint-agentstate";
import { buildGraph, turn } from "./graph.js";

export class Agent extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    // Counts what reaches storage (chunk rows and their bytes), to show
    // that a step stores what it changed, not the file.
    this.stored = { rows: 0, bytes: 0 };
    const sql = ctx.storage.sql;
    const counting = {
      sql: {
        exec: (q, ...bindings) => {
          if (q.startsWith("INSERT OR REPLACE INTO agentstate_chunks")) {
            this.stored.rows++;
            this.stored.bytes += bindings[2].byteLength;
          }
          return sql.exec(q, ...bindings);
        },
      },
      transactionSync: (fn) => ctx.storage.transactionSync(fn),
    };
    this.host = durableObjectHost(counting, "agent.db");
  }

  async ready() {
    this.opened ??= AgentStateSaver.open({ host: this.host, wasmBytes: wasm, sqliteWasm, callbacksWasm }).then((saver) => ({ saver, graph: buildGraph(langgraph, messages, saver) }));
    return this.opened;
  }

  async fetch(request) {
    const url = new URL(request.url);
    try {
      const { saver, graph } = await this.ready();
      const thread = url.searchParams.get("thread") ?? "t";
      if (url.pathname === "/turn") {
        const before = { ...this.stored };
        const msgs = await turn(graph, thread, url.searchParams.get("text") ?? "hi");
        let checkpoints = 0;
        for await (const _ of saver.list({ configurable: { thread_id: thread } })) checkpoints++;
        return Response.json({
          messages: msgs,
          checkpoints,
          wrote: this.stored.bytes - before.bytes,
          rows: this.stored.rows - before.rows,
          fileBytes: this.host.diskBytes(),
        });
      }
      if (url.pathname === "/storage") {
        const sql = this.ctx.storage.sql;
        const chunks = sql.exec("SELECT count(*) AS n, max(length(data)) AS largest, sum(length(data)) AS bytes FROM agentstate_chunks").one();
        const files = sql.exec("SELECT name, size FROM agentstate_files ORDER BY name").toArray();
        return Response.json({ chunks, files, databaseSize: sql.databaseSize });
      }
      return new Response("not found", { status: 404 });
    } catch (e) {
      return Response.json({ error: e.code ?? "THROWN", message: String(e.stack ?? e) }, { status: 500 });
    }
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("ok");
    return env.AGENT.get(env.AGENT.idFromName("one")).fetch(request);
  },
};
