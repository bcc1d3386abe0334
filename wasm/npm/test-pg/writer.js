// One writer process of test-pg/processes.test.js: for SECONDS it puts
// checkpoints (each with one pending write) on the shared thread and on a
// thread of its own, and prints each acknowledged one as a JSON line.
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { AgentStateSaver } from "../src/index.js";

const [url, schema, name, seconds] = process.argv.slice(2);
const saver = await AgentStateSaver.open({ url, schema });
const end = Date.now() + Number(seconds) * 1000;
const parents = {};
let refused = 0;
for (let i = 0; Date.now() < end; i++) {
  for (const thread of ["shared", `own-${name}`]) {
    const id = uuid6(-1);
    const config = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    if (parents[thread]) config.configurable.checkpoint_id = parents[thread];
    const cp = { v: 4, id, ts: new Date().toISOString(), channel_values: { who: `${name}-${i}` }, channel_versions: { who: i + 1 }, versions_seen: {} };
    try {
      const saved = await saver.put(config, cp, { source: "loop", step: i, parents: {}, writer: name }, { who: i + 1 });
      await saver.putWrites(saved, [["who", `${name}-${i}-write`]], `task-${name}-${i}`);
      parents[thread] = id;
      console.log(JSON.stringify({ thread, id, i }));
    } catch (e) {
      if (e?.code !== "CONFLICT" && e?.code !== "BUSY") throw e;
      refused++;
    }
  }
}
await saver.close();
console.error(`writer ${name}: ${refused} refused`);
