// The Node PostgreSQL host of the engine's PostgreSQL build
// (dist/agentstate-pg.wasm): the methods connect, exec, take and close of
// globalThis.__agentstate_pg_host that engine/internal/driver/hostpg calls
// (its package comment has the protocol). The engine's calls are
// synchronous and node-postgres is asynchronous, so node-postgres runs in a
// worker thread (src/pg/worker.js) and this thread blocks on Atomics.wait
// until the worker answers: the request goes by postMessage, the answer
// comes back on a MessagePort read with receiveMessageOnPort (whole, at any
// size: a large row needs no chunking), and a counter in a
// SharedArrayBuffer wakes this thread. Node's main thread may block; the
// engine's goroutines wait meanwhile, as they wait for SQLite.
// (node:worker_threads is imported when the host is made: the package
// imports no node:* module up front, test/edge.test.js.)

const KIND_LOST = 1;
const KIND_DEADLINE = 2;
// How long past a call's deadline this thread waits for the worker, which
// enforces the deadline itself, before giving the session up on its own.
const GRACE_MS = 1000;

export async function makePGHost(mem) {
  const { MessageChannel, Worker, receiveMessageOnPort } = await import("node:worker_threads");
  const ctlBuffer = new SharedArrayBuffer(4);
  const ctl = new Int32Array(ctlBuffer);
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(new URL("./worker.js", import.meta.url), {
    workerData: { ctl: ctlBuffer, port: port2 },
    transferList: [port2],
  });
  worker.unref();
  port1.unref();
  let workerError = null;
  worker.on("error", (e) => {
    workerError = e;
  });
  let rid = 0;
  const pending = new Map(); // session id -> response bytes waiting for take

  const bytes = () => new Uint8Array(mem.buffer);
  const view = () => new DataView(mem.buffer);

  function writeError(buf, cap, kind, msg, state = "", tx = "I") {
    const m = new TextEncoder().encode(msg).subarray(0, Math.max(cap - 11, 0));
    const out = new Uint8Array(11 + m.length);
    out[0] = kind;
    out[1] = tx.charCodeAt(0);
    for (let i = 0; i < 5 && i < state.length; i++) out[2 + i] = state.charCodeAt(i);
    new DataView(out.buffer).setUint32(7, m.length, true);
    out.set(m, 11);
    bytes().set(out, buf);
    return -1;
  }

  // call posts m and waits for its answer until deadline (+ grace): the
  // answer, or an error of kind 1 (the worker died) or 2 (no answer).
  function call(m, deadline) {
    const id = ++rid;
    const seen = Atomics.load(ctl, 0);
    port1.postMessage({ ...m, rid: id });
    let last = seen;
    for (;;) {
      const left = deadline > 0 ? deadline + GRACE_MS - Date.now() : 5000;
      if (deadline > 0 && left <= 0) {
        return { err: { kind: KIND_DEADLINE, msg: "agentstate: the call's deadline passed while the PostgreSQL server had not answered", state: "", tx: "I" } };
      }
      Atomics.wait(ctl, 0, last, left);
      last = Atomics.load(ctl, 0);
      for (let r = receiveMessageOnPort(port1); r; r = receiveMessageOnPort(port1)) {
        if (r.message.rid === id) return r.message;
      }
      if (workerError) return { err: { kind: KIND_LOST, msg: `agentstate: the PostgreSQL worker stopped: ${workerError.message}`, state: "", tx: "I" } };
    }
  }

  return {
    connect(url, params, buf, cap, deadline) {
      const raw = new TextDecoder().decode(params).split("\0");
      const kv = [];
      for (let i = 0; i + 1 < raw.length; i += 2) kv.push([raw[i], raw[i + 1]]);
      const r = call({ op: "connect", url, params: kv, deadline }, deadline);
      if (r.err) return writeError(buf, cap, r.err.kind, r.err.msg, r.err.state, r.err.tx);
      const enc = new TextEncoder().encode(r.enc ?? "");
      view().setUint32(buf, enc.length, true);
      bytes().set(enc, buf + 4);
      return r.id;
    },
    exec(id, buf, cap, reqLen, deadline) {
      const req = bytes().slice(buf, buf + reqLen);
      const r = call({ op: "exec", id, req, deadline }, deadline);
      if (r.err) {
        if (r.err.kind === KIND_DEADLINE) port1.postMessage({ op: "giveUp", id });
        return writeError(buf, cap, r.err.kind, r.err.msg, r.err.state, r.err.tx);
      }
      if (r.resp.length > cap) {
        pending.set(id, r.resp);
        return -2 - r.resp.length;
      }
      bytes().set(r.resp, buf);
      return r.resp.length;
    },
    take(id, buf, cap) {
      const data = pending.get(id);
      pending.delete(id);
      if (!data || data.length > cap) return writeError(buf, cap, KIND_LOST, "agentstate: internal: no pending response");
      bytes().set(data, buf);
      return data.length;
    },
    close(id) {
      pending.delete(id);
      port1.postMessage({ op: "close", id });
    },
    // The engine stopped (a Go panic, an exit): it will close none of its
    // sessions, whose transactions, row locks and advisory locks (the
    // thread's, the owner's) would otherwise stay on the server until the
    // process ends. Ending the worker closes every socket: the server
    // rolls back.
    abandon() {
      pending.clear();
      worker.terminate();
    },
  };
}
