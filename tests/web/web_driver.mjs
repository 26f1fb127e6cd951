// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web.pgt: Debian's Chromium driven by playwright-core
// (never a downloaded browser), one fresh profile. It runs the steps the test names on the
// page tests/web/page.html and prints one JSON object with what each step saw; the Python
// side checks it against the server.
// Usage: node web_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR LOG_DIR USER PASSWORD

import { createRequire } from "node:module";

const [pwDir, base, profile, logDir, user, password] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { chromium } = require(pwDir);

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const out = { console: [] };
const url = base + "/web/page.html";

async function page() {
  const p = await context.newPage();
  p.on("console", (m) => out.console.push(m.type() + ": " + m.text()));
  p.on("pageerror", (e) => out.console.push("pageerror: " + e.message));
  await p.goto(url);
  await p.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  return p;
}

const opts = { name: user + ".db", pollIntervalMs: 600000 };
try {
  // 0. a browser without OPFS sync access handles: a clear error at open.
  let p0 = await page();
  out.noOpfs = await p0.evaluate(async ({ base, user, password }) => {
    try {
      await window.Synchro.open(base, user, password, { name: "none.db", workerUrl: "/web/no-opfs-worker.js" });
      return { opened: true };
    } catch (e) {
      return { rc: e.rc, message: e.message };
    }
  }, { base, user, password });
  await p0.close();

  // 1. alice connects, writes two to-dos in one transaction, syncs.
  let p = await page();
  out.first = await p.evaluate(async ({ base, user, password, opts }) => {
    const s = await window.Synchro.open(base, user, password, opts);
    window.s = s;
    await s.sync(30000);
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    const mids = await s.transaction((tx) => {
      tx.insert("todo", ids[0], { title: "web one", done: false });
      tx.insert("todo", ids[1], { title: "web two", done: true });
    });
    const status = await s.sync(30000);
    return { ids, mids, status, rows: await s.rows("todo") };
  }, { base, user, password, opts });

  // 2. a reload: the store on OPFS still has them, before any sync.
  await p.reload();
  await p.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  out.reloaded = await p.evaluate(async ({ base, user, password, opts }) => {
    const s = await window.Synchro.open(base, user, password, opts);
    const rows = await s.rows("todo");
    const status = await s.status();
    await s.close();
    return { rows, status };
  }, { base, user, password, opts });

  // 3. an intent committed, and the tab closed at once (no unload handlers run).
  out.committed = await p.evaluate(async ({ base, user, password, opts }) => {
    const s = await window.Synchro.open(base, user, password, opts);
    const id = crypto.randomUUID();
    const [mid] = await s.transaction((tx) => tx.insert("todo", id, { title: "web kept", done: false }));
    return { id, mid };
  }, { base, user, password, opts });
  const cdp = await context.newCDPSession(p);
  const { targetInfo } = await cdp.send("Target.getTargetInfo");
  await cdp.send("Target.closeTarget", { targetId: targetInfo.targetId }).catch(() => p.close());
  out.closed_by = "Target.closeTarget";

  // 4. a new page: the intent is there, and syncs.
  p = await page();
  out.after = await p.evaluate(async ({ base, user, password, opts, id, mid }) => {
    const s = await window.Synchro.open(base, user, password, opts);
    window.s = s;
    const before = await s.get("todo", id);
    const intents = await s.pending(true);
    const status = await s.sync(30000);
    const row = await s.get("todo", id);
    const intent = (await s.pending(true)).find((i) => i.mutation_id === mid);
    await window.render(s);
    const found = intents.find((i) => i.mutation_id === mid);
    return { before, known: !!found, stateBefore: found ? found.state : null, status, row, intent };
  }, { base, user, password, opts, id: out.committed.id, mid: out.committed.mid });
  await p.screenshot({ path: logDir + "/web-todos.png" });
  out.screenshot = logDir + "/web-todos.png";
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
