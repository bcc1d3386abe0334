// The READMEs' JavaScript blocks run as a user runs them: each block is
// saved under the file name its README gives (`save this as agent.mjs`) in a
// fresh directory set up by `npm init -y` (a CommonJS package.json, as a new
// user has: a block named `index.js` there fails as it did for one, "Cannot
// use import statement outside a module"), where the package and the
// LangGraph.js packages are installed (linked to this package's copies), and
// run twice with Node: the second run finds the thread the first one wrote.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { jsBlocks, npmInitProject } from "./helpers/readme.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.join(here, "..");

function freshProject() {
  const dir = npmInitProject();
  // `npm install` of the tarball and of @langchain/langgraph and
  // @langchain/core, as the README says, without the network: links to the
  // copies this package was built and tested with.
  const nm = path.join(dir, "node_modules");
  fs.mkdirSync(nm);
  fs.symlinkSync(pkgDir, path.join(nm, "langgraph-checkpoint-agentstate"), "junction");
  fs.symlinkSync(path.join(pkgDir, "node_modules", "@langchain"), path.join(nm, "@langchain"), "junction");
  return dir;
}

describe.each([
  ["README.md", path.join(here, "../../../README.md")],
  ["wasm/npm/README.md", path.join(here, "../README.md")],
])("%s", (_, readme) => {
  const blocks = jsBlocks(readme);
  it("has a JavaScript block", () => {
    expect(blocks.length).toBeGreaterThan(0);
  });
  it.each(blocks.map((b, i) => [i + 1, b]))("block %i runs as written, saved as the README says in an npm init -y project", (_, { code, name }) => {
    expect(name, "the README says what file to save the block as").toBeDefined();
    const dir = freshProject();
    try {
      fs.writeFileSync(path.join(dir, name), code);
      const run = () => execFileSync(process.execPath, [name], { cwd: dir, encoding: "utf8" }).trim();
      expect(run()).toBe("2 You said: hi");
      expect(run()).toBe("4 You said: hi");
      expect(fs.existsSync(path.join(dir, "agent.db"))).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000); // each run starts the engine in a new process
});
