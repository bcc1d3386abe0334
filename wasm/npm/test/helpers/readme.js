// The READMEs' JavaScript examples as a user meets them: each ```js block
// with the file name the prose before it says to save it as, and a fresh
// project made the way a new user makes one.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** Each ```js block of a README: { code, name }, name undefined when the prose before it names no file. */
export function jsBlocks(file) {
  const text = fs.readFileSync(file, "utf8");
  const blocks = [];
  let prev = 0;
  for (const m of text.matchAll(/^```js\n([\s\S]*?)^```$/gm)) {
    const prose = text.slice(prev, m.index);
    const named = [...prose.matchAll(/[Ss]ave (?:it|this|the example) as `([^`]+)`/g)].at(-1);
    blocks.push({ code: m[1], name: named?.[1] });
    prev = m.index + m[0].length;
  }
  return blocks;
}

/** Makes dir (a new one in the temporary directory if omitted) a project as `npm init -y` does: its package.json is CommonJS, without "type": "module". */
export function npmInitProject(dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-project-"))) {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync("npm", ["init", "-y"], { cwd: dir, stdio: "ignore", shell: process.platform === "win32" });
  return dir;
}
