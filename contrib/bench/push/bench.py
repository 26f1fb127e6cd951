#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/push (run it through contrib/bench/push/run): /v3/push through nginx on this
machine beside two baselines measured in the same run, on the same throwaway PostgreSQL:
  - plain SQL (plain_sql): the same rows inserted over one libpq connection per worker, as many
    workers as synchro-fcgi responders, one transaction of prepared INSERTs per batch
    (pipelined: one round trip per batch, as the push path does; and one round trip per
    statement, for reference): the database's own limit;
  - a trivial FastCGI responder (trivial_fcgi) behind the same nginx site, as many processes as
    responders, sent the same requests by the same wrk script: the web stack's limit;
and, beside the replays for reference, the trivial responder making one database round trip per
request (SELECT 1): the least any request that reads the database can cost. A push, fresh or
replayed, is one statement (synchro.synchro_push) whatever its size.
Beside them (peer.py), when node and npm are installed, two peers: upload endpoints a team
writes itself, as many node:cluster processes as responders, behind the same nginx, each with
an idempotency key, version-checked writes, one transaction per batch and an answer per
mutation, fresh and sent again (its repeated-key answer): the docs peer
(contrib/bench/push/peer: express + node-postgres, one awaited statement per mutation) and the
fast peer (contrib/bench/push/peer-fast: fastify + postgres.js, one multi-row statement per
operation kind, pipelined); and the limit "trivial + same writes", the trivial responder
inserting the push's rows and a ledger row in one statement.
Targets: 1-mutation pushes >= 30% of plain SQL rows/s, 100- and 1000-mutation batches >= 70%,
1-mutation replays >= 90% of the trivial responder + one SELECT 1, 100-mutation replays >= 50%
of the trivial responder; against the fast peer: pushes of 1 and 100 mutations >= 1.5x its
mutations/s, exact replays >= 2x its repeated-key answers (the docs peer's ratios are printed
as references); 1-mutation pushes >= 60% of the "trivial + same writes" limit.
Each configuration runs BENCH_ROUNDS times, interleaved with the others, and the median run is
shown (with every round's figure): on a shared machine the rounds see the same background load.
Beside throughput and latency, the CPU seconds the server side used (the PostgreSQL cluster,
the responders, nginx; from /proc) per row or request: a figure other load on the machine
hardly moves.
Environment: BENCH_WORKERS (responders and SQL workers, default 4), BENCH_CONNECTIONS (wrk
connections = threads, one registered client each; default = BENCH_WORKERS), BENCH_SECONDS
(each measured run, default 5), BENCH_ROUNDS (default 3), BENCH_WARMUP (seconds before each
wrk run, default 1), BENCH_BATCHES (default "1 100 1000"), BENCH_FRESH=0 (only the replays and their
references: no fresh-row batch, no plain SQL), BENCH_PEER=0 (without the peers), BENCH_BREAKDOWN=1 (after each measured run,
the CPU per row of each kind of server process: postgres backends by role, the responders, nginx;
processes that ended during the run are left out, so plain SQL's own backends do not show)."""

import base64
import json
import os
import resource
import subprocess
import sys
import time

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
BUILD = os.environ.get("SYNCHRO_BUILDDIR", SRC)
sys.path.insert(0, os.path.join(SRC, "tests/e2e"))
import synchro_e2e as e2e  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402

PLAIN_SQL = os.path.join(BUILD, "contrib/bench/push/plain_sql")
TRIVIAL = os.path.join(BUILD, "contrib/bench/push/trivial_fcgi")
LUA = os.path.join(SRC, "contrib/bench/push/push.lua")

WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", str(WORKERS)))
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
WARMUP = float(os.environ.get("BENCH_WARMUP", "1"))
BATCHES = [int(b) for b in os.environ.get("BENCH_BATCHES", "1 100 1000").split()]
FRESH = os.environ.get("BENCH_FRESH", "1") != "0"
ROUNDTRIP_SQL = "SELECT 1"


class BenchStack(e2e.Stack):
    """The e2e stack, with nginx's limit_req taken out of the site (it would answer 429 above
    1000 requests/s; the benchmark measures the stack, not the rate limit). Everything else of
    conf/nginx/synchro.conf stays: basic authentication, fastcgi_params, the body limits.
    Responders are not recycled (max_requests = 0): a responder that ends between two /proc
    readings would drop out of the CPU accounting (recycling costs a fork and a reconnection
    per 10,000 requests, nothing a run of seconds could show)."""

    def __init__(self, **kw):
        kw.setdefault("fcgi_conf", {"max_requests": 0})
        kw.setdefault("rate_limit", False)
        super().__init__(**kw)
        self.peer_ports = {which: e2e.free_port() for which in peer.PEERS}
        self.peer_port = self.peer_ports["docs"]

    nginx_worker_connections = 1024

    def nginx_site(self):
        """The site with the peers' /peer/push and /peer-fast/push beside /v3/ (peer.py)."""
        return peer.edit_site(super().nginx_site(), self.peer_ports)


def proc_table():
    """pid -> (ppid, own CPU ticks, reaped children's CPU ticks) of every process."""
    t = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        t[int(d)] = (int(f[1]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14]))
    return t


def tree_cpu(roots):
    """CPU seconds used so far by the process trees under roots: each root, its descendants,
    and the children it reaped (postgres backends and recycled responders that ended)."""
    t = proc_table()
    kids = {}
    for pid, (ppid, _, _) in t.items():
        kids.setdefault(ppid, []).append(pid)
    ticks, seen = 0, set()
    stack = [r for r in roots if r in t]
    for r in stack:
        ticks += t[r][2]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        ticks += t[pid][1]
        stack.extend(kids.get(pid, []))
    return ticks / os.sysconf("SC_CLK_TCK")


def proc_class(pid):
    """What a process is, for BENCH_BREAKDOWN: the program, or the postgres process's role."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return None
    a0 = argv[0].decode(errors="replace")
    if a0.startswith("postgres: "):
        words = a0[len("postgres: "):].split()
        if len(words) >= 2 and words[1] == os.environ.get("PGDATABASE", "synchro_test"):
            return "postgres backend (%s)" % words[0]
        return "postgres " + " ".join(w for w in words if not w.startswith("["))[:30]
    return os.path.basename(a0.split()[0]) if a0 else None


def class_cpu(roots):
    """Own CPU seconds per process class under roots (BENCH_BREAKDOWN; reaped ones not included)."""
    t = proc_table()
    kids = {}
    for pid, (ppid, _, _) in t.items():
        kids.setdefault(ppid, []).append(pid)
    out, seen = {}, set()
    stack = [r for r in roots if r in t]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        c = proc_class(pid) or "?"
        out[c] = out.get(c, 0) + t[pid][1] / os.sysconf("SC_CLK_TCK")
        stack.extend(kids.get(pid, []))
    return out


BREAKDOWN = os.environ.get("BENCH_BREAKDOWN") == "1"


def client_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# What each kind of endpoint is: its URL path, processes (the stack's names), the
# application_name of its database sessions, the table its fresh rows go to, the header that
# marks its answers to a batch sent again.
KINDS = {
    "push": {"path": "/v3/push", "procs": ("fcgi", "nginx"), "app": "synchro-fcgi", "table": "public.item",
             "replay_header": "Synchro-Replay", "replay_value": "batch"},
    "peer": {"path": peer.PEER_PATH, "procs": ("peer", "nginx"), "app": peer.PEER_APP, "table": "bench_peer.item",
             "replay_header": peer.PEER_REPLAY_HEADER, "replay_value": "true"},
    "fast": {"path": peer.PEERS["fast"]["path"], "procs": ("fast", "nginx"), "app": peer.PEERS["fast"]["app"],
             "table": peer.PEERS["fast"]["item"], "replay_header": peer.PEER_REPLAY_HEADER, "replay_value": "true"},
    "limit": {"path": "/v3/push", "procs": ("trivial", "nginx"), "app": peer.LIMIT_APP, "table": "public.item"},
    "trivial": {"path": "/v3/push", "procs": ("trivial", "nginx"), "app": None, "table": "public.item"},
}


class Bench:
    def __init__(self, stack):
        self.st = stack
        self.phase = 0
        self.clients = []
        self.schema = None
        self.invalid = []

    def next_phase(self):
        self.phase += 1
        return self.phase

    def connect_clients(self):
        for _ in range(CONNECTIONS):
            j = self.st.connect("alice")
            self.clients.append({"id": j["client_id"], "generation": j["client_generation"]})
            self.schema = j["schema"]

    def roots(self, *names):
        pids = [p.pid for n, p in self.st.procs.items() if n in names and p.poll() is None]
        with open(os.path.join(os.environ["SYNCHRO_PG_DATA"], "postmaster.pid")) as f:
            pids.append(int(f.readline()))
        return pids

    def measured(self, fn, roots):
        """Runs fn() and adds the CPU it cost: server (postgres, responders, nginx) and client."""
        k0 = class_cpu(roots) if BREAKDOWN else None
        s0, c0, t0 = tree_cpu(roots), client_cpu(), time.monotonic()
        res = fn()
        wall = time.monotonic() - t0
        if BREAKDOWN:
            k1 = class_cpu(roots)
            n = res.get("rows") or 1
            print("    breakdown, us of CPU per row: " + ", ".join(
                "%s %.1f" % (k, 1e6 * (v - k0.get(k, 0)) / n) for k, v in sorted(k1.items(), key=lambda kv: -kv[1] + k0.get(kv[0], 0))
                if v - k0.get(k, 0) > 0), flush=True)
        res["server_cpu"] = tree_cpu(roots) - s0
        res["client_cpu"] = client_cpu() - c0
        res["wall"] = wall
        return res

    def quiesce(self, app="synchro-fcgi"):
        """Until no session of app is inside a statement (wrk's cut requests finish)."""
        if app is None:
            return
        e2e.wait_for(lambda: self.st.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                                          "'%s' AND state <> 'idle'" % app) == "0",
                     timeout=120, what="the %s sessions to finish the requests wrk cut" % app)

    def checkpoint(self):
        self.st.psql("CHECKPOINT")

    def rows_of_phase(self, phase, table="public.item"):
        return int(self.st.psql("SELECT count(*) FROM %s WHERE id >= %d AND id < %d"
                                % (table, phase * 10**12, (phase + 1) * 10**12)))

    def plain_sql(self, batch, mode="pipeline"):
        self.checkpoint()
        phase = self.next_phase()
        argv = [PLAIN_SQL, "-w", str(WORKERS), "-n", str(batch), "-d", str(SECONDS), "-p", str(phase)]
        argv += {"pipeline": [], "serial": ["-s"], "units": ["-u"]}[mode]

        def run():
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit("plain_sql failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))
            kv = dict(item.split("=", 1) for item in r.stdout.split())
            return {"rows_per_s": float(kv["rows_per_s"]), "req_per_s": float(kv["batches_per_s"]),
                    "p50_ms": float(kv["p50_ms"]), "p99_ms": float(kv["p99_ms"]), "rows": int(kv["rows"]),
                    "requests": int(kv["batches"])}
        res = self.measured(run, self.roots())
        have = self.rows_of_phase(phase)
        if have != res["rows"]:
            self.invalid.append("plain SQL batch %d: %d rows counted, %d in the table" % (batch, res["rows"], have))
        return res

    def wrk(self, mode, batch, phase, seconds, check_replay=False, kind="push"):
        k = KINDS[kind]
        conf = os.path.join(self.st.dir, "wrk-%d.lua" % phase)
        auth = "Basic " + base64.b64encode(b"alice:alice").decode()
        with open(conf, "w") as f:
            f.write("return %s\n" % lua_value({
                "mode": mode, "batch": batch, "phase": phase, "auth": auth,
                "schema": self.schema, "clients": self.clients, "check_replay": check_replay,
                "path": k["path"], "replay_header": k.get("replay_header", ""),
                "replay_value": k.get("replay_value", "")}))
        argv = ["wrk", "-t", str(CONNECTIONS), "-c", str(CONNECTIONS), "-d", "%ds" % max(1, round(seconds)),
                "--timeout", "60s", "--latency", "-s", LUA, "http://127.0.0.1:%d%s" % (self.st.port, k["path"])]
        r = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, BENCH_WRK_CONF=conf))
        line = [x for x in r.stdout.split("\n") if x.startswith("BENCH ")]
        if r.returncode != 0 or not line:
            raise SystemExit("wrk failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))
        j = json.loads(line[0][6:])
        j["stderr"] = r.stderr.strip()
        secs = j["duration_us"] / 1e6
        j["req_per_s"] = j["requests"] / secs
        j["rows_per_s"] = j["requests"] * batch / secs
        j["rows"] = j["requests"] * batch
        j["p50_ms"] = j["p50_us"] / 1e3
        j["p99_ms"] = j["p99_us"] / 1e3
        return j

    def check(self, what, j, fresh_phase=None, batch=0, table="public.item"):
        errs = j["connect_errors"] + j["read_errors"] + j["write_errors"] + j["timeouts"]
        problems = []
        if j["bad"] or j["non_2xx"]:
            problems.append("%d non-200 answers" % max(j["bad"], j["non_2xx"]))
        if errs:
            problems.append("%d socket errors/timeouts" % errs)
        if j["rejected"]:
            problems.append("%d answers with rejected mutations" % j["rejected"])
        if j["notreplay"]:
            problems.append("%d answers without Synchro-Replay: batch" % j["notreplay"])
        if fresh_phase is not None:
            # Requests wrk cut at the end may still have committed: at least as many rows.
            have = self.rows_of_phase(fresh_phase, table)
            if have < j["ok"] * batch:
                problems.append("%d rows in the table, %d acknowledged" % (have, j["ok"] * batch))
        if problems:
            self.invalid.append("%s: %s (%s)" % (what, "; ".join(problems), j["stderr"][:500]))

    def push_fresh(self, batch, kind="push"):
        """Fresh-row batches to /v3/push (kind push), the peer, or the limit responder."""
        k = KINDS[kind]
        self.checkpoint()
        self.wrk("fresh", batch, self.next_phase(), WARMUP, kind=kind)
        self.quiesce(k["app"])
        self.checkpoint()
        phase = self.next_phase()
        j = self.measured(lambda: self.wrk("fresh", batch, phase, SECONDS, kind=kind), self.roots(*k["procs"]))
        self.quiesce(k["app"])
        self.check("%s fresh batch %d" % (kind, batch), j, phase, batch, k["table"])
        return j

    def replay(self, batch, phase, trivial=False, kind=None):
        """The same batch again: /v3/push's exact replays, the peer's repeated key, or the
        trivial responder sent the same requests."""
        kind = kind or ("trivial" if trivial else "push")
        k = KINDS[kind]
        # The warm-up executes each thread's batch once; the measured run only replays it.
        self.wrk("replay", batch, phase, WARMUP, kind=kind)
        self.quiesce(k["app"])
        j = self.measured(lambda: self.wrk("replay", batch, phase, SECONDS, check_replay=kind != "trivial",
                                           kind=kind), self.roots(*k["procs"]))
        self.check("%s replay batch %d" % (kind, batch), j)
        return j

    def use_trivial(self, sql=None, params=(), answer_bytes=0, body_param=False):
        """The trivial responder in synchro-fcgi's place; with sql, one round trip per request;
        with answer_bytes, its answer padded to that size; with body_param, sql's parameters
        are the body and the answer (the limit "trivial + same writes")."""
        self.st.stop_proc("fcgi")
        self.st.stop_proc("trivial")
        if os.path.exists(self.st.sock):
            os.unlink(self.st.sock)
        self.st.spawn("trivial", [TRIVIAL, self.st.sock, str(WORKERS)] + ([sql] if sql else []) + list(params),
                      env=dict(os.environ, TRIVIAL_ANSWER_BYTES=str(answer_bytes),
                               TRIVIAL_BODY_PARAM="1" if body_param else "0",
                               PGAPPNAME=peer.LIMIT_APP if body_param else "trivial_fcgi",
                               # a refused batch's error would quote its values in the server log
                               PGOPTIONS="-c log_min_messages=fatal" if body_param else ""))
        e2e.wait_for(lambda: self.st.try_status("GET", "/healthz") == 200, what="the trivial responder")

    def use_synchro(self):
        self.st.stop_proc("trivial")
        self.st.restart_fcgi()


def report_invalid(invalid):
    """Prints the runs whose figures cannot be trusted (a count that did not add up, a process
    that failed); returns the bench's exit status, 1 when there was any."""
    if not invalid:
        return 0
    print("INVALID RUNS (figures above are not trustworthy):")
    for x in invalid:
        print("  " + x)
    return 1


def lua_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "{" + ", ".join(lua_value(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join("[%s] = %s" % (json.dumps(k), lua_value(x)) for k, x in v.items()) + "}"
    raise TypeError(type(v))


def median(results):
    """The run of median throughput among rounds (its latencies and CPU come with it)."""
    r = sorted(results, key=lambda x: x["rows_per_s"])
    m = dict(r[(len(r) - 1) // 2])
    m["all"] = [x["rows_per_s"] for x in results]
    m["all_req"] = [x["req_per_s"] for x in results]
    return m


def show(label, res, base=None, unit="rows/s"):
    key = "rows_per_s" if unit == "rows/s" else "req_per_s"
    allk = "all" if unit == "rows/s" else "all_req"
    ratio = "%6.1f%%" % (100.0 * res[key] / base[key]) if base is not None and base[key] else ""
    n = res["rows"] if unit == "rows/s" else res["requests"]
    cpu = 1e6 * res["server_cpu"] / n if n else 0
    print("  %-42s %10.1f %-6s p50 %8.2f ms p99 %8.2f ms  server CPU %7.1f us/%s  %7s  rounds: %s"
          % (label, res[key], unit, res["p50_ms"], res["p99_ms"], cpu, "row" if unit == "rows/s" else "req", ratio,
             " ".join("%.0f" % v for v in res[allk])), flush=True)
    return cpu


def main():
    for path in (PLAIN_SQL, TRIVIAL):
        if not os.access(path, os.X_OK):
            raise SystemExit("missing %s (make %s)" % (path, os.path.relpath(path, BUILD)))
    load = os.getloadavg()[0]
    print("== contrib/bench/push: %d responders = SQL workers, %d wrk connections (one client each), "
          "%d rounds of %gs runs (median shown) after %gs warm-up, %d cores, load average %.2f at start"
          % (WORKERS, CONNECTIONS, ROUNDS, SECONDS, WARMUP, os.cpu_count(), load), flush=True)
    if load > 1.0:
        print("   (the machine is busy with other work: throughputs are lower and noisier than on an idle "
              "machine; the ratios compare runs interleaved in the same rounds)", flush=True)
    # The bench's kind of each peer (KINDS), and the peers installed: which -> directory.
    peer_kind = {"docs": "peer", "fast": "fast"}
    peer_dirs, why = {}, None
    for which in ("docs", "fast"):
        d, why = peer.install(BUILD, which)
        if d is None:
            print("SKIP %s: %s; the other figures are measured without it" % (peer.PEERS[which]["label"], why),
                  flush=True)
        else:
            peer_dirs[which] = d
    peer_kinds = [peer_kind[w] for w in peer_dirs]
    st = BenchStack(workers=WORKERS)
    st.start()
    try:
        peer.create_tables(st)
        for which, d in peer_dirs.items():
            peer.start(st, d, WORKERS, st.peer_ports[which], which)
            print("   %s: %s on node %s, %d node:cluster processes (as many as responders), behind the "
                  "same nginx at %s" % (peer.PEERS[which]["label"], peer.versions(d, which),
                                        subprocess.run(["node", "--version"], capture_output=True,
                                                       text=True).stdout.strip(), WORKERS, peer.PEERS[which]["path"]),
                  flush=True)
        b = Bench(st)
        b.connect_clients()
        fresh = {}
        for batch in BATCHES if FRESH else []:
            runs = {"sql": [], "serial": [], "units": [], "push": [], "limit": []}
            for kind in peer_kinds:
                runs[kind] = []
            for _ in range(ROUNDS):
                runs["sql"].append(b.plain_sql(batch))
                runs["serial"].append(b.plain_sql(batch, "serial"))
                runs["units"].append(b.plain_sql(batch, "units"))
                runs["push"].append(b.push_fresh(batch))
                for kind in peer_kinds:
                    runs[kind].append(b.push_fresh(batch, kind))
                b.use_trivial(peer.LIMIT_SQL, body_param=True)
                runs["limit"].append(b.push_fresh(batch, "limit"))
                b.use_synchro()
            m = {k: median(v) for k, v in runs.items()}
            print("-- fresh-row batches of %d insert(s) into item" % batch, flush=True)
            show("plain SQL, pipelined (the baseline)", m["sql"])
            show("plain SQL, a round trip per statement", m["serial"], m["sql"])
            show("plain SQL, pipelined, a savepoint per row", m["units"], m["sql"])
            show("trivial + same writes (the limit)", m["limit"], m["sql"])
            if "peer" in m:
                show("the docs peer, express + pg (its own table)", m["peer"], m["sql"])
            if "fast" in m:
                show("the fast peer, fastify + postgres.js", m["fast"], m["sql"])
            show("/v3/push through nginx", m["push"], m["sql"])
            fresh[batch] = m
        replay_batches = [x for x in (1, 100) if x in BATCHES] or [1]
        phases = {batch: b.next_phase() for batch in replay_batches}
        rp = {batch: {"push": [], "trivial": []} for batch in replay_batches}
        for kind in peer_kinds:
            for batch in replay_batches:
                rp[batch][kind] = []
        first = replay_batches[0]
        roundtrip = []
        sized = {batch: [] for batch in replay_batches if batch > 1}
        answer = {}
        for _ in range(ROUNDS):
            for batch in replay_batches:
                rp[batch]["push"].append(b.replay(batch, phases[batch]))
                for kind in peer_kinds:
                    rp[batch][kind].append(b.replay(batch, phases[batch], kind=kind))
                if batch in sized and batch not in answer:
                    # The size of the stored response the replays answer (the newest batch).
                    answer[batch] = int(b.st.psql("SELECT length(response) FROM synchro.batches"
                                                  " ORDER BY completed_at DESC LIMIT 1"))
            b.use_trivial()
            for batch in replay_batches:
                rp[batch]["trivial"].append(b.replay(batch, phases[batch], trivial=True))
            # A reference, not a target: the web stack moving a body of the replay's size.
            for batch in sized:
                b.use_trivial(answer_bytes=answer[batch])
                sized[batch].append(b.replay(batch, phases[batch], trivial=True))
            # A reference, not a target: the web stack plus the one database round trip every
            # exact replay makes (doc/contract.md#dispatch-order reads retirement before the replay
            # lookup).
            b.use_trivial(ROUNDTRIP_SQL)
            roundtrip.append(b.replay(first, phases[first], trivial=True))
            b.use_synchro()
        print("-- exact replays (the same batch again: Synchro-Replay: batch) beside the trivial responder",
              flush=True)
        replays = {}
        for batch in replay_batches:
            m = {k: median(v) for k, v in rp[batch].items()}
            show("trivial responder, same requests (%d mut.)" % batch, m["trivial"], unit="req/s")
            if batch == first:
                show("trivial responder + one SELECT 1 round trip", median(roundtrip), m["trivial"],
                     unit="req/s")
            if batch in sized:
                show("trivial, answering %d bytes as the replay" % answer[batch], median(sized[batch]),
                     m["trivial"], unit="req/s")
            if "peer" in m:
                show("the docs peer's repeated key, %d mutation(s)" % batch, m["peer"], m["trivial"], unit="req/s")
            if "fast" in m:
                show("the fast peer's repeated key, %d mutation(s)" % batch, m["fast"], m["trivial"], unit="req/s")
            show("/v3/push exact replay, %d-mutation batch" % batch, m["push"], m["trivial"], unit="req/s")
            replays[batch] = m

        print("== summary", flush=True)
        for batch, m in fresh.items():
            sql, push = m["sql"], m["push"]
            print("fresh %4d: push %9.1f mutations/s (%7.1f req/s, p50 %.2f ms, p99 %.2f ms, %.0f us server CPU per "
                  "mutation); plain SQL %9.1f rows/s (p50 %.2f ms, p99 %.2f ms, %.0f us CPU per row); "
                  "push/plain SQL %.1f%% (throughput), %.1f%% (CPU efficiency)"
                  % (batch, push["rows_per_s"], push["req_per_s"], push["p50_ms"], push["p99_ms"],
                     1e6 * push["server_cpu"] / push["rows"], sql["rows_per_s"], sql["p50_ms"], sql["p99_ms"],
                     1e6 * sql["server_cpu"] / sql["rows"], 100 * push["rows_per_s"] / sql["rows_per_s"],
                     100 * (sql["server_cpu"] / sql["rows"]) / (push["server_cpu"] / push["rows"])))
        for batch, m in replays.items():
            r, t = m["push"], m["trivial"]
            print("replay %3d: push %9.1f req/s (p50 %.2f ms, p99 %.2f ms, %.0f us server CPU per request); trivial "
                  "responder %9.1f req/s (p50 %.2f ms, p99 %.2f ms, %.0f us); push/trivial %.1f%% (throughput), "
                  "%.1f%% (CPU efficiency)"
                  % (batch, r["req_per_s"], r["p50_ms"], r["p99_ms"], 1e6 * r["server_cpu"] / r["requests"],
                     t["req_per_s"], t["p50_ms"], t["p99_ms"], 1e6 * t["server_cpu"] / t["requests"],
                     100 * r["req_per_s"] / t["req_per_s"],
                     100 * (t["server_cpu"] / t["requests"]) / (r["server_cpu"] / r["requests"])))
        for batch, m in fresh.items():
            for kind, what in (("limit", "trivial + same writes"), ("peer", "the docs peer"),
                               ("fast", "the fast peer")):
                if kind in m:
                    x = m[kind]
                    print("fresh %4d: %s %9.1f mutations/s (%7.1f req/s, p50 %.2f ms, p99 %.2f ms, %.0f us server CPU "
                          "per mutation); push/%s %.2fx (throughput), %.2fx (CPU efficiency)"
                          % (batch, what, x["rows_per_s"], x["req_per_s"], x["p50_ms"], x["p99_ms"],
                             1e6 * x["server_cpu"] / x["rows"], kind, m["push"]["rows_per_s"] / x["rows_per_s"],
                             (x["server_cpu"] / x["rows"]) / (m["push"]["server_cpu"] / m["push"]["rows"])))
        for batch, m in replays.items():
            for kind, what in (("peer", "the docs peer"), ("fast", "the fast peer")):
                if kind in m:
                    x = m[kind]
                    print("replay %3d: %s's repeated key %9.1f req/s (p50 %.2f ms, p99 %.2f ms, %.0f us server CPU "
                          "per request); push/%s %.2fx (throughput), %.2fx (CPU efficiency)"
                          % (batch, what, x["req_per_s"], x["p50_ms"], x["p99_ms"],
                             1e6 * x["server_cpu"] / x["requests"], kind, m["push"]["req_per_s"] / x["req_per_s"],
                             (x["server_cpu"] / x["requests"]) / (m["push"]["server_cpu"] / m["push"]["requests"])))
        targets = {1: 0.30, 100: 0.70, 1000: 0.70}
        for batch, m in fresh.items():
            if batch in targets:
                ratio = m["push"]["rows_per_s"] / m["sql"]["rows_per_s"]
                print("target: %d-mutation batches >= %d%% of plain SQL rows/s: %.1f%% %s"
                      % (batch, 100 * targets[batch], 100 * ratio, "MET" if ratio >= targets[batch] else "MISSED"))
        rt = median(roundtrip)
        trivial = replays[first]["trivial"]
        print("reference: the trivial responder plus one SELECT 1 round trip per request reaches %.1f%% of "
              "the trivial responder's req/s (%.0f us server CPU per request)"
              % (100 * rt["req_per_s"] / trivial["req_per_s"], 1e6 * rt["server_cpu"] / rt["requests"]))
        ratio = replays[first]["push"]["req_per_s"] / rt["req_per_s"]
        print("target: %d-mutation exact replays >= 90%% of the trivial responder + one SELECT 1: %.1f%% %s"
              % (first, 100 * ratio, "MET" if ratio >= 0.9 else "MISSED"))
        if 100 in replays:
            ratio = replays[100]["push"]["req_per_s"] / replays[100]["trivial"]["req_per_s"]
            print("target: 100-mutation exact replays >= 50%% of the trivial responder: %.1f%% %s"
                  % (100 * ratio, "MET" if ratio >= 0.5 else "MISSED"))
            big = median(sized[100])
            print("reference: the trivial responder answering the replay's %d bytes reaches %.1f%% of the "
                  "trivial responder's req/s; the replay reaches %.1f%% of it"
                  % (answer[100], 100 * big["req_per_s"] / replays[100]["trivial"]["req_per_s"],
                     100 * replays[100]["push"]["req_per_s"] / big["req_per_s"]))
        for batch, m in fresh.items():
            if "fast" in m:
                ratio = m["push"]["rows_per_s"] / m["fast"]["rows_per_s"]
                if batch in (1, 100):
                    print("target: %d-mutation pushes >= 1.5x the fast peer's mutations/s: %.2fx %s"
                          % (batch, ratio, "MET" if ratio >= 1.5 else "MISSED"))
                else:
                    print("reference: %d-mutation pushes against the fast peer: %.2fx" % (batch, ratio))
            if "peer" in m:
                print("reference: %d-mutation pushes against the docs peer: %.2fx"
                      % (batch, m["push"]["rows_per_s"] / m["peer"]["rows_per_s"]))
        for batch, m in fresh.items():
            ratio = m["push"]["rows_per_s"] / m["limit"]["rows_per_s"]
            if batch == 1:
                print("target: 1-mutation pushes >= 60%% of trivial + same writes: %.1f%% %s"
                      % (100 * ratio, "MET" if ratio >= 0.6 else "MISSED"))
            else:
                print("reference: %d-mutation pushes against trivial + same writes: %.1f%%" % (batch, 100 * ratio))
        for batch, m in replays.items():
            if "fast" in m:
                ratio = m["push"]["req_per_s"] / m["fast"]["req_per_s"]
                print("target: %d-mutation exact replays >= 2x the fast peer's repeated-key answers: %.2fx %s"
                      % (batch, ratio, "MET" if ratio >= 2 else "MISSED"))
            if "peer" in m:
                print("reference: %d-mutation exact replays against the docs peer's repeated-key answers: %.2fx"
                      % (batch, m["push"]["req_per_s"] / m["peer"]["req_per_s"]))
        if "fast" not in peer_dirs:
            print("SKIP the fast peer's targets: %s" % why)
        print("load average at the end: %.2f" % os.getloadavg()[0])
        return report_invalid(b.invalid)
    finally:
        st.stop()


if __name__ == "__main__":
    sys.exit(main())
