// Builds dist/agentstate.wasm (GOOS=js) with the Go toolchain and copies
// Go's wasm_exec.js beside it. With AGENTSTATE_WASM=path it copies that
// prebuilt module instead, so CI builds the wasm once and reuses it.
// dist/agentstate-pg.wasm is the same program with the PostgreSQL backend
// (build tag hostpg), which Node loads only to open a postgres:// URL
// (AGENTSTATE_PG_WASM=path: a prebuilt one); agentstate.wasm, the module
// browsers and edge hosts load, links none of it.
//
// SQLite is the official WebAssembly build: dist/sqlite3.wasm is copied
// from the pinned @sqlite.org/sqlite-wasm dev dependency, after checking
// it is the exact build src/sqlite/loader.js knows (its sha256); the
// callback module dist/sqlite-callbacks.wasm is written by
// scripts/callbacks.js.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { SQLITE_WASM_SHA256, SQLITE_WASM_VERSION } from "../src/sqlite/loader.js";
import { callbackModuleBytes } from "./callbacks.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, "..");
const repo = path.resolve(pkg, "../..");
const dist = path.join(pkg, "dist");
fs.mkdirSync(dist, { recursive: true });

const goroot = execFileSync("go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
for (const dir of ["lib/wasm", "misc/wasm"]) {
  const src = path.join(goroot, dir, "wasm_exec.js");
  if (fs.existsSync(src)) {
    fs.copyFileSync(src, path.join(dist, "wasm_exec.js"));
    break;
  }
}
if (!fs.existsSync(path.join(dist, "wasm_exec.js"))) throw new Error(`wasm_exec.js not found under ${goroot}`);

const require = createRequire(import.meta.url);
const sqlitePkg = path.dirname(require.resolve("@sqlite.org/sqlite-wasm/package.json"));
const sqliteVersion = JSON.parse(fs.readFileSync(path.join(sqlitePkg, "package.json"), "utf8")).version;
const sqliteBytes = fs.readFileSync(path.join(sqlitePkg, "dist/sqlite3.wasm"));
const sqliteSum = crypto.createHash("sha256").update(sqliteBytes).digest("hex");
if (sqliteVersion !== SQLITE_WASM_VERSION || sqliteSum !== SQLITE_WASM_SHA256) {
  throw new Error(
    `@sqlite.org/sqlite-wasm ${sqliteVersion} (sqlite3.wasm sha256 ${sqliteSum}) is not the build src/sqlite/loader.js knows (${SQLITE_WASM_VERSION}, ${SQLITE_WASM_SHA256}): check the loader's imports against the new build first`,
  );
}
fs.writeFileSync(path.join(dist, "sqlite3.wasm"), sqliteBytes);
fs.writeFileSync(path.join(dist, "sqlite-callbacks.wasm"), callbackModuleBytes());
console.log(`sqlite3.wasm ${sqliteVersion}: ${sqliteBytes.length} bytes; sqlite-callbacks.wasm: ${callbackModuleBytes().length} bytes`);

function buildModule(file, prebuilt, tags) {
  const out = path.join(dist, file);
  const started = Date.now();
  if (prebuilt) {
    fs.copyFileSync(prebuilt, out);
    console.log(`copied ${prebuilt} -> ${path.relative(pkg, out)}`);
  } else {
    execFileSync("go", ["build", ...tags, "-trimpath", "-ldflags=-s -w", "-o", out, "./wasm/js"], {
      cwd: repo,
      stdio: "inherit",
      env: { ...process.env, GOOS: "js", GOARCH: "wasm" },
    });
    console.log(`built ${path.relative(pkg, out)} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }
  console.log(`${file}: ${fs.statSync(out).size} bytes`);
}
buildModule("agentstate.wasm", process.env.AGENTSTATE_WASM, []);
buildModule("agentstate-pg.wasm", process.env.AGENTSTATE_PG_WASM, ["-tags", "hostpg"]);
