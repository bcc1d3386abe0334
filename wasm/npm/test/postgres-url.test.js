// A PostgreSQL URL given to the npm package. In Node it is opened with
// node-postgres (test-pg/ runs the package on a real server); here, with no
// server behind it, the open fails typed, within its deadline, and no
// message shows the password. Browsers and edge hosts refuse a URL before
// loading anything (src/engine.js; .ci/run's workerd and Deno steps).
import { AgentStateError, AgentStateSaver, AgentStateStore, Database } from "../src/index.js";

// Nothing listens on port 1 of 127.0.0.1: the connection is refused at once.
const url = "postgresql://agent:secret@127.0.0.1:1/agents?sslmode=disable";

async function refused(p, shown = "postgresql://agent:xxxxx@127.0.0.1:1/agents") {
  const t0 = Date.now();
  const e = await p.then(
    () => null,
    (err) => err,
  );
  expect(e).toBeInstanceOf(AgentStateError);
  expect(e.message).not.toContain("secret");
  expect(e.message).toContain(shown);
  expect(Date.now() - t0).toBeLessThan(5000 + 1000);
  return e;
}

test("open, fromConnString and the store fail typed on a server that is not there, without showing the password", async () => {
  const o = { timeoutMs: 5000 };
  await refused(Database.open({ url, ...o }));
  await refused(Database.open({ path: url, ...o }));
  await refused(AgentStateSaver.open({ url, ...o }));
  await refused(AgentStateStore.open({ url, ...o }));
  await refused(AgentStateSaver.fromConnString(url, o).setup());
  await refused(Database.open({ url: "postgres://127.0.0.1:1/db?password=secret", ...o }), "postgres://127.0.0.1:1/db?password=xxxxx");
});

test("url takes a PostgreSQL URL only, and not with a path", async () => {
  for (const options of [{ url: "agent.db" }, { url, path: "agent.db" }, { url: 42 }]) {
    const e = await Database.open(options).then(
      () => null,
      (err) => err,
    );
    expect(e).toBeInstanceOf(AgentStateError);
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).not.toContain("secret");
  }
});

test("without node-postgres installed a URL fails with MISSING_DEPENDENCY, naming the package to install", async () => {
  // The package's source in a directory where no node_modules has pg.
  const fs = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const { execFileSync } = await import("node:child_process");
  const pkg = path.resolve(import.meta.dirname, "..");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-nopg-"));
  try {
    fs.cpSync(path.join(pkg, "src"), path.join(tmp, "src"), { recursive: true });
    fs.symlinkSync(path.join(pkg, "dist"), path.join(tmp, "dist"));
    const code = `import { Database } from ${JSON.stringify(path.join(tmp, "src/engine.js"))};
      Database.open({ url: ${JSON.stringify(url)} }).then(() => console.log("opened"), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })));`;
    const out = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", code], { cwd: tmp, encoding: "utf8" }));
    expect(out.code).toBe("MISSING_DEPENDENCY");
    expect(out.message).toContain("npm install pg");
    expect(out.message).not.toContain("secret");
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test("a host that is not Node (a browser here: window defined) refuses a URL typed, before loading anything", async () => {
  const { execFileSync } = await import("node:child_process");
  const engine = new URL("../src/engine.js", import.meta.url).href;
  const code = `globalThis.window = {}; const { Database, runtime } = await import(${JSON.stringify(engine)});
    Database.open({ url: ${JSON.stringify(url)} }).then(() => console.log("opened"), (e) => console.log(JSON.stringify({ runtime, code: e.code, message: e.message })));`;
  const out = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" }));
  expect(out.runtime).toBe("browser");
  expect(out.code).toBe("INVALID_ARGUMENT");
  expect(out.message).toContain("postgresql://agent:xxxxx@127.0.0.1:1/agents");
  expect(out.message).not.toContain("secret");
});
