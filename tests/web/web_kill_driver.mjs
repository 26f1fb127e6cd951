// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web_kill.pgt: ROUNDS times, a page opens the store,
// commits new intents (1..3 transactions of 1..4 inserts, updates and deletes, some
// atomic), starts a sync and has its tab killed at a point of that sync drawn from SEED:
// after a delay (0..250 ms), while the push request is held by route interception (before
// it reaches the server, or after the server answered and before the page gets the answer),
// or just after the push's answer reached the page. The kill is CDP Target.closeTarget or
// Page.crash (a renderer crash), also drawn. Each new page first lists the store's intents
// (every mutation id handed out so far must be there). At the end a new page syncs until
// nothing is left to send and prints one JSON object: the rounds, the ids, the store's
// intents and rows; the Python side checks them against the server.
// Usage: node web_kill_driver.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR USER PASSWORD SEED ROUNDS

import { chromiumOf, killTab, launch, openPage } from "./web_browser.mjs";

const [pwDir, base, profile, user, password, seedArg, roundsArg] = process.argv.slice(2);
const seed = Number(seedArg);
const rounds = Number(roundsArg);

// mulberry32: the run's one random stream (the same seed, the same schedule)
let state = seed >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randint = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (a) => a[Math.floor(random() * a.length)];
const hex = (n) => Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join("");
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;

// Where a sync is killed; the first rounds take each point with each kind of kill once.
const POINTS = ["delay", "held-request", "held-response", "returned"];
const KILLS = ["close", "crash"];
const schedule = [];
for (const point of POINTS) for (const how of KILLS) schedule.push({ point, how });
while (schedule.length < rounds) schedule.push({ point: pick(POINTS), how: pick(KILLS) });

const chromium = chromiumOf(pwDir);
const context = await launch(chromium, profile);
const out = { seed, console: [], rounds: [], mids: [] };
const url = base + "/web/page.html";
const log = (line) => out.console.push(line);
const opts = { name: user + ".db", pollIntervalMs: 600000, requestTimeoutMs: 20000 };

// Opens the store in a new page: the store's intents (all) and its visible rows.
async function openStore() {
  const p = await openPage(context, url, log);
  const seen = await p.evaluate(async ({ base, user, password, opts }) => {
    window.s = await window.Synchro.open(base, user, password, opts);
    const intents = (await window.s.pending(true)).map((i) => i.mutation_id);
    const rows = (await window.s.rows("todo")).filter((r) => r.row !== null).map((r) => r.pk);
    return { intents, rows };
  }, { base, user, password, opts });
  return { p, ...seen };
}

// 1..3 transactions of 1..4 writes (never one row twice in a transaction) on live rows.
function draw(live) {
  const txns = [];
  for (let n = randint(1, 3); n > 0; n--) {
    const writes = [];
    const used = new Set();
    for (let k = randint(1, 4); k > 0; k--) {
      const r = random();
      const free = [...live].filter((pk) => !used.has(pk));
      if (r < 0.45 || free.length === 0) {
        const pk = uuid();
        writes.push({ op: "insert", pk, columns: { title: "k" + hex(6), done: random() < 0.5 } });
        live.add(pk);
        used.add(pk);
      } else if (r < 0.8) {
        const pk = pick(free);
        writes.push({ op: "update", pk, columns: random() < 0.5 ? { title: "k" + hex(6) } : { done: random() < 0.5 } });
        used.add(pk);
      } else {
        const pk = pick(free);
        writes.push({ op: "delete", pk });
        live.delete(pk);
        used.add(pk);
      }
    }
    txns.push({ atomic: writes.length > 1 && random() < 0.4, writes });
  }
  return txns;
}

// A route on /v3/push for this round's point; resolves hit() when the point is reached.
function holdPush(point, killed) {
  let hit;
  const reached = new Promise((r) => (hit = r));
  const handler = async (route) => {
    if (point === "held-request") {
      hit("request held");
      await killed;
      await route.abort().catch(() => undefined);
    } else if (point === "held-response") {
      let resp = null;
      try {
        resp = await route.fetch();
      } catch (e) {
        hit("fetch failed: " + e.message);
      }
      hit("response held" + (resp ? " (" + resp.status() + ")" : ""));
      await killed;
      await route.abort().catch(() => undefined);
    } else {
      try {
        const resp = await route.fetch();
        await route.fulfill({ response: resp });
        hit("returned " + resp.status());
      } catch (e) {
        hit("failed: " + e.message);
        await route.abort().catch(() => undefined);
      }
    }
  };
  return { handler, reached };
}

// One route for the whole run, set before any page (a dedicated worker's requests are
// routed when the route was there as its page started): each push goes through the round's
// hold, or straight on.
let current = null;
await context.route("**/v3/push", (route) => (current ? current.handler(route) : route.continue()));

try {
  // The store connected and given its schema first (a write needs the schema).
  {
    const { p } = await openStore();
    out.connected = await p.evaluate(async () => (await window.s.sync(30000)).phase);
    await p.evaluate(() => window.s.close());
    await p.close();
  }
  for (let i = 0; i < rounds; i++) {
    const { point, how } = schedule[i];
    // The hold is in place before the page opens: a new page's worker syncs at once, and
    // that push (what the last round left unsent) is this round's first.
    let killedNow;
    const killed = new Promise((r) => (killedNow = r));
    const hold = point === "delay" ? null : holdPush(point, killed);
    current = hold;
    const { p, intents, rows } = await openStore();
    const known = new Set(intents);
    const missing = out.mids.filter((m) => !known.has(m));
    const txns = draw(new Set(rows));
    const mids = [];
    for (const t of txns) {
      const got = await p.evaluate(async ({ t }) => {
        try {
          return await window.s.transaction((tx) => {
            for (const w of t.writes) {
              if (w.op === "delete") tx.delete("todo", w.pk);
              else tx[w.op]("todo", w.pk, w.columns);
            }
          }, { atomic: t.atomic });
        } catch (e) {
          return { rc: e.rc, message: e.message };
        }
      }, { t });
      if (!Array.isArray(got)) throw new Error("round " + i + ": transaction refused: " + JSON.stringify(got));
      mids.push(...got);
    }
    out.mids.push(...mids);
    const delay = point === "delay" ? randint(0, 250) : point === "returned" ? randint(0, 30) : 0;
    await p.evaluate(() => {
      window.syncEnd = null;
      window.s.sync(20000).then((st) => (window.syncEnd = st.phase), (e) => (window.syncEnd = "error: " + e.message));
    });
    let reached = "after " + delay + " ms";
    if (hold) {
      reached = await Promise.race([hold.reached, new Promise((r) => setTimeout(() => r("no push within 20 s"), 20000))]);
    }
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const ended = await p.evaluate(() => window.syncEnd).catch(() => null);
    await killTab(context, p, how);
    killedNow();
    current = null;
    out.rounds.push({ round: i, point, how, reached, syncEnded: ended, writes: txns.map((t) => t.writes.length),
                      atomic: txns.map((t) => t.atomic), mids, missing });
  }
  // The last page: sync until nothing is left to send.
  const { p, intents } = await openStore();
  const known = new Set(intents);
  out.missingAtEnd = out.mids.filter((m) => !known.has(m));
  out.final = await p.evaluate(async () => {
    const s = window.s;
    let status = null;
    for (let k = 0; k < 20; k++) {
      status = await s.sync(20000).catch((e) => ({ error: e.message }));
      if (status.phase === "idle" && !status.counts.pending && !status.counts.sealed && !status.counts.waiting) break;
    }
    return { status, intents: await s.pending(true), rows: await s.rows("todo"), verify: await s.verify() };
  });
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
