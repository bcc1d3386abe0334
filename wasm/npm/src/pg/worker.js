// The worker thread of the Node PostgreSQL host (src/pg/host.js): it owns
// the sessions, each a node-postgres (`pg`) Client used to connect (TLS,
// authentication, startup settings) whose socket is then driven here with
// the extended protocol: every batch of the engine's statements goes out
// in one write and its answers are read back as the server's wire bytes
// (node-postgres decodes row values as text, which would break the binary
// ones). The calling thread waits on `ctl` (Atomics) for each answer,
// which goes back on `port` and is read there with receiveMessageOnPort,
// so an answer of any size passes whole.
import net from "node:net";
import { workerData } from "node:worker_threads";

const { ctl: ctlBuffer, port } = workerData;
const ctl = new Int32Array(ctlBuffer);

const KIND_SERVER = 0;
const KIND_LOST = 1;
const KIND_DEADLINE = 2;
const KIND_UNAVAILABLE = 3;
const OP_PREPARE = 0;
const OP_SIMPLE = 2;
const INSTALL = "npm install pg";

function reply(msg) {
  port.postMessage(msg);
  Atomics.add(ctl, 0, 1);
  Atomics.notify(ctl, 0);
}

const fail = (rid, kind, msg, state = "", tx = "I") => reply({ rid, err: { kind, msg, state, tx } });

let pg;
async function loadPg() {
  if (!pg) {
    const m = await import("pg");
    pg = m.default ?? m;
  }
  return pg;
}

// Query parameters node-postgres reads from a URL; the others (search_path,
// lock_timeout, ...) become `-c name=value` startup options, as libpq's
// host in the Python package makes them.
const KNOWN = new Set([
  "host", "port", "user", "password", "dbname", "database", "ssl", "sslmode", "sslcert", "sslkey", "sslrootcert",
  "sslpassword", "sslnegotiation", "uselibpqcompat", "application_name", "fallback_application_name", "options",
  "client_encoding", "connect_timeout", "keepalives", "keepalives_idle", "replication",
]);
const escapeOption = (v) => v.replace(/\\/g, "\\\\").replace(/ /g, "\\ ");

function clientConfig(rawURL, params) {
  const u = new URL(rawURL);
  const settings = [];
  let options = "";
  let app = false;
  for (const [k, v] of [...u.searchParams]) {
    if (k === "options") options = v;
    if (k === "application_name") app = true;
    if (!KNOWN.has(k)) settings.push([k, v]);
  }
  for (const [k] of settings) u.searchParams.delete(k);
  u.searchParams.delete("options");
  const config = { connectionString: u.toString() };
  for (const [k, v] of params) {
    if (k === "application_name") {
      if (!app) config.application_name = v;
    } else settings.push([k, v]);
  }
  const opts = [options, ...settings.map(([k, v]) => `-c ${escapeOption(k)}=${escapeOption(v)}`)].filter(Boolean).join(" ");
  if (opts) config.options = opts;
  return config;
}

// ---- messages out

class Out {
  constructor() {
    this.parts = [];
  }
  msg(type, body) {
    const head = Buffer.alloc(5);
    head[0] = type.charCodeAt(0);
    head.writeInt32BE(body.length + 4, 1);
    this.parts.push(head, body);
  }
  bytes() {
    return Buffer.concat(this.parts);
  }
}
const cstr = (b) => Buffer.concat([b, Buffer.from([0])]);
const i16 = (n) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const i32 = (n) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

// parse reads a request of the protocol (engine/internal/driver/hostpg).
function parseRequest(req) {
  const b = Buffer.from(req.buffer, req.byteOffset, req.byteLength);
  const n = b.readUInt32LE(0);
  let at = 4;
  const calls = [];
  for (let i = 0; i < n; i++) {
    const op = b[at];
    const fmt = b[at + 1];
    const flags = b[at + 2];
    const nl = b.readUInt32LE(at + 3);
    at += 7;
    const name = b.subarray(at, at + nl);
    at += nl;
    const sl = b.readUInt32LE(at);
    const sql = b.subarray(at + 4, at + 4 + sl);
    at += 4 + sl;
    const np = b.readUInt16LE(at);
    at += 2;
    const vals = [];
    const fmts = [];
    for (let j = 0; j < np; j++) {
      const ln = b.readUInt32LE(at);
      fmts.push(b[at + 4]);
      at += 5;
      if (ln === 0xffffffff) vals.push(null);
      else {
        vals.push(b.subarray(at, at + ln));
        at += ln;
      }
    }
    calls.push({ op, fmt, flags, name, sql, vals, fmts });
  }
  return calls;
}

function encodeCalls(calls) {
  const out = new Out();
  if (calls[0].op === OP_SIMPLE) {
    out.msg("Q", cstr(calls[0].sql));
    return out.bytes();
  }
  for (const c of calls) {
    if (c.op === OP_PREPARE) {
      out.msg("P", Buffer.concat([cstr(c.name), cstr(c.sql), i16(0)]));
      out.msg("D", Buffer.concat([Buffer.from("S"), cstr(c.name)]));
    } else {
      const parts = [Buffer.from([0]), cstr(c.name), i16(c.fmts.length), ...c.fmts.map(i16), i16(c.vals.length)];
      for (const v of c.vals) {
        if (v === null) parts.push(i32(-1));
        else parts.push(i32(v.length), v);
      }
      parts.push(i16(1), i16(c.fmt));
      out.msg("B", Buffer.concat(parts));
      out.msg("D", Buffer.from([0x50, 0])); // Describe the portal: its fields' types
      out.msg("E", Buffer.concat([Buffer.from([0]), i32(0)]));
    }
  }
  out.msg("S", Buffer.alloc(0));
  return out.bytes();
}

// Rows a command tag reports, as libpq's PQcmdTuples gives them.
const COUNTED = new Set(["INSERT", "UPDATE", "DELETE", "SELECT", "MOVE", "FETCH", "COPY", "MERGE"]);
function changed(tag) {
  const w = tag.split(" ");
  if (COUNTED.has(w[0]) || (w[0] === "CREATE" && w[1] === "TABLE")) {
    const n = Number(w[w.length - 1]);
    return Number.isFinite(n) ? n : -1;
  }
  return -1;
}

function errorFields(body) {
  let state = "";
  let msg = "";
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at]);
    const end = body.indexOf(0, at + 1);
    const v = body.toString("utf8", at + 1, end);
    if (code === "C") state = v;
    if (code === "M") msg = v;
    at = end + 1;
  }
  return { state, msg };
}

// ---- sessions

const sessions = new Map();
let nextId = 0;

class Session {
  constructor(client, socket) {
    this.client = client;
    this.socket = socket;
    this.acc = Buffer.alloc(0);
    this.job = null; // the exec in flight
    this.gone = null;
    socket.removeAllListeners("data");
    socket.on("data", (d) => this.onData(d));
    const lost = (e) => this.lose(e?.message || "the connection to the PostgreSQL server was lost");
    socket.on("close", () => lost());
    socket.on("error", lost);
    client.on("error", () => {});
  }

  lose(msg) {
    if (this.gone) return;
    this.gone = msg;
    const job = this.job;
    this.job = null;
    if (job) {
      clearTimeout(job.timer);
      fail(job.rid, KIND_LOST, msg);
    }
    this.drop();
  }

  drop() {
    for (const [id, s] of sessions) if (s === this) sessions.delete(id);
    this.socket.destroy();
  }

  cancel() {
    const { host, port } = this.client.connectionParameters;
    const pid = this.client.processID;
    const key = this.client.secretKey;
    if (pid === undefined || key === undefined) return;
    const to = typeof host === "string" && host.startsWith("/") ? { path: `${host}/.s.PGSQL.${port}` } : { host, port };
    const s = net.connect(to);
    const b = Buffer.alloc(16);
    b.writeInt32BE(16, 0);
    b.writeInt32BE(80877102, 4);
    b.writeInt32BE(pid, 8);
    b.writeInt32BE(key, 12);
    s.setTimeout(10_000, () => s.destroy());
    s.on("error", () => {});
    s.on("connect", () => s.end(b));
    s.unref();
  }

  exec(rid, req, deadline) {
    const calls = parseRequest(req);
    const job = { rid, calls, i: 0, cur: newResult(), results: [], err: null, simple: calls[0].op === OP_SIMPLE, last: null };
    this.job = job;
    if (deadline > 0) {
      job.timer = setTimeout(
        () => {
          if (this.job !== job) return;
          this.job = null;
          this.gone = "deadline";
          this.cancel();
          this.drop();
          fail(rid, KIND_DEADLINE, "agentstate: the call's deadline passed while the PostgreSQL server had not answered");
        },
        Math.max(deadline - Date.now(), 0),
      );
    }
    this.socket.write(encodeCalls(calls));
  }

  onData(d) {
    this.acc = this.acc.length ? Buffer.concat([this.acc, d]) : d;
    let at = 0;
    while (this.acc.length - at >= 5) {
      const len = this.acc.readInt32BE(at + 1);
      if (this.acc.length - at < len + 1) break;
      const type = this.acc[at];
      const body = this.acc.subarray(at + 5, at + 1 + len);
      at += len + 1;
      this.message(type, body);
    }
    this.acc = at === this.acc.length ? Buffer.alloc(0) : Buffer.from(this.acc.subarray(at));
  }

  message(type, body) {
    const job = this.job;
    const t = String.fromCharCode(type);
    if (t === "E" && !job) return this.lose(errorFields(body).msg || "the server ended the session");
    if (!job) return; // ParameterStatus, notices, notifications between calls
    const cur = job.cur;
    const call = job.calls[job.i];
    switch (t) {
      case "t": {
        const n = body.readUInt16BE(0);
        cur.params = Array.from({ length: n }, (_, k) => body.readUInt32BE(2 + 4 * k));
        break;
      }
      case "T": {
        const n = body.readUInt16BE(0);
        const oids = [];
        let p = 2;
        for (let k = 0; k < n; k++) {
          p = body.indexOf(0, p) + 1;
          oids.push(body.readUInt32BE(p + 6));
          p += 18;
        }
        cur.fields = oids;
        if (!job.simple && call?.op === OP_PREPARE) this.next(job);
        break;
      }
      case "n":
        cur.fields = [];
        if (!job.simple && call?.op === OP_PREPARE) this.next(job);
        break;
      case "D": {
        const n = body.readUInt16BE(0);
        const row = [];
        let p = 2;
        for (let k = 0; k < n; k++) {
          const ln = body.readInt32BE(p);
          p += 4;
          if (ln < 0) row.push(null);
          else {
            row.push(body.subarray(p, p + ln));
            p += ln;
          }
        }
        cur.rows.push(row);
        break;
      }
      case "C":
        cur.n = changed(body.toString("latin1", 0, body.length - 1));
        this.next(job);
        break;
      case "I":
        this.next(job);
        break;
      case "E":
        job.err ??= errorFields(body);
        break;
      case "Z":
        this.finish(job, String.fromCharCode(body[0]));
        break;
      default:
    }
  }

  next(job) {
    if (job.simple) job.last = job.cur;
    else job.results.push(job.cur);
    job.cur = newResult();
    job.i++;
  }

  finish(job, tx) {
    this.job = null;
    clearTimeout(job.timer);
    if (job.err) {
      const { state, msg } = job.err;
      if (state.startsWith("08") || state === "57P01" || state === "57P02" || state === "57P03") {
        this.gone = msg;
        this.drop();
        return fail(job.rid, KIND_LOST, msg, state, tx);
      }
      return fail(job.rid, KIND_SERVER, msg, state, tx);
    }
    const results = job.simple ? [job.last ?? newResult()] : job.results;
    reply({ rid: job.rid, resp: encodeResponse(tx, job.calls, results) });
  }
}

function newResult() {
  return { n: -1, fields: [], params: [], rows: [] };
}

function encodeResponse(tx, calls, results) {
  let size = 1;
  for (let k = 0; k < results.length; k++) {
    const r = results[k];
    size += 8 + 4 + 4 * r.fields.length + 4;
    if (calls[k].op === OP_PREPARE) size += 4 + 4 * r.params.length;
    if (calls[k].flags & 1) for (const row of r.rows) for (const v of row) size += 4 + (v ? v.length : 0);
  }
  const b = Buffer.allocUnsafe(size);
  let at = b.write(tx, 0, "latin1");
  for (let k = 0; k < results.length; k++) {
    const r = results[k];
    const op = calls[k].op;
    at = b.writeBigInt64LE(BigInt(op === OP_PREPARE ? -1 : r.n), at);
    at = b.writeUInt32LE(r.fields.length, at);
    for (const o of r.fields) at = b.writeUInt32LE(o, at);
    if (op === OP_PREPARE) {
      at = b.writeUInt32LE(r.params.length, at);
      for (const o of r.params) at = b.writeUInt32LE(o, at);
    }
    if (!(calls[k].flags & 1)) {
      at = b.writeUInt32LE(0, at);
      continue;
    }
    at = b.writeUInt32LE(r.rows.length, at);
    for (const row of r.rows) {
      for (const v of row) {
        if (v === null) at = b.writeUInt32LE(0xffffffff, at);
        else {
          at = b.writeUInt32LE(v.length, at);
          at += v.copy(b, at);
        }
      }
    }
  }
  return new Uint8Array(b.buffer, b.byteOffset, at);
}

async function connect(rid, url, params, deadline) {
  let lib;
  try {
    lib = await loadPg();
  } catch (e) {
    return fail(rid, KIND_UNAVAILABLE, `agentstate: PostgreSQL URLs need node-postgres: ${INSTALL} (${e?.code ?? e?.message})`);
  }
  let client;
  try {
    const config = clientConfig(url, params);
    if (deadline > 0) config.connectionTimeoutMillis = Math.max(deadline - Date.now(), 1);
    client = new lib.Client(config);
    let enc = "";
    client.connection.on("parameterStatus", (m) => {
      if (m.parameterName === "server_encoding") enc = m.parameterValue;
    });
    client.on("error", () => {});
    await client.connect();
    const socket = client.connection.stream;
    const id = ++nextId;
    sessions.set(id, new Session(client, socket));
    reply({ rid, id, enc });
  } catch (e) {
    try {
      client?.connection?.stream?.destroy();
    } catch {}
    const timedOut = deadline > 0 && Date.now() >= deadline - 5;
    fail(rid, timedOut ? KIND_DEADLINE : KIND_LOST, String(e?.message || e?.code || e).trim() || "connection failed");
  }
}

// A bug here must not leave the calling thread waiting (a call without a
// deadline waits for its answer): whatever escapes fails the calls in
// flight, whose sessions are given up.
function failAll(e) {
  for (const s of new Set(sessions.values())) s.lose(`agentstate: internal error in the PostgreSQL worker: ${e?.message ?? e}`);
}
process.on("uncaughtException", failAll);
process.on("unhandledRejection", failAll);

port.on("message", (m) => {
  switch (m.op) {
    case "connect":
      connect(m.rid, m.url, m.params, m.deadline);
      break;
    case "exec": {
      const s = sessions.get(m.id);
      if (!s || s.gone) return fail(m.rid, KIND_LOST, "agentstate: the session is closed");
      try {
        s.exec(m.rid, m.req, m.deadline);
      } catch (e) {
        s.lose(String(e?.message || e));
      }
      break;
    }
    case "close": {
      const s = sessions.get(m.id);
      if (s) {
        s.gone = "closed";
        sessions.delete(m.id);
        try {
          s.socket.end(Buffer.from([0x58, 0, 0, 0, 4])); // Terminate
        } catch {}
        s.socket.destroy();
      }
      break;
    }
    case "giveUp": {
      // The calling thread stopped waiting for this session's answer.
      const s = sessions.get(m.id);
      if (s) {
        if (s.job) clearTimeout(s.job.timer);
        s.job = null;
        s.gone = "given up";
        s.cancel();
        s.drop();
      }
      break;
    }
    default:
  }
});
