#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/client (run it through contrib/bench/client/run BUILD_DIR): on one throwaway
PostgreSQL behind nginx, with synchro-walsync, in the same run:
  - local writes per second of libsynchro-client: durable SQLite commits (WAL, synchronous=FULL),
    one insert per transaction and 100 per transaction;
  - end-to-end sync of BENCH_INTENTS (default 10,000) queued intents from one device: the time
    until every intent is applied (sealing, pushing, validating, reconciling; batches of 1000),
    and until the sync is idle (the pull of every echo included);
  - beside it, the raw /v3/push rate for the same batch size: the same number of fresh inserts
    in batches of 1000, sent one after another over HTTP by this script with prebuilt bodies,
    measured before and after each client run (BENCH_ROUNDS rounds, default 5; each client run
    is compared with the mean of the raw runs beside it, and the median ratio is shown).
Target: the client's push rate >= 80% of the raw push rate.

With --web (contrib/bench/client/run BUILD_DIR --web, make bench-client-web), the browser client
(configure --enable-web) in Debian's Chromium (web_bench.mjs, playwright-core) beside it, on the
same stack: its durable OPFS commits per second (BENCH_WRITES single-insert transactions,
default 2000, and BENCH_INTENTS in transactions of 100) with each commit's latency as the page
sees it (transaction() called to resolved: p50, p99, max), with no sync beside the writes (as
bench_client's) and then pushing them as they come (as in an app: "syncing"); its sync of
BENCH_INTENTS intents (queued with no sync running, as bench_client's, then the store opened on
the server and synced) in each round between the native client's and the raw pushes
(browser/native paired per round), with the server's view of each push (synchro.batches);
and the gzip -9 size of what a page loads (the .wasm and the JS). Targets: the browser's push
rate >= 70% of the native client's; a single-insert commit's p99 <= 10 ms; the gzip'd .wasm + JS
<= 1.5 MB. The browser's store is bob's, the native client's alice's: each user's rows (which
a new device rebuilds before the timed part) grow alike.

With --rows N[,N...] (ROWS=N make bench-client-rows; with --web, ROWS=N make
bench-client-rows-web, bob's rows in the browser beside alice's natively), alice gets N rows on
the server and a new native device syncs them: the first sync's rows/s and the client's peak RSS, then over the
synced tables a point query by pk (median of 1000), an indexed query of 50 rows and the commit
of a local update with a live query's refresh after it; with --web, the browser's figures
for bob's rows beside them and, at the end, its local commits' latency with no sync beside
them. Targets: >= 50,000 rows/s; a point query's median <= 1 ms. BENCH_CLIENT_BEFORE=EXE
(a bench_client built from another tree) syncs the same rows with that build's device and
this one's in turn, BENCH_PAIRS times (default 1): before and after in one run.
BENCH_EXPLAIN=1 adds EXPLAIN ANALYZE of the server's rebuild page statement at each size, and
the time of its pages alone with the server's CPU for them (its PostgreSQL sessions, responders
and nginx, by process); BENCH_PG_SET=name=value[,...] sets the server's settings first
(ALTER SYSTEM; the server restarts for those that need it, such as shared_buffers), for a
what-if run."""

import base64
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, os.path.join(top, "tests/e2e"))
sys.path.insert(0, os.path.join(top, "tests/web"))
import synchro_e2e as e2e  # noqa: E402
import web_stack  # noqa: E402

BENCH = os.path.join(e2e.BUILD, "contrib/bench/client/bench_client")
N = int(os.environ.get("BENCH_INTENTS", "10000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
WRITES = int(os.environ.get("BENCH_WRITES", "2000"))
BATCH = min(1000, N)
WEB = "--web" in sys.argv[1:]
DIST, PLAYWRIGHT = web_stack.DIST, web_stack.PLAYWRIGHT
HERE = os.path.dirname(os.path.abspath(__file__))


def raw_push_rate(stack):
    conn = stack.connect(user="alice")
    bodies = []
    for _ in range(N // BATCH):
        muts = [{"mutation_id": str(uuid.uuid4()), "table": "todo",
                 "pk": {"field": "id", "value": str(uuid.uuid4())}, "operation": "insert",
                 "authored_schema": conn["schema"], "client_version": "2026-01-01T00:00:00Z",
                 "columns": {"title": "raw %d" % i}} for i in range(BATCH)]
        bodies.append(json.dumps({"batch_id": str(uuid.uuid4()), "client_id": conn["client_id"],
                                  "client_generation": conn["client_generation"],
                                  "schema": conn["schema"], "mutations": muts}).encode())
    t0 = time.monotonic()
    for b in bodies:
        status, _, body = stack.request("POST", "/v3/push", raw=b, user="alice", timeout=120)
        assert status == 200, (status, body[:200])
    return len(bodies) * BATCH / (time.monotonic() - t0)


def client(*args, exe=BENCH):
    # BENCH_CLIENT_WRAP: a profiler command line for the sync runs, e.g. "perf record -g -o F"
    wrap = os.environ.get("BENCH_CLIENT_WRAP", "").split() if args[0] in ("sync", "rows") else []
    r = subprocess.run(wrap + [exe] + list(args), capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("bench_client %s: %s" % (args[0], r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


class WebStack(e2e.Stack):
    """The stack whose nginx also serves the browser client and the bench's page under /web/
    (copied into the stack's directory, which nginx's user can read)."""

    def nginx_site(self):
        return web_stack.with_web(super().nginx_site(), self.dir, [os.path.join(HERE, "web_bench.html")])


class Browser:
    """web_bench.mjs: one Chromium for the whole run, one command a line."""

    def __init__(self, url):
        self.profile = tempfile.mkdtemp(prefix="synchro-webbench-", dir=e2e._tmpbase())
        self.p = subprocess.Popen(["node", os.path.join(HERE, "web_bench.mjs"), PLAYWRIGHT, url, self.profile,
                                   "bob", e2e.USERS["bob"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)

    def run(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit("web_bench.mjs ended (exit %s)" % self.p.wait())
        out = json.loads(line)
        if "error" in out:
            raise SystemExit("web_bench.mjs %s: %s" % (cmd["op"], out["error"]))
        return out

    def close(self):
        try:
            self.p.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.p.stdin.close()
            self.p.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def page_files():
    """What a page using the client loads: synchro.js, the worker, the modules they import
    (by a static import or import()) and the WebAssembly module (new URL(...))."""
    todo, seen = ["synchro.js", "worker.js"], []
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.append(f)
        if f.endswith(".wasm"):
            continue
        text = open(os.path.join(DIST, f), encoding="utf-8").read()
        # import/export ... from "./x.js", import("./x.js"), new URL("x.wasm", import.meta.url)
        for m in re.finditer(r'(?:from|import\(|new URL\()\s*"(?:\./)?([^"/]+\.(?:m?js|wasm))"', text):
            todo.append(m.group(1))
    return sorted(seen)


def gzip_size(path):
    return len(subprocess.run(["gzip", "-9c", path], capture_output=True, check=True).stdout)


def server_span(stack, user, since):
    """The server's view of a client's push: from the first of user's batches created since
    `since` (Unix time) to the last one's completion, in seconds, and how many there were."""
    out = stack.psql("SELECT extract(epoch FROM max(completed_at) - min(created_at)), count(*)"
                     " FROM synchro.batches WHERE user_id = '%s' AND created_at >= to_timestamp(%f)"
                     % (user, since))
    span, n = out.split("|")
    return float(span or 0), int(n)


def percentile(xs, p):
    """Nearest rank."""
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(-(-p * len(xs) // 100)) - 1))]


def web_missing():
    """Why the browser half cannot run here (web_stack's reason, without its test name)."""
    why = web_stack.browser_missing("bench")
    return why.split(": SKIP: ", 1)[-1] if why else None


def met(ok):
    return "MET" if ok else "MISSED"


def main_web():
    why = web_missing()
    if why:
        print("SKIP bench-client-web: " + why)
        return 77
    files = page_files()
    sizes = {f: (os.path.getsize(os.path.join(DIST, f)), gzip_size(os.path.join(DIST, f))) for f in files}
    stack = WebStack(server="nginx", workers=2, fcgi_conf={"pull_wait_ms": 30000})
    browser = None
    try:
        stack.start()
        stack.start_walsync()
        url = "http://127.0.0.1:%d" % stack.port
        d = stack.dir
        browser = Browser(url)
        w1 = client("writes", os.path.join(d, "w1.db"), url, "alice:alice", str(WRITES), "1")
        o1 = browser.run(op="writes", store="o1.db", n=WRITES, per=1, offline=True)
        b1 = browser.run(op="writes", store="w1.db", n=WRITES, per=1)
        w100 = client("writes", os.path.join(d, "w100.db"), url, "alice:alice", str(N), "100")
        o100 = browser.run(op="writes", store="o100.db", n=N, per=100, offline=True)
        b100 = browser.run(op="writes", store="w100.db", n=N, per=100)
        raws, syncs, webs = [raw_push_rate(stack)], [], []
        spans = []
        for r in range(ROUNDS):
            t0 = time.time()
            syncs.append(client("sync", os.path.join(d, "s%d.db" % r), url, "alice:alice", str(N)))
            spans.append([server_span(stack, "alice", t0)])
            t0 = time.time()
            webs.append(browser.run(op="sync", store="s%d.db" % r, n=N))
            spans[-1].append(server_span(stack, "bob", t0))
            raws.append(raw_push_rate(stack))
        web_native = [w["intents_per_s"] / s["intents_per_s"] for w, s in zip(webs, syncs)]
        native_raw = [s["intents_per_s"] / ((raws[i] + raws[i + 1]) / 2) for i, s in enumerate(syncs)]
        web_raw = [w["intents_per_s"] / ((raws[i] + raws[i + 1]) / 2) for i, w in enumerate(webs)]
        web_native_idle = [s["sync_seconds"] / w["sync_seconds"] for w, s in zip(webs, syncs)]
    finally:
        if browser is not None:
            browser.close()
        stack.stop()

    def lat(b):
        x = b["latencies_ms"]
        return percentile(x, 50), percentile(x, 99), max(x)

    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "?"
    runs = lambda xs: ", ".join("%.0f" % x for x in xs)  # noqa: E731
    pct = lambda xs: ", ".join("%.0f%%" % (100 * x) for x in xs)  # noqa: E731
    print("load average at the end: %s; %d rounds of %d intents" % (load, ROUNDS, N))
    for who, name, b in (("native ", "1", w1), ("native ", "100", w100), ("browser", "1", o1), ("browser", "100", o100),
                         ("browser, syncing", "1", b1), ("browser, syncing", "100", b100)):
        p50, p99, mx = lat(b)
        print("%s local writes, %3s per durable commit: %7.0f writes/s; commit latency p50 %.1f ms,"
              " p99 %.1f ms, max %.1f ms (%d commits)"
              % (who, name, b["writes_per_s"], p50, p99, mx, len(b["latencies_ms"])))
    print("raw /v3/push, %d per batch:         %8.0f mutations/s  (runs: %s)" % (BATCH, statistics.median(raws), runs(raws)))
    print("native sync of %d intents, pushed: %8.0f intents/s    (runs: %s)"
          % (N, statistics.median(s["intents_per_s"] for s in syncs), runs(s["intents_per_s"] for s in syncs)))
    print("browser sync of %d intents, pushed: %7.0f intents/s    (runs: %s)"
          % (N, statistics.median(w["intents_per_s"] for w in webs), runs(w["intents_per_s"] for w in webs)))
    print("the server's view, first batch created to last completed: native %s s; browser %s s"
          % (", ".join("%.2f (%d batches)" % sp[0] for sp in spans), ", ".join("%.2f (%d batches)" % sp[1] for sp in spans)))
    print("sync until idle (pull of the echoes included): native %s s; browser %s s"
          % (", ".join("%.2f" % s["sync_seconds"] for s in syncs), ", ".join("%.2f" % w["sync_seconds"] for w in webs)))
    print("native / raw, paired per round: %s; median %.0f%%" % (pct(native_raw), 100 * statistics.median(native_raw)))
    print("browser / raw, paired per round: %s; median %.0f%%" % (pct(web_raw), 100 * statistics.median(web_raw)))
    print("browser / native until idle, per round: %s; median %.0f%%"
          % (pct(web_native_idle), 100 * statistics.median(web_native_idle)))
    print("browser / native pushed, per round: %s; median %.0f%%" % (pct(web_native), 100 * statistics.median(web_native)))
    for f in files:
        print("  %-20s %9d bytes, gzip -9 %8d bytes" % (f, sizes[f][0], sizes[f][1]))
    total = sum(g for _, g in sizes.values())
    print("what a page loads (%s), gzip -9: %d bytes (%.2f MB)" % (" + ".join(files), total, total / 1e6))
    e2e_ratio = statistics.median(web_native)
    p99, p99s = lat(o1)[1], lat(b1)[1]
    print("target: browser end-to-end >= 70%% of the native client's rate: %.0f%%, %s" % (100 * e2e_ratio, met(e2e_ratio >= 0.7)))
    print("target: a local write's commit p99 <= 10 ms: %.1f ms, %s (syncing: %.1f ms, %s; the native client's:"
          " %.1f ms)" % (p99, met(p99 <= 10), p99s, met(p99s <= 10), lat(w1)[1]))
    print("target: .wasm + JS gzip -9 <= 1.5 MB: %.2f MB, %s" % (total / 1e6, met(total <= 1.5e6)))
    return 0


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def proc_cpu(pid):
    """CPU seconds (user and system) of a process so far, 0 when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def server_cpu(stack):
    """The CPU so far of the stack's responders, of their PostgreSQL sessions and of its nginx,
    by process: what the server spends on requests, whatever else the machine runs."""
    children = {}
    for line in subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.splitlines():
        pid, ppid = map(int, line.split())
        children.setdefault(ppid, []).append(pid)

    def tree(root):
        out, todo = [], [root]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(children.get(p, []))
        return out
    sessions = stack.psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'synchro-fcgi'").split()
    groups = {"postgres": [int(p) for p in sessions], "fcgi": tree(stack.procs["fcgi"].pid),
              "nginx": tree(stack.procs["nginx"].pid) if "nginx" in stack.procs else []}
    return {k: {pid: proc_cpu(pid) for pid in pids} for k, pids in groups.items()}


def explain_pages(stack, n):
    """BENCH_EXPLAIN=1: EXPLAIN (ANALYZE, BUFFERS) of the rebuild's page statement for alice
    (as src/store/pull_statements.c builds it for todo, a table read by members, under its
    generic plan) at the start,
    the middle and the end of her N rows, and of the first page's count of them."""
    tid = stack.psql("SELECT table_id FROM synchro.row_fences LIMIT 1")
    keys = stack.psql("SELECT id FROM public.todo WHERE owner = 'alice' ORDER BY id"
                      " OFFSET %d LIMIT 1" % (n // 2)).strip()
    last = stack.psql("SELECT id FROM public.todo WHERE owner = 'alice' ORDER BY id"
                      " OFFSET %d LIMIT 1" % max(0, n - 1001)).strip()
    page = ("SELECT r.id::text, f.version, CASE WHEN f.client_id = $1::uuid THEN f.mutation_id END,"
            " r.title::text, left(r.done::text, 1), r.note::text, r.owner::text, r.list_id::text"
            " FROM public.todo r JOIN LATERAL (SELECT f.version, f.client_id, f.mutation_id"
            " FROM synchro.row_fences f WHERE f.table_id = '%s' AND f.pk = r.id::text OFFSET 0) f ON true"
            " WHERE r.id > $3::uuid AND (r.owner = $4::text OR EXISTS (SELECT 1 FROM public.todo_list h"
            " JOIN public.list_member m ON m.list_id = h.id WHERE h.id = r.list_id AND m.user_id = $4::text))"
            " ORDER BY r.id LIMIT $2::integer" % tid)
    count = ("SELECT count(*) FROM public.todo r JOIN synchro.row_fences f"
             " ON f.table_id = '%s' AND f.pk = r.id::text WHERE (r.owner = 'alice' OR EXISTS (SELECT 1"
             " FROM public.todo_list h JOIN public.list_member m ON m.list_id = h.id WHERE h.id = r.list_id"
             " AND m.user_id = 'alice'))" % tid)
    for name, after in (("a page at the start", "00000000-0000-0000-0000-000000000000"),
                        ("a page in the middle", keys), ("the last page", last)):
        # the server's settings: its sessions' (jit off), its rebuild pages' (src/store/rebuild.c)
        out = stack.psql("SET jit = off; SET plan_cache_mode = force_generic_plan;"
                         " SET max_parallel_workers_per_gather = 0; PREPARE p(uuid, integer, uuid, text) AS %s;"
                         " EXPLAIN (ANALYZE, BUFFERS) EXECUTE p(gen_random_uuid(), 1001, '%s', 'alice')"
                         % (page, after))
        print("EXPLAIN ANALYZE, %s (rows after %s):\n  %s" % (name, after, out.replace("\n", "\n  ")))
    out = stack.psql("SET jit = off; EXPLAIN (ANALYZE, BUFFERS) " + count)
    print("EXPLAIN ANALYZE, the first page's count:\n  %s" % out.replace("\n", "\n  "))
    # The server's pages alone: a client of the stack asking for them in turn and doing nothing
    # else (what a device waits for when it applies nothing), each page timed.
    conn = stack.connect(user="alice")
    body = {"client_generation": conn["client_generation"], "client_id": conn["client_id"], "limit": 1000,
            "page_token": None, "rebuild_id": str(uuid.uuid4()), "schema": conn["schema"]}
    hc = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120)
    auth = "Basic " + base64.b64encode(("alice:%s" % e2e.USERS["alice"]).encode()).decode()
    times, got, t00, cpu0 = [], 0, time.monotonic(), None
    while True:
        if len(times) == 1:
            cpu0 = server_cpu(stack)  # the pages after the first, as a device's steady state
        t0 = time.monotonic()
        hc.request("POST", "/v3/rebuild", body=json.dumps(body).encode(),
                   headers={"Authorization": auth, "Synchro-Protocol": "3", "Content-Type": "application/json"})
        r = hc.getresponse()
        page = json.loads(r.read())
        times.append(time.monotonic() - t0)
        if r.status != 200:
            raise SystemExit("bench: rebuild page %d: %s" % (len(times), page))
        got += len(page["rows"])
        if page.get("page_token") is None:
            break
        body["page_token"] = page["page_token"]
    hc.close()
    print("the server's %d pages of %d rows alone, asked for in turn: %.1f s (%.0f rows/s); the first %.0f ms;"
          " the others median %.1f ms, p90 %.1f ms, max %.1f ms"
          % (len(times), got, time.monotonic() - t00, got / (time.monotonic() - t00), 1000 * times[0],
             1000 * statistics.median(times[1:] or [0]), 1000 * percentile(times[1:] or [0], 90),
             1000 * max(times[1:] or [0])))
    if cpu0 is not None:
        cpu1, n = server_cpu(stack), len(times) - 1
        used = {k: sum(c - cpu0[k].get(pid, 0.0) for pid, c in cpu1[k].items()) for k in cpu1}
        print("the server's CPU for the %d pages after the first: PostgreSQL %.2f ms a page, synchro-fcgi %.2f ms,"
              " nginx %.2f ms" % (n, 1000 * used["postgres"] / n, 1000 * used["fcgi"] / n, 1000 * used["nginx"] / n))


def main_rows(counts):
    """--rows N[,N...]: a new device's first sync of N rows of alice's (written on the server by
    one INSERT ... SELECT, as an app would) and queries over its synced tables. With
    BENCH_CLIENT_BEFORE=EXE (a bench_client built from another tree), that build's device and
    this one's sync the same rows in turn, BENCH_PAIRS times (default 1), on the same stack."""
    before = os.environ.get("BENCH_CLIENT_BEFORE")
    pairs = int(os.environ.get("BENCH_PAIRS", "1"))
    builds = ([("before", before)] if before else []) + [("this build", BENCH)]
    why = web_missing() if WEB else None
    if why:
        print("SKIP the browser half: " + why)
    web = WEB and not why
    users = ("alice", "bob") if web else ("alice",)
    stack = (WebStack if web else e2e.Stack)(server="nginx", workers=2, fcgi_conf={"pull_wait_ms": 30000})
    results, webs, commits = [], [], None
    browser = None
    print("at the start: " + uptime(), flush=True)
    try:
        stack.start()
        for setting in filter(None, os.environ.get("BENCH_PG_SET", "").split(",")):
            # BENCH_PG_SET=name=value[,...]: the server's settings for a what-if run
            name, value = setting.split("=", 1)
            stack.psql("ALTER SYSTEM SET %s = '%s'" % (name, value))
            stack.psql("SELECT pg_reload_conf()")
            if stack.psql("SELECT pending_restart FROM pg_settings WHERE name = '%s'" % name) == "t":
                # shared_buffers and the like: the server restarts, the responders reconnect
                stack.pg_stop()
                stack.pg_start()
                stack.restart_fcgi()
            print("the server's %s = %s" % (name, stack.psql("SHOW " + name)), flush=True)
        stack.start_walsync()
        url = "http://127.0.0.1:%d" % stack.port
        if web:
            browser = Browser(url)
        have = 0
        for n in counts:
            logged = int(stack.psql("SELECT count(*) FROM synchro.changelog"))
            for u in users:
                stack.psql("INSERT INTO public.todo(id, title, done, owner) SELECT gen_random_uuid(),"
                           " 'row ' || i, i %% 2 = 0, '%s' FROM generate_series(%d, %d) i" % (u, have + 1, n))
            # the device asks once walsync has materialized them (else its first sync pulls
            # them again as changes after its rebuild)
            t0 = time.monotonic()
            while int(stack.psql("SELECT count(*) FROM synchro.changelog")) < logged + len(users) * (n - have):
                if time.monotonic() - t0 > 900:
                    raise SystemExit("bench: walsync did not materialize %d rows in 900 s" % (n - have))
                time.sleep(0.5)
            have = n
            for k in range(pairs):
                for name, exe in builds:
                    load = os.getloadavg()[0]
                    r = client("rows", os.path.join(stack.dir, "rows%d-%d-%s.db" % (n, k, name[0])), url,
                               "alice:alice", str(n), exe=exe)
                    r.update(build=name, load=load, load_after=os.getloadavg()[0])
                    results.append(r)
                    print("  %s: %s" % (uptime(), json.dumps(r)), flush=True)
            if web:
                load = os.getloadavg()[0]
                webs.append(dict(browser.run(op="rows", store="rows%d.db" % n), load=load,
                                 load_after=os.getloadavg()[0]))
            if os.environ.get("BENCH_EXPLAIN") == "1":
                explain_pages(stack, n)
        if web:
            # a local commit's latency with no sync beside it, in the same run
            commits = browser.run(op="writes", store="commits.db", n=WRITES, per=1, offline=True)
    finally:
        if browser is not None:
            browser.close()
        stack.stop()
    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "?"
    print("load average at the end: %s; %s" % (load, uptime()))
    for r in results:
        print("native (%s), %d rows, load %.2f to %.2f: first sync %.1f s (%.0f rows/s, CPU %.1f s; its rebuild"
              " %.1f s, CPU %.1f s), peak RSS %.1f MB; count(*) %.1f ms; index (done, title) made in %.2f s"
              % (r["build"], r["rows"], r["load"], r["load_after"], r["first_sync_seconds"], r["rows_per_s"],
                 r["first_sync_cpu_seconds"], r["rebuild_seconds"], r["rebuild_cpu_seconds"],
                 r["peak_rss_kb"] / 1024, r["count_ms"], r["index_seconds"]))
        print("  point query by pk: median %.3f ms, p99 %.3f ms (%d queries); indexed 50 rows:"
              " median %.3f ms, p99 %.3f ms; a commit with a live query's refresh: median %.2f ms,"
              " p99 %.2f ms"
              % (r["point_ms_p50"], r["point_ms_p99"], r["queries"], r["page50_ms_p50"], r["page50_ms_p99"],
                 r["commit_live_ms_p50"], r["commit_live_ms_p99"]))
        print("  target: first sync >= 50,000 rows/s: %s; a point query <= 1 ms: %s"
              % (met(r["rows_per_s"] >= 50000), met(r["point_ms_p50"] <= 1)))
    mine = [r for r in results if r["build"] == "this build"]
    for i, w in enumerate(webs):
        r = mine[(i + 1) * pairs - 1]  # this build's last native run of the same rows
        pm, pp = statistics.median(w["point_ms"]), percentile(w["point_ms"], 99)
        gm, gp = statistics.median(w["page50_ms"]), percentile(w["page50_ms"], 99)
        lm, lp = statistics.median(w["live_ms"]), percentile(w["live_ms"], 99)
        print("browser, %d rows, load %.2f to %.2f: first sync %.1f s (%.0f rows/s, %.0f%% of the native rate);"
              " as the page sees them: a point query by pk median %.2f ms, p99 %.2f ms; indexed 50 rows median"
              " %.2f ms, p99 %.2f ms; a local update to its live query's refresh median %.2f ms, p99 %.2f ms"
              % (w["rows"], w["load"], w["load_after"], w["first_sync_seconds"], w["rows_per_s"],
                 100 * w["rows_per_s"] / r["rows_per_s"], pm, pp, gm, gp, lm, lp))
        print("  target: browser first sync >= 50%% of native: %s; point query <= 5 ms: %s; 50 rows <= 5 ms: %s;"
              " live refresh <= 16 ms: %s" % (met(w["rows_per_s"] >= 0.5 * r["rows_per_s"]), met(pm <= 5),
                                               met(gm <= 5), met(lm <= 16)))
    if commits is not None:
        x = commits["latencies_ms"]
        print("browser local writes, 1 per durable commit, no sync beside: %.0f writes/s; commit latency"
              " p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d commits)"
              % (commits["writes_per_s"], percentile(x, 50), percentile(x, 99), max(x), len(x)))
        print("  target: a local commit's p99 <= 10 ms: %s" % met(percentile(x, 99) <= 10))
    return 0


def main():
    if "--rows" in sys.argv[1:]:
        i = sys.argv.index("--rows")
        return main_rows([int(x) for x in sys.argv[i + 1].split(",")])
    if WEB:
        return main_web()
    stack = e2e.Stack(server="nginx", workers=2, fcgi_conf={"pull_wait_ms": 30000})
    url = None
    try:
        stack.start()
        stack.start_walsync()
        url = "http://127.0.0.1:%d" % stack.port
        d = stack.dir
        w1 = client("writes", os.path.join(d, "w1.db"), url, "alice:alice", str(WRITES), "1")
        w100 = client("writes", os.path.join(d, "w100.db"), url, "alice:alice", str(N), "100")
        raws, syncs, ratios = [raw_push_rate(stack)], [], []
        for r in range(ROUNDS):
            syncs.append(client("sync", os.path.join(d, "s%d.db" % r), url, "alice:alice", str(N)))
            raws.append(raw_push_rate(stack))
            # Paired: this client run against the raw runs just before and after it, since the
            # load of a shared machine moves between rounds more than within one.
            ratios.append(syncs[-1]["intents_per_s"] / ((raws[-2] + raws[-1]) / 2))
        raw = statistics.median(raws)
        rate = statistics.median(s["intents_per_s"] for s in syncs)
        print("local writes, 1 per durable commit:   %8.0f writes/s" % w1["writes_per_s"])
        print("local writes, 100 per durable commit: %8.0f writes/s" % w100["writes_per_s"])
        print("raw /v3/push, %d per batch:         %8.0f mutations/s  (runs: %s)"
              % (BATCH, raw, ", ".join("%.0f" % x for x in raws)))
        print("client sync of %d intents, pushed: %8.0f intents/s    (runs: %s)"
              % (N, rate, ", ".join("%.0f" % s["intents_per_s"] for s in syncs)))
        print("client CPU while pushing (seal, validate, reconcile, SQLite): %s s"
              % ", ".join("%.2f" % s["push_cpu_seconds"] for s in syncs))
        print("client sync until idle (pull of the echoes included): %s s"
              % ", ".join("%.2f" % s["sync_seconds"] for s in syncs))
        print("client / raw, paired per round: %s; median %.0f%% (target >= 80%%)"
              % (", ".join("%.0f%%" % (100 * x) for x in ratios), 100 * statistics.median(ratios)))
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
