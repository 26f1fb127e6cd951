// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web_faults.pgt: the browser client under faults, in
// Debian's Chromium driven by playwright-core. Two profiles of alice are two devices (a
// and b). The network is cut with context.setOffline; answers are dropped, replaced or held
// with route interception (context.route sees the store's worker's fetches). The test
// sends one line per case, {"run": NAME}; the driver runs it and answers one line,
// {"result": ...} or {"error": ...}. Mid-case it may ask the test for something (the
// server's rows, a schema publish) with {"ask": ...} and reads the answer's line.
// Usage: node web_faults_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR USER PASSWORD

import { createInterface } from "node:readline";
import { chromiumOf, closeTab, launch, openPage } from "./web_browser.mjs";

const [pwDir, base, profile, user, password] = process.argv.slice(2);
const chromium = chromiumOf(pwDir);
const url = base + "/web/page.html";
const log = [];
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const devices = {};

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

/** Asks the test for something (what, with args) and waits for its answer. */
async function ask(what, args = {}) {
  send({ ask: what, ...args });
  const { value, done } = await lines.next();
  if (done) throw new Error("the test went away");
  return JSON.parse(value);
}

/** The browser of device name ("a", "b"): its own profile, launched once. */
async function device(name) {
  if (!devices[name]) devices[name] = await launch(chromium, profile + "-" + name);
  return devices[name];
}

/** A tab of device name with the store called store open in window.s, as who. */
async function tab(name, store, who = user, pw = password) {
  const p = await openPage(await device(name), url, log, "device " + name);
  await p.evaluate(async ({ base, who, pw, store }) => {
    window.s = await window.Synchro.open(base, who, pw, { name: store, pollIntervalMs: 600000 });
  }, { base, who, pw, store });
  return p;
}

/** A condition on the page, polled (bounded), instead of a sleep. */
function until(p, fn, arg, timeout = 30000) {
  return p.waitForFunction(fn, arg, { timeout, polling: 100 });
}

/** Resolves once the n-th intercepted request of arr was answered (bounded). */
async function served(arr, n, timeout = 60000) {
  const start = Date.now();
  while (!(arr.length >= n && arr[n - 1].served)) {
    if (Date.now() - start > timeout) throw new Error("request " + n + " was never answered");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the page's window.pendingSync settled to, or "never answered" after 60 s. */
function pendingSync(p) {
  return p.evaluate(() =>
    Promise.race([window.pendingSync, new Promise((r) => setTimeout(() => r("never answered"), 60000))]));
}

/** A one-shot gate: open() lets every waiter of wait() through. */
function gate() {
  let open;
  const wait = new Promise((r) => (open = r));
  return { wait, open };
}

// In the page: what a store knows, for the test to compare.
const snapshot = async () => {
  const s = window.s;
  return { status: await s.status(), intents: await s.pending(true), rows: await s.rows("todo") };
};

const cases = {
  // 1. Two devices edit offline (the same row and rows of their own), come back, converge.
  async converge() {
    const pa = await tab("a", "converge.db");
    const pb = await tab("b", "converge.db");
    const shared = await pa.evaluate(async () => {
      await window.s.sync(30000);
      const id = crypto.randomUUID();
      await window.s.transaction((tx) => tx.insert("todo", id, { title: "shared", done: false }));
      await window.s.sync(30000);
      return id;
    });
    const bSees = await pb.evaluate(async (id) => {
      await window.s.sync(30000);
      return window.s.get("todo", id);
    }, shared);
    const [ca, cb] = [await device("a"), await device("b")];
    await ca.setOffline(true);
    await cb.setOffline(true);
    const offline = async (p, who) =>
      p.evaluate(async ({ shared, who }) => {
        const s = window.s;
        const id = crypto.randomUUID();
        const mids = await s.transaction((tx) => tx.insert("todo", id, { title: "offline " + who, done: false }));
        mids.push(...(await s.transaction((tx) => tx.update("todo", shared, { title: "shared, by " + who }))));
        const own = crypto.randomUUID();
        mids.push(...(await s.transaction((tx) => tx.insert("todo", own, { title: "short-lived " + who, done: false }))));
        mids.push(...(await s.transaction((tx) => tx.delete("todo", own))));
        let err = null;
        try {
          await s.sync(1500);
        } catch (e) {
          err = { rc: e.rc, message: e.message };
        }
        return { id, mids, err, status: await s.status(), rows: await s.rows("todo") };
      }, { shared, who });
    const a = await offline(pa, "a");
    const b = await offline(pb, "b");
    const serverOffline = await ask("server_rows", { ids: [a.id, b.id, shared] });
    const online = (p) =>
      p.evaluate(async () => {
        await window.s.sync(60000);
      });
    // a comes back first and syncs; only then b. (A store keeps stepping on its own: b,
    // back online at the same time, could retry its push on its backoff before a's sync.)
    await ca.setOffline(false);
    await online(pa);
    await cb.setOffline(false);
    await online(pb);
    // b's edit of the shared row came second: a conflict, explained, with the server's row.
    const conflict = await pb.evaluate(async (shared) => {
      const s = window.s;
      const c = (await s.pending(true)).filter((i) => i.state === "conflict");
      const explained = c.length ? await s.explain(c[0].mutation_id) : null;
      const row = await s.get("todo", shared);
      if (c.length) await s.resolve("accept", c[0].mutation_id);
      await s.sync(30000);
      return { conflicts: c, explained, row };
    }, shared);
    await online(pa);
    const out = { shared, bSees, a, b, serverOffline, conflict, afterA: await pa.evaluate(snapshot), afterB: await pb.evaluate(snapshot) };
    await pa.close();
    await pb.close();
    return out;
  },

  // 2. A push answered after the server committed, the answer dropped: the same sealed
  // batch again, the exact replay, the state of a run without the drop.
  async drop() {
    const ctx = await device("a");
    const seen = [];
    await ctx.route("**/v3/push", async (route) => {
      const request = route.request().postData();
      const resp = await route.fetch();
      const body = await resp.text();
      seen.push({ status: resp.status(), replay: resp.headers()["synchro-replay"] ?? null, body, request });
      if (seen.length === 1) await route.abort("connectionreset");
      else await route.fulfill({ response: resp });
    });
    const p = await tab("a", "drop.db");
    const out = await p.evaluate(async () => {
      const s = window.s;
      await s.sync(30000);
      const ids = [crypto.randomUUID(), crypto.randomUUID()];
      const mids = await s.transaction((tx) => {
        tx.insert("todo", ids[0], { title: "dropped one", done: false });
        tx.insert("todo", ids[1], { title: "dropped two", done: true });
      });
      await s.sync(60000);
      return { ids, mids };
    });
    await ctx.unroute("**/v3/push");
    out.seen = seen;
    out.after = await p.evaluate(snapshot);
    out.verify = await p.evaluate(() => window.s.verify());
    await p.close();
    // a store that never saw the drop: the same rows
    const q = await tab("a", "drop-fresh.db");
    out.fresh = await q.evaluate(async () => {
      await window.s.sync(30000);
      return window.s.rows("todo");
    });
    await q.close();
    const r = await tab("a", "drop.db");
    out.again = await r.evaluate(async () => {
      await window.s.sync(30000);
      return window.s.rows("todo");
    });
    await r.close();
    return out;
  },

  // 3. An atomic transaction with an insert of a pk another device already inserted: the
  // server applies none of it; every member is kept and explained.
  async atomic() {
    const p = await tab("a", "atomic.db");
    const out = await p.evaluate(async ({ base, user, password }) => {
      const s = window.s;
      await s.sync(30000);
      const other = await window.Synchro.open(base, user, password, { name: "atomic-other.db", pollIntervalMs: 600000 });
      await other.sync(30000);
      const taken = crypto.randomUUID();
      await other.transaction((tx) => tx.insert("todo", taken, { title: "the other device's", done: false }));
      await other.sync(30000);
      await other.close();
      const fresh = crypto.randomUUID();
      const mids = await s.transaction((tx) => {
        tx.insert("todo", fresh, { title: "atomic fresh", done: false });
        tx.insert("todo", taken, { title: "atomic taken", done: false });
      }, { atomic: true });
      let err = null;
      try {
        await s.sync(30000);
      } catch (e) {
        err = { rc: e.rc, message: e.message };
      }
      const intents = (await s.pending(true)).filter((i) => mids.includes(i.mutation_id));
      const explained = {};
      for (const m of mids) explained[m] = await s.explain(m);
      return {
        fresh, taken, mids, err, intents, explained, status: await s.status(),
        rowFresh: await s.get("todo", fresh), rowTaken: await s.get("todo", taken),
      };
    }, { base, user, password });
    await p.close();
    return out;
  },

  // 4. bob's browser never shows alice's rows: rows, query, live, get.
  async isolation() {
    const p = await tab("a", "iso-alice.db");
    const alice = await p.evaluate(async () => {
      await window.s.sync(30000);
      const id = crypto.randomUUID();
      await window.s.transaction((tx) => tx.insert("todo", id, { title: "alice only", done: false }));
      await window.s.sync(30000);
      await window.s.close();
      return id;
    });
    const out = await p.evaluate(async ({ base, alice, user, password }) => {
      const s = await window.Synchro.open(base, "bob", "bob", { name: "bob.db", pollIntervalMs: 600000 });
      await s.sync(30000);
      const seen = [];
      const stop = await s.live("SELECT id, title FROM todo ORDER BY title", [], (rows) => seen.push(rows));
      const id = crypto.randomUUID();
      await s.transaction((tx) => tx.insert("todo", id, { title: "bob's own", done: false }));
      await s.sync(30000);
      // alice writes again while bob's live query runs; bob pulls after her
      const a = await window.Synchro.open(base, user, password, { name: "iso-alice.db", pollIntervalMs: 600000 });
      const later = crypto.randomUUID();
      await a.transaction((tx) => tx.insert("todo", later, { title: "alice only, later", done: false }));
      await a.sync(30000);
      await a.close();
      await s.sync(30000);
      const rows = await s.rows("todo");
      const query = await s.query("SELECT id, title FROM todo");
      const get = await s.get("todo", alice);
      stop();
      const status = await s.status();
      await s.close();
      return { id, later, seen, rows, query, get: get ?? null, status };
    }, { base, alice, user, password });
    out.alice = alice;
    await p.close();
    return out;
  },

  // 6. Broken answers: a malformed and a truncated body for a push, then for a pull; each
  // time a clear error in status(), nothing applied, the sealed batch kept; then the real
  // server completes the sync once.
  async hostile() {
    const ctx = await device("a");
    const p = await tab("a", "hostile.db");
    await p.evaluate(() => window.s.sync(30000));
    // a row of another device, for the broken pulls to not bring
    const other = await p.evaluate(async ({ base, user, password }) => {
      const o = await window.Synchro.open(base, user, password, { name: "hostile-other.db", pollIntervalMs: 600000 });
      await o.sync(30000);
      const id = crypto.randomUUID();
      await o.transaction((tx) => tx.insert("todo", id, { title: "pulled late", done: false }));
      await o.sync(30000);
      await o.close();
      return id;
    }, { base, user, password });
    const push = [];
    const pushGate = [gate(), gate()];
    await ctx.route("**/v3/push", async (route) => {
      const n = push.length;
      const entry = { request: route.request().postData() };
      push.push(entry);
      if (n === 0) {
        entry.served = "malformed";
        await route.fulfill({ status: 200, contentType: "application/json", body: '{"results": [{"mutation_id": ' });
        return;
      }
      if (n <= 2) await pushGate[n - 1].wait;
      const resp = await route.fetch();
      const body = await resp.text();
      Object.assign(entry, { status: resp.status(), replay: resp.headers()["synchro-replay"] ?? null, body });
      if (n === 1) {
        entry.served = "truncated";
        await route.fulfill({ status: 200, contentType: "application/json", body: body.slice(0, Math.floor(body.length / 2)) });
      } else {
        entry.served = "real";
        await route.fulfill({ response: resp });
      }
    });
    const out = await p.evaluate(async () => {
      const id = crypto.randomUUID();
      const mids = await window.s.transaction((tx) => tx.insert("todo", id, { title: "through a broken server", done: false }));
      window.pendingSync = window.s.sync(120000).then(() => "ok", (e) => e.rc + ": " + e.message);
      return { id, mids };
    });
    out.other = other;
    // what the store says of the intent now
    const look = (p) =>
      p.evaluate(async (ids) => {
        const s = window.s;
        return { status: await s.status(), intents: (await s.pending(true)).filter((i) => ids.includes(i.mutation_id)) };
      }, out.mids);
    // the answer served (route), then the client done with it: backing off, the error noted
    const handled = async (arr, n) => {
      await served(arr, n);
      await until(p, async () => {
        const st = await window.s.status();
        return st.phase === "backoff" && st.last_error === "invalid_response";
      }, null);
    };
    await handled(push, 1);
    out.afterMalformed = await look(p);
    pushGate[0].open();
    await handled(push, 2);
    out.afterTruncated = await look(p);
    const pull = [];
    const pullGate = gate();
    await ctx.route("**/v3/pull", async (route) => {
      const n = pull.length;
      const entry = {};
      pull.push(entry);
      if (n === 0) {
        entry.served = "malformed";
        await route.fulfill({ status: 200, contentType: "application/json", body: '{"changes": [{"table": "todo", "op": ' });
        return;
      }
      if (n === 1) await pullGate.wait;
      const resp = await route.fetch();
      const body = await resp.text();
      if (n === 1) {
        entry.served = "truncated";
        await route.fulfill({ status: 200, contentType: "application/json", body: body.slice(0, Math.floor(body.length / 2)) });
      } else {
        entry.served = "real";
        await route.fulfill({ response: resp });
      }
    });
    pushGate[1].open(); // the real push: the replay of what the truncated answer hid
    await handled(pull, 1);
    out.afterPullMalformed = await look(p);
    out.afterPullMalformed.other = (await p.evaluate((id) => window.s.get("todo", id), out.other)) ?? null;
    pullGate.open();
    await handled(pull, 2);
    out.afterPullTruncated = await look(p);
    out.afterPullTruncated.other = (await p.evaluate((id) => window.s.get("todo", id), out.other)) ?? null;
    out.synced = await pendingSync(p);
    await ctx.unroute("**/v3/push");
    await ctx.unroute("**/v3/pull");
    out.final = await p.evaluate(async (ids) => {
      const s = window.s;
      await s.sync(60000);
      return {
        status: await s.status(),
        intents: (await s.pending(true)).filter((i) => ids.includes(i.mutation_id)),
        rows: await s.rows("todo"),
        verify: await s.verify(),
      };
    }, out.mids);
    out.push = push.map(({ body, ...rest }) => ({ ...rest, body: body ?? null }));
    out.pull = pull;
    await p.close();
    return out;
  },

  // 6b. A gateway's error pages instead of the server's answer to a push (502, then 504,
  // HTML): not the protocol's answer, so as no answer: retried with the same bytes, never
  // a frozen queue; then the real server applies the batch once.
  async gateway() {
    const ctx = await device("a");
    const p = await tab("a", "gateway.db");
    await p.evaluate(() => window.s.sync(30000));
    const push = [];
    const pages = [
      { status: 502, body: "<html><body><h1>502 Bad Gateway</h1></body></html>" },
      { status: 504, body: "<html><body><h1>504 Gateway Time-out</h1></body></html>" },
    ];
    const next = gate();
    await ctx.route("**/v3/push", async (route) => {
      const n = push.length;
      const entry = { request: route.request().postData() };
      push.push(entry);
      if (n === 1) await next.wait;
      if (n < pages.length) {
        await route.fulfill({ status: pages[n].status, contentType: "text/html", body: pages[n].body });
        entry.served = pages[n].status;
        return;
      }
      const resp = await route.fetch();
      entry.status = resp.status();
      await route.fulfill({ response: resp });
      entry.served = "real";
    });
    const out = await p.evaluate(async () => {
      const id = crypto.randomUUID();
      const mids = await window.s.transaction((tx) => tx.insert("todo", id, { title: "past a gateway", done: false }));
      window.pendingSync = window.s.sync(120000).then(() => "ok", (e) => e.rc + ": " + e.message);
      return { id, mids };
    });
    await served(push, 1);
    await until(p, async () => (await window.s.status()).phase !== "pushing", null);
    out.after502 = await p.evaluate(async (ids) => ({
      status: await window.s.status(),
      intents: (await window.s.pending(true)).filter((i) => ids.includes(i.mutation_id)),
    }), out.mids);
    next.open();
    out.synced = await pendingSync(p);
    out.final = await p.evaluate(async (ids) => ({
      status: await window.s.status(),
      intents: (await window.s.pending(true)).filter((i) => ids.includes(i.mutation_id)),
    }), out.mids);
    out.push = push;
    await p.close();
    return out;
  },

  // 7. The tab that owns the store closed while its push is on the wire (the server has it;
  // the answer never came): the other tab takes over and finishes, every intent once.
  async handover() {
    const ctx = await device("a");
    const p1 = await tab("a", "handover.db");
    await p1.evaluate(() => window.s.sync(30000));
    const p2 = await tab("a", "handover.db");
    const held = gate();
    const pushes = [];
    await ctx.route("**/v3/push", async (route) => {
      const entry = { request: route.request().postData() };
      pushes.push(entry);
      const resp = await route.fetch();
      entry.status = resp.status();
      entry.replay = resp.headers()["synchro-replay"] ?? null;
      if (pushes.length === 1) {
        entry.served = "held";
        held.open();
        return; // never answered: its tab is closed while it waits
      }
      entry.served = "real";
      await route.fulfill({ response: resp }).catch(() => undefined);
    });
    const first = await p2.evaluate(async () => {
      const id = crypto.randomUUID();
      const mids = await window.s.transaction((tx) => {
        tx.insert("todo", id, { title: "handed over", done: false });
        tx.insert("todo", crypto.randomUUID(), { title: "handed over too", done: true });
      });
      // a sync asked of the owner, which the tab that takes over answers
      window.pendingSync = window.s.sync(60000).then(() => "ok", (e) => e.rc + ": " + e.message);
      return { id, mids, owner: window.s.owner };
    });
    await held.wait;
    await closeTab(ctx, p1);
    await until(p2, () => window.s.owner === true, null);
    const handedSync = await pendingSync(p2);
    const after = await p2.evaluate(async () => {
      const s = window.s;
      const id = crypto.randomUUID();
      const mids = await s.transaction((tx) => tx.insert("todo", id, { title: "after the handover", done: false }));
      await s.sync(60000);
      return { id, mids, status: await s.status(), intents: await s.pending(true), rows: await s.rows("todo") };
    });
    await ctx.unroute("**/v3/push");
    await p2.close();
    return { first, handedSync, after, pushes };
  },

  // 5. A publish that removes a field while intents that use it are queued.
  async schema() {
    const ctx = await device("a");
    const p = await tab("a", "schema.db");
    await p.evaluate(() => window.s.sync(30000));
    await ctx.setOffline(true);
    const queued = await p.evaluate(async () => {
      const s = window.s;
      const ids = { keep: crypto.randomUUID(), plain: crypto.randomUUID(), gone: crypto.randomUUID() };
      const [keep] = await s.transaction((tx) => tx.insert("todo", ids.keep, { title: "with a note", done: false, note: "kept" }));
      const [plain] = await s.transaction((tx) => tx.insert("todo", ids.plain, { title: "plain", done: false }));
      const [gone] = await s.transaction((tx) => tx.insert("todo", ids.gone, { title: "noted, discarded", done: false, note: "gone" }));
      return { ids, mids: { keep, plain, gone }, statusBefore: await s.status() };
    });
    const published = await ask("publish_without_note");
    await ctx.setOffline(false);
    const out = await p.evaluate(async ({ ids, mids }) => {
      const s = window.s;
      await s.sync(60000);
      const intents = await s.pending(true);
      const find = (m) => intents.find((i) => i.mutation_id === m);
      const before = { keep: find(mids.keep), plain: find(mids.plain), gone: find(mids.gone) };
      const explained = await s.explain(mids.keep);
      const row = await s.get("todo", ids.keep);
      let bad = null;
      try {
        await s.resolve("remap", mids.keep, { title: "with a note", note: "still" });
      } catch (e) {
        bad = { rc: e.rc, message: e.message };
      }
      const successor = await s.resolve("remap", mids.keep, { title: "with a note, remapped" });
      const discarded = await s.resolve("discard", mids.gone);
      await s.sync(60000);
      const all = await s.pending(true);
      const f2 = (m) => all.find((i) => i.mutation_id === m);
      return {
        before, explained, row, bad, successor, discarded, status: await s.status(),
        after: { keep: f2(mids.keep), gone: f2(mids.gone), successor: f2(successor) },
        rows: await s.rows("todo"), verify: await s.verify(),
      };
    }, queued);
    await p.close();
    return { ...queued, published, ...out };
  },
};

let code = 0;
try {
  for (;;) {
    const { value, done } = await lines.next();
    if (done) break;
    const { run } = JSON.parse(value);
    if (!run) break;
    try {
      const result = await cases[run]();
      send({ result, console: log.splice(0) });
    } catch (e) {
      send({ error: String(e && e.stack ? e.stack : e), console: log.splice(0) });
    } finally {
      // what a failed case left behind does not reach the next one
      for (const d of Object.values(devices)) {
        await d.unrouteAll({ behavior: "ignoreErrors" }).catch(() => undefined);
        await d.setOffline(false).catch(() => undefined);
      }
    }
  }
} catch (e) {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  code = 1;
} finally {
  for (const d of Object.values(devices)) await d.close().catch(() => undefined);
}
process.exit(code);
