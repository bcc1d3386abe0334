// The demo's worker: a LangGraph.js chat graph whose checkpoints live in an
// agentstate file in the origin private file system (OPFS). Runs in a
// dedicated worker because OPFS sync access handles exist only there.
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { DeltaValue, END, START, StateGraph, StateSchema, messagesDeltaReducer } from "@langchain/langgraph/web";
import { z } from "zod/v4";
import { AgentStateSaver } from "../../npm/src/index.js";

const DB = "agentstate-demo.db";
const THREAD = { configurable: { thread_id: "demo" } };
const K = 4; // a snapshot of the message list every 4th update

// No model is bundled: a deterministic assistant answers instead.
function reply(state) {
  const last = state.messages.at(-1);
  const text = String(last.content);
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  const turn = state.messages.filter((m) => m.getType() === "human").length;
  return {
    messages: [
      new AIMessage(
        `Turn ${turn}: noted "${text.length > 60 ? `${text.slice(0, 57)}...` : text}" (${words} word${words === 1 ? "" : "s"}). ` +
          `This thread now holds ${state.messages.length + 1} messages, checkpointed in your browser.`,
      ),
    ],
  };
}

let saver;
let graph;
let openMs = 0;
let lastMs = null;

async function init() {
  const t0 = performance.now();
  const here = (f) => new URL(`./${f}`, self.location.href).href;
  saver = await AgentStateSaver.open({
    path: DB,
    opfs: true,
    wasmURL: here("agentstate.wasm"),
    sqliteWasmURL: here("sqlite3.wasm"),
    callbacksWasmURL: here("sqlite-callbacks.wasm"),
  });
  openMs = performance.now() - t0;
  const State = new StateSchema({
    messages: new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: K }),
  });
  graph = new StateGraph(State).addNode("assistant", reply).addEdge(START, "assistant").addEdge("assistant", END).compile({ checkpointer: saver });
}

async function snapshot() {
  const state = await graph.getState(THREAD);
  const messages = (state.values.messages ?? []).map((m) => ({ role: m.getType(), content: String(m.content) }));
  const history = [];
  for await (const t of saver.list(THREAD)) {
    history.push({
      id: t.checkpoint.id,
      step: t.metadata?.step,
      source: t.metadata?.source,
      stored: "messages" in t.checkpoint.channel_values ? "snapshot" : t.checkpoint.channel_versions.messages ? "delta" : "-",
      writes: t.pendingWrites.length,
    });
  }
  const info = await saver.info();
  return {
    messages,
    history,
    storage: {
      fileBytes: info.file_bytes,
      opfsBytes: saver.db.host.diskBytes(),
      pageSize: info.page_size,
      pages: info.page_count,
      checkpoints: info.rows.checkpoints,
      writes: info.rows.writes,
      values: info.rows.blobs,
      cacheHits: info.cache.hits,
      cacheMisses: info.cache.misses,
      schema: info.schema_version,
      openMs,
      lastMs,
    },
  };
}

// One request at a time, in the order the page sent them: a "send" that
// arrives while "init" still loads the engine runs after it.
let queue = Promise.resolve();
self.onmessage = ({ data }) => {
  queue = queue.then(() => handle(data));
};

async function handle(data) {
  try {
    if (data.type === "init") await init();
    if (data.type === "send") {
      const t0 = performance.now();
      await graph.invoke({ messages: [new HumanMessage(data.text)] }, THREAD);
      lastMs = performance.now() - t0;
    }
    if (data.type === "reset") {
      await saver.deleteThread("demo");
      lastMs = null;
    }
    self.postMessage({ type: "state", id: data.id, state: await snapshot() });
  } catch (e) {
    self.postMessage({ type: "error", id: data.id, message: `${e.code ? `${e.code}: ` : ""}${e.message}` });
  }
}
