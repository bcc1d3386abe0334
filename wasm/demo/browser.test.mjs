// The demo in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core, which never downloads a browser): three turns, a reload,
// and the thread and its checkpoints are still there; the first message is
// typed while the engine is still loading. Saves a screenshot
// to test-results/demo.png.
//
//   node build.mjs && node --test browser.test.mjs
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { serve } from "./serve.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../npm/package.json"));
const { chromium } = require("playwright-core");
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

test("a chat thread survives a reload", { timeout: 240_000 }, async () => {
  // The engine's modules arrive 3 s late, so the first message is typed
  // while the page still says "loading the engine…" (it used to be lost).
  const server = await serve(0, { wasmDelayMs: 3000 });
  const url = `http://127.0.0.1:${server.address().port}/`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "agentstate-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1360, height: 860 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const errors = [];
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    const ready = () => page.waitForFunction(() => document.querySelector("#status")?.textContent === "ready", null, { timeout: 120_000 });

    await page.goto(url);
    const turns = ["Hello from the browser test", "Remember that my favourite colour is teal", "What did I just tell you?"];
    assert.equal(await page.locator("#status").textContent(), "loading the engine…");
    await page.fill("#input", turns[0]);
    await page.press("#input", "Enter");
    assert.equal(await page.locator(".msg").count(), 0);
    for (const [i, text] of turns.entries()) {
      if (i > 0) {
        await page.fill("#input", text);
        await page.press("#input", "Enter");
      }
      await page.waitForFunction((n) => document.querySelectorAll(".msg.ai").length === n, i + 1, { timeout: 60_000 });
      await ready();
    }
    const lastTurn = await page.locator("#storage").innerText();
    console.log(`after three turns:\n${lastTurn}`);
    const before = {
      humans: await page.locator(".msg.human p").allTextContents(),
      ais: await page.locator(".msg.ai p").allTextContents(),
      checkpoints: await page.locator("#history tr").count(),
    };
    assert.deepEqual(before.humans, turns);
    assert.equal(before.ais.length, 3);
    assert.ok(before.checkpoints >= 9, `checkpoints: ${before.checkpoints}`); // input + loop per turn, plus the first input

    await page.reload();
    await ready();
    const after = {
      humans: await page.locator(".msg.human p").allTextContents(),
      ais: await page.locator(".msg.ai p").allTextContents(),
      checkpoints: await page.locator("#history tr").count(),
    };
    assert.deepEqual(after, before);
    // Snapshots and deltas both show up in the history (K = 4).
    const tags = await page.locator("#history .tag").allTextContents();
    assert.ok(tags.includes("snapshot") && tags.includes("delta"), tags.join(","));
    const storage = await page.locator("#storage").innerText();
    assert.match(storage, /On disk in OPFS[\s\S]*KB/);

    fs.mkdirSync(path.join(here, "test-results"), { recursive: true });
    await page.screenshot({ path: path.join(here, "test-results", "demo.png") });
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});

