#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/pull, replica mode (BENCH_MODE=replica contrib/bench/pull/run): /v3/pull
throughput read from a streaming replica beside the same read from the primary, in one run, on
one machine. A throwaway PostgreSQL (tests/integration/with-pg), a hot standby of it
(tests/e2e/pg_standby.py: pg_basebackup -R), the push benchmark's nginx site, synchro-walsync.

A backlog of BENCH_REPLICA_ROWS changes (item rows inserted in transactions of 1000, then
materialized by walsync and replayed by the standby), then wrk pulls it through nginx (pages of
1000, from the cursors of rebuilds made before the backlog) with the responders configured
without [database] pull_conninfo (primary) and with it (replica), alternating
primary, replica, primary, replica for one client and for BENCH_WORKERS clients; each target's
figure is the mean of its two runs, and the ratio replica / primary is printed. The responders
are restarted between targets and warmed up (connections, prepared statements) before each run.

On one machine both servers share the cores: the ratio shows what reading a replica costs a
pull (the primary's flush position and the replica's replay position, one round trip each),
not the capacity a replica on its own machine adds. At the end the standby's own statistics
show that the replica runs read it. Environment: BENCH_PULL_SECONDS (each run, default 5),
BENCH_WORKERS (responders and parallel clients, default 4), BENCH_REPLICA_ROWS (default
300000)."""

import importlib.util
import os
import sys
import time

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SRC, "tests/e2e"))
# contrib/bench/pull/bench.py, under a name of its own: it imports the push benchmark's bench.py.
_spec = importlib.util.spec_from_file_location("pull_bench", os.path.join(SRC, "contrib/bench/pull/bench.py"))
pullbench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pullbench)
import synchro_e2e as e2e  # noqa: E402
from pg_standby import Standby  # noqa: E402

ROWS = int(os.environ.get("BENCH_REPLICA_ROWS", "300000"))
WORKERS = pullbench.WORKERS


class ReplicaBenchStack(pullbench.PullStack):
    """The pull benchmark's stack; replica_on adds [database] pull_conninfo (the standby)."""

    def __init__(self, standby, **kw):
        super().__init__(**kw)
        self.standby = standby
        self.replica_on = False

    def write_conf(self, **fcgi):
        super().write_conf(**fcgi)
        if not self.replica_on:
            return
        with open(self.conf) as f:
            text = f.read()
        text = text.replace("[database]\n", "[database]\npull_conninfo = %s\n" % self.standby.conninfo(e2e.APP_ROLE), 1)
        with open(self.conf, "w") as f:
            f.write(text)
        os.chmod(self.conf, 0o644)


def standby_reads(sb):
    return int(sb.psql("SELECT COALESCE(sum(seq_scan + COALESCE(idx_scan, 0)), 0)"
                       " FROM pg_stat_user_tables WHERE schemaname = 'synchro'"))


def use(st, b, replica, clients):
    """The responders restarted reading the primary or (replica) the standby, then warmed up."""
    st.replica_on = replica
    st.restart_fcgi()
    c = clients[0]
    saved = c.cursor
    b.catch_up_pages(c, WORKERS * 4)  # every responder: connections and prepared statements
    c.cursor = saved


def main():
    sb = Standby("bench-standby")
    st = None
    try:
        sb.create().start()
        print("== contrib/bench/pull replica mode: %d responders, %g s runs, %d cores, load average %.2f at start"
              % (WORKERS, pullbench.PULL_SECONDS, os.cpu_count(), os.getloadavg()[0]), flush=True)
        st = ReplicaBenchStack(sb, workers=WORKERS)
        st.start()
        b = pullbench.PullBench(st)
        b.catch_up_pages = lambda c, n: pages(st, c, n)
        st.start_walsync("walsync", lag_log_s=0)
        b.pb.connect_clients()
        one = [pullbench.Client(st)]
        many = [pullbench.Client(st) for _ in range(WORKERS)]
        start = b.changelog_count()
        for i in range(0, ROWS, 1000):
            st.psql("INSERT INTO item (id, label, qty) SELECT g, 'r' || g, g %% 7 FROM generate_series(%d, %d) g"
                    % (5000000 + i, 5000000 + i + 999))
        st.psql("ANALYZE")
        deadline = time.monotonic() + 600
        while b.changelog_count() < start + ROWS and time.monotonic() < deadline:
            time.sleep(0.2)
        sb.wait_replayed(timeout=600)
        sb.psql("SELECT 1")
        print("-- backlog: %d changes in synchro.changelog, replayed by the standby" % b.changelog_count(), flush=True)
        figures = {}
        for clients in (one, many):
            for replica in (False, True, False, True):
                use(st, b, replica, clients)
                j = b.pull_throughput(clients)
                figures.setdefault((len(clients), replica), []).append(j["changes_per_s"])
                print("  %d client(s), %s: %.0f changes/s (%.1f pages/s, page p50 %.1f ms p99 %.1f ms)"
                      % (len(clients), "replica" if replica else "primary", j["changes_per_s"], j["pages_per_s"],
                         j["p50_us"] / 1e3, j["p99_us"] / 1e3), flush=True)
        time.sleep(11)  # idle backends flush their statistics within PGSTAT_IDLE_INTERVAL (10 s)
        reads = standby_reads(sb)
        print("== summary")
        for n in (1, len(many)):
            p = sum(figures[(n, False)]) / 2
            r = sum(figures[(n, True)]) / 2
            print("pull throughput, %d client(s): primary %.0f changes/s, replica %.0f changes/s, replica/primary %.2f"
                  % (n, p, r, r / p if p else 0.0))
        print("the standby counted %d scans of synchro's tables (the responders' reads in the replica runs)" % reads)
        print("load average at the end: %.2f" % os.getloadavg()[0])
        if b.invalid or b.pb.invalid or reads == 0:
            print("INVALID RUNS (figures above are not trustworthy):")
            for x in b.invalid + b.pb.invalid + ([] if reads else ["the standby served no read"]):
                print("  " + x)
            return 1
        return 0
    finally:
        if st is not None:
            for name in list(st.procs):
                if name.startswith("walsync"):
                    st.stop_proc(name)
            st.stop()
        sb.destroy()


def pages(st, c, n):
    """n pull pages of client c through nginx (a warm-up)."""
    import http.client
    import json
    for _ in range(n):
        conn = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
        conn.request("POST", "/v3/pull", body=json.dumps({
            "client_id": c.id, "client_generation": c.generation, "schema": c.schema, "cursor": c.cursor,
            "limit": 1000}), headers={"Authorization": pullbench.AUTH, "Synchro-Protocol": "3",
                                      "Content-Type": "application/json"})
        r = conn.getresponse()
        doc = json.loads(r.read())
        conn.close()
        assert r.status == 200, doc
        c.cursor = doc["cursor"]


if __name__ == "__main__":
    sys.exit(main())
