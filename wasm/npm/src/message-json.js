// Serialising a list of LangChain messages in O(new messages).
//
// LangGraph's default messages channel hands the saver the whole list at
// every step, and its DeltaChannel a whole list in every snapshot; from one
// step to the next the list holds mostly the same message objects. The
// serde (JsonPlusSerializer) serialises a list as "[" + its elements joined
// by "," + "]", each element exactly as it would serialise alone (a
// message's toJSON ignores its key and the serde's replacer ignores keys),
// unless the serde's cycle guard rewrote something ("[Circular]", "[...]").
// So each message's bytes can be made once and reused while the message is
// unchanged.
//
// "Unchanged" is checked, not assumed: with its bytes, a message keeps a
// deep copy of the data its toJSON reads (its own properties, lc_kwargs
// included); a later use compares the message with that copy first, so a
// message changed in place (the add_messages reducer gives an id-less
// message its id that way) is serialised again. What toJSON reads from the
// class (aliases, secrets, the class name) is taken to stay as it was.
//
// Lists the saver reads back are new objects at every invoke (getTuple
// revives them), so every message serialised is also remembered by its text,
// with the copy of the state that gave it: any message equal to that copy
// serialises to that text. loadsTyped notes, for each revived message of a
// list, the bytes it came from and its place; when such a message is put,
// those bytes are cut into the list's elements, the state remembered for
// its element's text is compared with it and, if equal, its bytes are used. The first time a text is read
// back, the revived message usually differs a little from the one first
// serialised (constructors fill in defaults), so it is serialised once more
// and its state remembered for the text instead. So a turn serialises only
// the messages it adds.
//
// The fast path only runs for LangChain's JsonPlusSerializer (any copy of
// it), on lists whose every element is a LangChain message, and on
// DeltaChannel snapshots of such lists. The first result of each kind is
// compared byte for byte with the serde's own; if they differ, the fast path
// is off for good and the serde serialises everything.

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const MAX_NODES = 4096; // values copied per message; larger ones are not remembered

// Snapshot nodes: a copied plain object (its keys in order) or array.
class SObj {
  constructor(proto, keys, vals) {
    this.proto = proto;
    this.keys = keys;
    this.vals = vals;
  }
}
class SArr {
  constructor(items) {
    this.items = items;
  }
}

const FAIL = Symbol("uncacheable");

// copy returns a deep copy of plain data, or FAIL for anything else
// (class instances, functions, symbols, bigints, cycles past the budget).
function copy(v, budget) {
  if (--budget.n < 0) return FAIL;
  if (v === null || v === undefined) return v;
  switch (typeof v) {
    case "string":
    case "number":
    case "boolean":
      return v;
    case "object":
      break;
    default:
      return FAIL;
  }
  const proto = Object.getPrototypeOf(v);
  if (Array.isArray(v)) {
    if (proto !== Array.prototype) return FAIL;
    const items = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const c = copy(v[i], budget);
      if (c === FAIL) return FAIL;
      items[i] = c;
    }
    return new SArr(items);
  }
  if (proto !== Object.prototype && proto !== null) return FAIL;
  const keys = Object.keys(v);
  const vals = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const c = copy(v[keys[i]], budget);
    if (c === FAIL) return FAIL;
    vals[i] = c;
  }
  return new SObj(proto, keys, vals);
}

function same(v, s) {
  if (s instanceof SObj) {
    if (v === null || typeof v !== "object" || Array.isArray(v) || Object.getPrototypeOf(v) !== s.proto) return false;
    const keys = Object.keys(v);
    if (keys.length !== s.keys.length) return false;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] !== s.keys[i] || !same(v[keys[i]], s.vals[i])) return false;
    }
    return true;
  }
  if (s instanceof SArr) {
    if (!Array.isArray(v) || v.length !== s.items.length || Object.getPrototypeOf(v) !== Array.prototype) return false;
    for (let i = 0; i < v.length; i++) if (!same(v[i], s.items[i])) return false;
    return true;
  }
  return Object.is(v, s);
}

// A message's snapshot: its class and every own string-keyed property
// (non-enumerable ones too: toJSON reads this[key] for each key of
// lc_kwargs), copied deeply.
function snapshot(m) {
  const keys = Object.getOwnPropertyNames(m);
  const budget = { n: MAX_NODES };
  const vals = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const c = copy(m[keys[i]], budget);
    if (c === FAIL) return undefined;
    vals[i] = c;
  }
  return new SObj(Object.getPrototypeOf(m), keys, vals);
}

function unchanged(m, s) {
  if (Object.getPrototypeOf(m) !== s.proto) return false;
  const keys = Object.getOwnPropertyNames(m);
  if (keys.length !== s.keys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] !== s.keys[i] || !same(m[keys[i]], s.vals[i])) return false;
  }
  return true;
}

// Whether objects of this prototype are LangChain messages serialised by
// Serializable.toJSON (which ignores its key argument).
function isMessageProto(proto) {
  let message = false;
  let toJSONOwner;
  for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const name = Object.prototype.hasOwnProperty.call(p, "constructor") ? p.constructor?.name : undefined;
    if (name === "BaseMessage") message = true;
    if (toJSONOwner === undefined && Object.prototype.hasOwnProperty.call(p, "toJSON")) toJSONOwner = name;
  }
  return message && toJSONOwner === "Serializable";
}

const CYCLE_MARKS = ['"[Circular]"', '"[...]"'];
const TEXT_CHARS = 16 << 20; // message texts remembered, at most (then forgotten, all at once)
const TEMPLATE_CHARS = 4 << 20; // texts of the revived messages kept to copy (each with its message), at most

// splitArray returns the byte ranges of the top-level elements of the JSON
// array in b[from:to] as [start, end, ...], or undefined if b[from:to] is not
// an array. The structural characters are ASCII, so UTF-8 text can be
// scanned as bytes; string bodies are skipped with indexOf.
function splitArray(b, from, to) {
  if (to - from < 2 || b[from] !== 0x5b || b[to - 1] !== 0x5d) return undefined;
  const ranges = [];
  if (to - from === 2) return ranges;
  let depth = 0;
  let start = from + 1;
  const last = to - 1;
  for (let i = from + 1; i < last; i++) {
    const c = b[i];
    if (c === 0x22) {
      // to the closing quote: one not escaped by an odd run of backslashes
      for (;;) {
        const q = b.indexOf(0x22, i + 1);
        if (q < 0 || q >= last) return undefined;
        let bs = 0;
        while (b[q - 1 - bs] === 0x5c) bs++;
        i = q;
        if (bs % 2 === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      if (--depth < 0) return undefined;
    } else if (c === 0x2c && depth === 0) {
      ranges.push(start, i);
      start = i + 1;
    }
  }
  if (depth !== 0) return undefined;
  ranges.push(start, last);
  return ranges;
}

function bytesEqual(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const SPLICE = "\u2063agentstate-splice\u2063";


export function isJsonPlusSerializer(serde) {
  const proto = serde && Object.getPrototypeOf(serde);
  return !!proto && proto.constructor?.name === "JsonPlusSerializer" && typeof serde.dumpsTyped === "function";
}

/** dumpsTyped with per-message memory; see the top of this file. */
export class MessageJSON {
  #serde;
  #on;
  #entries = new WeakMap(); // message -> { bytes, snap } (serialised) or { read, i } (read back)
  #protos = new WeakMap(); // prototype -> is a message class
  #wrappers = new WeakMap(); // snapshot prototype -> { prefix, suffix }
  #verified = new Set(); // kinds whose first fast result matched the serde
  #texts = new Map(); // message text -> a state (snapshot) that serialises to it
  #textChars = 0;
  stats = { hits: 0, misses: 0, fast: 0, slow: 0, learned: 0, reread: 0, copied: 0 };

  constructor(serde) {
    this.#serde = serde;
    this.#on = isJsonPlusSerializer(serde);
  }

  get enabled() {
    return this.#on;
  }

  /** Returns what serde.dumpsTyped(value) returns, byte for byte. */
  async dumpsTyped(value) {
    if (!this.#on) return this.#serde.dumpsTyped(value);
    const snap = isSnapshotValue(value);
    if (snap && !this.#wrappers.has(Object.getPrototypeOf(value))) await this.#learnWrapper(value);
    // From here to the first await everything runs at once, as the serde's
    // own dumpsTyped does: each message is compared, copied and serialised
    // in the same instant (dumpsTyped serialises before it returns its
    // promise), so nothing can change a message in between.
    const plan = Array.isArray(value) ? this.#plan(value, "list") : snap ? this.#plan(value.value, "snapshot", value) : undefined;
    if (plan === undefined) {
      this.stats.slow++;
      return this.#serde.dumpsTyped(value);
    }
    const check = this.#verified.has(plan.kind) ? undefined : this.#serde.dumpsTyped(value);
    const bytes = await this.#finish(plan);
    if (check !== undefined) {
      const [type, want] = await check;
      if (bytes === undefined || type !== "json" || !bytesEqual(want, bytes)) {
        if (bytes !== undefined) this.#on = false;
        this.stats.slow++;
        return [type, want];
      }
      this.#verified.add(plan.kind);
    }
    if (bytes === undefined) {
      this.stats.slow++;
      return this.#serde.dumpsTyped(value);
    }
    this.stats.fast++;
    return ["json", bytes];
  }

  /**
   * serde.loadsTyped(type, data); for a list of messages (or a DeltaChannel
   * snapshot of one), with learn, also notes where each message's text is in
   * data.
   */
  async loadsTyped(type, data, learn = true) {
    const mine = this.#on && type === "json" && data instanceof Uint8Array;
    let value = mine ? await this.#loadList(data, learn) : undefined;
    if (value === undefined) value = await this.#serde.loadsTyped(type, data);
    if (mine && learn) await this.#learn(value, data);
    else if (mine) await this.#noteSnapshot(value, data);
    this.#split = undefined;
    return value;
  }

  // Reviving a list of messages in O(new messages). The serde revives a
  // JSON array element by element, each alone (its reviver looks at the
  // value only, never at where it is), so a list is the list of its
  // elements revived. An element read before is a copy of the message it
  // revived to then (a template, never handed out): a deep copy of its own
  // properties, their descriptors and the objects they share, which costs a
  // fraction of reviving (a list mostly new here is revived by the serde
  // whole, and its messages kept). An element that revives to something other than a
  // LangChain message, or whose revived form cannot be copied exactly,
  // makes the list go to the serde whole. For the first list of each kind
  // (a list, a snapshot), the serde also revives a list of its first three
  // elements, compared with the copies; if they differ, this is off for good.
  #templates = new Map(); // element text -> template message
  #templateChars = 0;
  #seen = new Set(); // element texts read once by reads that do not learn
  #seenChars = 0;
  #snapshotShells = []; // [{ shell, prefix, suffix }]: snapshot objects seen, their bytes around the list
  #loadChecked = new Set();
  #loadOn = true;
  #split; // the element ranges #loadList found, for #learn

  async #loadList(data, learn) {
    if (!this.#loadOn) return undefined;
    let from = 0;
    let to = data.length;
    let shell;
    if (data[0] !== 0x5b) {
      const w = this.#snapshotShells.find((x) => startsWith(data, x.prefix, 0) && startsWith(data, x.suffix, data.length - x.suffix.length));
      if (!w) return undefined;
      shell = w.shell;
      from = w.prefix.length;
      to = data.length - w.suffix.length;
    }
    const ranges = splitArray(data, from, to);
    if (ranges === undefined || ranges.length === 0) return undefined;
    this.#split = { data, ranges };
    const list = new Array(ranges.length / 2);
    const texts = new Array(list.length);
    let misses = 0;
    for (let i = 0; i < list.length; i++) {
      texts[i] = decoder.decode(data.subarray(ranges[2 * i], ranges[2 * i + 1]));
      if (!this.#templates.has(texts[i])) misses++;
    }
    if (misses > 4 && 2 * misses > list.length) return this.#loadWhole(data, texts, shell !== undefined, learn);
    for (let i = 0; i < list.length; i++) {
      const bytes = data.subarray(ranges[2 * i], ranges[2 * i + 1]);
      const text = texts[i];
      const t = this.#templates.get(text);
      if (t !== undefined) {
        list[i] = cloneValue(t, new Map());
        this.stats.copied++;
        continue;
      }
      const m = await this.#serde.loadsTyped("json", bytes);
      if (!this.#keep(text, m)) return undefined;
      list[i] = m;
    }
    let value = list;
    if (shell !== undefined) {
      value = cloneValue(shell, new Map());
      value.value = list;
    }
    const kind = shell === undefined ? "list" : "snapshot";
    if (!this.#loadChecked.has(kind)) {
      // The serde's own reading of the same kind of value, cut to its first
      // elements (reviving all of them again would double the first read).
      const n = Math.min(list.length, 3);
      const parts = [data.subarray(0, from), Uint8Array.of(0x5b)];
      for (let i = 0; i < n; i++) parts.push(...(i > 0 ? [Uint8Array.of(0x2c)] : []), data.subarray(ranges[2 * i], ranges[2 * i + 1]));
      parts.push(Uint8Array.of(0x5d), data.subarray(to));
      const want = await this.#serde.loadsTyped("json", concat(parts));
      const got = shell === undefined ? list.slice(0, n) : Object.assign(cloneValue(shell, new Map()), { value: list.slice(0, n) });
      if (!sameValue(got, want)) {
        this.#loadOn = false;
        return undefined;
      }
      this.#loadChecked.add(kind);
    }
    return value;
  }

  // A list mostly new here: the serde revives it whole (one parse, not one
  // per element), and its messages are kept to copy. A read that does not
  // learn (a look at a thread this saver does not run) keeps only messages
  // read once before: a single look costs no more than the serde.
  async #loadWhole(data, texts, snapshot, learn) {
    const value = await this.#serde.loadsTyped("json", data);
    const list = snapshot ? (isSnapshotValue(value) ? value.value : undefined) : value;
    if (Array.isArray(list) && list.length === texts.length) {
      for (let i = 0; i < list.length; i++) {
        const text = texts[i];
        if (this.#templates.has(text)) continue;
        if (learn || this.#seen.has(text)) {
          this.#keep(text, list[i]);
        } else {
          if (this.#seenChars + text.length > TEMPLATE_CHARS) {
            this.#seen.clear();
            this.#seenChars = 0;
          }
          this.#seen.add(text);
          this.#seenChars += text.length;
        }
      }
    }
    return value;
  }

  // Keeps a copy of message m, revived from text, to copy when text is read
  // again; false if m is no message or does not copy exactly.
  #keep(text, m) {
    if (!this.#isMessage(m)) return false;
    // The copy has what sameValue compares by construction; the first list
    // of each kind compares copies with the serde's own revival (#loadList).
    const copy = cloneValue(m, new Map());
    if (copy === FAIL) return false;
    if (this.#templateChars + text.length > TEMPLATE_CHARS) {
      this.#templates.clear();
      this.#templateChars = 0;
    }
    this.#templates.set(text, copy);
    this.#templateChars += text.length;
    return true;
  }

  // A snapshot read back: how its bytes wrap its list, for #loadList.
  #noteShell(value, w) {
    if (this.#snapshotShells.length >= 4 || this.#snapshotShells.some((x) => Object.getPrototypeOf(x.shell) === Object.getPrototypeOf(value))) return;
    const shell = cloneValue(value, new Map(), true);
    if (shell !== FAIL) this.#snapshotShells.push({ shell, prefix: w.prefix, suffix: w.suffix });
  }

  // The wrapper of a snapshot read back as data, if its bytes are wrapped
  // so; it is noted for #loadList.
  async #snapshotWrapper(value, data) {
    if (!isSnapshotValue(value)) return undefined;
    const proto = Object.getPrototypeOf(value);
    if (!this.#wrappers.has(proto)) await this.#learnWrapper(value);
    const w = this.#wrappers.get(proto);
    if (!w || !startsWith(data, w.prefix, 0) || !startsWith(data, w.suffix, data.length - w.suffix.length)) return undefined;
    this.#noteShell(value, w);
    return w;
  }

  async #noteSnapshot(value, data) {
    if (!Array.isArray(value)) await this.#snapshotWrapper(value, data);
  }

  async #learn(value, data) {
    let list = value;
    let from = 0;
    let to = data.length;
    if (!Array.isArray(value)) {
      const w = await this.#snapshotWrapper(value, data);
      if (!w) return;
      list = value.value;
      from = w.prefix.length;
      to = data.length - w.suffix.length;
    }
    if (list.length === 0 || Object.getPrototypeOf(list) !== Array.prototype) return;
    for (const m of list) if (!this.#isMessage(m)) return;
    // Cut the bytes into elements only if a put needs them: a DeltaChannel
    // seed is read at every invoke and put again only at its next snapshot.
    const read = { data, from, to, n: list.length, ranges: this.#split?.data === data ? this.#split.ranges : undefined };
    this.#split = undefined;
    for (let i = 0; i < list.length; i++) this.#entries.set(list[i], { read, i });
    this.stats.learned += list.length;
  }

  // The bytes of element i of a list read back, or undefined.
  #element(read, i) {
    if (read.ranges === undefined) {
      const r = splitArray(read.data, read.from, read.to);
      read.ranges = r && r.length === 2 * read.n ? r : null;
    }
    return read.ranges ? read.data.subarray(read.ranges[2 * i], read.ranges[2 * i + 1]) : undefined;
  }

  #remember(bytes, snap) {
    const text = decoder.decode(bytes);
    if (this.#textChars + text.length > TEXT_CHARS) {
      this.#texts.clear();
      this.#textChars = 0;
    }
    if (!this.#texts.has(text)) this.#textChars += text.length;
    this.#texts.set(text, snap);
  }

  #isMessage(m) {
    if (m === null || typeof m !== "object" || m.lc_serializable !== true) return false;
    const proto = Object.getPrototypeOf(m);
    let ok = this.#protos.get(proto);
    if (ok === undefined) {
      ok = isMessageProto(proto);
      this.#protos.set(proto, ok);
    }
    return ok;
  }

  // How the serde writes a snapshot object around its list: serialise one of
  // the same class holding a marker instead, and cut there.
  async #learnWrapper(snap) {
    const proto = Object.getPrototypeOf(snap);
    const shell = Object.create(proto);
    shell.lg_name = snap.lg_name;
    shell.value = SPLICE;
    let w = null;
    const [type, bytes] = await this.#serde.dumpsTyped(shell);
    if (type === "json") {
      const text = decoder.decode(bytes);
      const mark = JSON.stringify(SPLICE);
      const at = text.indexOf(mark);
      if (at >= 0 && text.indexOf(mark, at + 1) < 0) {
        w = { prefix: encoder.encode(text.slice(0, at)), suffix: encoder.encode(text.slice(at + mark.length)) };
      }
    }
    this.#wrappers.set(proto, w);
  }

  // #plan takes the remembered bytes of unchanged messages and starts the
  // serde on the others; undefined: the fast path does not apply.
  #plan(list, kind, snap) {
    if (list.length === 0 || Object.getPrototypeOf(list) !== Array.prototype) return undefined;
    let wrap;
    if (snap !== undefined) {
      wrap = this.#wrappers.get(Object.getPrototypeOf(snap));
      if (!wrap) return undefined;
    }
    const parts = new Array(list.length);
    const fresh = [];
    for (let i = 0; i < list.length; i++) {
      const m = list[i];
      if (!this.#isMessage(m)) return undefined;
      const e = this.#entries.get(m);
      if (e !== undefined) {
        if (e.snap !== undefined && unchanged(m, e.snap)) {
          parts[i] = e.bytes;
          continue;
        }
        if (e.read !== undefined) {
          // Read back: its text, and a state known to serialise to it.
          this.stats.reread++;
          const bytes = this.#element(e.read, e.i);
          const snap = bytes && this.#texts.get(decoder.decode(bytes));
          if (snap !== undefined && unchanged(m, snap)) {
            this.#entries.set(m, { bytes, snap });
            parts[i] = bytes;
            continue;
          }
        }
      }
      // The copy first, then the bytes: if the message changed in between,
      // the copy is the older state and the next use serialises again.
      fresh.push({ i, m, snap: snapshot(m), out: this.#serde.dumpsTyped(m) });
    }
    this.stats.hits += list.length - fresh.length;
    this.stats.misses += fresh.length;
    return { kind, parts, fresh, wrap };
  }

  async #finish({ parts, fresh, wrap }) {
    const outs = await Promise.all(fresh.map((f) => f.out));
    for (let k = 0; k < fresh.length; k++) {
      const [type, bytes] = outs[k];
      if (type !== "json") return undefined;
      const text = decoder.decode(bytes);
      if (CYCLE_MARKS.some((c) => text.includes(c))) return undefined;
      const { i, m, snap } = fresh[k];
      parts[i] = bytes;
      if (snap !== undefined) {
        this.#entries.set(m, { bytes, snap });
        this.#remember(bytes, snap);
      } else {
        this.#entries.delete(m);
      }
    }
    let total = parts.length + 1; // brackets and commas
    for (const p of parts) total += p.length;
    if (wrap) total += wrap.prefix.length + wrap.suffix.length;
    const out = new Uint8Array(total);
    let at = 0;
    if (wrap) {
      out.set(wrap.prefix, at);
      at += wrap.prefix.length;
    }
    out[at++] = 0x5b; // [
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) out[at++] = 0x2c; // ,
      out.set(parts[i], at);
      at += parts[i].length;
    }
    out[at++] = 0x5d; // ]
    if (wrap) out.set(wrap.suffix, at);
    return out;
  }
}

// cloneValue copies a revived value: plain objects and arrays, and objects
// of other classes (a message) as objects of the same prototype with the
// same own properties (symbols too) and descriptors; objects shared inside
// the value stay shared in the copy. FAIL for what it cannot copy exactly
// (a non-extensible object, an accessor, an exotic object such as a Map or
// a Date, whose state is not in its properties). shallowValue: the top
// object's "value" property is not copied (a snapshot's list).
function cloneValue(v, seen, shallowValue = false) {
  if (v === null || typeof v !== "object") return typeof v === "function" ? FAIL : v;
  const done = seen.get(v);
  if (done !== undefined) return done;
  if (!Object.isExtensible(v)) return FAIL;
  let out;
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) return FAIL;
    out = new Array(v.length);
    seen.set(v, out);
    const keys = Object.keys(v);
    if (keys.length !== v.length) return FAIL; // holes or extra properties
    for (let i = 0; i < v.length; i++) {
      const c = cloneValue(v[i], seen);
      if (c === FAIL) return FAIL;
      out[i] = c;
    }
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null && !isPlainClass(proto)) return FAIL;
  out = Object.create(proto);
  seen.set(v, out);
  for (const k of Reflect.ownKeys(v)) {
    const d = Object.getOwnPropertyDescriptor(v, k);
    if (!("value" in d)) return FAIL;
    const c = shallowValue && k === "value" ? undefined : cloneValue(d.value, seen);
    if (c === FAIL) return FAIL;
    if (d.writable && d.enumerable && d.configurable) out[k] = c;
    else Object.defineProperty(out, k, { ...d, value: c });
  }
  return out;
}

// Whether objects of this prototype are ordinary objects made by a class
// (not a built-in with internal state: Map, Set, Date, RegExp, typed arrays,
// Error, Promise).
const exotic = [Map, Set, WeakMap, WeakSet, Date, RegExp, Error, Promise, ArrayBuffer, DataView, Object.getPrototypeOf(Uint8Array)];
function isPlainClass(proto) {
  for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    if (exotic.some((C) => p === C.prototype)) return false;
  }
  return true;
}

// sameValue: a and b have the same structure (prototypes, own keys in order,
// descriptors' flags, values), for checking a copy or a fast read.
function sameValue(a, b, depth = 0) {
  if (a === b) return true;
  if (depth > 256) return false;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return Object.is(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Object.isExtensible(a) !== Object.isExtensible(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) return false;
    const da = Object.getOwnPropertyDescriptor(a, ka[i]);
    const db = Object.getOwnPropertyDescriptor(b, kb[i]);
    if (!("value" in da) || !("value" in db) || da.writable !== db.writable || da.enumerable !== db.enumerable || da.configurable !== db.configurable) return false;
    if (!sameValue(da.value, db.value, depth + 1)) return false;
  }
  return true;
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function startsWith(b, prefix, at) {
  if (at < 0 || at + prefix.length > b.length) return false;
  for (let i = 0; i < prefix.length; i++) if (b[at + i] !== prefix[i]) return false;
  return true;
}

function isSnapshotValue(v) {
  if (v === null || typeof v !== "object" || v.lg_name !== "DeltaSnapshot" || !Array.isArray(v.value)) return false;
  const keys = Object.keys(v);
  return keys.length === 2 && keys[0] === "lg_name" && keys[1] === "value" && Object.getPrototypeOf(v) !== null;
}
