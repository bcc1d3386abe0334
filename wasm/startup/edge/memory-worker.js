// The Durable Object of memory.mjs: wasm/bench/langgraph.bench.mjs's graph
// (a 200-byte human message in, an 800-byte AI message out, LangGraph's
// default messages channel or a DeltaChannel) checkpointed by
// AgentStateSaver into the object's own storage (durableObjectHost), one
// turn per request, and a route that reports the isolate's WebAssembly
// memories (the Go module's and SQLite's), which the inspector's heap
// figures do not separate.
import wasm from "./agentstate.wasm";
import sqliteWasm from "./sqlite3.wasm";
import callbacksWasm from "./sqlite-callbacks.wasm";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer } from "langgraph-entry";
import { z } from "zod/v4";
import { DurableObject } from "cloudflare:workers";
import { AgentStateSaver, durableObjectHost } from "langgraph-checkpoint-agentstate";
import { chatGraph, text } from "../../bench/chat-graph.mjs";

// Every WebAssembly memory of the isolate: the ones JavaScript makes
// (SQLite's) and the ones an instance exports (the Go module's "mem").
const memories = new Map();
const NativeMemory = WebAssembly.Memory;
WebAssembly.Memory = function Memory(desc) {
  const m = new NativeMemory(desc);
  if (!memories.has(m)) memories.set(m, `new Memory(${desc?.initial} pages)`);
  return m;
};
WebAssembly.Memory.prototype = NativeMemory.prototype;
const nativeInstantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async function instantiate(...args) {
  const r = await nativeInstantiate.apply(WebAssembly, args);
  const inst = r instanceof WebAssembly.Instance ? r : r.instance;
  for (const [k, v] of Object.entries(inst.exports)) if (v instanceof NativeMemory && !memories.has(v)) memories.set(v, k);
  return r;
};

const lg = { DeltaValue, END, MessagesValue, START, StateGraph, StateSchema, messagesDeltaReducer, AIMessage, z };
const graph = (checkpointer, channel, every = 10) => chatGraph(lg, checkpointer, channel, every);

export class Agent extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.host = durableObjectHost(ctx.storage, "agent.db");
    this.graphs = new Map();
  }

  async saver() {
    this.opened ??= AgentStateSaver.open({ host: this.host, wasmBytes: wasm, sqliteWasm, callbacksWasm });
    return this.opened;
  }

  async fetch(request) {
    const url = new URL(request.url);
    try {
      const saver = await this.saver();
      if (url.pathname === "/turn") {
        const channel = url.searchParams.get("channel") ?? "default";
        const k = Number(url.searchParams.get("k") ?? 0);
        let g = this.graphs.get(channel);
        if (!g) this.graphs.set(channel, (g = graph(saver, channel)));
        const out = await g.invoke(
          { messages: [new HumanMessage({ id: `human-${k}`, content: text(1000 + k, 200) })] },
          { configurable: { thread_id: url.searchParams.get("thread") ?? channel } },
        );
        return Response.json({ messages: out.messages.length });
      }
      if (url.pathname === "/memory") {
        const wasmMemories = {};
        for (const [m, name] of memories) wasmMemories[name] = m.buffer.byteLength;
        return Response.json({ wasmMemories, info: await saver.db?.info?.() });
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
    return env.AGENT.get(env.AGENT.idFromName(url.searchParams.get("object") ?? "one")).fetch(request);
  },
};
