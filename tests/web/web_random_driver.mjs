// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web_random.pgt: Debian's Chromium driven by
// playwright-core (the launch of web_browser.mjs), one fresh profile, one store on the test
// page. Each line on stdin is a JSON command (a transaction, a sync, resolutions, a look at
// the store), answered by one JSON line on stdout, so that the Python side can write on the
// server between the steps and check the store after each.
// Usage: node web_random_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR USER PASSWORD

import { createInterface } from "node:readline";
import { chromiumOf, launch, openPage } from "./web_browser.mjs";

const [pwDir, base, profile, user, password] = process.argv.slice(2);
const context = await launch(chromiumOf(pwDir), profile);
const consoleLines = [];
const page = await openPage(context, base + "/web/page.html", consoleLines);
let rebuildPages = 0; // the store's /v3/rebuild requests (its worker's, which the context sees)
context.on("request", (r) => {
  if (new URL(r.url()).pathname === "/v3/rebuild") rebuildPages++;
});

const steps = {
  open: () =>
    page.evaluate(async ({ base, user, password }) => {
      window.s = await window.Synchro.open(base, user, password, { name: user + ".db", pollIntervalMs: 600000 });
      return window.s.status();
    }, { base, user, password }),
  // writes: [{op, id, title?, done?}]; a refused transaction answers its error (nothing written).
  tx: ({ writes, atomic }) =>
    page.evaluate(async ({ writes, atomic }) => {
      try {
        const mids = await window.s.transaction((tx) => {
          for (const w of writes) {
            const cols = {};
            if (w.title !== undefined) cols.title = w.title;
            if (w.done !== undefined) cols.done = w.done;
            if (w.op === "insert") tx.insert("todo", w.id, cols);
            else if (w.op === "update") tx.update("todo", w.id, cols);
            else tx.delete("todo", w.id);
          }
        }, { atomic });
        return { mids };
      } catch (e) {
        return { rc: e.rc, message: e.message };
      }
    }, { writes, atomic }),
  sync: () =>
    page.evaluate(async () => {
      try {
        return { status: await window.s.sync(30000) };
      } catch (e) {
        return { rc: e.rc, message: e.message, status: await window.s.status() };
      }
    }),
  // Every intent that needs the user, settled: a conflict by hows[k % hows.length] (its
  // k-th), anything else discarded.
  resolve: ({ hows }) =>
    page.evaluate(async ({ hows }) => {
      const done = [];
      let k = 0;
      for (const i of await window.s.pending()) {
        if (["pending", "waiting", "sealed"].includes(i.state)) continue;
        const how = i.state === "conflict" ? hows[k++ % hows.length] : "discard";
        try {
          await window.s.resolve(how, i.mutation_id);
          done.push([i.state, how]);
        } catch (e) {
          done.push([i.state, how, e.rc + ": " + e.message]);
        }
      }
      return { done };
    }, { hows }),
  // What the store holds: verify() (the maintained tables against the overlay computed
  // from scratch among its checks), the visible rows as query() reads them, the intents.
  look: async () => ({
    rebuildPages,
    ...(await page.evaluate(async () => {
      const s = window.s;
      return {
        verify: await s.verify(),
        visible: await s.query("SELECT id, title, done, _state FROM todo ORDER BY id"),
        rows: await s.rows("todo"),
        intents: (await s.pending()).map((i) => i.state),
        status: await s.status(),
      };
    })),
  }),
};

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  let out;
  try {
    out = { ok: true, value: await steps[cmd.step](cmd) };
  } catch (e) {
    out = { ok: false, error: String(e && e.stack ? e.stack : e) };
  }
  out.console = consoleLines.splice(0);
  process.stdout.write(JSON.stringify(out) + "\n");
}
await context.close();
