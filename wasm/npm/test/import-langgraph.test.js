// A LangGraph.js SqliteSaver file imported with `agentstate import-langgraph`
// (the checkpoint protocol's form) resumes on AgentStateSaver where the
// source left it: the same graphs, run one more turn on the imported file
// and on the source, give the same states.
//
// The source side is LangGraph.js's own MemorySaver holding the source
// file's rows as they are (checkpoint, metadata and write bytes, parents),
// so LangGraph.js reads the source's bytes with its own serde. The import
// is made by the native CLI (AGENTSTATE_CLI, else built here), from the
// committed fixture, which it must leave as it is.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Annotation, END, MemorySaver, MessagesAnnotation, DeltaValue, START, StateGraph, StateSchema, messagesDeltaReducer } from "@langchain/langgraph";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { z } from "zod/v4";
import { AgentStateSaver } from "../src/index.js";
import { attachHost } from "../src/sqlite/vfs.js";
import { connect, freshSqlite, memoryHost } from "./helpers/sqlite.js";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const repo = path.resolve(pkg, "../..");
const fixture = path.join(repo, "testdata/langgraph/langgraph-js.sqlite");

// A deterministic model: its answer depends only on the state it is given.
function model(messages) {
  const last = messages[messages.length - 1];
  const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
  if (last._getType() === "human" && /weather/i.test(text)) {
    return new AIMessage({ id: `r-ai-${messages.length}`, content: "", tool_calls: [{ id: `r-call-${messages.length}`, name: "weather", args: { city: "Oslo" } }] });
  }
  return new AIMessage({ id: `r-ai-${messages.length}`, content: `(${messages.length}) ${text}` });
}

// The graphs of testdata/langgraph/generate.mjs, with that model.
function graphs(checkpointer) {
  const ChatState = Annotation.Root({
    ...MessagesAnnotation.spec,
    turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
    topic: Annotation(),
  });
  const tools = (s) => {
    const ai = s.messages[s.messages.length - 1];
    return { messages: ai.tool_calls.map((tc) => new ToolMessage({ id: `r-tool-${tc.id}`, tool_call_id: tc.id, name: tc.name, content: "5 degrees" })) };
  };
  const route = (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END);
  const chat = new StateGraph(ChatState)
    .addNode("agent", (s) => ({ messages: [model(s.messages)], turns: 1 }))
    .addNode("tools", (s) => ({ ...tools(s), topic: "weather" }))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", route)
    .addEdge("tools", "agent")
    .compile({ checkpointer });
  const fork = new StateGraph(MessagesAnnotation)
    .addNode("agent", (s) => ({ messages: [model(s.messages)] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer });
  const deltaMessages = new DeltaValue(z.custom().default(() => []), { inputSchema: z.custom(), reducer: messagesDeltaReducer, snapshotFrequency: 3 });
  const delta = new StateGraph(new StateSchema({ messages: deltaMessages, turns: z.number().default(0) }))
    .addNode("agent", (s) => ({ messages: [model(s.messages)], turns: s.turns + 1 }))
    .addNode("tools", tools)
    .addEdge(START, "agent")
    .addConditionalEdges("agent", route)
    .addEdge("tools", "agent")
    .compile({ checkpointer });
  return { chat, fork, delta };
}

// The source's rows in a MemorySaver, as they are.
async function sourceSaver(file) {
  const bytes = new Uint8Array(fs.readFileSync(file));
  // A copy in memory, in rollback-journal mode (header bytes 18 and 19), so
  // that it reads without a WAL index.
  bytes[18] = 1;
  bytes[19] = 1;
  const sq = await freshSqlite();
  const host = memoryHost(new Map([["/mem.db", bytes]]));
  const a = attachHost(sq, host);
  const c = connect(sq, host.path, a.vfs, { readOnly: true, create: false });
  const enc = new TextEncoder();
  const asBytes = (v) => (typeof v === "string" ? enc.encode(v) : v);
  const saver = new MemorySaver();
  let checkpoints = 0;
  for (const [thread, ns, id, parent, type, cp, md] of c.all("SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints")) {
    expect(type).toBe("json");
    saver.storage[thread] ??= {};
    saver.storage[thread][ns] ??= {};
    saver.storage[thread][ns][id] = [asBytes(cp), asBytes(md), parent ?? undefined];
    checkpoints++;
  }
  let writes = 0;
  for (const [thread, ns, id, task, idx, channel, type, value] of c.all("SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value FROM writes")) {
    expect(type).toBe("json");
    const key = JSON.stringify([thread, ns, id]);
    saver.writes[key] ??= {};
    saver.writes[key][`${task},${idx}`] = [task, channel, asBytes(value), ""];
    writes++;
  }
  c.close();
  a.detach();
  return { saver, checkpoints, writes };
}

async function all(it) {
  const out = [];
  for await (const x of it) out.push(x);
  return out;
}

const shown = (state) => JSON.stringify({ values: state.values, next: state.next, tasks: state.tasks.map((t) => t.name) });

let dir;
let imported;
let source;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-import-lg-"));
  const before = fs.readdirSync(path.dirname(fixture)).sort();
  const dst = path.join(dir, "imported.db");
  // The CLI comes from AGENTSTATE_CLI (CI builds it once), else it is built
  // here with the Go toolchain.
  let cli = process.env.AGENTSTATE_CLI;
  if (!cli) {
    cli = path.join(dir, "agentstate");
    execFileSync("go", ["build", "-o", cli, "./cmd/agentstate"], { cwd: repo, stdio: "inherit", timeout: 900_000 });
  }
  const out = execFileSync(cli, ["import-langgraph", fixture, dst], { encoding: "utf8" });
  expect(out).toContain("verified, and all 63 checkpoints read as in");
  expect(fs.readdirSync(path.dirname(fixture)).sort()).toEqual(before); // nothing beside the source
  source = await sourceSaver(fixture);
  expect(source.checkpoints).toBe(63);
  imported = await AgentStateSaver.open({ path: dst });
}, 900_000);
afterAll(async () => {
  await imported?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("an imported LangGraph.js thread resumes on AgentStateSaver", () => {
  const turns = {
    chat: [{ messages: [new HumanMessage({ id: "r1", content: "one more, about the weather" })] }],
    fork: [{ messages: [new HumanMessage({ id: "r1", content: "one more" })] }],
    delta: [{ messages: [new HumanMessage({ id: "r1", content: "weather again?" })] }, { messages: [new HumanMessage({ id: "r2", content: "bye" })] }],
  };
  for (const thread of Object.keys(turns)) {
    it(`${thread}: every checkpoint reads the same, and more turns give the same states`, async () => {
      const want = graphs(source.saver)[thread];
      const got = graphs(imported)[thread];
      const cfg = { configurable: { thread_id: thread } };
      // Every checkpoint of the thread, as LangGraph.js reads it.
      const wantHistory = [];
      for await (const s of want.getStateHistory(cfg)) wantHistory.push(shown(s));
      const gotHistory = [];
      for await (const s of got.getStateHistory(cfg)) gotHistory.push(shown(s));
      expect(gotHistory.length).toBeGreaterThan(2);
      expect(gotHistory).toEqual(wantHistory);
      for (const input of turns[thread]) {
        const a = await want.invoke(input, cfg);
        const b = await got.invoke(input, cfg);
        expect(JSON.stringify(b)).toEqual(JSON.stringify(a));
        expect(shown(await got.getState(cfg))).toEqual(shown(await want.getState(cfg)));
      }
      const n = (await all(got.getStateHistory(cfg))).length;
      expect(n).toBe((await all(want.getStateHistory(cfg))).length);
      expect(n).toBeGreaterThan(gotHistory.length);
    });
  }
});
