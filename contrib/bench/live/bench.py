#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""make bench-live: commit-to-device latency of live updates on this machine, through nginx
with its nchan module (conf/nginx/synchro-live.conf), synchro-walsync publishing, on a
throwaway PostgreSQL (run by contrib/bench/live/run inside tests/integration/with-pg).

Phase 1, quiet: one native device of carol left syncing (synchro-cli sync, poll 30 s, live
updates on), a browser page of carol's (Debian's Chromium, headless, through
web_live.mjs: the browser client with live updates on and a live() query on the to-dos)
and one long-poll subscription of carol's; BENCH_LIVE_CHANGES (60) changes for carol at
BENCH_LIVE_RATE (1) per second, alternately an app INSERT and another device's push (a
POST /v3/push of one insert as a third device of carol's). Per change: from the write
being sent (the INSERT, or the push's request; its own round trip is reported beside) to
the notification at the subscription (the first whose cursor is past the WAL position read
just before the write), to the row in the native device's SQLite store (read every 2 ms),
and to the page's live() callback seeing it. Every time is read on one clock,
CLOCK_MONOTONIC (time.monotonic() here, process.hrtime in the Node programs: watch.py), so
no latency can be negative; the bench stops with an error if one is. The browser needs the web build (configure --enable-web), Chromium and
playwright-core; without them the bench says why and measures the rest.
Then the share: alice shares a list of BENCH_LIVE_SHARE_ROWS (10000) to-dos with carol
(a list_share row, as the example app writes it), BENCH_LIVE_SHARES (2) times: from the
share's commit to its entries in the changelog and to the list's last row in carol's native
store; then alice removes carol, to the last of those rows gone from the store.
Phase 2: the same while BENCH_LIVE_SUBSCRIBERS (1000) other long-poll subscriptions
of bob's stay open; nginx's memory per subscriber (its processes' RSS), walsync's CPU per
materialized and published transaction, and the responders' processes and requests
before and after the subscribers. Phase 3, beside Rocicorp Zero (contrib/bench/live/zero.py;
BENCH_ZERO=0 leaves it out): zero-cache on the same PostgreSQL and a Node client of its
subscribed to carol's to-dos; BENCH_LIVE_CHANGES app INSERTs for carol, each timed to
Synchro's native store, its browser page's live() and Zero's client, and each server's CPU
over the phase divided by the changes it delivered (Synchro: walsync, nginx and the
responders, two devices; Zero: zero-cache's processes, one client). zero-cache has no
setting for its bind address: it listens on every interface ("::"; zero.py), on free ports,
and the bench talks to it on 127.0.0.1 only. Prints every figure; BENCH_LIVE_JSON=path
writes them."""

import asyncio
import base64
import http.client
import json
import os
import queue
import re
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../../tests/e2e"))
sys.path.insert(0, os.path.join(HERE, "../../../tests/web"))
import psycopg2  # noqa: E402
import synchro_e2e as e2e  # noqa: E402
import web_stack  # noqa: E402
import zero as zero_peer  # noqa: E402
from watch import Watcher  # noqa: E402
from live_stack import LiveSite, nchan_missing  # noqa: E402
from synchro_e2e import Stack  # noqa: E402

CHANGES = int(os.environ.get("BENCH_LIVE_CHANGES", "60"))
RATE = float(os.environ.get("BENCH_LIVE_RATE", "1"))
SUBSCRIBERS = int(os.environ.get("BENCH_LIVE_SUBSCRIBERS", "1000"))
SHARE_ROWS = int(os.environ.get("BENCH_LIVE_SHARE_ROWS", "10000"))
SHARES = int(os.environ.get("BENCH_LIVE_SHARES", "2"))
CLI = os.path.join(e2e.BUILD, "src/client/synchro-cli")


WEB_PAGE = os.path.join(HERE, "../client/web_bench.html")


class BenchStack(LiveSite, Stack):
    nginx_worker_connections = SUBSCRIBERS + 1024

    def nginx_site(self):
        site = super().nginx_site()
        if web_stack.browser_missing("bench-live") is None:
            site = web_stack.with_web(site, self.dir, [WEB_PAGE])
        return site


class Browser(Watcher):
    """web_live.mjs: carol's page; seen[pk] = when its live() callback first saw pk
    (time.monotonic() seconds, watch.py)."""

    def __init__(self, stack):
        try:
            super().__init__(["node", os.path.join(HERE, "web_live.mjs"), web_stack.PLAYWRIGHT,
                              "http://127.0.0.1:%d" % stack.port, os.path.join(stack.dir, "chromium-profile"),
                              "carol", e2e.USERS["carol"]], "web_live.mjs")
        except RuntimeError as e:
            raise SystemExit(str(e))


class Pusher:
    """A third device of carol's pushing one insert per batch over the protocol."""

    def __init__(self, stack):
        self.stack = stack
        self.conn = stack.connect(user="carol")

    def push(self, pk, title):
        body = {"batch_id": str(uuid.uuid4()), "client_id": self.conn["client_id"],
                "client_generation": self.conn["client_generation"], "schema": self.conn["schema"],
                "mutations": [{"mutation_id": str(uuid.uuid4()), "table": "todo",
                               "pk": {"field": "id", "value": pk}, "operation": "insert",
                               "authored_schema": self.conn["schema"], "client_version": "2026-01-01T00:00:00Z",
                               "columns": {"title": title}}]}
        status, _, out = self.stack.request("POST", "/v3/push", raw=json.dumps(body).encode(), user="carol",
                                            timeout=60)
        if status != 200:
            raise SystemExit("push: %s %s" % (status, out[:200]))


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))] if v else float("nan")


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def cpu_s(pid):
    """Seconds on a CPU (the scheduler's nanoseconds: finer than the clock ticks)."""
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0]) / 1e9


def auth(user):
    return base64.b64encode(("%s:%s" % (user, e2e.USERS[user])).encode()).decode()


CURSOR = re.compile(r'^\{"cursor":"c1\.([0-9a-f]{16})\.[0-9a-f]{8}"\}$')


def lsn_int(text):
    """PostgreSQL's 'X/Y' WAL position as a number (the cursor's 16 hex digits are one too)."""
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def since(t, t0, what):
    """t - t0 in ms: both read on CLOCK_MONOTONIC, t0 before the write was sent, so never
    negative; the bench stops if it is (two clocks, or a notification matched to another
    write)."""
    ms = (t - t0) * 1000
    if ms < 0:
        raise SystemExit("bench-live: a negative latency (%.3f ms) %s" % (ms, what))
    return ms


class Listener:
    """carol's long-poll subscription: (the cursor's WAL position, or -1 for a body without
    one, and the arrival time) of each notification."""

    def __init__(self, stack):
        self.stack, self.times, self.closed = stack, queue.Queue(), False
        threading.Thread(target=self.run, daemon=True).start()

    def after(self, lsn, timeout):
        """The arrival time of the first notification naming a cursor past WAL position lsn
        (the write's, whose commit comes after it), or None within timeout s; the others
        (an earlier write's, late) are passed over."""
        end = time.monotonic() + timeout
        while True:
            try:
                at, t = self.times.get(timeout=max(0, end - time.monotonic()))
            except queue.Empty:
                return None
            if at > lsn:
                return t

    def run(self):
        h = {"Authorization": "Basic " + auth("carol")}
        while not self.closed:
            c = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=120)
            try:
                c.request("GET", "/v3/live", headers=h)
                r = c.getresponse()
                body = r.read()
                t = time.monotonic()
            except OSError:
                time.sleep(0.1)
                continue
            finally:
                c.close()
            if r.status == 200:
                m = CURSOR.match(body.decode("utf-8", "replace").strip())
                self.times.put((int(m.group(1), 16) if m else -1, t))
                h["If-Modified-Since"] = r.getheader("Last-Modified") or ""
                h["If-None-Match"] = r.getheader("Etag") or ""


class Device:
    def __init__(self, stack, name):
        self.path = os.path.join(stack.dir, name + ".db")
        base = [CLI, "-d", self.path, "-u", "http://127.0.0.1:%d" % stack.port, "--user", "carol",
                "--poll", "30000"]
        env = dict(os.environ, SYNCHRO_PASSWORD=e2e.USERS["carol"])
        subprocess.run(base + ["connect"], check=True, capture_output=True, timeout=60, env=env)
        stack.spawn(name, base + ["sync"], env=env)
        self.db = sqlite3.connect(self.path, timeout=5)

    def has(self, pk):
        try:
            return self.db.execute("SELECT 1 FROM rows WHERE tbl = 'todo' AND pk = ?",
                                   (json.dumps(pk),)).fetchone() is not None
        except sqlite3.OperationalError:
            return False


def stats(v):
    return {"p50": pct(v, 50), "p99": pct(v, 99), "max": max(v or [0]), "n": len(v)}


def measure(stack, dev, listener, browser, pusher, label):
    db = psycopg2.connect("")
    db.autocommit = True
    cur = db.cursor()
    walsync = stack.procs["walsync"].pid
    cpu0 = cpu_s(walsync)
    notif, store, web = [], {"insert": [], "push": []}, {"insert": [], "push": []}
    write = {"insert": [], "push": []}
    missed = {"notification": 0, "store": 0, "browser": 0}
    next_at = time.monotonic()
    for k in range(CHANGES):
        pk = str(uuid.uuid4())
        how = "insert" if k % 2 == 0 else "push"
        cur.execute("SELECT pg_current_wal_insert_lsn()::text")
        lsn = lsn_int(cur.fetchone()[0])
        t0 = time.monotonic()
        if how == "insert":
            cur.execute("INSERT INTO public.todo (id, title, owner) VALUES (%s, %s, 'carol')", (pk, "bench %d" % k))
        else:
            pusher.push(pk, "bench %d" % k)
        write[how].append(since(time.monotonic(), t0, "of the write itself"))
        while not dev.has(pk) and time.monotonic() - t0 < 5:
            time.sleep(0.002)
        t1 = time.monotonic()
        if dev.has(pk):
            store[how].append(since(t1, t0, "to the native store"))
        else:
            missed["store"] += 1
        t = listener.after(lsn, max(0, t0 + 5 - time.monotonic()))
        if t is None:
            missed["notification"] += 1
        else:
            notif.append(since(t, t0, "to the notification"))
        if browser is not None:
            seen = browser.wait(pk, 5)
            if seen is None:
                missed["browser"] += 1
            else:
                web[how].append(since(seen, t0, "to the browser's live()"))
        next_at += 1.0 / RATE
        time.sleep(max(0, next_at - time.monotonic()))
    cpu = cpu_s(walsync) - cpu0
    db.close()
    fig = {"changes": CHANGES, "rate_per_s": RATE, "missed": missed,
           "commit_to_notification_ms": stats(notif),
           "commit_to_native_store_ms": stats(store["insert"] + store["push"]),
           "insert_to_native_store_ms": stats(store["insert"]),
           "push_to_native_store_ms": stats(store["push"]),
           "insert_round_trip_ms": stats(write["insert"]), "push_round_trip_ms": stats(write["push"]),
           "walsync_cpu_ms_per_transaction": cpu * 1000 / CHANGES}
    line = ("%s: the write's own round trip p50: app INSERT %.1f ms, push %.1f ms; from the write sent to the"
            " notification p50 %.1f ms p99 %.1f ms; to the native store: app INSERT p50 %.1f p99 %.1f ms, push p50 %.1f"
            " p99 %.1f ms"
            % (label, fig["insert_round_trip_ms"]["p50"], fig["push_round_trip_ms"]["p50"],
               fig["commit_to_notification_ms"]["p50"], fig["commit_to_notification_ms"]["p99"],
               fig["insert_to_native_store_ms"]["p50"], fig["insert_to_native_store_ms"]["p99"],
               fig["push_to_native_store_ms"]["p50"], fig["push_to_native_store_ms"]["p99"]))
    if browser is not None:
        fig["insert_to_browser_live_ms"] = stats(web["insert"])
        fig["push_to_browser_live_ms"] = stats(web["push"])
        fig["commit_to_browser_live_ms"] = stats(web["insert"] + web["push"])
        line += ("; to the browser's live() callback: app INSERT p50 %.1f p99 %.1f ms, push p50 %.1f p99 %.1f ms"
                 % (fig["insert_to_browser_live_ms"]["p50"], fig["insert_to_browser_live_ms"]["p99"],
                    fig["push_to_browser_live_ms"]["p50"], fig["push_to_browser_live_ms"]["p99"]))
    print("%s; walsync %.2f ms CPU per transaction; missed %s" % (line, fig["walsync_cpu_ms_per_transaction"],
                                                                  missed), flush=True)
    return fig


def share(stack, dev, rounds):
    """alice shares a list of SHARE_ROWS to-dos with carol, whose native device is left
    syncing with live updates on: from the share's commit to its entries in the changelog,
    and to the last of the list's rows in carol's store. Then alice removes carol: to the
    last of those rows gone from the store."""
    db = psycopg2.connect("")
    db.autocommit = True
    cur = db.cursor()
    out = []
    for r in range(rounds):
        lst = str(uuid.uuid4())
        cur.execute("INSERT INTO public.todo_list (id, name, owner) VALUES (%s, 'shared', 'alice');"
                    "INSERT INTO public.todo (id, title, owner, list_id)"
                    " SELECT gen_random_uuid(), 'row ' || x, 'alice', %s FROM generate_series(1, %s) x",
                    (lst, lst, SHARE_ROWS))
        cur.execute("SELECT pg_current_wal_lsn()::text")
        end = cur.fetchone()[0]
        t0 = time.monotonic()
        while True:
            cur.execute("SELECT bool_and(confirmed_flush_lsn >= %s::pg_lsn) FROM pg_replication_slots", (end,))
            if cur.fetchone()[0]:
                break
            if time.monotonic() - t0 > 120:
                raise SystemExit("bench-live: walsync did not materialize the list's rows")
            time.sleep(0.01)

        def in_store():
            try:
                return dev.db.execute("SELECT count(*) FROM rows WHERE tbl = 'todo'"
                                      " AND json_extract(row, '$.list_id') = ?", (lst,)).fetchone()[0]
            except sqlite3.OperationalError:
                return -1  # the store busy with the sync's write: read again

        t0 = time.monotonic()
        cur.execute("INSERT INTO public.list_share (id, list_id, user_id, list_name, owner)"
                    " VALUES (%s, %s, 'carol', 'shared', 'alice')", (str(uuid.uuid4()), lst))
        changelog = first = None
        while True:
            now = time.monotonic()
            if first is None and in_store() > 0:
                first = since(now, t0, "to the native store")
            if changelog is None:
                cur.execute("SELECT count(*) FROM synchro.changelog WHERE commit_lsn > %s::pg_lsn"
                            " AND 'carol' = ANY (readers_after) AND table_id = 'todo'", (end,))
                if cur.fetchone()[0] >= SHARE_ROWS:
                    changelog = since(now, t0, "to the changelog")
            if in_store() == SHARE_ROWS:
                store = since(time.monotonic(), t0, "to the native store")
                break
            if now - t0 > 60:
                raise SystemExit("bench-live: the share reached carol's store with %d of %d rows"
                                 % (in_store(), SHARE_ROWS))
            time.sleep(0.005)
        t0 = time.monotonic()
        cur.execute("DELETE FROM public.list_share WHERE list_id = %s AND user_id = 'carol'", (lst,))
        while in_store() != 0:
            if time.monotonic() - t0 > 60:
                raise SystemExit("bench-live: the removal left %d rows in carol's store" % in_store())
            time.sleep(0.005)
        gone = since(time.monotonic(), t0, "to the native store")
        out.append({"rows": SHARE_ROWS, "to_changelog_ms": changelog, "first_row_to_native_store_ms": first,
                    "to_native_store_ms": store,
                    "removal_to_native_store_ms": gone, "load": os.getloadavg()[0]})
        print("share of a list of %d rows with carol: its entries in the changelog %s ms after its commit, the"
              " first row in carol's native store %s ms and the last %.0f ms after it; the removal: the rows gone"
              " %.0f ms after it; load average %.2f"
              % (SHARE_ROWS, "%.0f" % changelog if changelog is not None else "(not seen)",
                 "%.0f" % first if first is not None else "(not seen)", store, gone, os.getloadavg()[0]),
              flush=True)
    db.close()
    return out


def beside_zero(stack, dev, browser, zero):
    """App INSERTs for carol delivered at once to Synchro's native device, its browser page and
    Zero's client: each one's latency, and each server's CPU per delivered change (Synchro:
    walsync, nginx and the responders; Zero: zero-cache and its workers)."""
    db = psycopg2.connect("")
    db.autocommit = True
    cur = db.cursor()
    synchro = [stack.procs["walsync"].pid, stack.procs["nginx"].pid, stack.procs["fcgi"].pid]
    s0, z0 = sum(zero_peer.cpu_tree_s(p) for p in synchro), zero.cpu_s()
    native, web, zc = [], [], []
    missed = {"store": 0, "browser": 0, "zero": 0}
    next_at = time.monotonic()
    for k in range(CHANGES):
        pk = str(uuid.uuid4())
        t0 = time.monotonic()
        cur.execute("INSERT INTO public.todo (id, title, owner) VALUES (%s, %s, 'carol')", (pk, "zero %d" % k))
        while not dev.has(pk) and time.monotonic() - t0 < 5:
            time.sleep(0.002)
        if dev.has(pk):
            native.append(since(time.monotonic(), t0, "to the native store"))
        else:
            missed["store"] += 1
        for who, out, key in ((browser, web, "browser"), (zero, zc, "zero")):
            if who is None:
                continue
            seen = who.wait(pk, 5)
            if seen is None:
                missed[key] += 1
            else:
                out.append(since(seen, t0, "to the %s" % key))
        next_at += 1.0 / RATE
        time.sleep(max(0, next_at - time.monotonic()))
    time.sleep(1)  # the last change's work done everywhere
    s_cpu = sum(zero_peer.cpu_tree_s(p) for p in synchro) - s0
    z_cpu = zero.cpu_s() - z0
    db.close()
    delivered = len(native) + len(web)
    fig = {"changes": CHANGES, "missed": missed,
           "synchro_native_store_ms": stats(native), "synchro_browser_live_ms": stats(web),
           "zero_client_ms": stats(zc),
           "synchro_server_cpu_ms_per_delivered_change": s_cpu * 1000 / max(1, delivered),
           "synchro_deliveries": delivered,
           "zero_cache_cpu_ms_per_delivered_change": z_cpu * 1000 / max(1, len(zc)),
           "zero_deliveries": len(zc), "zero_cache_rss_kb": zero.rss_kb()}
    print("beside Zero: from the INSERT sent to Synchro's native store p50 %.1f p99 %.1f ms, to its browser's live()"
          " p50 %.1f p99 %.1f ms; to Zero's client p50 %.1f p99 %.1f ms; server CPU per delivered change:"
          " Synchro %.2f ms (walsync, nginx, responders; %d deliveries), zero-cache %.2f ms (%d); zero-cache"
          " RSS %.0f MB; missed %s"
          % (fig["synchro_native_store_ms"]["p50"], fig["synchro_native_store_ms"]["p99"],
             fig["synchro_browser_live_ms"]["p50"], fig["synchro_browser_live_ms"]["p99"],
             fig["zero_client_ms"]["p50"], fig["zero_client_ms"]["p99"],
             fig["synchro_server_cpu_ms_per_delivered_change"], delivered,
             fig["zero_cache_cpu_ms_per_delivered_change"], len(zc), fig["zero_cache_rss_kb"] / 1024.0,
             missed), flush=True)
    return fig


async def subscriber(port, stop, open_count):
    req = ("GET /v3/live HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic %s\r\n"
           "Connection: close\r\n\r\n" % auth("bob")).encode()
    while not stop.is_set():
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        w.write(req)
        await w.drain()
        open_count[0] += 1
        try:
            while not stop.is_set():
                try:
                    data = await asyncio.wait_for(r.read(4096), 0.5)
                except asyncio.TimeoutError:
                    continue
                if not data:
                    break
        finally:
            open_count[0] -= 1
            w.close()


def subscribers(port, n, stop, ready):
    async def main():
        open_count = [0]
        tasks = [asyncio.create_task(subscriber(port, stop, open_count)) for _ in range(n)]
        while open_count[0] < n and not stop.is_set():
            await asyncio.sleep(0.1)
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.2)
        await asyncio.gather(*tasks, return_exceptions=True)
    asyncio.run(main())


def responders(stack):
    st, _, body = stack.request("GET", "/metrics", user=None, protocol=None)
    reqs = 0
    for line in body.decode().splitlines():
        if line.startswith("synchro_http_requests_total"):
            reqs += float(line.rsplit(" ", 1)[1])
    return len(children(stack.procs["fcgi"].pid)), reqs


def chromium_version():
    r = subprocess.run([web_stack.CHROMIUM, "--version"], capture_output=True, text=True)
    words = r.stdout.split() if r.returncode == 0 else []
    return words[1] if len(words) > 1 else "?"


def main():
    missing = nchan_missing("bench-live")
    if missing:
        print(missing)
        return 1
    stack = BenchStack(server="nginx", workers=2, rate_limit=False)
    figures = {"machine": {"cpus": os.cpu_count()}}
    try:
        stack.start()
        stack.start_walsync(notify_url=stack.publisher_url())
        dev = Device(stack, "carol-bench")
        listener = Listener(stack)
        pusher = Pusher(stack)
        why = web_stack.browser_missing("bench-live")
        if why:
            print("%s: the browser is not measured" % why, flush=True)
        browser = None if why else Browser(stack)
        figures["browser"] = why or "Chromium %s" % chromium_version()
        time.sleep(2)
        figures["quiet"] = measure(stack, dev, listener, browser, pusher, "quiet")
        figures["share"] = share(stack, dev, SHARES)
        nginx = stack.procs["nginx"].pid
        nginx_pids = [nginx] + children(nginx)
        rss0 = zero_peer.rss_kb(nginx_pids)
        resp0 = responders(stack)
        stop, ready = threading.Event(), threading.Event()
        t = threading.Thread(target=subscribers, args=(stack.port, SUBSCRIBERS, stop, ready), daemon=True)
        t.start()
        ready.wait(120)
        time.sleep(2)
        rss1 = zero_peer.rss_kb(nginx_pids)
        resp1 = responders(stack)
        print("%d subscribers open: nginx %.0f kB -> %.0f kB (%.1f kB per subscriber); responders %d -> %d,"
              " their requests %d -> %d" % (SUBSCRIBERS, rss0, rss1, (rss1 - rss0) / max(1, SUBSCRIBERS),
                                           resp0[0], resp1[0], resp0[1], resp1[1]), flush=True)
        figures["subscribers"] = {"count": SUBSCRIBERS, "nginx_rss_kb_before": rss0, "nginx_rss_kb_after": rss1,
                                  "nginx_kb_per_subscriber": (rss1 - rss0) / max(1, SUBSCRIBERS),
                                  "responders_before": resp0[0], "responders_after": resp1[0],
                                  "responder_requests_before": resp0[1], "responder_requests_after": resp1[1]}
        figures["loaded"] = measure(stack, dev, listener, browser, pusher, "with %d subscribers" % SUBSCRIBERS)
        stop.set()
        t.join(30)
        d, why = zero_peer.install(e2e.BUILD)
        if d is None:
            print("bench-live: Zero is not measured: %s" % why, flush=True)
            figures["zero"] = {"not_measured": why}
        else:
            try:
                zero = zero_peer.Zero(stack, d, "carol")
            except RuntimeError as e:
                print("bench-live: Zero is not measured: %s" % e, flush=True)
                figures["zero"] = {"not_measured": str(e)}
            else:
                try:
                    time.sleep(2)
                    figures["zero"] = beside_zero(stack, dev, browser, zero)
                finally:
                    zero.close()
    finally:
        if browser is not None:
            browser.close()
        stack.stop()
    out = os.environ.get("BENCH_LIVE_JSON")
    if out:
        with open(out, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
