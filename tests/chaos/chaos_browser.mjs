// SPDX-License-Identifier: BSD-2-Clause
// The chaos suite's browser device, the browser half (tests/chaos/chaos_browser.py is the
// other): one Chromium profile (playwright-core, Debian's Chromium) with one page holding
// one store of the browser client, driven by JSON lines: each line on stdin is a command
// {id, op, ...}, each answer one line on stdout {id, ok, value | error}, in order. The page's
// origin is the fault proxy's; its files (/web/) are served from the web build by route
// interception, so that only the API's requests go through the proxy, as the other
// devices' do.
// Usage: node chaos_browser.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR DIST_DIR PAGE_DIR USER PASSWORD
// Commands: open; tx {writes, atomic}; sync {timeoutMs}; syncKill {timeoutMs, afterMs} (a
// sync whose tab is killed by CDP Target.closeTarget after afterMs, then the store reopened
// in a new page); idle {ms}; resolve {how, mutationId, columns}; records; status; quit.

import { createInterface } from "node:readline";
import { chromiumOf, killTab, launch, openPage, serveWeb } from "../web/web_browser.mjs";

const [pwDir, base, profile, dist, pageDir, user, password] = process.argv.slice(2);
const context = await launch(chromiumOf(pwDir), profile);
await serveWeb(context, base, dist, pageDir);
// The poll brings the other devices' changes during idle stretches (op idle).
const opts = { name: user + ".db", pollIntervalMs: 2000, requestTimeoutMs: 15000 };
let page = null;
const log = (line) => process.stderr.write(line + "\n");

// A new page with the store open (a few tries: a page of a killed tab may still hold the
// store's files for a moment).
async function open() {
  let last = null;
  for (let k = 0; k < 5; k++) {
    if (page && !page.isClosed()) await page.close().catch(() => undefined);
    page = null;
    try {
      const p = await openPage(context, base + "/web/page.html", log, "page: ");
      const st = await p.evaluate(async ({ base, user, password, opts }) => {
        window.s = await window.Synchro.open(base, user, password, opts);
        return window.s.status();
      }, { base, user, password, opts });
      page = p;
      return st;
    } catch (e) {
      last = e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw last;
}

async function ready() {
  if (!page || page.isClosed()) await open();
  return page;
}

// An app call in the page: its value, or {error: {rc, message}} when the API refused it.
async function call(fn, arg) {
  const p = await ready();
  return p.evaluate(fn, arg);
}

const ops = {
  open: () => open(),
  status: () => call(() => window.s.status()),
  records: () => call(() => window.s.records()),
  tx: (c) => call(async ({ writes, atomic }) => {
    try {
      const mids = await window.s.transaction((tx) => {
        for (const w of writes) {
          if (w.op === "delete") tx.delete(w.table, w.pk);
          else tx[w.op](w.table, w.pk, w.columns);
        }
      }, { atomic });
      return { mids };
    } catch (e) {
      return { error: { rc: e.rc, message: e.message } };
    }
  }, c),
  sync: (c) => call(async (timeoutMs) => {
    try {
      return { status: await window.s.sync(timeoutMs) };
    } catch (e) {
      return { error: { rc: e.rc, message: e.message }, status: await window.s.status() };
    }
  }, c.timeoutMs),
  syncKill: async (c) => {
    const p = await ready();
    await p.evaluate((timeoutMs) => {
      window.syncEnd = null;
      window.s.sync(timeoutMs).then((st) => (window.syncEnd = st.phase), (e) => (window.syncEnd = "error " + e.rc));
    }, c.timeoutMs);
    const until = Date.now() + c.afterMs;
    let ended = null;
    while (Date.now() < until && ended === null) {
      await new Promise((r) => setTimeout(r, Math.min(20, Math.max(0, until - Date.now()))));
      ended = await p.evaluate(() => window.syncEnd);
    }
    if (ended !== null) return { ended };
    await killTab(context, p, "close");
    page = null;
    await open();
    return { killed: true };
  },
  // An idle stretch: no call of the app's for ms; the cursor before and after it (only the
  // poll may have moved it).
  idle: async (c) => {
    const before = await call(() => window.s.status());
    await new Promise((r) => setTimeout(r, c.ms));
    const after = await call(() => window.s.status());
    return { before: before.cursor, after: after.cursor };
  },
  resolve: (c) => call(async ({ how, mutationId, columns }) => {
    try {
      return { successor: await window.s.resolve(how, mutationId, columns) };
    } catch (e) {
      return { error: { rc: e.rc, message: e.message } };
    }
  }, c),
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const c = JSON.parse(line);
  if (c.op === "quit") break;
  let reply;
  try {
    reply = { id: c.id, ok: true, value: await ops[c.op](c) };
  } catch (e) {
    reply = { id: c.id, ok: false, error: String(e && e.stack ? e.stack : e) };
    if (page && page.isClosed()) page = null;
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
await context.close();
