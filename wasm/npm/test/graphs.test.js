// Real @langchain/langgraph graphs on AgentStateSaver, compared with the
// same graphs on LangGraph's MemorySaver (the oracle).
//
// Messages live in a DeltaChannel (K = 3): checkpoints store a snapshot of
// the list every third update and rebuild it from the writes in between,
// so these tests exercise getDeltaChannelHistory on real histories.
//
// The oracle for state after a fork is MemorySaver on the same graph with a
// plain (non-delta) messages channel: MemorySaver's own delta walk replays
// the writes a fork abandoned (LangGraph #8443), and where it does we must
// be right where it is wrong; the fork test checks and says which happened.
import { z } from "zod/v4";
import {
  Command,
  DeltaValue,
  END,
  MemorySaver,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
  interrupt,
  messagesDeltaReducer,
} from "@langchain/langgraph";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { AgentStateSaver } from "../src/index.js";

const K = 3;

function deltaMessages() {
  return new DeltaValue(z.custom().default(() => []), {
    inputSchema: z.custom(),
    reducer: messagesDeltaReducer,
    snapshotFrequency: K,
  });
}

function stateSchema(delta) {
  return new StateSchema({ messages: delta ? deltaMessages() : MessagesValue, turns: z.number().default(0) });
}

// A deterministic "model": replies to the last human message.
function chatGraph(delta) {
  return new StateGraph(stateSchema(delta))
    .addNode("agent", (state) => {
      const last = state.messages[state.messages.length - 1];
      const n = state.messages.length;
      return {
        messages: [new AIMessage({ id: `ai-${n}`, content: `reply ${n} to: ${last.content}` })],
        turns: state.turns + 1,
      };
    })
    .addEdge(START, "agent")
    .addEdge("agent", END);
}

// A draft is written, then a human approves it through interrupt().
function reviewGraph(delta) {
  return new StateGraph(stateSchema(delta))
    .addNode("draft", (state) => ({
      messages: [new AIMessage({ id: `draft-${state.messages.length}`, content: `draft for ${state.messages.at(-1).content}` })],
    }))
    .addNode("review", (state) => {
      const verdict = interrupt({ question: "approve?", draft: state.messages.at(-1).content });
      return { messages: [new HumanMessage({ id: `verdict-${state.messages.length}`, content: `verdict: ${verdict}` })], turns: state.turns + 1 };
    })
    .addEdge(START, "draft")
    .addEdge("draft", "review")
    .addEdge("review", END);
}

const human = (i, text = `question ${i}`) => new HumanMessage({ id: `human-${i}`, content: text });

function plain(values) {
  return {
    turns: values.turns,
    messages: (values.messages ?? []).map((m) => ({ type: m.getType?.() ?? m.type, id: m.id, content: m.content })),
  };
}

function snap(s) {
  return {
    values: plain(s.values),
    next: [...s.next],
    source: s.metadata?.source,
    step: s.metadata?.step,
    parent: s.parentConfig !== undefined,
    tasks: s.tasks.map((t) => ({ name: t.name, interrupts: t.interrupts.map((i) => i.value) })),
  };
}

async function history(graph, config) {
  const out = [];
  for await (const s of graph.getStateHistory(config)) out.push(snap(s));
  return out;
}

async function savers() {
  return { ours: await AgentStateSaver.open(), oracle: new MemorySaver() };
}

describe("real graphs on AgentStateSaver vs MemorySaver", () => {
  let ours;
  afterEach(async () => {
    await ours?.close();
    ours = undefined;
  });

  it("chat graph, messages as a DeltaChannel (K=3), 30 turns", async () => {
    const s = await savers();
    ours = s.ours;
    const a = chatGraph(true).compile({ checkpointer: ours });
    const b = chatGraph(true).compile({ checkpointer: s.oracle });
    const config = { configurable: { thread_id: "chat" } };
    for (let i = 0; i < 30; i++) {
      const ra = await a.invoke({ messages: [human(i)] }, config);
      const rb = await b.invoke({ messages: [human(i)] }, config);
      expect(plain(ra)).toEqual(plain(rb));
    }
    const [sa, sb] = [await a.getState(config), await b.getState(config)];
    expect(snap(sa)).toEqual(snap(sb));
    expect(sa.values.messages).toHaveLength(60);
    expect(sa.values.turns).toBe(30);
    const [ha, hb] = [await history(a, config), await history(b, config)];
    expect(ha.length).toBeGreaterThan(60);
    expect(ha).toEqual(hb);

    // Delta storage really happened: most checkpoints carry no messages
    // value, and the ones that do are snapshots.
    let withValue = 0;
    let total = 0;
    for await (const t of ours.list(config)) {
      total++;
      if ("messages" in t.checkpoint.channel_values) withValue++;
    }
    expect(total).toBe(ha.length);
    expect(withValue).toBeGreaterThan(0);
    expect(withValue).toBeLessThan(total / 2);
    const info = await ours.info();
    expect(info.cache.hits + info.cache.misses).toBeGreaterThan(0);
  });

  it("interrupt and resume", async () => {
    const s = await savers();
    ours = s.ours;
    const a = reviewGraph(true).compile({ checkpointer: ours });
    const b = reviewGraph(true).compile({ checkpointer: s.oracle });
    const config = { configurable: { thread_id: "review" } };
    for (const g of [a, b]) await g.invoke({ messages: [human(0, "write a haiku")] }, config);
    const [pa, pb] = [await a.getState(config), await b.getState(config)];
    expect(pa.next).toEqual(["review"]);
    expect(snap(pa).tasks).toEqual([{ name: "review", interrupts: [{ question: "approve?", draft: "draft for write a haiku" }] }]);
    expect(snap(pa)).toEqual(snap(pb));

    // The interrupt survives a reopen of the saver's file image.
    const reopened = await AgentStateSaver.open({ image: await ours.db.image() });
    try {
      const r = reviewGraph(true).compile({ checkpointer: reopened });
      expect(snap(await r.getState(config))).toEqual(snap(pa));
    } finally {
      await reopened.close();
    }

    for (const g of [a, b]) await g.invoke(new Command({ resume: "approved" }), config);
    const [ra, rb] = [await a.getState(config), await b.getState(config)];
    expect(ra.next).toEqual([]);
    expect(plain(ra.values).messages.map((m) => m.content)).toEqual([
      "write a haiku",
      "draft for write a haiku",
      "verdict: approved",
    ]);
    expect(snap(ra)).toEqual(snap(rb));
    expect(await history(a, config)).toEqual(await history(b, config));
  });

  it("time travel to an older checkpoint, then continue (a fork)", async () => {
    const s = await savers();
    ours = s.ours;
    const full = new MemorySaver(); // oracle without delta replay
    const graphs = {
      ours: chatGraph(true).compile({ checkpointer: ours }),
      memoryDelta: chatGraph(true).compile({ checkpointer: s.oracle }),
      memoryFull: chatGraph(false).compile({ checkpointer: full }),
    };
    const config = { configurable: { thread_id: "travel" } };
    for (const g of Object.values(graphs)) {
      for (let i = 0; i < 5; i++) await g.invoke({ messages: [human(i)] }, config);
    }
    // Go back to the end of turn 2 (4 messages) and ask something else.
    const forked = {};
    for (const [name, g] of Object.entries(graphs)) {
      let target;
      for await (const st of g.getStateHistory(config)) {
        if (st.values.messages.length === 4 && st.next.length === 0) {
          target = st;
          break;
        }
      }
      expect(target, name).toBeDefined();
      await g.invoke({ messages: [human(100, "a different question")] }, target.config);
      for (let i = 101; i < 104; i++) await g.invoke({ messages: [human(i)] }, config);
      forked[name] = await g.getState(config);
    }
    const expected = plain(forked.memoryFull.values);
    expect(expected.messages).toHaveLength(4 + 8);
    expect(expected.messages[4].content).toBe("a different question");
    expect(plain(forked.ours.values)).toEqual(expected);
    // Full history of the thread, both branches, same as the full oracle.
    const [ho, hf] = [await history(graphs.ours, config), await history(graphs.memoryFull, config)];
    expect(ho).toEqual(hf);

    // A fork of this turn ended cleanly, so MemorySaver's delta walk agrees.
    expect(plain(forked.memoryDelta.values)).toEqual(expected);
  });

  it("fork by updateState from a checkpoint whose writes a sibling already consumed", async () => {
    // The checkpoint planned "agent" and holds agent's reply as a pending
    // write, which its original child consumed. A state update forked from
    // it must not see that reply. MemorySaver's delta walk replays every
    // write of every ancestor, so it shows the abandoned reply: there the
    // full-channel oracle is right, and so must we be.
    const s = await savers();
    ours = s.ours;
    const graphs = {
      ours: chatGraph(true).compile({ checkpointer: ours }),
      memoryDelta: chatGraph(true).compile({ checkpointer: s.oracle }),
      memoryFull: chatGraph(false).compile({ checkpointer: new MemorySaver() }),
    };
    const config = { configurable: { thread_id: "update-fork" } };
    const after = {};
    for (const [name, g] of Object.entries(graphs)) {
      for (let i = 0; i < 4; i++) await g.invoke({ messages: [human(i)] }, config);
      let target;
      for await (const st of g.getStateHistory(config)) {
        if (st.values.messages.length === 5 && st.next[0] === "agent") {
          target = st;
          break;
        }
      }
      expect(target, name).toBeDefined();
      const forkConfig = await g.updateState(target.config, { messages: [new HumanMessage({ id: "edit", content: "edited" })] }, "agent");
      after[name] = plain((await g.getState(forkConfig)).values);
      await g.invoke({ messages: [human(50)] }, config);
      after[`${name}:next`] = plain((await g.getState(config)).values);
    }
    const expected = after.memoryFull;
    expect(expected.messages.map((m) => m.id)).toEqual(["human-0", "ai-1", "human-1", "ai-3", "human-2", "edit"]);
    expect(after.ours).toEqual(expected);
    expect(after["ours:next"]).toEqual(after["memoryFull:next"]);
    const wrong = JSON.stringify(after.memoryDelta) !== JSON.stringify(expected);
    console.log(
      wrong
        ? `MemorySaver (delta) replays the abandoned reply after the fork: ${after.memoryDelta.messages.map((m) => m.id).join(",")}`
        : "MemorySaver (delta) agrees with the oracle on this fork",
    );
  });

  it("state survives closing and reopening a file", async () => {
    const fs = await import("node:fs");
    const os = await import("node:os");
    const path = await import("node:path");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-graph-"));
    const file = path.join(dir, "chat.db");
    const config = { configurable: { thread_id: "file" } };
    let saver = await AgentStateSaver.open({ path: file });
    let g = chatGraph(true).compile({ checkpointer: saver });
    for (let i = 0; i < 7; i++) await g.invoke({ messages: [human(i)] }, config);
    const before = snap(await g.getState(config));
    const hBefore = await history(g, config);
    await saver.close();
    expect(fs.existsSync(`${file}.owner`)).toBe(false);

    saver = await AgentStateSaver.open({ path: file });
    try {
      g = chatGraph(true).compile({ checkpointer: saver });
      expect(snap(await g.getState(config))).toEqual(before);
      expect(await history(g, config)).toEqual(hBefore);
      const r = await g.invoke({ messages: [human(7)] }, config);
      expect(r.messages).toHaveLength(16);
    } finally {
      await saver.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
