// What every Node case prints at exit, as one JSON line: ms since the
// process started at the first result and at close(), when the process
// exited, peak RSS, and CPU: the main thread's at the first result (from
// /proc/thread-self/schedstat, where there is one) and the process's.
import fs from "node:fs";

export function mainThreadCPU() {
  try {
    return Number(fs.readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1e6;
  } catch {
    return null;
  }
}

/** Call at the first result and after close(); prints at exit. */
export function measure() {
  const m = {};
  return {
    first() {
      m.first = performance.now();
      m.mainCpuFirst = mainThreadCPU();
    },
    closed() {
      m.closed = performance.now();
      process.on("exit", () => {
        const u = process.cpuUsage();
        console.log(JSON.stringify({ ...m, exit: performance.now(), cpuMs: (u.user + u.system) / 1000, maxRssMB: process.resourceUsage().maxRSS / 1024 }));
      });
    },
  };
}

/** The first result of the engine module's cases: put one checkpoint on a
 * Database of src/engine.js and read it back with getTuple. */
export async function engineFirstResult(db) {
  await enginePut(db);
  await engineGet(db);
}

const engineConfig = { thread_id: "t1", checkpoint_ns: "" };
const engineCheckpointID = "1ef0c2d4-0000-6000-8000-000000000001";

/** engineFirstResult's put. */
export async function enginePut(db) {
  await db.call("put", {
    config: engineConfig,
    checkpoint: { v: 4, id: engineCheckpointID, ts: new Date().toISOString(), channel_values: {}, channel_versions: { messages: "1" }, versions_seen: {} },
    metadata: { source: "input", step: -1, parents: {} },
    newVersions: {},
  });
}

/** engineFirstResult's getTuple, checked. */
export async function engineGet(db) {
  const r = await db.call("getTuple", { config: engineConfig });
  if (r.tuple?.checkpoint?.id !== engineCheckpointID) throw new Error(`getTuple did not return the checkpoint: ${JSON.stringify(r).slice(0, 200)}`);
}

/** The first result of the saver cases (AgentStateSaver, SqliteSaver): put
 * one checkpoint through a LangGraph.js saver and read it back. */
export async function saverFirstResult(saver) {
  const config = { configurable: { thread_id: "t1", checkpoint_ns: "" } };
  const checkpoint = {
    v: 4,
    id: "1ef0c2d4-0000-6000-8000-000000000001",
    ts: new Date().toISOString(),
    channel_values: { messages: ["hello"] },
    channel_versions: { messages: 1 },
    versions_seen: {},
  };
  await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { messages: 1 });
  const tuple = await saver.getTuple(config);
  if (tuple?.checkpoint.id !== checkpoint.id) throw new Error("getTuple did not return the checkpoint");
}
