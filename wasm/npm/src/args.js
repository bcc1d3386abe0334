// Checks of the arguments the API takes, shared by the saver, the store and
// the record handles. It imports only the package's errors, so that every
// other module may import it without a circle.

import { AgentStateError } from "./errors.js";

/**
 * An id or key given to the API, as the engine's string: a string as it is,
 * an integer (a safe one) as its decimal text, as LangGraph.js's own savers
 * store it. Anything else (an object, an array, a boolean) is refused with
 * INVALID_ARGUMENT: String() would make `{user: "alice"}` and `{user: "bob"}`
 * one thread, "[object Object]", and `["x"]` the thread "x". With integers
 * false, only a string is taken (a store's keys and namespaces: its oracle,
 * InMemoryStore, keeps 1 and "1" apart).
 */
export function idString(v, what, integers = true) {
  if (typeof v === "string") return v;
  if (integers && Number.isSafeInteger(v)) return String(v);
  const got = v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "number" ? `the number ${v}` : `a value of type ${typeof v}`;
  throw new AgentStateError(`agentstate: ${what} must be a string, got ${got}`, "INVALID_ARGUMENT");
}
