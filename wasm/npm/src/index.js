// agentstate: LangGraph.js persistence in one SQLite file, on the agentstate
// engine compiled to WebAssembly (Node 20+, browsers, Deno, Cloudflare Workers).
export { AgentStateError, Database, loadEngine, runtime } from "./engine.js";
export { AgentStateSaver } from "./saver.js";
export { AgentStateStore } from "./store.js";
export { durableObjectHost } from "./durable-host.js";
export { ANY_OWNER } from "./records.js";
