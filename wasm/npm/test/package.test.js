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
