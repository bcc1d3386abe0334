// The start-up benchmark: what a new user meets, side by side in one
// script, fresh processes, runs interleaved (A B C A B C ...), medians.
//
//   node wasm/startup/startup.mjs [--previous PACKAGE_DIR]
//        [--runs N] [--hosts node,workerd,chromium] [--worker] [--json]
//
// --worker adds a design measured but not adopted: the engine module
// started in a worker thread while the main thread imports LangGraph.js's
// checkpoint library (cases/engine-worker.mjs).
//
// --previous names the npm package directory of an older build (its src/
// and a built dist/), run by its own JavaScript: for example
//   git worktree add /tmp/prev <commit> && cd /tmp/prev/wasm/npm && npm ci && npm run build
//
// Node 20, default flags: time from process start to the first open + put +
// getTuple result, the main thread's CPU by then, time from close() until
// the process has exited, the whole process's CPU, peak RSS; for the
// package's current build (through AgentStateSaver, and through its engine
// module alone, which skips importing LangGraph.js), the previous build,
// and sql.js. workerd (npm package): time from spawn to the first
// put+getTuple answer, warm p50 of put+getTuple, the process's CPU during
// the first request, by 5 s later, RSS. Chromium (Debian's
// /usr/bin/chromium): the engine's start in a page's worker, in memory
// (load the modules + open), and the demo's "engine start (load + open)"
// on OPFS. Module bytes raw and gzip -9 for every module involved.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const npmDir = path.resolve(here, "../npm");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const runs = Number(opt("runs", 5));
const hosts = opt("hosts", "node,workerd,chromium").split(",");
const previous = opt("previous") && path.resolve(opt("previous"));
const current = npmDir;
const asJSON = args.includes("--json");
const withWorker = args.includes("--worker");
const log = (...a) => asJSON || console.error(...a);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const range = (xs) => `${fmt(median(xs))} (${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))})`;
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(2));
const results = { runs, sizes: [], node: [], workerd: [], chromium: [] };

// ---- module bytes
const requireHere = createRequire(path.join(here, "package.json"));
function size(label, ...files) {
  const bufs = files.map((f) => fs.readFileSync(f));
  const raw = bufs.reduce((n, b) => n + b.length, 0);
  const gz = bufs.reduce((n, b) => n + zlib.gzipSync(b, { level: 9 }).length, 0);
  results.sizes.push({ label, raw, gzip: gz });
}
const dist = (dir, f) => path.join(dir, "dist", f);
size("agentstate (this build): agentstate.wasm", dist(current, "agentstate.wasm"));
size("agentstate (this build): sqlite3.wasm", dist(current, "sqlite3.wasm"));
size("agentstate (this build): sqlite-callbacks.wasm", dist(current, "sqlite-callbacks.wasm"));
size("agentstate (this build): wasm_exec.js + src/ (the package's JavaScript)", dist(current, "wasm_exec.js"), ...fs.readdirSync(path.join(current, "src"), { recursive: true }).filter((f) => f.endsWith(".js")).map((f) => path.join(current, "src", f)));
size("agentstate (this build): the three .wasm", ...["agentstate.wasm", "sqlite3.wasm", "sqlite-callbacks.wasm"].map((f) => dist(current, f)));
if (previous) size("agentstate (previous build): agentstate.wasm", dist(previous, "agentstate.wasm"));
const sqljsDir = path.join(here, "node_modules/sql.js");
size("sql.js 1.17: sql-wasm.wasm + sql-wasm.js", path.join(sqljsDir, "dist/sql-wasm.wasm"), path.join(sqljsDir, "dist/sql-wasm.js"));

// ---- Node
function runChild(argv, cwd) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, argv, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => {
      const wall = performance.now() - t0;
      if (code !== 0) return reject(new Error(`${argv.join(" ")}: exit ${code}: ${err}`));
      const line = out.trim().split("\n").pop();
      try {
        resolve({ ...JSON.parse(line), wall });
      } catch (e) {
        reject(new Error(`${argv.join(" ")}: no result line: ${out.slice(-300)}`));
      }
    });
  });
}

// The SqliteSaver peer of the AgentStateSaver case comes from wasm/bench
// (better-sqlite3 compiles from source where no prebuilt binary fits).
const benchDir = path.resolve(here, "../bench");
const sqliteSaverReady = fs.existsSync(path.join(benchDir, "node_modules/@langchain/langgraph-checkpoint-sqlite/dist/index.js"));

if (hosts.includes("node")) {
  const cases = [
    { label: "agentstate, this build, AgentStateSaver", argv: [path.join(here, "cases/agentstate.mjs"), current] },
    { label: "agentstate, this build, engine only", argv: [path.join(here, "cases/engine.mjs"), current] },
    previous && { label: "agentstate, previous build, AgentStateSaver", argv: [path.join(here, "cases/agentstate.mjs"), previous] },
    previous && { label: "agentstate, previous build, engine only", argv: [path.join(here, "cases/engine.mjs"), previous] },
    { label: "sql.js 1.17", argv: [path.join(here, "cases/sqljs.mjs")] },
    sqliteSaverReady && { label: "SqliteSaver (better-sqlite3)", argv: [path.join(here, "cases/sqlitesaver.mjs"), benchDir] },
    withWorker && { label: "agentstate, this build, engine in a worker during the import", argv: [path.join(here, "cases/engine-worker.mjs"), current] },
  ].filter(Boolean);
  if (!sqliteSaverReady) log(`node: no SqliteSaver case: ${benchDir}/node_modules lacks @langchain/langgraph-checkpoint-sqlite (cd wasm/bench && npm ci)`);
  const got = new Map(cases.map((c) => [c, []]));
  for (let i = 0; i < runs; i++) {
    for (const c of cases) {
      const r = await runChild(c.argv, here);
      got.get(c).push(r);
      log(`node ${c.label} run ${i + 1}: first ${fmt(got.get(c).at(-1).first)} ms, wall ${fmt(r.wall)} ms`);
    }
  }
  for (const c of cases) {
    const rs = got.get(c);
    results.node.push({
      label: c.label,
      firstMs: rs.map((r) => r.first),
      mainCpuFirstMs: rs.map((r) => r.mainCpuFirst),
      exitAfterCloseMs: rs.map((r) => r.wall - r.closed),
      cpuMs: rs.map((r) => r.cpuMs),
      maxRssMB: rs.map((r) => r.maxRssMB),
    });
  }
}

// ---- workerd
function procStat(pid) {
  const st = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k) => Number(status.match(new RegExp(`${k}:\\s+(\\d+)`))?.[1] ?? 0);
  return { cpuS: (Number(f[11]) + Number(f[12])) / 100, rssMB: kb("VmRSS") / 1024, hwmMB: kb("VmHWM") / 1024 };
}

if (hosts.includes("workerd")) {
  const { startWorkerd } = await import("./edge/hosts.mjs");
  const builds = [{ label: "agentstate, this build", pkg: current }, previous && { label: "agentstate, previous build", pkg: previous }].filter(Boolean);
  for (const b of builds) {
    const rs = [];
    for (let i = 0; i < Math.min(runs, 3); i++) {
      const t0 = performance.now();
      const w = await startWorkerd({ nodejsCompat: false, entry: path.join(here, "edge/bench-worker.js"), pkg: b.pkg });
      try {
        const atListen = procStat(w.proc.child.pid);
        const ta = performance.now();
        const first = await (await fetch(`${w.base}/putget`)).json();
        const firstMs = performance.now() - ta;
        if (!first.ok) throw new Error(`workerd: ${JSON.stringify(first)}`);
        const afterFirst = procStat(w.proc.child.pid);
        // Idle for 5 s: what the process still burns is compiling (V8
        // tiering up the engine's hot functions) or the engine's timers.
        await new Promise((r) => setTimeout(r, 5000));
        const idle = procStat(w.proc.child.pid);
        const ping = [];
        const warm = [];
        for (let j = 0; j < 30; j++) {
          let tb = performance.now();
          await (await fetch(`${w.base}/ping`)).text();
          ping.push(performance.now() - tb);
          tb = performance.now();
          const r = await (await fetch(`${w.base}/putget`)).json();
          warm.push(performance.now() - tb);
          if (!r.ok) throw new Error(`workerd: ${JSON.stringify(r)}`);
        }
        const end = procStat(w.proc.child.pid);
        rs.push({
          spawnToListeningMs: w.listeningMs,
          firstRequestMs: firstMs,
          spawnToFirstMs: ta - t0 + firstMs,
          warmP50Ms: median(warm),
          pingP50Ms: median(ping),
          cpuStartS: atListen.cpuS,
          cpuFirstRequestS: afterFirst.cpuS - atListen.cpuS,
          cpuIdle5sAfterS: idle.cpuS - afterFirst.cpuS,
          rssMB: end.rssMB,
          peakRssMB: end.hwmMB,
        });
        log(`workerd ${b.label} run ${i + 1}: first request ${fmt(firstMs)} ms, warm p50 ${fmt(median(warm))} ms`);
      } finally {
        await w.stop();
      }
    }
    results.workerd.push({ label: b.label, runs: rs });
  }
}

// ---- Chromium: the engine's start in a worker (in memory), and the demo's
const chromiumArgs = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];
async function inChromium(url, read) {
  const { chromium } = createRequire(path.join(npmDir, "package.json"))("playwright-core");
  const profile = fs.mkdtempSync(path.join(fs.realpathSync("/tmp"), "agentstate-chromium-"));
  const ctx = await chromium.launchPersistentContext(profile, { executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: chromiumArgs });
  try {
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    await page.goto(url);
    return await read(page);
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

if (hosts.includes("chromium")) {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  if (!fs.existsSync(executablePath)) {
    log(`chromium: ${executablePath} missing (apt-get install chromium); skipped`);
    results.chromium.push({ label: "skipped: no chromium" });
  } else {
    // In memory: a worker bundled with the package, the three modules
    // fetched and compiled in parallel, then open + put + getTuple.
    const { serveMemoryPage } = await import("./cases/chromium-memory.mjs");
    const mem = await serveMemoryPage(current);
    const memStarts = [];
    try {
      for (let i = 0; i < runs; i++) {
        const r = await inChromium(mem.url, async (page) => {
          await page.waitForFunction(() => document.title.startsWith("{"), null, { timeout: 120_000 });
          return JSON.parse(await page.title());
        });
        if (r.error) throw new Error(`chromium (memory): ${r.error}`);
        memStarts.push(r.openMs);
        log(`chromium memory run ${i + 1}: engine start ${fmt(r.openMs)} ms, first put+getTuple ${fmt(r.firstMs)} ms`);
      }
    } finally {
      await mem.close();
    }
    results.chromium.push({ label: "engine start in a worker, in memory (load + open), this build", ms: memStarts });

    const demo = path.resolve(here, "../demo");
    execFileSync(process.execPath, [path.join(demo, "build.mjs")], { cwd: demo, stdio: "ignore" });
    const { serve } = await import(path.join(demo, "serve.mjs"));
    const server = await serve(0);
    const url = `http://127.0.0.1:${server.address().port}/`;
    const starts = [];
    try {
      for (let i = 0; i < runs; i++) {
        const ms = await inChromium(url, async (page) => {
          await page.waitForFunction(() => ["ready", "error"].includes(document.querySelector("#status")?.textContent), null, { timeout: 120_000 });
          const text = await page.locator("body").innerText();
          const m = text.match(/Engine start \(load \+ open\)\s+(\d+) ms/);
          if (!m) throw new Error(`no engine start figure on the demo page: ${text.slice(0, 400)}`);
          return Number(m[1]);
        });
        starts.push(ms);
        log(`chromium demo run ${i + 1}: engine start ${ms} ms`);
      }
      results.chromium.push({ label: "demo engine start (load + open, OPFS), this build", ms: starts });
    } catch (e) {
      log(`chromium demo: ${e.message}`);
      results.chromium.push({ label: `demo: failed: ${e.message.slice(0, 200)}` });
    } finally {
      server.close();
    }
  }
}

// ---- report
if (asJSON) {
  console.log(JSON.stringify(results, null, 1));
} else {
  const out = [];
  out.push(`\nModule bytes\n\n| module | raw | gzip -9 |\n|---|---:|---:|`);
  for (const s of results.sizes) out.push(`| ${s.label} | ${s.raw.toLocaleString("en")} | ${s.gzip.toLocaleString("en")} |`);
  if (results.node.length) {
    out.push(`\nNode ${process.version}, default flags, ${runs} fresh processes each, median (min-max)\n`);
    out.push("| case | first open+put+getTuple (ms from process start) | main thread CPU by then (ms) | close() to exit (ms) | process CPU (ms) | peak RSS (MB) |\n|---|---:|---:|---:|---:|---:|");
    const cell = (xs) => (xs && xs.every((x) => typeof x === "number") ? range(xs) : "n/a");
    for (const r of results.node) out.push(`| ${r.label} | ${range(r.firstMs)} | ${cell(r.mainCpuFirstMs)} | ${cell(r.exitAfterCloseMs)} | ${cell(r.cpuMs)} | ${range(r.maxRssMB)} |`);
    // The goals' ratios, run by run (the cases of one run ran back to back).
    const byLabel = (l) => results.node.find((r) => r.label === l);
    const pairs = [
      ["this build's engine module / sql.js", "agentstate, this build, engine only", "sql.js 1.17"],
      ["previous build's engine module / sql.js", "agentstate, previous build, engine only", "sql.js 1.17"],
      ["this build's AgentStateSaver / SqliteSaver", "agentstate, this build, AgentStateSaver", "SqliteSaver (better-sqlite3)"],
      ["previous build's AgentStateSaver / SqliteSaver", "agentstate, previous build, AgentStateSaver", "SqliteSaver (better-sqlite3)"],
      ["the engine in a worker during the import / SqliteSaver", "agentstate, this build, engine in a worker during the import", "SqliteSaver (better-sqlite3)"],
    ];
    const rows = [];
    for (const [label, a, b] of pairs) {
      const ra = byLabel(a), rb = byLabel(b);
      if (!ra || !rb) continue;
      for (const [what, k] of [["first result", "firstMs"], ["main thread CPU", "mainCpuFirstMs"]]) {
        if (!ra[k].every((x) => typeof x === "number") || !rb[k].every((x) => typeof x === "number")) continue;
        const per = ra[k].map((x, i) => x / rb[k][i]);
        const r2 = (x) => x.toFixed(2);
        rows.push(`| ${label} | ${what} | ${r2(median(per))} (${r2(Math.min(...per))}-${r2(Math.max(...per))}) | ${r2(median(ra[k]) / median(rb[k]))} |`);
      }
    }
    if (rows.length) out.push("\n| ratio | of | per run, median (min-max) | of the medians |\n|---|---|---:|---:|", ...rows);
  }
  for (const w of results.workerd) {
    if (!w.runs.length) continue;
    const col = (k) => range(w.runs.map((r) => r[k]));
    out.push(`\nworkerd (${w.label}), ${w.runs.length} fresh processes, median (min-max)\n`);
    out.push("| spawn to first answer (ms) | first request (ms) | warm put+getTuple p50 (ms) | warm /ping p50 (ms) | CPU s to start | CPU s of the first request | CPU s in the 5 idle s after it | RSS (MB) | peak RSS (MB) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    out.push(`| ${col("spawnToFirstMs")} | ${col("firstRequestMs")} | ${col("warmP50Ms")} | ${col("pingP50Ms")} | ${col("cpuStartS")} | ${col("cpuFirstRequestS")} | ${col("cpuIdle5sAfterS")} | ${col("rssMB")} | ${col("peakRssMB")} |`);
  }
  for (const c of results.chromium) if (c.ms) out.push(`\nChromium (headless, Debian package): ${c.label}: ${range(c.ms)} ms over ${c.ms.length} fresh profiles`);
  console.log(out.join("\n"));
}
