// The READMEs' JavaScript blocks run as written: each is saved as a module
// inside this package (so that "langgraph-checkpoint-agentstate" and the LangGraph.js packages
// resolve as they do for a user who installed them) and run twice with
// Node in an empty directory: the second run finds the thread the first
// one wrote.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

function jsBlocks(file) {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

describe.each([
  ["README.md", path.join(here, "../../../README.md")],
  ["wasm/npm/README.md", path.join(here, "../README.md")],
])("%s", (_, readme) => {
  const blocks = jsBlocks(readme);
  it("has a JavaScript block", () => {
    expect(blocks.length).toBeGreaterThan(0);
  });
  it.each(blocks.map((b, i) => [i + 1, b]))("block %i runs as written", (_, code) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-readme-"));
    const script = path.join(here, `.readme-${process.pid}-${Date.now()}.mjs`);
    try {
      fs.writeFileSync(script, code);
      const run = () => execFileSync(process.execPath, [script], { cwd: dir, encoding: "utf8" }).trim();
      expect(run()).toBe("2 You said: hi");
      expect(run()).toBe("4 You said: hi");
      expect(fs.existsSync(path.join(dir, "agent.db"))).toBe(true);
    } finally {
      fs.rmSync(script, { force: true });
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000); // each run starts the engine in a new process
});
