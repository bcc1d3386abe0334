// What `npm pack` ships besides the code: the license the package declares.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { jsBlocks, npmInitProject } from "./helpers/readme.js";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("package", () => {
  it("ships the repository's MIT LICENSE", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
    expect(pkg.license).toBe("MIT");
    const ours = fs.readFileSync(path.join(pkgDir, "LICENSE"), "utf8");
    expect(ours).toBe(fs.readFileSync(path.join(pkgDir, "../../LICENSE"), "utf8"));
    expect(ours).toMatch(/^MIT License\n/);
    const [packed] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: pkgDir, encoding: "utf8" }));
    expect(packed.files.map((f) => f.path)).toContain("LICENSE");
  });
});

// The name is ours ("agentstate" on npm is somebody else's package), and
// every subpath the READMEs import resolves under it, as it does for a
// user who installed the tarball (a self-reference from inside the package).
describe("package name and exports", () => {
  it("is langgraph-checkpoint-agentstate, with the engine and the modules as subpaths", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
    expect(pkg.name).toBe("langgraph-checkpoint-agentstate");
    const lock = JSON.parse(fs.readFileSync(path.join(pkgDir, "package-lock.json"), "utf8"));
    expect([lock.name, lock.packages[""].name]).toEqual([pkg.name, pkg.name]);
    const subpaths = ["", "/engine", "/agentstate.wasm", "/sqlite3.wasm", "/sqlite-callbacks.wasm"];
    const code = `for (const s of ${JSON.stringify(subpaths.map((s) => pkg.name + s))}) console.log(import.meta.resolve(s));`;
    const resolved = execFileSync(process.execPath, ["--input-type=module", "-e", code], { cwd: pkgDir, encoding: "utf8" }).trim().split("\n");
    expect(resolved.map((u) => path.relative(pkgDir, new URL(u).pathname))).toEqual([
      "src/index.js",
      "src/engine.js",
      "dist/agentstate.wasm",
      "dist/sqlite3.wasm",
      "dist/sqlite-callbacks.wasm",
    ]);
  });

  it("the READMEs import it by that name only", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
    for (const readme of [path.join(pkgDir, "README.md"), path.join(pkgDir, "../../README.md")]) {
      const text = fs.readFileSync(readme, "utf8");
      const specifiers = [...text.matchAll(/from "([^"]+)"/g)].map((m) => m[1]).filter((s) => !s.startsWith("@") && !s.includes(":"));
      expect(specifiers.length).toBeGreaterThan(0);
      for (const s of specifiers) expect(s.split("/")[0], `${readme}: ${s}`).toBe(pkg.name);
    }
  });
});

// The root README's "Depend on it from a clone", as a user does it: the
// packed tarball installed by the README's npm install line (verbatim, from
// a project beside the clone) and the README's LangGraph.js example run
// there, resolving everything from the project's node_modules.
describe("the tarball, installed as the README says", () => {
  it("runs the README's example from a project of its own", () => {
    const readme = fs.readFileSync(path.join(pkgDir, "../../README.md"), "utf8");
    const install = readme.split("\n").map((l) => l.trim()).find((l) => l.startsWith("npm install ../agentstate/wasm/npm/"));
    expect(install, "the README's npm install line").toBeDefined();
    const [{ code: example, name }] = jsBlocks(path.join(pkgDir, "../../README.md"));
    expect(name, "the file the README says to save its example as").toBeDefined();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-tarball-"));
    try {
      const clone = path.join(tmp, "agentstate/wasm/npm"); // where the README's npm pack leaves it
      fs.mkdirSync(clone, { recursive: true });
      const [packed] = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", clone], { cwd: pkgDir, encoding: "utf8" }));
      expect(install).toContain(`../agentstate/wasm/npm/${packed.filename} `);
      // A project as a new user makes one: npm init -y (CommonJS), beside the clone.
      const app = npmInitProject(path.join(tmp, "app"));
      const [cmd, ...args] = install.split(/\s+/);
      execFileSync(cmd, [...args, "--prefer-offline", "--no-audit", "--no-fund"], { cwd: app, encoding: "utf8", stdio: "pipe" });
      fs.writeFileSync(path.join(app, name), example);
      const out = execFileSync(process.execPath, [name], { cwd: app, encoding: "utf8" }).trim();
      expect(out).toBe("2 You said: hi");
      const installed = JSON.parse(fs.readFileSync(path.join(app, "node_modules/langgraph-checkpoint-agentstate/package.json"), "utf8"));
      expect(installed.name).toBe("langgraph-checkpoint-agentstate");
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }, 300_000);
});

// The module sizes wasm/npm/README.md prints are the built modules' (raw,
// and gzip -9 as Node's zlib makes it), within 2%: a build that grows past
// that fails here until the table is updated.
describe("the README's module sizes", () => {
  const units = { B: 1, KB: 1e3, MB: 1e6 };
  const parse = (s) => {
    const m = s.trim().match(/^([\d.]+) (B|KB|MB)$/);
    if (!m) throw new Error(`not a size: ${s}`);
    return Number(m[1]) * units[m[2]];
  };
  it("are the sizes of dist/", async () => {
    const { gzipSync } = await import("node:zlib");
    const readme = fs.readFileSync(path.join(pkgDir, "README.md"), "utf8");
    const rows = [...readme.matchAll(/^\| `langgraph-checkpoint-agentstate\/([\w.-]+\.wasm)` \|[^|]*\|([^|]+)\|([^|]+)\|$/gm)];
    expect(rows.map((r) => r[1]).sort()).toEqual(["agentstate.wasm", "sqlite-callbacks.wasm", "sqlite3.wasm"]);
    for (const [, file, raw, gzip] of rows) {
      const bytes = fs.readFileSync(path.join(pkgDir, "dist", file));
      const actual = { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
      for (const [what, doc] of [["raw", raw], ["gzip", gzip]]) {
        const off = Math.abs(parse(doc) - actual[what]) / actual[what];
        expect(off, `${file} ${what}: the README says ${doc.trim()}, the build is ${actual[what]} bytes`).toBeLessThanOrEqual(0.02);
      }
    }
  });
});

// npm ci warns EBADENGINE on Node 20 because @sqlite.org/sqlite-wasm (a dev
// dependency) declares Node >= 22; the package's README and
// docs/troubleshooting.md say why that does not apply.
// The reason, checked: the package takes only its sqlite3.wasm and imports
// none of its JavaScript.
describe("Node 20 and @sqlite.org/sqlite-wasm", () => {
  it("uses none of sqlite-wasm's JavaScript, which is what wants Node 22", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
    expect(pkg.engines.node).toBe(">=20");
    const sw = JSON.parse(fs.readFileSync(path.join(pkgDir, "node_modules/@sqlite.org/sqlite-wasm/package.json"), "utf8"));
    expect(sw.engines?.node).toBe(">=22");
    expect(pkg.dependencies?.["@sqlite.org/sqlite-wasm"]).toBeUndefined();
    const src = path.join(pkgDir, "src");
    for (const f of fs.readdirSync(src, { recursive: true }).filter((f) => f.endsWith(".js"))) {
      expect(fs.readFileSync(path.join(src, f), "utf8"), f).not.toMatch(/from "@sqlite\.org|import\("@sqlite\.org/);
    }
    for (const page of [path.join(pkgDir, "README.md"), path.join(pkgDir, "../../docs/troubleshooting.md")]) {
      expect(fs.readFileSync(page, "utf8"), page).toContain("EBADENGINE");
    }
  });
});
