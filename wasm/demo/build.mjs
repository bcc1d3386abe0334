// Bundles the demo into dist/ with esbuild (from wasm/npm's dev
// dependencies) and copies the engine's wasm beside it. Needs
// `npm run build` in wasm/npm first.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const npmDir = path.resolve(here, "../npm");
const require = createRequire(path.join(npmDir, "package.json"));
const esbuild = require("esbuild");
const dist = path.join(here, "dist");
fs.rmSync(dist, { recursive: true, force: true });
fs.mkdirSync(dist, { recursive: true });

await esbuild.build({
  entryPoints: [path.join(here, "src/app.js"), path.join(here, "src/worker.js")],
  outdir: dist,
  bundle: true,
  splitting: true, // keeps the Node-only file host in a chunk the browser never loads
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  nodePaths: [path.join(npmDir, "node_modules")],
  external: ["node:*"],
  logLevel: "warning",
});
fs.copyFileSync(path.join(here, "index.html"), path.join(dist, "index.html"));
for (const f of ["agentstate.wasm", "sqlite3.wasm", "sqlite-callbacks.wasm"]) {
  const wasm = path.join(npmDir, "dist", f);
  if (!fs.existsSync(wasm)) throw new Error(`${wasm} is missing: run npm run build in wasm/npm first`);
  fs.copyFileSync(wasm, path.join(dist, f));
}
let total = 0;
for (const f of fs.readdirSync(dist)) total += fs.statSync(path.join(dist, f)).size;
console.log(`demo built in ${path.relative(process.cwd(), dist)}: ${fs.readdirSync(dist).length} files, ${(total / 1024 / 1024).toFixed(1)} MB`);
