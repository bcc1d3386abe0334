// The start-up benchmark: what a new user meets, side by side in one
// script, fresh processes, runs interleaved (A B C A B C ...), medians.
//
//   node wasm/startup/startup.mjs [--previous OLD.wasm] [--proto HOST.wasm]
//        [--runs N] [--hosts node,workerd,chromium] [--json]
//
// Node 20, default flags: time from process start to the first open + put +
// getTuple result, time from close() until the process has exited, peak
// RSS; for the package's current engine, an older engine (--previous, run
// by the same JavaScript), sql.js, and optionally the host-SQLite prototype
// (--proto, built from wasm/startup/proto). workerd (npm package): time
// from spawn to the first put+getTuple answer, warm p50 of put+getTuple,
// the process's CPU seconds after the first answer and 5 s later, RSS.
// Chromium (Debian's /usr/bin/chromium): the demo's "engine start (load +
// open)". Module bytes raw and gzip -9 for every module involved.
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
const previous = opt("previous");
const proto = opt("proto");
const current = opt("wasm", path.join(npmDir, "dist/agentstate.wasm"));
const asJSON = args.includes("--json");
const log = (...a) => asJSON || console.error(...a);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const range = (xs) => `${fmt(median(xs))} (${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))})`;
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const results = { runs, sizes: [], node: [], workerd: [], chromium: [] };

// ---- module bytes
const requireHere = createRequire(path.join(here, "package.json"));
function size(label, ...files) {
  const bufs = files.map((f) => fs.readFileSync(f));
  const raw = bufs.reduce((n, b) => n + b.length, 0);
  const gz = bufs.reduce((n, b) => n + zlib.gzipSync(b, { level: 9 }).length, 0);
  results.sizes.push({ label, raw, gzip: gz });
}
size("agentstate (this build): agentstate.wasm + wasm_exec.js", current, path.join(npmDir, "dist/wasm_exec.js"));
if (previous) size("agentstate (previous build): .wasm", previous);
if (proto) {
  const sq = path.join(here, "node_modules/@sqlite.org/sqlite-wasm");
  size("prototype: Go (codec, channels, shim) + sqlite3.wasm + sqlite-wasm JS", proto, path.join(sq, "dist/sqlite3.wasm"), path.join(sq, "dist/index.mjs"));
}
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

if (hosts.includes("node")) {
  const cases = [
    { label: "agentstate, this build", argv: [path.join(here, "cases/agentstate.mjs"), current] },
    previous && { label: "agentstate, previous build", argv: [path.join(here, "cases/agentstate.mjs"), previous] },
    proto && { label: "prototype: host SQLite (engine's SQL replayed)", argv: [path.join(here, "proto/run.mjs"), proto], proto: true },
    { label: "sql.js 1.17", argv: [path.join(here, "cases/sqljs.mjs")] },
  ].filter(Boolean);
  const got = new Map(cases.map((c) => [c, []]));
  for (let i = 0; i < runs; i++) {
    for (const c of cases) {
      const r = await runChild(c.argv, here);
      // The prototype prints its own marks (first_result) and exits at once.
      got.get(c).push(c.proto ? { first: r.first_result, closed: r.first_result, exit: r.first_result, maxRssMB: r.rssMB, wall: r.wall } : r);
      log(`node ${c.label} run ${i + 1}: first ${fmt(got.get(c).at(-1).first)} ms, wall ${fmt(r.wall)} ms`);
    }
  }
  for (const c of cases) {
    const rs = got.get(c);
    results.node.push({
      label: c.label,
      firstMs: rs.map((r) => r.first),
      exitAfterCloseMs: c.proto ? null : rs.map((r) => r.wall - r.closed),
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
  const builds = [{ label: "agentstate, this build", wasm: current }, previous && { label: "agentstate, previous build", wasm: previous }].filter(Boolean);
  for (const b of builds) {
    const rs = [];
    for (let i = 0; i < Math.min(runs, 3); i++) {
      const t0 = performance.now();
      const w = await startWorkerd({ nodejsCompat: false, entry: path.join(here, "edge/bench-worker.js"), wasm: b.wasm });
      try {
        const ta = performance.now();
        const first = await (await fetch(`${w.base}/putget`)).json();
        const firstMs = performance.now() - ta;
        if (!first.ok) throw new Error(`workerd: ${JSON.stringify(first)}`);
        const afterFirst = procStat(w.proc.child.pid);
        const warm = [];
        for (let j = 0; j < 30; j++) {
          const tb = performance.now();
          const r = await (await fetch(`${w.base}/putget`)).json();
          warm.push(performance.now() - tb);
          if (!r.ok) throw new Error(`workerd: ${JSON.stringify(r)}`);
        }
        await new Promise((r) => setTimeout(r, 5000));
        const later = procStat(w.proc.child.pid);
        rs.push({ spawnToListeningMs: w.listeningMs, firstRequestMs: firstMs, spawnToFirstMs: ta - t0 + firstMs, warmP50Ms: median(warm), cpuAfterFirstS: afterFirst.cpuS, cpu5sLaterS: later.cpuS, rssMB: later.rssMB, peakRssMB: later.hwmMB });
        log(`workerd ${b.label} run ${i + 1}: first request ${fmt(firstMs)} ms, warm p50 ${fmt(median(warm))} ms`);
      } finally {
        await w.stop();
      }
    }
    results.workerd.push({ label: b.label, runs: rs });
  }
}

// ---- Chromium: the demo's engine start
if (hosts.includes("chromium")) {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  if (!fs.existsSync(executablePath)) {
    log(`chromium: ${executablePath} missing (apt-get install chromium); skipped`);
    results.chromium.push({ label: "skipped: no chromium" });
  } else {
    const demo = path.resolve(here, "../demo");
    execFileSync(process.execPath, [path.join(demo, "build.mjs")], { cwd: demo, stdio: "ignore" });
    const { chromium } = createRequire(path.join(npmDir, "package.json"))("playwright-core");
    const { serve } = await import(path.join(demo, "serve.mjs"));
    const server = await serve(0);
    const url = `http://127.0.0.1:${server.address().port}/`;
    const starts = [];
    try {
      for (let i = 0; i < runs; i++) {
        const profile = fs.mkdtempSync(path.join(fs.realpathSync("/tmp"), "agentstate-chromium-"));
        const ctx = await chromium.launchPersistentContext(profile, {
          executablePath,
          headless: true,
          args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
        });
        try {
          const page = ctx.pages()[0] ?? (await ctx.newPage());
          await page.goto(url);
          await page.waitForFunction(() => document.querySelector("#status")?.textContent === "ready", null, { timeout: 120_000 });
          const text = await page.locator("body").innerText();
          const m = text.match(/Engine start \(load \+ open\)\s+(\d+) ms/);
          if (!m) throw new Error(`no engine start figure on the page: ${text.slice(0, 400)}`);
          starts.push(Number(m[1]));
          log(`chromium run ${i + 1}: engine start ${m[1]} ms`);
        } finally {
          await ctx.close();
          fs.rmSync(profile, { recursive: true, force: true });
        }
      }
    } finally {
      server.close();
    }
    results.chromium.push({ label: "demo engine start (load + open), this build", ms: starts });
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
    out.push("| case | first open+put+getTuple (ms from process start) | close() to exit (ms) | peak RSS (MB) |\n|---|---:|---:|---:|");
    for (const r of results.node) out.push(`| ${r.label} | ${range(r.firstMs)} | ${r.exitAfterCloseMs ? range(r.exitAfterCloseMs) : "n/a"} | ${range(r.maxRssMB)} |`);
  }
  for (const w of results.workerd) {
    if (!w.runs.length) continue;
    const col = (k) => range(w.runs.map((r) => r[k]));
    out.push(`\nworkerd (${w.label}), ${w.runs.length} fresh processes, median (min-max)\n`);
    out.push("| spawn to first answer (ms) | first request (ms) | warm put+getTuple p50 (ms) | CPU s after first answer | CPU s 5 s later | RSS (MB) | peak RSS (MB) |\n|---:|---:|---:|---:|---:|---:|---:|");
    out.push(`| ${col("spawnToFirstMs")} | ${col("firstRequestMs")} | ${col("warmP50Ms")} | ${col("cpuAfterFirstS")} | ${col("cpu5sLaterS")} | ${col("rssMB")} | ${col("peakRssMB")} |`);
  }
  for (const c of results.chromium) if (c.ms) out.push(`\nChromium (headless, Debian package): ${c.label}: ${range(c.ms)} ms over ${c.ms.length} fresh profiles`);
  console.log(out.join("\n"));
}
