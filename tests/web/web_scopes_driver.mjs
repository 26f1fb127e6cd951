// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web_scopes.pgt: Debian's Chromium driven by playwright-core,
// one fresh profile, bob's store. It prints one JSON line per step and waits for a line on its
// stdin between them, while the Python side shares and unshares the list on the server.
// Usage: node web_scopes_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR USER PASSWORD LIST_ID

import { createInterface } from "node:readline";
import { chromiumOf, launch, openPage } from "./web_browser.mjs";

const [pwDir, base, profile, user, password, list] = process.argv.slice(2);
const context = await launch(chromiumOf(pwDir), profile);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const console_ = [];
const say = (o) => process.stdout.write(JSON.stringify({ ...o, console: console_ }) + "\n");

try {
  const p = await openPage(context, base + "/web/page.html", (line) => console_.push(line));
  // 1. bob's store: a first sync, a live query on the shared list's to-dos.
  say(await p.evaluate(async ({ base, user, password, list }) => {
    const s = await window.Synchro.open(base, user, password, { name: user + ".db", pollIntervalMs: 600000 });
    window.s = s;
    window.seen = [];
    await s.sync(30000);
    await s.live("SELECT id, title FROM todo WHERE list_id = ? ORDER BY id", [list],
      (rows) => window.seen.push(rows.map((r) => r.id)));
    const wait = async (pred) => {
      for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 50));
    };
    await wait(() => window.seen.length > 0);
    return { step: "shared", ids: window.seen[window.seen.length - 1] };
  }, { base, user, password, list }));
  await lines.next();
  // 2. the removal is on the server, not yet in bob's store: he edits a row of the list (the
  // client sends it when it can), then syncs; the live query sees the rows go.
  say(await p.evaluate(async () => {
    const s = window.s;
    const id = window.seen[window.seen.length - 1][0];
    const [mid] = await s.transaction((tx) => tx.update("todo", id, { title: "bob offline" }));
    window.mid = mid;
    const row = await s.get("todo", id);
    const before = window.seen.length;
    const status = await s.sync(30000);
    for (let i = 0; i < 200 && window.seen[window.seen.length - 1].length > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const pending = await s.pending();
    const explain = await s.explain(window.mid);
    await s.resolve("discard", window.mid);
    return { step: "removed", mid, row, before, seen: window.seen, status, pending, explain,
      after: await s.pending(), rows: await s.query("SELECT id FROM todo", []),
      explainAfter: await s.explain(window.mid) };
  }));
} catch (e) {
  say({ error: String(e && e.stack ? e.stack : e) });
} finally {
  await context.close();
}
