#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/pull (run it through contrib/bench/pull/run): the WAL pipeline and /v3/pull on
this machine, on a throwaway PostgreSQL, through the nginx site of the push benchmark; the
figures doc/performance.md reports, and the pipeline's two targets, are printed at the end.
  1. Steady direct-write load (plain_sql paced to BENCH_RATE changes/s in transactions of 100
     inserts into item; the version-fence trigger emits the same messages a push does): what
     synchro-walsync materializes, and commit-to-visible latency twice: in synchro.changelog
     (changelog_watch: the server's clock_timestamp() at the poll minus the source commit
     timestamp, per transaction) and in /v3/pull (pull_watch, a C client pulling with its
     cursor over one keep-alive connection: its clock at the answer minus the commit
     timestamp, per change). Beside it, the poller's pages three ways: the round trip the
     client saw, nginx's request time and the FastCGI upstream's (nginx's log of /v3/pull).
  2. The same under a push load (/v3/push, fresh batches of 100, through nginx): a steady one
     paced to BENCH_PUSH_RATE changes/s (the load of the targets), then flat out.
  3. Materialization rate: walsync stopped, a backlog written flat out, walsync started: changes
     per second from its first changelog commit until the backlog is in the changelog. Once
     with no other load (the pipeline's own limit), then under a /v3/push load that starts a
     second before walsync and lasts past the drain (the materialization target): the
     steady one, then a flat-out one.
BENCH_PUSH_RATE (default 2000 changes/s: 20 batches a second, about 40 % of what /v3/push
sustains flat out on this machine) paces the steady push load (contrib/bench/pull/
paced_push.lua: each wrk connection starts a batch on a fixed schedule).
  4. Pull throughput: clients that rebuilt before everything above pull the whole changelog
     through nginx, pages of 1000 (one client, then BENCH_WORKERS clients at once).
The steady direct-write load runs at each of BENCH_RATES (default "20000 10000": the target's
rate, and one this 2-core machine can sustain beside the rest; a rate it cannot reach saturates
the cores and the latencies then measure queueing). During loaded runs changelog_watch also
samples walsync's SQL session in pg_stat_activity every 20 ms: the share of samples in which it
was busy, and in which its changelog write waited for a lock, is printed.
Environment: BENCH_SECONDS (each loaded run, default 10), BENCH_PULL_SECONDS (each pull
throughput run, default 5), BENCH_BACKLOG_SECONDS (flat-out writing for 3, default 10),
BENCH_WORKERS (responders, SQL load workers and parallel pull clients, default 4),
BENCH_POLL_MS (pollers' pause after an empty answer, default 5), BENCH_POLLER (c, the default,
or python: the Python poller of earlier runs, which on saturated cores measured its own
queue)."""

import base64
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
BUILD = os.environ.get("SYNCHRO_BUILDDIR", SRC)
sys.dont_write_bytecode = True  # the source tree may be read-only (distcheck) and stays clean
sys.path.insert(0, os.path.join(SRC, "tests/e2e"))
sys.path.insert(0, os.path.join(SRC, "contrib/bench/push"))
import synchro_e2e as e2e  # noqa: E402
import bench as pushbench  # noqa: E402

PLAIN_SQL = os.path.join(BUILD, "contrib/bench/push/plain_sql")
WATCH = os.path.join(BUILD, "contrib/bench/pull/changelog_watch")
PULL_WATCH = os.path.join(BUILD, "contrib/bench/pull/pull_watch")
LUA = os.path.join(SRC, "contrib/bench/pull/pull.lua")
PACED_LUA = os.path.join(SRC, "contrib/bench/pull/paced_push.lua")

RATES = [float(x) for x in os.environ.get("BENCH_RATES", "20000 10000").split()]
PULL_SECONDS = float(os.environ.get("BENCH_PULL_SECONDS", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
BACKLOG_SECONDS = float(os.environ.get("BENCH_BACKLOG_SECONDS", "10"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
POLL_MS = float(os.environ.get("BENCH_POLL_MS", "5"))
POLLER = os.environ.get("BENCH_POLLER", "c")
PUSH_RATE = float(os.environ.get("BENCH_PUSH_RATE", "2000"))
BATCH = 100
AUTH = "Basic " + base64.b64encode(b"alice:alice").decode()


def lsn_int(text):
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


class Client:
    """A registered client of alice with a pull cursor from a rebuild."""

    def __init__(self, st):
        j = st.connect("alice")
        self.id, self.generation, self.schema = j["client_id"], j["client_generation"], j["schema"]
        rid, token = str(uuid.uuid4()), None
        while True:
            status, _, body = st.post("/v3/rebuild", {"client_id": self.id, "client_generation": self.generation,
                                                      "schema": self.schema, "rebuild_id": rid,
                                                      "page_token": token, "limit": 1000})
            assert status == 200, (status, body)
            doc = json.loads(body)
            token = doc["page_token"]
            if token is None:
                self.cursor = doc["cursor"]
                return


class PullStack(pushbench.BenchStack):
    """The push benchmark's stack, with nginx logging each /v3/pull it serves: when the answer
    was sent, nginx's request time and the FastCGI upstream's (connect, header, whole answer):
    the server's side of each page, beside the time the polling client saw."""

    def spawn(self, name, argv, **kw):
        if name == "nginx":
            conf = argv[argv.index("-c") + 1]
            text = open(conf).read()
            self.pull_log = os.path.join(self.dir, "pull-access.log")
            text = text.replace("access_log off;", """map $request_uri $synchro_pull { /v3/pull 1; default 0; }
    log_format synchro_pull '$msec $request_time $upstream_connect_time $upstream_header_time '
                            '$upstream_response_time $status $bytes_sent';
    access_log %s synchro_pull buffer=64k flush=200ms if=$synchro_pull;""" % self.pull_log, 1)
            with open(conf, "w") as f:
                f.write(text)
        return super().spawn(name, argv, **kw)

    def pull_pages(self, t0, t1):
        """The /v3/pull answers nginx sent between wall-clock t0 and t1: a list of
        (request_ms, upstream_connect_ms, upstream_response_ms)."""
        out = []
        try:
            lines = open(self.pull_log).read().split("\n")
        except OSError:
            return out
        for line in lines:
            f = line.split()
            if len(f) < 7 or not t0 <= float(f[0]) <= t1:
                continue
            try:
                out.append((1000 * float(f[1]), 1000 * float(f[2]), 1000 * float(f[4])))
            except ValueError:
                continue
        return out


class PullWatch:
    """pull_watch (C): one client pulling over one keep-alive connection, noting when each item
    row's change first arrives (wall clock, comparable with PostgreSQL's commit timestamps)."""

    def __init__(self, st, client):
        self.st, self.c = st, client
        self.out = os.path.join(st.dir, "pull-watch-%s.txt" % uuid.uuid4())
        self.proc = subprocess.Popen([PULL_WATCH, "-p", str(st.port), "-a", AUTH, "-C", client.id, "-G",
                                      str(client.generation), "-V", str(client.schema["version"]), "-H",
                                      client.schema["hash"], "-k", client.cursor, "-l", "1000",
                                      "-i", str(POLL_MS), "-d", "600", "-o", self.out],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.seen, self.errors, self.pages, self.stats, self.page_log = {}, [], 0, {}, []

    def start(self):
        pass

    def finish(self):
        """Asks it to drain (pull until has_more is false) and stop; reads what it saw."""
        out, err = self.proc.communicate("stop\n", timeout=120)
        if self.proc.returncode != 0:
            raise SystemExit("pull_watch failed (%d): %s%s" % (self.proc.returncode, out, err))
        self.stats = dict(x.split("=", 1) for x in out.split())
        self.pages = int(self.stats["pages"])
        self.c.cursor = self.stats["cursor"]
        if int(self.stats["errors"]):
            self.errors.append("%s errors: %s" % (self.stats["errors"], err[:300]))
        with open(self.out) as f:
            for line in f:
                x = line.split()
                if x[0] == "page":
                    self.page_log.append((float(x[1]), float(x[2]), int(x[3])))
                else:
                    self.seen.setdefault(x[0], float(x[1]))


class Poller(threading.Thread):
    """Pulls with one client over one keep-alive connection and notes when each item row's
    change first arrives (wall clock, comparable with PostgreSQL's commit timestamps).
    BENCH_POLLER=python: the poller of earlier runs, kept to show what it measured: on
    saturated cores it falls behind the load by itself (JSON parsing of 600 kB pages in the
    interpreter the samplers share)."""

    def __init__(self, st, client):
        super().__init__(daemon=True)
        self.st, self.c = st, client
        self.seen = {}
        self.pages = 0
        self.errors = []
        self.halt = threading.Event()
        self.stats = {}

    def finish(self):
        self.halt.set()
        self.join(30)

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.st.port, timeout=60)
        h = {"Authorization": AUTH, "Synchro-Protocol": "3", "Content-Type": "application/json"}
        while not self.halt.is_set():
            body = json.dumps({"client_id": self.c.id, "client_generation": self.c.generation,
                               "schema": self.c.schema, "cursor": self.c.cursor, "limit": 1000})
            try:
                conn.request("POST", "/v3/pull", body=body, headers=h)
                r = conn.getresponse()
                data = r.read()
            except (OSError, http.client.HTTPException) as e:
                self.errors.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.st.port, timeout=60)
                time.sleep(0.05)
                continue
            now = time.time()
            if r.status != 200:
                self.errors.append("%d %s" % (r.status, data[:200]))
                time.sleep(0.05)
                continue
            doc = json.loads(data)
            self.pages += 1
            for ch in doc["changes"]:
                if ch["table"] == "item":
                    self.seen.setdefault(ch["pk"]["value"], now)
            self.c.cursor = doc["cursor"]
            if not doc["has_more"]:
                time.sleep(POLL_MS / 1000.0)
        conn.close()


class Tally:
    """Changelog entries written since it was made, counted incrementally (walsync writes whole
    transactions in commit order, so entries past the highest position seen are all new)."""

    def __init__(self, st):
        self.st = st
        self.start = self.lsn = st.psql("SELECT coalesce(max(commit_lsn), '0/0') FROM synchro.changelog")
        self.count = 0

    def poll(self):
        n, lsn = self.st.psql("SELECT count(*), max(commit_lsn) FROM synchro.changelog WHERE commit_lsn > '%s'"
                              % self.lsn).split("|")
        if int(n):
            self.count += int(n)
            self.lsn = lsn
        return self.count


class PullBench:
    def __init__(self, st):
        self.st = st
        self.pb = pushbench.Bench(st)
        self.phase = 100
        self.invalid = []

    def next_phase(self):
        self.phase += 1
        return self.phase

    def push_wrk(self, phase, seconds, rate=None):
        """/v3/push through wrk (contrib/bench/push's script): flat out, or paced to rate
        changes/s over all connections."""
        if rate is None:
            return self.pb.wrk("fresh", BATCH, phase, seconds)
        period = 1000.0 * pushbench.CONNECTIONS * BATCH / rate
        os.environ.update(BENCH_PUSH_LUA=pushbench.LUA, BENCH_PUSH_PERIOD_MS="%g" % period)
        saved, pushbench.LUA = pushbench.LUA, PACED_LUA
        try:
            return self.pb.wrk("fresh", BATCH, phase, seconds)
        finally:
            pushbench.LUA = saved

    def changelog_count(self):
        return int(self.st.psql("SELECT count(*) FROM synchro.changelog"))

    def commit_times(self, tally):
        out = self.st.psql("SELECT pk, extract(epoch FROM committed_at) FROM synchro.changelog WHERE commit_lsn > "
                           "'%s' AND table_id = 'item'" % tally.start)
        return {pk: float(t) for pk, t in (line.split("|") for line in out.split("\n") if line)}

    def wait_materialized(self, tally, rows, timeout=300):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if tally.poll() >= rows:
                return time.monotonic()
            time.sleep(0.02)
        self.invalid.append("walsync did not materialize %d changes within %ds" % (rows, timeout))
        return time.monotonic()

    def loaded(self, name, load, phase):
        """Runs load() (which returns the rows it committed) with changelog_watch and a pull
        poller beside it; the figures of materialization and visibility under that load."""
        self.catch_up(self.poll_client)
        watch = subprocess.Popen([WATCH, "-d", str(SECONDS + 4), "-i", str(POLL_MS), "-s", "20"],
                                 stdout=subprocess.PIPE, text=True)
        poller = (Poller if POLLER == "python" else PullWatch)(self.st, self.poll_client)
        poller.start()
        time.sleep(0.5)
        tally = Tally(self.st)
        walsync0 = pushbench.tree_cpu([self.st.procs["walsync"].pid])
        t0, w0 = time.monotonic(), time.time()
        rows, load_rate, extra = load()
        t1 = time.monotonic()
        materialized_in_window = tally.poll()
        walsync_cpu = pushbench.tree_cpu([self.st.procs["walsync"].pid]) - walsync0
        done = self.wait_materialized(tally, rows)
        if POLLER == "python":
            deadline = time.monotonic() + 30
            while len(poller.seen) < rows and time.monotonic() < deadline:
                time.sleep(0.02)
        poller.finish()
        out, _ = watch.communicate(timeout=SECONDS + 60)
        w = dict(x.split("=", 1) for x in out.split())
        time.sleep(0.3)  # nginx flushes its log buffer every 200 ms
        pages = self.st.pull_pages(w0, time.time())
        commits = self.commit_times(tally)
        lat = [1000.0 * (poller.seen[pk] - commits[pk]) for pk in commits if pk in poller.seen]
        if len(lat) < rows:
            self.invalid.append("%s: the pull poller saw %d of %d changes" % (name, len(lat), rows))
        if poller.errors:
            self.invalid.append("%s: pull poller errors: %s" % (name, poller.errors[:3]))
        ps = poller.stats
        # How much of the load window the poller spent waiting for answers, and how full its
        # pages were: near 100 % busy with full pages means one client cannot take the changes
        # any faster than they come (its latency is then queueing behind its own pages).
        w1 = w0 + (t1 - t0)
        inside = [p for p in getattr(poller, "page_log", []) if p[1] > w0 and p[0] < w1]
        busy = sum(min(p[1], w1) - max(p[0], w0) for p in inside)
        return {"name": name, "rows": rows, "load_rate": load_rate, "extra": extra, "window": t1 - t0,
                "materialized_rate": materialized_in_window / (t1 - t0), "catch_up_ms": 1000 * (done - t1),
                "walsync_cpu_us": 1e6 * walsync_cpu / max(1, materialized_in_window),
                "cl_p50": float(w["p50_ms"]), "cl_p90": float(w["p90_ms"]), "cl_p99": float(w["p99_ms"]),
                "cl_max": float(w["max_ms"]), "cl_txns": int(w["transactions"]),
                "pull_p50": pct(lat, 50), "pull_p90": pct(lat, 90), "pull_p99": pct(lat, 99),
                "pull_max": max(lat) if lat else float("nan"), "pull_pages": poller.pages,
                "page_client_p50": float(ps.get("page_p50_ms", "nan")),
                "page_client_p99": float(ps.get("page_p99_ms", "nan")),
                "page_nginx_p50": pct([p[0] for p in pages], 50), "page_nginx_p99": pct([p[0] for p in pages], 99),
                "page_conn_p99": pct([p[1] for p in pages], 99),
                "page_up_p50": pct([p[2] for p in pages], 50), "page_up_p99": pct([p[2] for p in pages], 99),
                "page_up_max": max([p[2] for p in pages]) if pages else float("nan"), "nginx_pages": len(pages),
                "poll_busy": 100.0 * busy / (t1 - t0) if inside else float("nan"),
                "poll_full": sum(1 for p in inside if p[2] >= 1000), "poll_inside": len(inside),
                "poll_changes": sum(p[2] for p in inside),
                "ws_busy": 100.0 * int(w["ws_busy"]) / max(1, int(w["ws_samples"])),
                "ws_lock": 100.0 * int(w["ws_lock"]) / max(1, int(w["ws_samples"]))}

    def catch_up(self, c):
        """Pulls c to the end of the changelog (a poller that fell behind starts level)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            before = c.cursor
            conn = http.client.HTTPConnection("127.0.0.1", self.st.port, timeout=60)
            h = {"Authorization": AUTH, "Synchro-Protocol": "3", "Content-Type": "application/json"}
            conn.request("POST", "/v3/pull", body=json.dumps({
                "client_id": c.id, "client_generation": c.generation, "schema": c.schema, "cursor": c.cursor,
                "limit": 1000}), headers=h)
            r = conn.getresponse()
            doc = json.loads(r.read())
            conn.close()
            assert r.status == 200, doc
            c.cursor = doc["cursor"]
            if not doc["has_more"] and not doc["changes"] and c.cursor == before:
                return

    def sql_load(self, rate):
        phase = self.next_phase()

        def load():
            argv = [PLAIN_SQL, "-w", str(WORKERS), "-n", str(BATCH), "-d", str(SECONDS), "-p", str(phase),
                    "-r", "%g" % (rate / BATCH)]
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit("plain_sql failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))
            kv = dict(x.split("=", 1) for x in r.stdout.split())
            return int(kv["rows"]), float(kv["rows_per_s"]), "commit p50 %s ms p99 %s ms" % (kv["p50_ms"], kv["p99_ms"])
        return self.loaded("direct SQL at %g changes/s" % rate, load, phase)

    def push_load(self, rate=None):
        phase = self.next_phase()

        def load():
            j = self.push_wrk(phase, SECONDS, rate)
            self.pb.quiesce()
            self.pb.check("push load", j)
            rows = self.pb.rows_of_phase(phase)
            return rows, j["rows_per_s"], "push p50 %.1f ms p99 %.1f ms" % (j["p50_ms"], j["p99_ms"])
        return self.loaded("/v3/push, batches of %d, %d connections, %s" % (
            BATCH, pushbench.CONNECTIONS, "flat out" if rate is None else "paced to %g changes/s" % rate), load, phase)

    def drain(self, under_push=False, push_rate=None):
        """Walsync stopped, a backlog written flat out, walsync started again: the rate at which
        it materializes the backlog. under_push: a /v3/push load (paced to push_rate changes/s,
        or flat out when None) starts a second before walsync and keeps going until after the
        backlog is drained (the backlog is everything committed before walsync started, the
        pushes of that second included); the rate is that of the materializer sharing the cores
        and the database with the push load."""
        self.st.stop_proc("walsync")
        phase = self.next_phase()
        tally = Tally(self.st)
        r = subprocess.run([PLAIN_SQL, "-w", str(WORKERS), "-n", str(BATCH), "-d", str(BACKLOG_SECONDS),
                            "-p", str(phase)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("plain_sql failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))
        kv = dict(x.split("=", 1) for x in r.stdout.split())
        rows = int(kv["rows"])
        push = None
        if under_push:
            push_phase = self.next_phase()
            # Long enough to outlast the drain at half the target rate, whatever this machine does.
            push_seconds = 1 + rows / 10000.0 + 2
            push = {"phase": push_phase, "seconds": push_seconds}

            def run_push():
                push["result"] = self.push_wrk(push_phase, push_seconds, push_rate)
            push_thread = threading.Thread(target=run_push, daemon=True)
            push_thread.start()
            push_t0 = time.monotonic()
            time.sleep(1.0)
        start_lsn = lsn_int(self.st.psql("SELECT pg_current_wal_lsn()"))
        pg = self.pb.roots()
        pg0 = pushbench.tree_cpu(pg)
        t_start = time.monotonic()
        proc = self.st.start_walsync("walsync", wait=False, lag_log_s=0)
        first = first_count = None
        while True:
            n = tally.poll()
            now = time.monotonic()
            if n > 0 and first is None:
                first, first_count = now, n
            # walsync writes whole transactions in commit order: once the changelog holds one
            # committed after walsync started, it holds every one committed before.
            if n >= rows and (not under_push or lsn_int(tally.lsn) >= start_lsn):
                break
            if proc.poll() is not None or now - t_start > 600:
                raise SystemExit("walsync did not drain the backlog: %s" % self.st.log("walsync")[-2000:])
            time.sleep(0.02)
        done = time.monotonic()
        pg_cpu = pushbench.tree_cpu(pg) - pg0
        walsync_cpu = pushbench.tree_cpu([proc.pid])
        span = done - first
        res = {"rows": rows, "write_rate": float(kv["rows_per_s"]), "first_ms": 1000 * (first - t_start),
               "drained": n, "rate": (n - first_count) / span if span > 0 else float("inf"),
               "overall_rate": n / (done - t_start), "walsync_cpu_us": 1e6 * walsync_cpu / n,
               "pg_cpu_us": 1e6 * pg_cpu / n, "span_s": span}
        if under_push:
            push_thread.join(push_seconds + 120)
            self.pb.quiesce()
            j = push["result"]
            self.pb.check("push load during the drain", j)
            res["push_rate"] = j["rows_per_s"]
            res["push_p99"] = j["p99_ms"]
            res["push_left_s"] = push_t0 + push_seconds - done
            if done > push_t0 + push_seconds:
                self.invalid.append("materialization under the push load: the push load ended %.1f s before "
                                    "the backlog was drained" % (done - push_t0 - push_seconds))
            self.wait_materialized(tally, rows + self.pb.rows_of_phase(push["phase"]))
        return res

    def pull_throughput(self, clients):
        conf = os.path.join(self.st.dir, "wrk-pull-%d.lua" % len(clients))
        with open(conf, "w") as f:
            f.write("return %s\n" % pushbench.lua_value({
                "auth": AUTH, "schema": clients[0].schema, "limit": 1000,
                "clients": [{"id": c.id, "generation": c.generation, "cursor": c.cursor} for c in clients]}))
        n = len(clients)
        argv = ["wrk", "-t", str(n), "-c", str(n), "-d", "%ds" % max(1, round(PULL_SECONDS)), "--timeout", "60s",
                "-s", LUA, "http://127.0.0.1:%d/v3/pull" % self.st.port]
        roots = self.pb.roots("fcgi", "nginx")
        s0 = pushbench.tree_cpu(roots)
        r = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, BENCH_WRK_CONF=conf))
        cpu = pushbench.tree_cpu(roots) - s0
        line = [x for x in r.stdout.split("\n") if x.startswith("BENCH ")]
        if r.returncode != 0 or not line:
            raise SystemExit("wrk failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))
        j = json.loads(line[0][6:])
        secs = j["duration_us"] / 1e6
        j["changes_per_s"] = j["changes"] / secs
        j["pages_per_s"] = j["requests"] / secs
        j["mb_per_s"] = j["bytes"] / secs / 1e6
        j["cpu_us"] = 1e6 * cpu / max(1, j["changes"])
        if j["bad"] or j["non_2xx"] or j["socket_errors"]:
            self.invalid.append("pull throughput (%d clients): %d non-200, %d socket errors: %s"
                                % (n, max(j["bad"], j["non_2xx"]), j["socket_errors"], r.stderr[:300]))
        if j["caught_up"]:
            self.invalid.append("pull throughput (%d clients): a client reached the end of the changelog; "
                                "raise BENCH_BACKLOG_SECONDS" % n)
        return j


def show_loaded(r):
    print("  %s: load %.0f changes/s (%s)" % (r["name"], r["load_rate"], r["extra"]), flush=True)
    print("    materialized during the load %.0f changes/s; caught up %.0f ms after the load ended; walsync CPU "
          "%.1f us/change" % (r["materialized_rate"], r["catch_up_ms"], r["walsync_cpu_us"]))
    print("    walsync's SQL session: busy in %.0f%% of samples, waiting for a lock in %.0f%%"
          % (r["ws_busy"], r["ws_lock"]))
    print("    commit -> visible in synchro.changelog (%d transactions): p50 %.1f ms  p90 %.1f ms  p99 %.1f ms  "
          "max %.1f ms" % (r["cl_txns"], r["cl_p50"], r["cl_p90"], r["cl_p99"], r["cl_max"]))
    print("    commit -> delivered by /v3/pull (%d changes, %d pages): p50 %.1f ms  p90 %.1f ms  p99 %.1f ms  "
          "max %.1f ms" % (r["rows"], r["pull_pages"], r["pull_p50"], r["pull_p90"], r["pull_p99"], r["pull_max"]),
          flush=True)
    print("    the poller's pages: round trip at the client p50 %.1f ms p99 %.1f ms; nginx request time p50 %.1f ms "
          "p99 %.1f ms; synchro-fcgi (upstream) p50 %.1f ms p99 %.1f ms max %.1f ms, connect p99 %.1f ms (%d pages "
          "in nginx's log)" % (r["page_client_p50"], r["page_client_p99"], r["page_nginx_p50"], r["page_nginx_p99"],
                              r["page_up_p50"], r["page_up_p99"], r["page_up_max"], r["page_conn_p99"],
                              r["nginx_pages"]), flush=True)
    if r["poll_inside"]:
        print("    during the load the poller waited for answers %.0f%% of the time; %d of its %d pages were full "
              "(1000 changes; %.0f changes a page on average)" % (r["poll_busy"], r["poll_full"], r["poll_inside"],
                                                                  r["poll_changes"] / r["poll_inside"]), flush=True)


def show_drain(label, d):
    print("  %s: backlog %d changes (written at %.0f changes/s); first changelog commit %.0f ms after start; "
          "materialized %.0f changes/s from then over %.2f s (%.0f/s including start-up); walsync CPU %.1f us/change%s"
          % (label, d["drained"], d["write_rate"], d["first_ms"], d["rate"], d["span_s"], d["overall_rate"],
             d["walsync_cpu_us"],
             ", PostgreSQL CPU %.1f us/change" % d["pg_cpu_us"] if "push_rate" not in d else
             "; the push load ran at %.0f changes/s (p99 %.1f ms) and went on %.1f s after the drain"
             % (d["push_rate"], d["push_p99"], d["push_left_s"]) if "push_rate" in d else ""), flush=True)


def main():
    for path in (PLAIN_SQL, WATCH):
        if not os.access(path, os.X_OK):
            raise SystemExit("missing %s (make %s)" % (path, os.path.relpath(path, BUILD)))
    load = os.getloadavg()[0]
    print("== contrib/bench/pull: %d responders, %d SQL load workers, %gs loaded runs, pollers pause %g ms after "
          "an empty answer, %d cores, load average %.2f at start"
          % (WORKERS, WORKERS, SECONDS, POLL_MS, os.cpu_count(), load), flush=True)
    if load > 1.0:
        print("   (the machine is busy with other work: figures are lower and noisier than on an idle machine)")
    st = PullStack(workers=WORKERS)
    st.start()
    try:
        b = PullBench(st)
        st.start_walsync("walsync", lag_log_s=0)
        b.pb.connect_clients()
        b.poll_client = Client(st)
        one = [Client(st)]
        many = [Client(st) for _ in range(WORKERS)]

        # Steady state: tables with rows and statistics. On a young database the responders'
        # cached plans of the pull page, made while the tables were empty, stay until
        # autovacuum's ANALYZE (a minute or more) and some pages then take seconds.
        warm = b.next_phase()
        subprocess.run([PLAIN_SQL, "-w", str(WORKERS), "-n", str(BATCH), "-d", "3", "-p", str(warm)], check=True,
                       capture_output=True)
        st.psql("ANALYZE")
        for c in [b.poll_client] + one + many:
            b.catch_up(c)
        print("   (warm-up: 3 s of writes, then ANALYZE: the figures are of a database past its first minutes)",
              flush=True)
        print("-- 1. steady direct-write load", flush=True)
        steadies = []
        for rate in RATES:
            steadies.append((rate, b.sql_load(rate)))
            show_loaded(steadies[-1][1])
        print("-- 2. steady push load", flush=True)
        steady_push = b.push_load(PUSH_RATE)
        show_loaded(steady_push)
        push = b.push_load()
        show_loaded(push)
        print("-- 3. materialization rate: a backlog of %gs of flat-out writes, then walsync started"
              % BACKLOG_SECONDS, flush=True)
        d = b.drain()
        show_drain("no other load (the pipeline's own limit)", d)
        dp = b.drain(under_push=True, push_rate=PUSH_RATE)
        show_drain("under a steady /v3/push load paced to %g changes/s (batches of %d, %d connections), from 1 s "
                   "before walsync started until after the backlog was drained" % (PUSH_RATE, BATCH,
                                                                                   pushbench.CONNECTIONS), dp)
        df = b.drain(under_push=True)
        show_drain("under a flat-out /v3/push load (%d connections, the cores saturated), the same way"
                   % pushbench.CONNECTIONS, df)
        print("-- 4. pull throughput through nginx (pages of 1000, from the start of the changelog: %d changes)"
              % b.changelog_count(), flush=True)
        tp = {}
        for clients in (one, many):
            j = b.pull_throughput(clients)
            tp[len(clients)] = j
            print("  %d client(s): %.0f changes/s (%.1f pages/s, %.1f MB/s, page p50 %.1f ms p99 %.1f ms, server "
                  "CPU %.1f us/change)" % (len(clients), j["changes_per_s"], j["pages_per_s"], j["mb_per_s"],
                                           j["p50_us"] / 1e3, j["p99_us"] / 1e3, j["cpu_us"]), flush=True)

        print("== summary")
        print("materialization under a steady push load: %.0f changes/s (backlog of %d changes drained while "
              "/v3/push ran at %.0f changes/s); under a flat-out push load (%.0f changes/s) %.0f changes/s; with no "
              "other load %.0f changes/s" % (dp["rate"], dp["drained"], dp["push_rate"], df["push_rate"], df["rate"],
                                            d["rate"]))
        print("commit-to-visible under a steady push load (%.0f changes/s, paced): changelog p50 %.1f ms p99 %.1f ms; "
              "/v3/pull p50 %.1f ms p99 %.1f ms" % (steady_push["load_rate"], steady_push["cl_p50"],
                                                    steady_push["cl_p99"], steady_push["pull_p50"],
                                                    steady_push["pull_p99"]))
        print("commit-to-visible under a flat-out push load (%.0f changes/s): changelog p50 %.1f ms p99 %.1f ms; "
              "/v3/pull p50 %.1f ms p99 %.1f ms" % (push["load_rate"], push["cl_p50"], push["cl_p99"],
                                                    push["pull_p50"], push["pull_p99"]))
        print("pull throughput through nginx: %.0f changes/s (1 client), %.0f changes/s (%d clients)"
              % (tp[1]["changes_per_s"], tp[len(many)]["changes_per_s"], len(many)))
        for rate, steady in steadies:
            print("direct-write load asked %.0f, reached %.0f changes/s: materialized %.0f changes/s; commit-to-visible "
                  "changelog p50 %.1f ms p99 %.1f ms; /v3/pull p50 %.1f ms p99 %.1f ms"
                  % (rate, steady["load_rate"], steady["materialized_rate"], steady["cl_p50"], steady["cl_p99"],
                     steady["pull_p50"], steady["pull_p99"]))
        print("target: materialization >= 20000 changes/s under a steady push load (%.0f changes/s, "
              "paced): %.0f %s" % (dp["push_rate"], dp["rate"], "MET" if dp["rate"] >= 20000 else "MISSED"))
        print("target: the same under a flat-out push load (%.0f changes/s, no idle core left): %.0f %s"
              % (df["push_rate"], df["rate"], "MET" if df["rate"] >= 20000 else "MISSED"))
        worst = max(steady_push["cl_p99"], steady_push["pull_p99"])
        print("target: p99 commit-to-visible <= 250 ms under that steady push load (%.0f changes/s): "
              "changelog %.1f ms, /v3/pull %.1f ms %s" % (steady_push["load_rate"], steady_push["cl_p99"],
                                                          steady_push["pull_p99"], "MET" if worst <= 250 else "MISSED"))
        worst = max(push["cl_p99"], push["pull_p99"])
        print("target: p99 commit-to-visible <= 250 ms under a push load (flat out, %.0f changes/s): "
              "changelog %.1f ms, /v3/pull %.1f ms %s" % (push["load_rate"], push["cl_p99"], push["pull_p99"],
                                                          "MET" if worst <= 250 else "MISSED"))
        for rate, steady in steadies:
            reached = "" if steady["load_rate"] >= 0.95 * rate else " (reached %.0f: the cores were saturated)" \
                % steady["load_rate"]
            print("beyond the targets: direct-write load of %.0f changes/s%s: p99 commit-to-visible changelog %.1f ms, "
                  "/v3/pull %.1f ms %s" % (rate, reached, steady["cl_p99"], steady["pull_p99"],
                                           "(<= 250 ms)" if max(steady["cl_p99"], steady["pull_p99"]) <= 250
                                           else "(> 250 ms)"))
        print("load average at the end: %.2f" % os.getloadavg()[0])
        return pushbench.report_invalid(b.invalid + b.pb.invalid)
    finally:
        for name in list(st.procs):
            if name.startswith("walsync"):
                st.stop_proc(name, signal.SIGTERM)
        st.stop()


if __name__ == "__main__":
    sys.exit(main())
