// What `npm pack` ships besides the code: the license the package declares.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

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
