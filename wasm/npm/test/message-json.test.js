// MessageJSON must return exactly the bytes of serde.dumpsTyped, whatever
// happens to the messages between calls. Random lists of LangChain messages
// go through random edits (appends, in-place changes at every depth, the id
// the add_messages reducer assigns in place, removals, replacements,
// duplicates, reordering, values the serde treats specially, cycles), and
// after every edit both serialisations are compared byte for byte.
import {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import { DeltaSnapshot, JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { MessageJSON, isJsonPlusSerializer } from "../src/message-json.js";

const seed = Number(process.env.AGENTSTATE_SEED ?? Date.now() % 1_000_000);

function rng(s) {
  let x = s >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (a) => a[Math.floor(next() * a.length)] };
}

const texts = [
  "",
  "hi",
  "héllo wörld",
  "emoji 🙂 and \u2028 line sep",
  'quote " and \\ backslash',
  "ends with a backslash \\",
  'brackets [{,}] and "quoted]" in text',
  "ctrl \u0001\n\t",
  "lone \ud800 surrogate",
  "x".repeat(300),
];

function content(r) {
  if (r.next() < 0.7) return r.pick(texts);
  return [{ type: "text", text: r.pick(texts) }, ...(r.next() < 0.5 ? [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] : [])];
}

let ids = 0;
function message(r) {
  const id = r.next() < 0.85 ? `m-${ids++}` : undefined; // some without id, as nodes return them
  const kw = { id, content: content(r) };
  if (r.next() < 0.3) kw.additional_kwargs = { seq: r.int(100), nested: { deep: [1, "two", null, { three: true }] } };
  if (r.next() < 0.2) kw.response_metadata = { model_name: "fake", finish_reason: "stop" };
  switch (r.int(8)) {
    case 0:
      return new HumanMessage(kw);
    case 1:
      return new AIMessage({
        ...kw,
        tool_calls: r.next() < 0.5 ? [{ id: `call-${ids}`, name: "weather", args: { city: r.pick(texts), n: r.int(9) } }] : [],
        usage_metadata: r.next() < 0.5 ? { input_tokens: 3, output_tokens: 4, total_tokens: 7 } : undefined,
      });
    case 2:
      return new SystemMessage(kw);
    case 3:
      return new ToolMessage({ ...kw, tool_call_id: `call-${r.int(5)}`, name: "weather", status: r.pick(["success", "error"]), artifact: r.next() < 0.3 ? { raw: [1, 2] } : undefined });
    case 4:
      return new AIMessageChunk(kw);
    case 5:
      return new HumanMessageChunk(kw);
    case 6:
      return new ChatMessage({ ...kw, role: "critic" });
    default:
      return new RemoveMessage({ id: id ?? `r-${ids++}` });
  }
}

// Values the serde's replacer turns into records, and objects with toJSON.
function special(r) {
  return r.pick([() => undefined, () => new Set([1, 2]), () => new Map([["a", 1]]), () => new Uint8Array([1, 2, 3]), () => new Date(0), () => /re+/g, () => new Error("boom"), () => 123.5, () => -0])();
}

function edit(r, list) {
  const m = list.length > 0 ? r.pick(list) : undefined;
  const kind = r.int(19);
  switch (kind) {
    case 0:
    case 1:
    case 2:
      list.push(message(r));
      return "append";
    case 3:
      if (m) m.content = content(r);
      return "content reassigned";
    case 4:
      if (m && Array.isArray(m.content)) m.content.push({ type: "text", text: r.pick(texts) });
      else if (m) m.content += "!";
      return "content changed in place";
    case 5:
      if (m && m.additional_kwargs) m.additional_kwargs[`k${r.int(3)}`] = r.pick(texts);
      return "additional_kwargs key set";
    case 6:
      if (m?.additional_kwargs?.nested) m.additional_kwargs.nested.deep[r.int(4)] = r.int(1000);
      return "deep value changed";
    case 7:
      if (m && m.additional_kwargs) delete m.additional_kwargs[r.pick(Object.keys(m.additional_kwargs))];
      return "additional_kwargs key deleted";
    case 8:
      // What messagesStateReducer does to a message without an id.
      if (m && m.id === undefined) {
        m.id = `assigned-${ids++}`;
        m.lc_kwargs.id = m.id;
      }
      return "id assigned in place";
    case 9:
      if (list.length > 0) list.splice(r.int(list.length), 1);
      return "removed";
    case 10:
      if (list.length > 0) list[r.int(list.length)] = message(r);
      return "replaced";
    case 11:
      if (m) list.push(m);
      return "the same object twice";
    case 12:
      if (list.length > 1) list.reverse();
      return "reordered";
    case 13:
      if (m && m.additional_kwargs) m.additional_kwargs.special = special(r);
      return "special value";
    case 14:
      if (m) m.response_metadata = { ...m.response_metadata, t: r.int(5) };
      return "response_metadata replaced";
    case 15:
      if (m && Array.isArray(m.content) && m.content.length > 0) m.content.pop();
      else if (m?.additional_kwargs?.nested) m.additional_kwargs.nested.deep.pop();
      return "nested array shortened";
    case 16:
      if (m && m.additional_kwargs && Object.keys(m.additional_kwargs).length > 0) {
        // the same values under other names, in the same order
        const renamed = {};
        for (const [k, v] of Object.entries(m.additional_kwargs)) renamed[k.endsWith("_") ? k.slice(0, -1) : `${k}_`] = v;
        for (const k of Object.keys(m.additional_kwargs)) delete m.additional_kwargs[k];
        Object.assign(m.additional_kwargs, renamed);
      }
      return "keys renamed";
    case 17:
      // values that compare loosely equal but serialise differently
      if (m?.additional_kwargs) {
        const cur = m.additional_kwargs.loose;
        m.additional_kwargs.loose = cur === null ? undefined : cur === undefined ? 1 : cur === 1 ? "1" : null;
      }
      return "null, undefined, 1, \"1\"";
    default:
      if (m && m.additional_kwargs) {
        // a cycle, through the message or through the list; then undone
        m.additional_kwargs.loop = r.next() < 0.5 ? m : list;
      }
      return "cycle";
  }
}

const eq = (a, b) => Buffer.from(a).equals(Buffer.from(b));

async function same(mj, serde, value, what) {
  const [t1, a] = await mj.dumpsTyped(value);
  const [t2, b] = await serde.dumpsTyped(value);
  expect(t1, what).toBe(t2);
  if (!eq(a, b)) {
    throw new Error(`${what}: bytes differ (seed ${seed})\nfast:  ${Buffer.from(a).toString().slice(0, 400)}\nserde: ${Buffer.from(b).toString().slice(0, 400)}`);
  }
}

describe(`MessageJSON equals serde.dumpsTyped (seed ${seed})`, () => {
  it("over random edit sequences, for lists and DeltaChannel snapshots", async () => {
    const r = rng(seed);
    const serde = new JsonPlusSerializer();
    for (let run = 0; run < 6; run++) {
      const mj = new MessageJSON(serde);
      const list = [];
      for (let i = 0; i < 5; i++) list.push(message(r));
      let list2 = list;
      for (let step = 0; step < 120; step++) {
        const what = `run ${run} step ${step}: ${edit(r, list2)}`;
        await same(mj, serde, list2, what);
        if (step % 7 === 0) await same(mj, serde, new DeltaSnapshot(list2), `${what} (snapshot)`);
        for (const m of list2) if (m.additional_kwargs?.loop) delete m.additional_kwargs.loop;
        if (r.next() < 0.2) {
          // What getTuple does: the list read back, revived, learnt.
          const snap = r.next() < 0.3;
          const [, bytes] = await serde.dumpsTyped(snap ? new DeltaSnapshot(list2) : list2);
          const back = await mj.loadsTyped("json", bytes);
          list2 = snap ? back.value : back;
          await same(mj, serde, list2, `${what} (read back)`);
        }
      }
      expect(mj.enabled).toBe(true); // never turned itself off: no mismatch was found
      expect(mj.stats.hits).toBeGreaterThan(mj.stats.misses);
    }
  });

  it("reads a list back as the serde revives it, copying the messages it has revived before", async () => {
    const serde = new JsonPlusSerializer();
    const mj = new MessageJSON(serde);
    const list = [];
    for (let i = 0; i < 40; i++) {
      list.push(
        i % 2
          ? new AIMessage({ id: `a${i}`, content: `reply ${i}`, tool_calls: [{ id: `c${i}`, name: "search", args: { q: `q${i}`, n: i } }], additional_kwargs: { k: [i, { deep: "x" }] } })
          : new HumanMessage({ id: `h${i}`, content: [{ type: "text", text: `hi ${i}` }], response_metadata: { r: i } }),
      );
    }
    const reads = [];
    for (const value of [list, new DeltaSnapshot(list)]) {
      const [, bytes] = await serde.dumpsTyped(value);
      for (let k = 0; k < 3; k++) {
        const got = await mj.loadsTyped("json", bytes);
        const want = await serde.loadsTyped("json", bytes);
        expect(got).toStrictEqual(want);
        const msgs = Array.isArray(got) ? got : got.value;
        expect(msgs[1].lc_kwargs.additional_kwargs).toBe(msgs[1].additional_kwargs); // shared as the serde shares it
        const [, again] = await serde.dumpsTyped(got);
        expect(Buffer.from(again).equals(Buffer.from(bytes))).toBe(true);
        reads.push(msgs);
        msgs[1].additional_kwargs.k[1].deep = "changed by the graph"; // must not reach the next read
      }
    }
    // Each message revived once, copied at every later read; the first
    // snapshot goes to the serde whole (how a snapshot wraps its list is
    // learnt from one).
    expect(mj.stats.copied).toBe(40 * 4);
    for (let a = 0; a < reads.length; a++) for (let b = a + 1; b < reads.length; b++) expect(reads[a][1]).not.toBe(reads[b][1]);
    // Not a list of messages: the serde's own result.
    const [, plain] = await serde.dumpsTyped([{ a: 1 }, "x", new Map([[1, 2]])]);
    expect(await mj.loadsTyped("json", plain)).toStrictEqual(await serde.loadsTyped("json", plain));
    expect(await mj.loadsTyped("json", plain)).toStrictEqual(await serde.loadsTyped("json", plain));
  });

  it("serialises only the messages that are new or changed", async () => {
    const serde = new JsonPlusSerializer();
    const mj = new MessageJSON(serde);
    const list = [];
    for (let i = 0; i < 200; i++) list.push(new HumanMessage({ id: `h${i}`, content: `message ${i}` }));
    await same(mj, serde, list, "first");
    expect(mj.stats.misses).toBe(200);
    list.push(new AIMessage({ id: "new", content: "reply" }));
    list[7].content = "edited";
    await same(mj, serde, list, "one new, one edited");
    expect(mj.stats.misses).toBe(202);
    expect(mj.stats.hits).toBe(199);
    await same(mj, serde, new DeltaSnapshot(list), "the same list as a snapshot");
    expect(mj.stats.misses).toBe(202);
  });

  it("reuses the bytes of read-back messages once their text is known to come from such a state", async () => {
    const serde = new JsonPlusSerializer();
    const mj = new MessageJSON(serde);
    const list = [];
    // Texts with what a cut into elements must not be fooled by: quotes,
    // backslashes before quotes, brackets and commas inside strings.
    const tricky = (i) => `q ${i} "quoted ]}, [not a list" ]] ends \\${"\\".repeat(i % 3)}`;
    for (let i = 0; i < 50; i++) list.push(i % 2 ? new AIMessage({ id: `a${i}`, content: tricky(i), tool_calls: [] }) : new HumanMessage({ id: `h${i}`, content: tricky(i) }));
    const [, bytes] = await serde.dumpsTyped(list);
    // First read: these texts were never serialised here, so the next put
    // serialises every message (and remembers the revived states).
    let back = await mj.loadsTyped("json", bytes);
    expect(mj.stats.learned).toBe(50);
    back.push(new HumanMessage({ id: "next", content: "next" }));
    await same(mj, serde, back, "first read, one new");
    expect([mj.stats.reread, mj.stats.misses]).toEqual([50, 51]);
    // Second read of the same texts: only the new message is serialised.
    back = await mj.loadsTyped("json", bytes);
    back.push(new HumanMessage({ id: "next2", content: "next 2" }));
    await same(mj, serde, back, "second read, one new");
    expect([mj.stats.reread, mj.stats.misses]).toEqual([100, 52]);
    // A read-back message changed in place is serialised again.
    back[3].content = "changed after reading";
    await same(mj, serde, back, "changed after reading");
    expect(mj.stats.misses).toBe(53);
    // As a DeltaChannel snapshot.
    const [, snapBytes] = await serde.dumpsTyped(new DeltaSnapshot(list));
    const snap = await mj.loadsTyped("json", snapBytes);
    expect(snap.value).toHaveLength(50);
    await same(mj, serde, new DeltaSnapshot(snap.value), "snapshot read back");
    expect(mj.stats.misses).toBe(53);
    // A text that does not round-trip is never trusted: a message whose
    // bytes were written by hand with its keys in another order.
    const odd = new TextEncoder().encode(
      '[{"type":"constructor","lc":1,"id":["langchain_core","messages","HumanMessage"],"kwargs":{"content":"odd","id":"o1"}}]',
    );
    for (let k = 0; k < 2; k++) {
      const got = await mj.loadsTyped("json", odd);
      await same(mj, serde, got, `hand-written text, read ${k + 1}`);
    }
  });

  it("falls back to the serde for what it does not know", async () => {
    const serde = new JsonPlusSerializer();
    const mj = new MessageJSON(serde);
    const before = mj.stats.slow;
    for (const v of [[], ["a", "b"], [{ role: "user", content: "hi" }], { messages: [new HumanMessage("x")] }, [new HumanMessage("x"), "y"], new Uint8Array([1]), null, undefined, 7]) {
      await same(mj, serde, v, `value ${String(v)}`);
    }
    expect(mj.stats.slow - before).toBe(9);
    // A message class with its own toJSON is serialised by the serde.
    class Custom extends HumanMessage {
      toJSON() {
        return { custom: true };
      }
    }
    const custom = [new Custom({ content: "c" }), new HumanMessage("h")];
    await same(mj, serde, custom, "custom toJSON");
    expect(mj.stats.slow - before).toBe(10);
  });

  it("turns itself off when the serde is not JsonPlusSerializer's JSON", async () => {
    expect(isJsonPlusSerializer({ dumpsTyped: async () => ["json", new Uint8Array()] })).toBe(false);
    expect(new MessageJSON({ dumpsTyped: async () => ["json", new Uint8Array()] }).enabled).toBe(false);
    // A JsonPlusSerializer whose dumpsTyped was replaced (here: it reverses
    // the bytes, like an encryption would scramble them).
    const serde = new JsonPlusSerializer();
    const plain = serde.dumpsTyped.bind(serde);
    serde.dumpsTyped = async (v) => {
      const [t, b] = await plain(v);
      return [t, Uint8Array.from(b).reverse()];
    };
    const mj = new MessageJSON(serde);
    expect(mj.enabled).toBe(true);
    const list = [new HumanMessage({ id: "a", content: "one" }), new AIMessage({ id: "b", content: "two" })];
    await same(mj, serde, list, "scrambling serde");
    expect(mj.enabled).toBe(false);
    await same(mj, serde, list, "scrambling serde, again");
  });
});
