// SPDX-License-Identifier: BSD-2-Clause
// The browser half of contrib/bench/client's --web mode (bench.py drives it): Debian's
// Chromium through playwright-core (never a downloaded browser), one fresh profile, the
// browser client (src/web/dist) served by the bench's nginx under /web/ beside
// web_bench.html. It reads one JSON command a line on stdin and answers each with one JSON
// line on stdout, so that the browser's runs interleave with the native client's:
//   {"op": "writes", "store": S, "n": N, "per": K, "offline": B}  N inserts, K per
//        transaction(): writes/s and each commit's latency as the page sees it (transaction()
//        called to resolved), ms; offline: with no sync running beside the writes (reopened
//        after its first sync on a closed port), else pushing them as they come, as in an app
//   {"op": "sync", "store": S, "n": N}  N intents queued (1000 per transaction) with no sync
//        running, then the store opened on the server and one sync(): until the push is done
//        (the status leaves "pushing") and until idle
//   {"op": "rows", "store": S}  a new device's first sync of the user's rows (open to
//        synced), then as the page sees them (the worker's round trip included): 200 point
//        queries by pk, 50 queries of 50 rows (WHERE done = ? ORDER BY title LIMIT 50, with
//        index(todo, [done, title])), and
//        30 local updates each to its live query's refresh
//   {"op": "quit"}
// Each run opens a new store S (a new device) in a new page, after one sync that rebuilds
// the user's rows (not timed), and closes it at the end.
// Usage: node web_bench.mjs PLAYWRIGHT_CORE_DIR BASE_URL PROFILE_DIR USER PASSWORD

import { createRequire } from "node:module";
import { createInterface } from "node:readline";

const [pwDir, base, profile, user, password] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { chromium } = require(pwDir);

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    // a background page's timers are not throttled: the bench's page is never in front
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
  ],
});

async function page() {
  const p = await context.newPage();
  const log = [];
  p.on("console", (m) => log.push(m.type() + ": " + m.text()));
  p.on("pageerror", (e) => log.push("pageerror: " + e.message));
  await p.goto(base + "/web/web_bench.html");
  await p.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
  // BENCH_WEB_CONSOLE=1: the page's and its worker's console on stderr (for profiling)
  if (process.env.BENCH_WEB_CONSOLE === "1") p.on("console", (m) => process.stderr.write("browser | " + m.text() + "\n"));
  return { p, log };
}

/** With BENCH_WEB_PROFILE, window.benchProfile("start"/"stop") in the page profiles its worker. */
async function profiled(p) {
  const profileTo = process.env.BENCH_WEB_PROFILE;
  if (!profileTo) return;
  const prof = await workerProfiler(p);
  await p.exposeFunction("benchProfile", async (what) => {
    if (what === "start") await prof.start();
    else await prof.stop(profileTo + "." + ++profiles + ".cpuprofile");
  });
}

async function writes(c) {
  const { p, log } = await page();
  await profiled(p);
  try {
    return await p.evaluate(async ({ base, user, password, c }) => {
      let s = await window.Synchro.open(base, user, password, { name: c.store, pollIntervalMs: 3600000 });
      try {
        await s.sync(600000);
        if (c.offline) {
          // No sync beside the writes, as bench_client's: the store reopened on a closed port
          // (its steps fail and back off; nothing is sent).
          await s.close();
          s = await window.Synchro.open("http://127.0.0.1:9", user, password, { name: c.store, pollIntervalMs: 3600000 });
        }
        const lat = [];
        if (window.benchProfile) await window.benchProfile("start");
        const t0 = performance.now();
        for (let i = 0; i < c.n;) {
          const at = i;
          const k = Math.min(c.per, c.n - i);
          const t = performance.now();
          await s.transaction((tx) => {
            for (let j = 0; j < k; j++)
              tx.insert("todo", crypto.randomUUID(), { title: "bench " + (at + j) });
          });
          lat.push(performance.now() - t);
          i += k;
        }
        const dt = (performance.now() - t0) / 1000;
        if (window.benchProfile) await window.benchProfile("stop");
        return { mode: "writes", writes: c.n, per_txn: c.per, seconds: dt, writes_per_s: c.n / dt, latencies_ms: lat };
      } finally {
        await s.close();
      }
    }, { base, user, password, c });
  } catch (e) {
    throw new Error(String(e) + "\n" + log.join("\n"));
  } finally {
    await p.close();
  }
}

async function rows(c) {
  const { p, log } = await page();
  try {
    return await p.evaluate(async ({ base, user, password, c }) => {
      const t0 = performance.now();
      const s = await window.Synchro.open(base, user, password, { name: c.store, pollIntervalMs: 3600000 });
      try {
        await s.sync(1800000);
        const first = (performance.now() - t0) / 1000;
        const n = (await s.query("SELECT count(*) AS n FROM todo"))[0].n;
        const ids = (await s.query("SELECT id FROM todo ORDER BY random() LIMIT 200")).map((r) => r.id);
        const point = [];
        for (const id of ids) {
          const t = performance.now();
          await s.query("SELECT * FROM todo WHERE id = ?", [id]);
          point.push(performance.now() - t);
        }
        const sql = "SELECT id, title, done FROM todo WHERE done = ? ORDER BY title LIMIT 50";
        await s.index("todo", ["done", "title"]);
        const page50 = [];
        for (let i = 0; i < 50; i++) {
          const t = performance.now();
          await s.query(sql, [i % 2]);
          page50.push(performance.now() - t);
        }
        let seen = null;
        const stop = await s.live(sql, [0], () => {
          if (seen) seen();
        });
        const live = [];
        for (let i = 0; i < 30; i++) {
          const t = performance.now();
          const refreshed = new Promise((r) => (seen = r));
          await s.transaction((tx) => tx.update("todo", ids[i], { title: "a" + String(i).padStart(4, "0"), done: false }));
          await refreshed;
          live.push(performance.now() - t);
        }
        stop();
        return { mode: "rows", rows: n, first_sync_seconds: first, rows_per_s: n / first, point_ms: point,
                 page50_ms: page50, live_ms: live };
      } finally {
        await s.close();
      }
    }, { base, user, password, c });
  } catch (e) {
    throw new Error(String(e) + "\n" + log.join("\n"));
  } finally {
    await p.close();
  }
}

// BENCH_WEB_PROFILE=FILE: a CPU profile of the worker (CDP Profiler) over each timed run
// (writes and sync), written to FILE.N.cpuprofile in the order of the runs (open it in
// Chrome's DevTools, Performance panel; a link with emcc --profiling-funcs names the C).
// The page's CDP session attaches to the worker (Target.setAutoAttach, not flattened) and
// talks to it with Target.sendMessageToTarget.
let profiles = 0;
async function workerProfiler(p) {
  const cdp = await context.newCDPSession(p);
  let next = 1;
  const waiting = new Map();
  // the store's current worker (a store closed and opened again has a new one)
  let session = null;
  let onWorker = () => undefined;
  cdp.on("Target.attachedToTarget", (e) => {
    if (e.targetInfo.type !== "worker") return;
    session = e.sessionId;
    onWorker();
  });
  cdp.on("Target.detachedFromTarget", (e) => {
    if (e.sessionId === session) session = null;
  });
  const attached = () => (session !== null ? Promise.resolve() : new Promise((r) => (onWorker = r)));
  cdp.on("Target.receivedMessageFromTarget", (e) => {
    const m = JSON.parse(e.message);
    const w = waiting.get(m.id);
    if (w) {
      waiting.delete(m.id);
      if (m.error) w.reject(new Error(JSON.stringify(m.error)));
      else w.resolve(m.result);
    }
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      void cdp.send("Target.sendMessageToTarget", { sessionId: session, message: JSON.stringify({ id, method, params }) });
    });
  await cdp.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  return {
    async start() {
      await attached();
      await send("Profiler.enable");
      await send("Profiler.setSamplingInterval", { interval: 200 });
      await send("Profiler.start");
    },
    async stop(file) {
      const { profile } = await send("Profiler.stop");
      (await import("node:fs")).writeFileSync(file, JSON.stringify(profile));
    },
  };
}

async function sync(c) {
  const { p, log } = await page();
  await profiled(p);
  try {
    return await p.evaluate(async ({ base, user, password, c }) => {
      const opts = { name: c.store, pollIntervalMs: 3600000 };
      let s = await window.Synchro.open(base, user, password, opts);
      try {
        await s.sync(600000);
        // The intents are queued with no sync running (the store on a closed port: its first
        // step seals a batch, then backs off), as bench_client queues them before its sync;
        // online, the worker would push them as they are committed, before the timed part.
        await s.close();
        s = await window.Synchro.open("http://127.0.0.1:9", user, password, opts);
        for (let i = 0; i < c.n; i += 1000)
          await s.transaction((tx) => {
            for (let j = i; j < Math.min(i + 1000, c.n); j++) tx.insert("todo", crypto.randomUUID(), { title: "bench " + j });
          });
        await s.close();
        // The push is done when the phase leaves "pushing", as bench_client's listener sees it
        // (the status asked for every 10 ms while the sync runs: a small cost the browser pays).
        let pushing = false;
        let pushed = 0;
        let done = false;
        // Timed from the store open again on the server (its worker pushes from then on), as
        // bench_client's sync after its open.
        s = await window.Synchro.open(base, user, password, opts);
        if (window.benchProfile) await window.benchProfile("start");
        const t0 = performance.now();
        const whole = s.sync(900000).finally(() => (done = true));
        while (!done && pushed === 0) {
          const st = await s.status();
          if (st.phase === "pushing") pushing = true;
          else if (pushing && (st.phase === "pulling" || st.phase === "idle")) pushed = performance.now();
          if (pushed === 0) await new Promise((r) => setTimeout(r, 10));
        }
        const st = await whole;
        const end = performance.now();
        if (window.benchProfile) await window.benchProfile("stop");
        if (pushed === 0) pushed = end; // it went idle between two looks
        if (st.counts.applied !== c.n) throw new Error(st.counts.applied + " of " + c.n + " applied");
        const push = (pushed - t0) / 1000;
        return { mode: "sync", intents: c.n, push_seconds: push, intents_per_s: c.n / push, sync_seconds: (end - t0) / 1000 };
      } finally {
        await s.close();
      }
    }, { base, user, password, c });
  } catch (e) {
    throw new Error(String(e) + "\n" + log.join("\n"));
  } finally {
    await p.close();
  }
}

let status = 0;
try {
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    if (c.op === "quit") break;
    let out;
    try {
      out = c.op === "writes" ? await writes(c) : c.op === "sync" ? await sync(c)
        : c.op === "rows" ? await rows(c) : { error: "no op " + c.op };
    } catch (e) {
      out = { error: String(e.stack || e) };
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e.stack || e) }) + "\n");
  status = 1;
} finally {
  await context.close();
}
process.exit(status);
