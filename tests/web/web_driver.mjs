// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web.pgt: Debian's Chromium driven by playwright-core
// (never a downloaded browser), one fresh profile. It runs the steps the test names on the
// page tests/web/page.html and prints one JSON object with what each step saw; the Python
// side checks it against the server.
// Usage: node web_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR LOG_DIR USER PASSWORD

import { chromiumOf, killTab, launch, openPage } from "./web_browser.mjs";

const [pwDir, base, profile, logDir, user, password] = process.argv.slice(2);
const chromium = chromiumOf(pwDir);

const context = await launch(chromium, profile);
const out = { console: [] };
const url = base + "/web/page.html";
const log = (line) => out.console.push(line);
const page = () => openPage(context, url, log);

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
  await killTab(context, p, "close");
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

  // 5. query: read-only SQL over the visible rows; writes, ATTACH and PRAGMA refused.
  out.query = await p.evaluate(async () => {
    const s = window.s;
    const open = await s.query("SELECT id, title, done, _state FROM todo WHERE done = ? ORDER BY title", [false]);
    const refused = {};
    for (const sql of ["DELETE FROM todo", "UPDATE todo SET title = 'x'", "ATTACH 'alice.db' AS store",
                       "PRAGMA table_info(todo)", "SELECT 1; DELETE FROM todo", "SELECT * FROM intents"]) {
      try {
        await s.query(sql);
        refused[sql] = null;
      } catch (e) {
        refused[sql] = { rc: e.rc, message: e.message };
      }
    }
    const count = await s.query("SELECT count(*) AS n FROM todo");
    // the app's index, and the plan that uses it
    const plan = "EXPLAIN QUERY PLAN SELECT id FROM todo WHERE done = ? ORDER BY title";
    const before = await s.query(plan, [0]);
    await s.index("todo", ["done", "title"]);
    const after = await s.query(plan, [0]);
    let badIndex = null;
    try {
      await s.index("todo", ["nosuch"]);
    } catch (e) {
      badIndex = { rc: e.rc, message: e.message };
    }
    // int64 values a JavaScript number cannot hold come back exact, as strings (as get() gives them)
    const ids = ["9007199254740991", "9007199254740992", "9007199254740993", "-9223372036854775808",
                 "9223372036854775807", "4242"];
    await s.transaction((tx) => ids.forEach((id) => tx.insert("item", id, { label: "int64 " + id, qty: 7 })));
    const ints = await s.query("SELECT id, id AS same, qty FROM item WHERE label LIKE 'int64 %' ORDER BY id");
    const byParam = await s.query("SELECT id FROM item WHERE id = ?", ["9007199254740993"]);
    const got = await s.get("item", "9007199254740993");
    return { open, refused, count, rows: (await s.rows("todo")).length, before, after, badIndex, ints, byParam, got };
  });

  // 6. a live query on the todos: it fires after a local insert, and after a sync brings
  // the row another device (a second browser profile of the same user) pushed.
  await p.evaluate(async () => {
    window.liveSeen = [];
    window.liveStop = await window.s.live("SELECT title FROM todo WHERE title LIKE ? ORDER BY title", ["web%"],
      (rows, err) => window.liveSeen.push(err ? "error: " + err.message : rows.map((r) => r.title)));
  });
  const liveCount = () => p.evaluate(() => window.liveSeen.length);
  const liveInsert = await p.evaluate(async () => {
    const id = crypto.randomUUID();
    await window.s.transaction((tx) => tx.insert("todo", id, { title: "web live", done: false }));
    return id;
  });
  await p.waitForFunction(() => window.liveSeen.length >= 2, null, { timeout: 20000 });
  const other = await launch(chromium, profile + "-b", { quiet: false });
  try {
    const q = await openPage(other, url, log, "device b ");
    out.deviceB = await q.evaluate(async ({ base, user, password, opts }) => {
      const s = await window.Synchro.open(base, user, password, opts);
      await s.sync(30000);
      const id = crypto.randomUUID();
      await s.transaction((tx) => tx.insert("todo", id, { title: "web other device", done: false }));
      const status = await s.sync(30000);
      await s.close();
      return { id, status };
    }, { base, user, password, opts });
  } finally {
    await other.close();
  }
  const beforeSync = await liveCount();
  await p.evaluate(() => window.s.sync(30000));
  await p.waitForFunction((n) => window.liveSeen.length > n, beforeSync, { timeout: 20000 });
  out.live = await p.evaluate(async () => {
    window.liveStop();
    const n = window.liveSeen.length;
    const id = crypto.randomUUID();
    await window.s.transaction((tx) => tx.insert("todo", id, { title: "web after stop", done: false }));
    await window.s.sync(30000);
    return { seen: window.liveSeen, afterStop: window.liveSeen.length - n };
  });
  out.live.localId = liveInsert;

  // 7. a conflict: device b changes "web one" and syncs; this device, which has not pulled
  // since, changes it too from its stale copy and syncs: the server refuses it (conflict).
  // explain() shows the server's row; resolve() rebases it onto that row; verify() is clean.
  const other2 = await launch(chromium, profile + "-b", { quiet: false });
  try {
    const q = await openPage(other2, url, log, "device b ");
    out.deviceB2 = await q.evaluate(async ({ base, user, password, opts, id }) => {
      const s = await window.Synchro.open(base, user, password, opts);
      await s.sync(30000);
      const [mid] = await s.transaction((tx) => tx.update("todo", id, { title: "web one, by device b" }));
      const status = await s.sync(30000);
      const intent = (await s.pending(true)).find((i) => i.mutation_id === mid);
      await s.close();
      return { status, intent };
    }, { base, user, password, opts, id: out.first.ids[0] });
  } finally {
    await other2.close();
  }
  out.conflict = await p.evaluate(async ({ id }) => {
    const s = window.s;
    const [mid] = await s.transaction((tx) => tx.update("todo", id, { title: "web one, by device a" }));
    await s.sync(30000);
    const intent = (await s.pending(true)).find((i) => i.mutation_id === mid);
    const row = await s.get("todo", id);
    const explained = await s.explain(mid);
    let bad = null;
    try {
      await s.resolve("sideways", mid);
    } catch (e) {
      bad = { rc: e.rc, message: e.message };
    }
    const successor = await s.resolve("rebase", mid);
    const status = await s.sync(30000);
    const resolved = (await s.pending(true)).find((i) => i.mutation_id === mid);
    const next = (await s.pending(true)).find((i) => i.mutation_id === successor);
    const verify = await s.verify();
    return { mid, intent, row, explained, bad, successor, status, resolved, next, after: await s.get("todo", id), verify };
  }, { id: out.first.ids[0] });

  // 8a. a second tab of the store with a wrong password: refused before it is signed in
  // (the owner's worker would otherwise answer it with the owner's credentials).
  const pw = await page();
  out.wrongTab = await pw.evaluate(async ({ base, user, opts }) => {
    try {
      const s = await window.Synchro.open(base, user, "not-" + user, opts);
      return { opened: true, owner: s.owner, rows: (await s.rows("todo")).length };
    } catch (e) {
      return { rc: e.rc, message: e.message };
    }
  }, { base, user, opts });
  await pw.close();

  // 8. two tabs on one store: the second tab's calls go to the first (which owns it); the
  // first tab closed, the second takes the store over and syncs.
  const p2 = await page();
  out.tabs = await p2.evaluate(async ({ base, user, password, opts }) => {
    const s = await window.Synchro.open(base, user, password, opts);
    window.s = s;
    const id = crypto.randomUUID();
    const [mid] = await s.transaction((tx) => tx.insert("todo", id, { title: "web from tab two", done: false }));
    return { owner: s.owner, id, mid, row: await s.get("todo", id) };
  }, { base, user, password, opts });
  out.tabs.firstSees = await p.evaluate(async (id) => {
    await window.s.sync(30000);
    return { owner: window.s.owner, row: await window.s.get("todo", id) };
  }, out.tabs.id);
  await killTab(context, p, "close");
  await p2.waitForFunction(() => window.s.owner === true, null, { timeout: 20000 });
  out.tabs.after = await p2.evaluate(async ({ id, mid }) => {
    const id2 = crypto.randomUUID();
    await window.s.transaction((tx) => tx.insert("todo", id2, { title: "web after handover", done: false }));
    const status = await window.s.sync(30000);
    const mine = (await window.s.pending(true)).filter((i) => i.mutation_id === mid);
    return { owner: window.s.owner, id2, status, row: await window.s.get("todo", id), row2: await window.s.get("todo", id2), mine };
  }, { id: out.tabs.id, mid: out.tabs.mid });
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
