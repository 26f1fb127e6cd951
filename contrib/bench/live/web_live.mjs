// SPDX-License-Identifier: BSD-2-Clause
// The browser device of contrib/bench/live (bench.py drives it): Debian's Chromium through
// playwright-core (never a downloaded browser), one fresh profile, the browser client
// (src/web/dist) served by the bench's nginx under /web/ beside web_bench.html. The page
// opens a store for USER (live updates on, poll 30 s), syncs once, then keeps a live query
// on the user's to-dos. It prints one JSON line when it is subscribed, {"ready": true}, then
// one line per to-do id the live() callback sees for the first time: {"pk": ID, "m": M}, M
// the moment the callback's call reached this process (a hop of the browser's protocol
// after the callback), in ms on CLOCK_MONOTONIC (process.hrtime), the bench's clock
// (watch.py); the page's own clocks are another source and are not used. It ends when
// stdin closes.
// Usage: node web_live.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR USER PASSWORD

import { createRequire } from "node:module";

const [pwDir, base, profile, user, password] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { chromium } = require(pwDir);

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
  ],
});
const p = await context.newPage();
p.on("pageerror", (e) => process.stderr.write("web_live: pageerror: " + e.message + "\n"));
await p.exposeFunction("benchSeen", (pk) => {
  const m = Number(process.hrtime.bigint()) / 1e6;
  process.stdout.write(JSON.stringify({ pk, m }) + "\n");
});
await p.goto(base + "/web/web_bench.html");
await p.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
await p.evaluate(async ({ base, user, password }) => {
  const s = await window.Synchro.open(base, user, password, { name: "live-bench.db", pollIntervalMs: 30000 });
  window.s = s;
  await s.sync(60000);
  const seen = new Set();
  let first = true;
  await s.live("SELECT id FROM todo", [], (rows, err) => {
    if (err) return;
    for (const r of rows) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      if (!first) window.benchSeen(r.id);
    }
    first = false;
  });
}, { base, user, password });
process.stdout.write(JSON.stringify({ ready: true }) + "\n");

process.stdin.resume();
await new Promise((resolve) => process.stdin.on("end", resolve));
await context.close();
