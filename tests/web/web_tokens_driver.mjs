// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web_tokens.pgt: Debian's Chromium (playwright-core) on
// the page tests/web/page.html, the stack behind nginx's auth_request to the test's token
// endpoint. The page's token() hands out the tokens given, one per call, and counts its
// calls. Prints one JSON object of what each step saw.
// Usage: node web_tokens_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR STALE GOOD BAD

import { chromiumOf, launch, openPage } from "./web_browser.mjs";

const [pwDir, base, profile, stale, good, bad] = process.argv.slice(2);
const context = await launch(chromiumOf(pwDir), profile);
const out = { console: [] };
const page = () => openPage(context, base + "/web/page.html", (line) => out.console.push(line));
const opts = { name: "tokens.db", pollIntervalMs: 600000 };
try {
  // 1. the first token the page gives is refused (401): the worker asks for a fresh one and
  // sends the same request again; a write then syncs under it.
  const p = await page();
  out.first = await p.evaluate(async ({ base, tokens, opts }) => {
    const given = [...tokens];
    window.asks = 0;
    const s = await window.Synchro.open(base, { ...opts, token: async () => (window.asks++, given.shift() ?? "") });
    window.s = s;
    await s.sync(30000);
    const id = crypto.randomUUID();
    const [mid] = await s.transaction((tx) => tx.insert("todo", id, { title: "by bearer token", done: false }));
    const status = await s.sync(30000);
    return { id, mid, status, asks: window.asks, row: await s.get("todo", id), owner: s.owner };
  }, { base, tokens: [stale, good, good], opts });

  // 2. a second tab of the store whose token is refused: never signed in.
  const p2 = await page();
  out.badTab = await p2.evaluate(async ({ base, bad, opts }) => {
    let asks = 0;
    try {
      await window.Synchro.open(base, { ...opts, token: async () => (asks++, bad) });
      return { opened: true, asks };
    } catch (e) {
      return { rc: e.rc, message: e.message, asks };
    }
  }, { base, bad, opts });
  await p2.close();

  // 3. a second tab with a good token joins (the owner's worker answers it).
  const p3 = await page();
  out.goodTab = await p3.evaluate(async ({ base, good, opts, id }) => {
    const s = await window.Synchro.open(base, { ...opts, token: async () => good });
    return { owner: s.owner, row: await s.get("todo", id) };
  }, { base, good, opts, id: out.first.id });
  await p3.close();
  // 4. no token function: refused at once.
  out.noFn = await p.evaluate(async ({ base }) => {
    try {
      await window.Synchro.open(base, { name: "x.db" });
      return { opened: true };
    } catch (e) {
      return { rc: e.rc };
    }
  }, { base });
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
