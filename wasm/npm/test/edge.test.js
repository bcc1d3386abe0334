// What edge hosts need from the package, checked in Node: the engine from a
// precompiled WebAssembly.Module, a Go crash that rejects calls instead of
// hanging them, and a bundle of the in-memory path that imports no node:*
// module up front and reads no environment.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { Database, AgentStateSaver } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const wasmFile = path.join(here, "../dist/agentstate.wasm");
const require = createRequire(import.meta.url);

describe("edge hosts", () => {
  let mod;
  beforeAll(async () => {
    mod = await WebAssembly.compile(fs.readFileSync(wasmFile));
  });

  test("wasmBytes takes a precompiled WebAssembly.Module", async () => {
    const db = await Database.open({ wasmBytes: mod, testHooks: true });
    const info = await db.info();
    expect(info.schema_version).toBeGreaterThan(0);
    await db.close();
  });

  test("a Go panic rejects the call in flight, closes every database, and the next open starts afresh", async () => {
    const a = await Database.open({ wasmBytes: mod });
    const b = await AgentStateSaver.open({ wasmBytes: mod });
    const crash = a.call("test.crash");
    await expect(crash).rejects.toMatchObject({ code: "INTERNAL", message: expect.stringContaining("crash on purpose") });
    expect(a.closed).toBe(true);
    expect(b.db.closed).toBe(true);
    await expect(b.getTuple({ configurable: { thread_id: "t" } })).rejects.toMatchObject({ code: "CLOSED" });
    await b.close(); // harmless after the engine stopped

    const c = await Database.open({ wasmBytes: mod });
    expect((await c.info()).schema_version).toBeGreaterThan(0);
    await c.close();
  });

  test("arguments of the wrong type reject instead of stopping the engine", async () => {
    const db = await Database.open({ wasmBytes: mod });
    const { loadEngine } = await import("../src/engine.js");
    const api = await loadEngine();
    // send(frame, done): a frame that is no byte array, or no callback.
    await expect(api.send("not a frame", 7)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    // A malformed frame (a short one, and one whose lengths run past its
    // end) is the callback's INVALID_ARGUMENT.
    for (const frame of [new Uint8Array(3), Uint8Array.from([0, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0])]) {
      const err = await new Promise((resolve) => api.send(frame, (e) => resolve(e)));
      expect(err).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    expect((await db.info()).schema_version).toBeGreaterThan(0);
    await db.close();
  });

  test("the in-memory path bundles without static node:* imports or environment reads", async () => {
    const esbuild = require("esbuild");
    const out = await esbuild.build({
      entryPoints: [path.join(here, "../src/index.js")],
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      mainFields: ["module", "main"],
      external: ["node:*", "@langchain/*", "../dist/wasm_exec.js"],
      logLevel: "silent",
    });
    const code = out.outputFiles[0].text;
    const staticNode = code.match(/^\s*import\s[^;]*["']node:[^"']+["']/gm) ?? [];
    expect(staticNode).toEqual([]);
    expect(code).toMatch(/import\(["']node:fs["']\)/); // still there, for Node's file path
    const sources = fs.readdirSync(path.join(here, "../src"), { recursive: true }).filter((f) => f.endsWith(".js"));
    expect(sources).toContain(path.join("sqlite", "loader.js"));
    for (const f of sources) {
      expect(fs.readFileSync(path.join(here, "../src", f), "utf8")).not.toMatch(/process\.env/);
    }
  });
});
