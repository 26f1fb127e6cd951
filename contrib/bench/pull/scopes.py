#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/pull, scopes mode (BENCH_MODE=scopes contrib/bench/pull/run): synchro-walsync's
materialization rate for changes of a members-scoped table beside the same for an owner-scoped
one, on a throwaway PostgreSQL (tests/integration/with-pg) with the e2e stack's roles (walsync
runs as its own login role).

Three tables: `otodo` (read by its owner), `mtodo` (read by the members of its list: one hop,
`mtodo.list_id -> lists`, `list_members(list_id, user_id)`) and `mtask` (two hops,
`mtask.project_id -> projects.team_id -> team_members(team_id, user_id)`).
BENCH_SCOPE_MEMBERS memberships (default 10000) over BENCH_SCOPE_LISTS lists (default 2000),
and as many team memberships over teams of five, their projects four per team.

Each run: walsync stopped, a backlog of BENCH_SCOPE_ROWS inserts (default 200000, transactions
of 100) into one table, walsync started: changes per second from its first changelog commit
until the backlog is in the changelog (as the pull benchmark's "materialization rate"): the
inserts per second, and the entries per second (the scope changes' entries included). With
BENCH_SCOPE_CHURN (default 1), each transaction of the members-scoped runs also adds one
membership (its entries: the rows of that list or team, read from the live table) and every
tenth removes one. Every table is run BENCH_SCOPE_ROUNDS times (default 2), interleaved; the
load average is printed with each figure. Then, walsync running, a list of
BENCH_SCOPE_SHARE_ROWS rows (default 10000) is shared with a new user: the time from the
share's commit until its entries are in the changelog.

Then a pull's server CPU per request (PostgreSQL, the responders, nginx), with the memberships
above in the database: alice's client pulls BENCH_SCOPE_PULLS times (default 200) the same page
of 1000 changes from the same cursor, once over 5000 rows of `otodo` she owns, once over 5000
rows of `mtodo` in a list she is a member of (owned by another: each row passes the live
membership check), BENCH_SCOPE_ROUNDS times each, interleaved.

Where a run's CPU goes: each run also prints the CPU per entry of walsync itself, of its SQL
backend (the changelog writes, the scope changes' reads of the live rows) and of its walsender
(decoding). With BENCH_SCOPE_PERF=DIR, perf records those three processes during each
members-scoped drain into DIR/KIND-ROUND.data and writes the flat profile beside it (.txt)."""

import os
import signal
import subprocess
import sys
import time

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SRC, "tests/e2e"))
sys.path.insert(0, os.path.join(SRC, "contrib/bench/push"))
import synchro_e2e as e2e  # noqa: E402
import bench as pushbench  # noqa: E402

ROWS = int(os.environ.get("BENCH_SCOPE_ROWS", "200000"))
MEMBERS = int(os.environ.get("BENCH_SCOPE_MEMBERS", "10000"))
LISTS = int(os.environ.get("BENCH_SCOPE_LISTS", "2000"))
ROUNDS = int(os.environ.get("BENCH_SCOPE_ROUNDS", "2"))
CHURN = os.environ.get("BENCH_SCOPE_CHURN", "1") == "1"
PULLS = int(os.environ.get("BENCH_SCOPE_PULLS", "200"))
PERF = os.environ.get("BENCH_SCOPE_PERF", "")
PULL_ROWS = 5000
BATCH = 100

SCHEMA = """
CREATE TABLE public.otodo (id bigint PRIMARY KEY, title text NOT NULL, owner text NOT NULL);
CREATE TABLE public.lists (id bigint PRIMARY KEY);
CREATE TABLE public.list_members (list_id bigint NOT NULL REFERENCES public.lists,
  user_id text NOT NULL, PRIMARY KEY (list_id, user_id));
CREATE TABLE public.mtodo (id bigint PRIMARY KEY, list_id bigint NOT NULL, title text NOT NULL,
  owner text NOT NULL);
CREATE INDEX ON public.mtodo (list_id);
CREATE TABLE public.teams (id bigint PRIMARY KEY);
CREATE TABLE public.team_members (team_id bigint NOT NULL REFERENCES public.teams,
  user_id text NOT NULL, PRIMARY KEY (team_id, user_id));
CREATE TABLE public.projects (id bigint PRIMARY KEY, team_id bigint REFERENCES public.teams);
CREATE TABLE public.mtask (id bigint PRIMARY KEY, project_id bigint NOT NULL, title text NOT NULL);
CREATE INDEX ON public.mtask (project_id);
"""


def table(table_id, fields, policy):
    return {"table_id": table_id, "relation": "public." + table_id,
            "pk": {"field_id": "id", "column": "id", "type": "int64"},
            "fields": [{"field_id": c, "column": c, "type": t, "nullable": False, "writable": w}
                       for c, t, w in fields],
            "delete": {"mode": "hard"}, "policy": policy}


def manifest():
    import json
    with open(os.path.join(SRC, "contrib/example/manifest.json")) as f:
        m = json.load(f)
    m["tables"] += [
        table("otodo", [("title", "text", True), ("owner", "text", False)],
              {"read": "owner", "write": "owner", "owner_field": "owner"}),
        table("mtodo", [("list_id", "int64", True), ("title", "text", True), ("owner", "text", False)],
              {"read": "members", "write": "members", "owner_field": "owner",
               "members": {"hops": [{"column": "list_id", "relation": "public.lists", "key": "id"}],
                           "relation": "public.list_members", "match": "list_id", "user": "user_id"}}),
        table("mtask", [("project_id", "int64", True), ("title", "text", True)],
              {"read": "members", "write": "none",
               "members": {"hops": [{"column": "project_id", "relation": "public.projects", "key": "id"},
                                    {"column": "team_id", "relation": "public.teams", "key": "id"}],
                           "relation": "public.team_members", "match": "team_id", "user": "user_id"}}),
    ]
    return json.dumps(m)


def backlog_sql(kind, base):
    """A DO block that commits ROWS inserts into one table in transactions of BATCH."""
    n = ROWS // BATCH
    if kind == "otodo":
        ins = ("INSERT INTO public.otodo SELECT x, 't', 'u' || (x %% 1000) FROM generate_series(%d + b * %d + 1, "
               "%d + b * %d + %d) x;" % (base, BATCH, base, BATCH, BATCH))
        churn = ""
    elif kind == "mtodo":
        ins = ("INSERT INTO public.mtodo SELECT x, 1 + (x::bigint * 7919) %% %d, 't', 'u' || (x %% 1000) FROM "
               "generate_series(%d + b * %d + 1, %d + b * %d + %d) x;" % (LISTS, base, BATCH, base, BATCH, BATCH))
        churn = ("INSERT INTO public.list_members VALUES (1 + (b * 31 + %d) %% %d, 'churn' || (%d + b))"
                 " ON CONFLICT DO NOTHING; IF b %% 10 = 9 THEN DELETE FROM public.list_members"
                 " WHERE user_id = 'churn' || (%d + b - 9); END IF;" % (base, LISTS, base, base))
    else:
        teams = max(1, MEMBERS // 5)
        ins = ("INSERT INTO public.mtask SELECT x, 1 + (x::bigint * 7919) %% %d, 't' FROM generate_series(%d + b * %d + 1, "
               "%d + b * %d + %d) x;" % (teams * 4, base, BATCH, base, BATCH, BATCH))
        churn = ("INSERT INTO public.team_members VALUES (1 + (b * 31 + %d) %% %d, 'churn' || (%d + b))"
                 " ON CONFLICT DO NOTHING; IF b %% 10 = 9 THEN DELETE FROM public.team_members"
                 " WHERE user_id = 'churn' || (%d + b - 9); END IF;" % (base, teams, base, base))
    if not CHURN:
        churn = ""
    return "DO $$ BEGIN FOR b IN 0..%d LOOP %s %s COMMIT; END LOOP; END $$" % (n - 1, ins, churn)


def lsn_int(text):
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def cpu_ticks(pid):
    """utime + stime of a process, in clock ticks (0 when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return 0
    return sum(int(x) for x in stat[stat.rindex(")") + 2:].split()[11:13])


def walsync_backends(st):
    """{"backend": pid, "walsender": pid} of the running walsync (its heartbeat left out)."""
    out = {}
    for line in st.psql("SELECT pid, backend_type FROM pg_stat_activity"
                        " WHERE application_name = 'synchro-walsync'").splitlines():
        pid, kind = line.split("|")
        out["walsender" if kind == "walsender" else "backend"] = int(pid)
    return out


def drain(st, kind, base, rnd=0):
    """One run: the backlog written with walsync stopped, then drained. The run ends when the
    slot's confirmed position passes the backlog's end (walsync confirms only what it wrote)."""
    st.stop_proc("walsync")
    t0 = time.monotonic()
    st.psql(backlog_sql(kind, base))
    write_s = time.monotonic() - t0
    end = st.psql("SELECT pg_current_wal_lsn()")
    lsn = st.psql("SELECT coalesce(max(commit_lsn), '0/0') FROM synchro.changelog")
    proc = st.start_walsync("walsync", wait=False, lag_log_s=0)
    t_start = time.monotonic()
    first = None
    n = first_n = 0
    pids = {}
    perf = None
    while True:
        if len(pids) < 2 and proc.poll() is None:
            pids = walsync_backends(st)
            if len(pids) == 2 and PERF and kind != "otodo":
                out = os.path.join(PERF, "%s-%d.data" % (kind, rnd))
                perf = subprocess.Popen(["perf", "record", "-q", "-F", "499", "-g", "-o", out, "-p",
                                         ",".join(str(x) for x in [proc.pid] + list(pids.values()))],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c, m, done = st.psql("SELECT count(*), max(commit_lsn),"
                             " (SELECT confirmed_flush_lsn >= '%s' FROM pg_replication_slots)"
                             " FROM synchro.changelog WHERE commit_lsn > '%s'" % (end, lsn)).split("|")
        now = time.monotonic()
        if int(c):
            n += int(c)
            lsn = m
            if first is None:
                first, first_n = now, n
        if done == "t":
            # The slot's position is no snapshot: count what the last poll's snapshot missed.
            n += int(st.psql("SELECT count(*) FROM synchro.changelog WHERE commit_lsn > '%s'" % lsn))
            break
        if proc.poll() is not None or now - t_start > 900:
            raise SystemExit("walsync did not drain the backlog: %s" % st.log("walsync")[-3000:])
        time.sleep(0.02)
    span = now - first
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait()
        data = os.path.join(PERF, "%s-%d.data" % (kind, rnd))
        with open(data[:-5] + ".txt", "w") as f:
            subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm,dso,sym",
                            "--stdio", "-g", "none", "--percent-limit", "0.5"],
                           stdout=f, stderr=subprocess.DEVNULL)
    per_entry = 1e6 / os.sysconf("SC_CLK_TCK") / max(1, n)
    cpu_us = cpu_ticks(proc.pid) * per_entry
    return {"kind": kind, "rows": ROWS, "entries": n, "write_s": write_s, "span_s": span,
            "rate": ROWS / span, "entry_rate": (n - first_n) / span, "load": os.getloadavg()[0],
            "walsync_cpu_us": cpu_us,
            "backend_cpu_us": cpu_ticks(pids.get("backend", 0)) * per_entry,
            "walsender_cpu_us": cpu_ticks(pids.get("walsender", 0)) * per_entry}


SHARE_ROWS = int(os.environ.get("BENCH_SCOPE_SHARE_ROWS", "10000"))


def share_latency(st, base):
    """A list of SHARE_ROWS rows (materialized) shared with a new user, walsync running: the
    time from the share's commit until its entries are in the changelog."""
    lst = 10 ** 9 + base
    st.psql("INSERT INTO public.lists VALUES (%d);"
            "INSERT INTO public.mtodo SELECT x, %d, 't', 'owner' FROM generate_series(%d, %d) x"
            % (lst, lst, base + 1, base + SHARE_ROWS))
    end = st.psql("SELECT pg_current_wal_lsn()")
    while st.psql("SELECT confirmed_flush_lsn >= '%s' FROM pg_replication_slots" % end) != "t":
        time.sleep(0.01)
    user = "share%d" % base
    t0 = time.monotonic()
    st.psql("INSERT INTO public.list_members VALUES (%d, '%s')" % (lst, user))
    while True:
        n = int(st.psql("SELECT count(*) FROM synchro.changelog WHERE commit_lsn > '%s'"
                        " AND '%s' = ANY (readers_after)" % (end, user)))
        if n >= SHARE_ROWS:
            return time.monotonic() - t0
        if time.monotonic() - t0 > 60:
            raise SystemExit("the share's entries did not arrive: %d of %d" % (n, SHARE_ROWS))
        time.sleep(0.005)
def pull_cpu(st, kind, base, list_id):
    """One pull run: a cursor at the changelog's end (a rebuild), PULL_ROWS rows alice reads
    written and materialized, then PULLS pulls of one page from that cursor."""
    import http.client
    import json
    import uuid
    j = st.connect("alice")
    req = {"client_id": j["client_id"], "client_generation": j["client_generation"], "schema": j["schema"]}
    rid, token = str(uuid.uuid4()), None
    while True:
        status, _, body = st.post("/v3/rebuild", dict(req, rebuild_id=rid, page_token=token, limit=1000))
        assert status == 200, (status, body)
        doc = json.loads(body)
        token = doc["page_token"]
        if token is None:
            break
    if kind == "otodo":
        st.psql("INSERT INTO public.otodo SELECT x, 't', 'alice' FROM generate_series(%d, %d) x"
                % (base + 1, base + PULL_ROWS))
    else:
        st.psql("INSERT INTO public.lists VALUES (%d); INSERT INTO public.list_members VALUES (%d, 'alice');"
                "INSERT INTO public.mtodo SELECT x, %d, 't', 'zed' FROM generate_series(%d, %d) x"
                % (list_id, list_id, list_id, base + 1, base + PULL_ROWS))
    end = st.psql("SELECT pg_current_wal_lsn()")
    t0 = time.monotonic()
    while st.psql("SELECT confirmed_flush_lsn >= '%s' FROM pg_replication_slots" % end) != "t":
        if time.monotonic() - t0 > 300:
            raise SystemExit("walsync did not materialize the pull's rows")
        time.sleep(0.05)
    body = json.dumps(dict(req, cursor=doc["cursor"], limit=1000))
    h = {"Authorization": "Basic YWxpY2U6YWxpY2U=", "Synchro-Protocol": "3", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)

    def pull():
        conn.request("POST", "/v3/pull", body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise SystemExit("pull: %d %s" % (r.status, data[:300]))
        return json.loads(data)["changes"]

    changes = pull()
    if len(changes) != 1000 or any(c["table"] != kind or c["op"] != "upsert" for c in changes):
        raise SystemExit("pull: not a page of 1000 upserts of %s: %d changes, first %r"
                         % (kind, len(changes), changes[:1]))
    roots = [p.pid for n, p in st.procs.items() if n in ("fcgi", "nginx") and p.poll() is None]
    with open(os.path.join(os.environ["SYNCHRO_PG_DATA"], "postmaster.pid")) as f:
        roots.append(int(f.readline()))
    c0, w0 = pushbench.tree_cpu(roots), time.monotonic()
    for _ in range(PULLS):
        pull()
    cpu, wall = pushbench.tree_cpu(roots) - c0, time.monotonic() - w0
    conn.close()
    return {"kind": kind, "cpu_ms": 1e3 * cpu / PULLS, "wall_ms": 1e3 * wall / PULLS,
            "load": os.getloadavg()[0]}


def main():
    print("== contrib/bench/pull scopes: %d inserts per run in transactions of %d, %d list memberships over %d "
          "lists, %d team memberships, churn %s, %d cores, load average %.2f at start"
          % (ROWS, BATCH, MEMBERS, LISTS, MEMBERS, "on" if CHURN else "off", os.cpu_count(), os.getloadavg()[0]),
          flush=True)
    st = e2e.Stack(workers=1)
    st.start()
    try:
        st.psql(SCHEMA)
        teams = max(1, MEMBERS // 5)
        st.psql("INSERT INTO public.lists SELECT generate_series(1, %d);"
                "INSERT INTO public.list_members SELECT 1 + (i %% %d), 'user' || i FROM generate_series(1, %d) i;"
                "INSERT INTO public.teams SELECT generate_series(1, %d);"
                "INSERT INTO public.team_members SELECT 1 + (i %% %d), 'user' || i FROM generate_series(1, %d) i;"
                "INSERT INTO public.projects SELECT i, 1 + (i %% %d) FROM generate_series(1, %d) i"
                % (LISTS, LISTS, MEMBERS, teams, teams, MEMBERS, teams, teams * 4))
        path = os.path.join(st.dir, "scopes-manifest.json")
        with open(path, "w") as f:
            f.write(manifest())
        st.ctl("schema", "publish", path)
        st.start_walsync("walsync", lag_log_s=0)
        st.psql("ANALYZE")
        results = []
        base = 0
        for r in range(ROUNDS):
            for kind in ("otodo", "mtodo", "mtask"):
                res = drain(st, kind, base, r + 1)
                base += ROWS
                results.append(res)
                print("  round %d, %s: %d inserts (written in %.1f s) materialized in %.1f s: %.0f changes/s "
                      "(%d entries, %.0f entries/s with the scope changes'; CPU per entry: walsync %.1f us, "
                      "its SQL backend %.1f us, its walsender %.1f us), load average %.2f"
                      % (r + 1, kind, res["rows"], res["write_s"], res["span_s"], res["rate"], res["entries"],
                         res["entry_rate"], res["walsync_cpu_us"], res["backend_cpu_us"],
                         res["walsender_cpu_us"], res["load"]), flush=True)
        for r in range(ROUNDS):
            s = share_latency(st, base)
            base += SHARE_ROWS
            print("  share of a list of %d rows: its entries in the changelog %.0f ms after its commit, load "
                  "average %.2f" % (SHARE_ROWS, 1000 * s, os.getloadavg()[0]), flush=True)
        pulls = []
        for r in range(ROUNDS):
            for kind in ("otodo", "mtodo"):
                res = pull_cpu(st, kind, base, LISTS + 1 + r)
                base += PULL_ROWS
                pulls.append(res)
                print("  round %d, pull of %s: %.2f ms server CPU per request of 1000 changes (%.2f ms wall), "
                      "load average %.2f" % (r + 1, kind, res["cpu_ms"], res["wall_ms"], res["load"]), flush=True)
        print("== summary")
        for kind, label in (("otodo", "owner-scoped"), ("mtodo", "members, one hop"),
                            ("mtask", "members, two hops")):
            rates = [x["rate"] for x in results if x["kind"] == kind]
            print("%s: %s changes/s" % (label, ", ".join("%.0f" % x for x in rates)))
        mem = [x["rate"] for x in results if x["kind"] != "otodo"]
        print("target: materialization with membership scopes >= 20000 changes/s: lowest %.0f %s"
              % (min(mem), "MET" if min(mem) >= 20000 else "MISSED"))
        for kind, label in (("otodo", "pull CPU, owner-scoped"), ("mtodo", "pull CPU, members")):
            print("%s: %s ms per request" % (label, ", ".join("%.2f" % x["cpu_ms"] for x in pulls
                                                              if x["kind"] == kind)))
        best = {k: min(x["cpu_ms"] for x in pulls if x["kind"] == k) for k in ("otodo", "mtodo")}
        ratio = best["mtodo"] / best["otodo"]
        print("target: a pull's CPU per request within 20%% of an owner-scoped pull's: best members / best owner "
              "%.2f %s" % (ratio, "MET" if ratio <= 1.2 else "MISSED"))
        print("load average at the end: %.2f" % os.getloadavg()[0])
        return 0
    finally:
        st.stop_proc("walsync")
        st.stop()


if __name__ == "__main__":
    sys.exit(main())
