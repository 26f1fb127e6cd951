#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""make bench-live: commit-to-device latency of live updates on this machine, through nginx
with its nchan module (conf/nginx/synchro-live.conf), synchro-walsync publishing, on a
throwaway PostgreSQL (run by contrib/bench/live/run inside tests/integration/with-pg).

Phase 1, quiet: one native device of carol left syncing (synchro-cli sync, poll 30 s, live
updates on) and one long-poll subscription of carol's; BENCH_LIVE_CHANGES (60) app INSERTs
for carol at BENCH_LIVE_RATE (1) per second. Per INSERT: from its commit returning to the
notification at the subscription, and to the row in the device's SQLite store (read every
2 ms). Phase 2: the same while BENCH_LIVE_SUBSCRIBERS (1000) other long-poll subscriptions
of bob's stay open; nginx's memory per subscriber (its processes' RSS), walsync's CPU per
materialized and published transaction, and the responders' processes and requests
before and after the subscribers. Prints every figure; BENCH_LIVE_JSON=path writes them."""

import asyncio
import base64
import http.client
import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../../tests/e2e"))
import psycopg2  # noqa: E402
import synchro_e2e as e2e  # noqa: E402
from live_stack import LiveSite, nchan_missing  # noqa: E402
from synchro_e2e import Stack  # noqa: E402

CHANGES = int(os.environ.get("BENCH_LIVE_CHANGES", "60"))
RATE = float(os.environ.get("BENCH_LIVE_RATE", "1"))
SUBSCRIBERS = int(os.environ.get("BENCH_LIVE_SUBSCRIBERS", "1000"))
CLI = os.path.join(e2e.BUILD, "src/client/synchro-cli")


class BenchStack(LiveSite, Stack):
    nginx_worker_connections = SUBSCRIBERS + 1024


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


def rss_kb(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def auth(user):
    return base64.b64encode(("%s:%s" % (user, e2e.USERS[user])).encode()).decode()


class Listener:
    """carol's long-poll subscription: the arrival time of each notification."""

    def __init__(self, stack):
        self.stack, self.times, self.closed = stack, queue.Queue(), False
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        h = {"Authorization": "Basic " + auth("carol")}
        while not self.closed:
            c = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=120)
            try:
                c.request("GET", "/v3/live", headers=h)
                r = c.getresponse()
                r.read()
                t = time.monotonic()
            except OSError:
                time.sleep(0.1)
                continue
            finally:
                c.close()
            if r.status == 200:
                self.times.put(t)
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


def measure(stack, dev, listener, label):
    db = psycopg2.connect("")
    db.autocommit = True
    cur = db.cursor()
    walsync = stack.procs["walsync"].pid
    cpu0 = cpu_s(walsync)
    notif, store, missed = [], [], 0
    next_at = time.monotonic()
    for k in range(CHANGES):
        while not listener.times.empty():
            listener.times.get_nowait()
        pk = str(uuid.uuid4())
        cur.execute("INSERT INTO public.todo (id, title, owner) VALUES (%s, %s, 'carol')", (pk, "bench %d" % k))
        t0 = time.monotonic()
        while not dev.has(pk) and time.monotonic() - t0 < 5:
            time.sleep(0.002)
        t1 = time.monotonic()
        if dev.has(pk):
            store.append((t1 - t0) * 1000)
        else:
            missed += 1
        try:
            notif.append((listener.times.get(timeout=5) - t0) * 1000)
        except queue.Empty:
            missed += 1
        next_at += 1.0 / RATE
        time.sleep(max(0, next_at - time.monotonic()))
    cpu = cpu_s(walsync) - cpu0
    db.close()
    fig = {"changes": CHANGES, "rate_per_s": RATE, "missed": missed,
           "commit_to_notification_ms": {"p50": pct(notif, 50), "p99": pct(notif, 99), "max": max(notif or [0])},
           "commit_to_native_store_ms": {"p50": pct(store, 50), "p99": pct(store, 99), "max": max(store or [0])},
           "walsync_cpu_ms_per_transaction": cpu * 1000 / CHANGES}
    print("%s: commit to notification p50 %.1f ms p99 %.1f ms; commit to the native store p50 %.1f ms"
          " p99 %.1f ms (max %.1f); walsync %.2f ms CPU per transaction; missed %d"
          % (label, fig["commit_to_notification_ms"]["p50"], fig["commit_to_notification_ms"]["p99"],
             fig["commit_to_native_store_ms"]["p50"], fig["commit_to_native_store_ms"]["p99"],
             fig["commit_to_native_store_ms"]["max"], fig["walsync_cpu_ms_per_transaction"], missed), flush=True)
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
        time.sleep(2)
        figures["quiet"] = measure(stack, dev, listener, "quiet")
        nginx = stack.procs["nginx"].pid
        nginx_pids = [nginx] + children(nginx)
        rss0 = rss_kb(nginx_pids)
        resp0 = responders(stack)
        stop, ready = threading.Event(), threading.Event()
        t = threading.Thread(target=subscribers, args=(stack.port, SUBSCRIBERS, stop, ready), daemon=True)
        t.start()
        ready.wait(120)
        time.sleep(2)
        rss1 = rss_kb(nginx_pids)
        resp1 = responders(stack)
        print("%d subscribers open: nginx %.0f kB -> %.0f kB (%.1f kB per subscriber); responders %d -> %d,"
              " their requests %d -> %d" % (SUBSCRIBERS, rss0, rss1, (rss1 - rss0) / max(1, SUBSCRIBERS),
                                           resp0[0], resp1[0], resp0[1], resp1[1]), flush=True)
        figures["subscribers"] = {"count": SUBSCRIBERS, "nginx_rss_kb_before": rss0, "nginx_rss_kb_after": rss1,
                                  "nginx_kb_per_subscriber": (rss1 - rss0) / max(1, SUBSCRIBERS),
                                  "responders_before": resp0[0], "responders_after": resp1[0],
                                  "responder_requests_before": resp0[1], "responder_requests_after": resp1[1]}
        figures["loaded"] = measure(stack, dev, listener, "with %d subscribers" % SUBSCRIBERS)
        stop.set()
        t.join(30)
    finally:
        stack.stop()
    out = os.environ.get("BENCH_LIVE_JSON")
    if out:
        with open(out, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
