// The demo page's states (src/ui.js), without a browser.
import assert from "node:assert/strict";
import test from "node:test";
import { openFailure, opfsLabel } from "./src/ui.js";

test("a second tab (BUSY) disables the composer and says what to do", () => {
  const s = openFailure("BUSY: agentstate: agentstate-demo.db is open in another connection");
  assert.equal(s.composerDisabled, true);
  assert.match(s.banner, /open in another tab/);
  assert.match(s.banner, /Close the other tab, then reload/);
  assert.match(s.status, /^busy/);
});

test("any other failure to open disables the composer too and names the error", () => {
  const s = openFailure("INTERNAL: the engine stopped");
  assert.equal(s.composerDisabled, true);
  assert.match(s.banner, /INTERNAL: the engine stopped/);
  assert.doesNotMatch(s.banner, /another tab/);
});

test("the storage label names what a WAL-mode file keeps in OPFS", () => {
  assert.match(opfsLabel, /WAL/);
  assert.doesNotMatch(opfsLabel, /journal/);
});
