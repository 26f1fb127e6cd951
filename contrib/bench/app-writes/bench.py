#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/app-writes (run it through contrib/bench/app-writes/run): what Synchro costs the
application's own writes. The same INSERT, UPDATE and DELETE statements, over libpq from one
connection (app_writes), into a synced table (its version-fence trigger installed by
synchro.install_fence_trigger) and into an identical table that is not synced, in the same run,
on the stack of the e2e harness (a throwaway PostgreSQL, walsync decoding beside the writes):
  - 1 row per transaction (the statement alone, autocommit);
  - 100 rows per transaction, one statement per row (BEGIN, 100 statements, COMMIT);
  - 100 rows per transaction as one statement (INSERT ... SELECT, UPDATE/DELETE of a range);
each with the version fence in C (migration 20) and with the plpgsql function it replaced
(migration 16's, put back with CREATE OR REPLACE for its runs), interleaved in each round.
The figure is the CPU the writing backend spent per row (/proc/<pid>/schedstat, read by
app_writes around the measured rows, after warm-up rows), and synced/unsynced per operation.
Target: synced <= 1.15x the unsynced table's CPU per row with the C fence.
walsync runs throughout (lag_log_s = 1): for each synced cycle (insert, update, delete of the
same rows) the walsender's and walsync's CPU per fence transition, the time walsync took after
the last write to confirm it, the max commit-to-changelog lag its log reported, and a check that
the changelog holds every transition.
Environment: BENCH_ROWS (rows per measured run, default 20000), BENCH_WARM (warm-up rows, 500),
BENCH_ROUNDS (3; the median round is shown with every round's figure), BENCH_MODES (default
"1:row 100:row 100:set"), BENCH_FENCES (default "c plpgsql")."""

import os
import re
import subprocess
import sys
import time

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
BUILD = os.environ.get("SYNCHRO_BUILDDIR", SRC)
sys.path.insert(0, os.path.join(SRC, "tests/e2e"))
sys.path.insert(0, os.path.join(SRC, "contrib/bench/push"))
import synchro_e2e as e2e  # noqa: E402
import bench as push_bench  # noqa: E402  (the push bench's stack and CPU accounting)

APP_WRITES = os.path.join(BUILD, "contrib/bench/app-writes/app_writes")
ROWS = int(os.environ.get("BENCH_ROWS", "20000"))
WARM = int(os.environ.get("BENCH_WARM", "500"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
MODES = [(int(m.split(":")[0]), m.split(":")[1]) for m in os.environ.get("BENCH_MODES", "1:row 100:row 100:set").split()]
FENCES = os.environ.get("BENCH_FENCES", "c plpgsql").split()
OPS = ("insert", "update", "delete")
TABLES = (("unsynced", "app_plain"), ("synced", "app_synced"))
TARGET = 1.15


def fence_definition(migration, language):
    """The CREATE OR REPLACE FUNCTION synchro.version_fence() statement of a migration file."""
    path = [os.path.join(SRC, "sql/migrations", f) for f in sorted(os.listdir(os.path.join(SRC, "sql/migrations")))
            if f.startswith(migration)][0]
    with open(path) as f:
        sql = f.read()
    m = re.search(r"CREATE OR REPLACE FUNCTION synchro\.version_fence\(\) RETURNS trigger\nLANGUAGE %s.*?;\n"
                  % language, sql, re.S)
    if language == "plpgsql":
        m = re.search(r"CREATE OR REPLACE FUNCTION synchro\.version_fence\(\) RETURNS trigger\nLANGUAGE plpgsql"
                      r".*?\n\$fn\$;\n", sql, re.S)
    if not m:
        raise SystemExit("no %s definition of synchro.version_fence in %s" % (language, path))
    return m.group(0)


FENCE_SQL = {"c": fence_definition("0020", "C"), "plpgsql": fence_definition("0016", "plpgsql")}

SCHEMA = """
CREATE TABLE public.app_plain (
	id bigint PRIMARY KEY,
	owner text NOT NULL,
	title text NOT NULL,
	done boolean NOT NULL DEFAULT false,
	note text,
	updated_at timestamptz NOT NULL DEFAULT now(),
	deleted_at timestamptz
);
CREATE TABLE public.app_synced (LIKE public.app_plain INCLUDING ALL);
SELECT synchro.install_fence_trigger('public.app_synced', 'app_synced', 'id', 'deleted_at', 'owner');
"""


class Bench:
    def __init__(self, st):
        self.st = st
        self.next_id = 1
        self.invalid = []
        self.transitions = 0

    def use_fence(self, fence):
        self.st.psql(FENCE_SQL[fence])
        lang = self.st.psql("SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
                            " WHERE p.oid = 'synchro.version_fence()'::regprocedure")
        if lang != {"c": "c", "plpgsql": "plpgsql"}[fence]:
            raise SystemExit("synchro.version_fence is %s, not %s" % (lang, fence))

    def write(self, table, op, per_txn, mode, first):
        argv = [APP_WRITES, "-t", table, "-o", op, "-n", str(per_txn), "-m", mode, "-b", str(first),
                "-r", str(ROWS), "-w", str(WARM)]
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("app_writes failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))
        kv = dict(x.split("=", 1) for x in r.stdout.split())
        return {"us_per_row": 1e6 * float(kv["backend_cpu_s"]) / int(kv["rows"]),
                "rows_per_s": int(kv["rows"]) / float(kv["wall_s"])}

    def materialized(self):
        return int(self.st.psql("SELECT count(*) FROM synchro.changelog WHERE table_id = 'app_synced'"))

    def cycle(self, table, per_txn, mode, synced):
        """Insert, update and delete the same fresh rows; for a synced table, walsync's side too."""
        first = self.next_id
        self.next_id += 10 ** 7
        roots = [int(open(os.path.join(os.environ["SYNCHRO_PG_DATA"], "postmaster.pid")).readline()),
                 self.st.procs["walsync"].pid]
        k0 = push_bench.class_cpu(roots)
        log0 = len(self.st.log("walsync"))
        out = {op: self.write(table, op, per_txn, mode, first) for op in OPS}
        if not synced:
            return out
        self.transitions += 3 * (ROWS + WARM)
        t0 = time.monotonic()
        e2e.wait_for(lambda: self.materialized() >= self.transitions, timeout=300,
                     what="walsync to materialize the writes")
        out["catch_up_s"] = time.monotonic() - t0
        k1 = push_bench.class_cpu(roots)
        decode = sum(v - k0.get(k, 0) for k, v in k1.items() if "walsender" in k or k == "synchro-walsync")
        out["decode_us"] = 1e6 * decode / (3 * (ROWS + WARM))
        lags = [int(x) for x in re.findall(r"last \d+ ms, max (\d+) ms commit to changelog",
                                           self.st.log("walsync")[log0:])]
        out["lag_max_ms"] = max(lags) if lags else None
        return out


def median_of(values):
    v = sorted(values)
    return v[(len(v) - 1) // 2]


def main():
    if not os.access(APP_WRITES, os.X_OK):
        raise SystemExit("missing %s (make contrib/bench/app-writes/app_writes)" % APP_WRITES)
    load = os.getloadavg()[0]
    print("== contrib/bench/app-writes: %d rows per run after %d warm-up rows, %d rounds (median shown), "
          "%d cores, load average %.2f at start" % (ROWS, WARM, ROUNDS, os.cpu_count(), load), flush=True)
    st = push_bench.BenchStack(workers=1)
    st.start()
    try:
        st.psql(SCHEMA)
        st.start_walsync(lag_log_s=1)
        b = Bench(st)
        # res[fence][(per_txn, mode)][kind] = list of cycles
        res = {f: {m: {k: [] for k, _ in TABLES} for m in MODES} for f in FENCES}
        for _ in range(ROUNDS):
            for fence in FENCES:
                b.use_fence(fence)
                for per_txn, mode in MODES:
                    for kind, table in TABLES:
                        res[fence][(per_txn, mode)][kind].append(b.cycle(table, per_txn, mode, kind == "synced"))
        b.use_fence("c")
        have = b.materialized()
        if have != b.transitions:
            b.invalid.append("the changelog holds %d transitions of app_synced, %d were written" % (have, b.transitions))
        summary = []
        for fence in FENCES:
            print("-- version fence in %s: backend CPU per row, us (rounds)" % fence, flush=True)
            for per_txn, mode in MODES:
                label = "%d row%s per transaction%s" % (per_txn, "s" if per_txn > 1 else "",
                                                        ", one statement" if mode == "set" else "")
                runs = res[fence][(per_txn, mode)]
                for op in OPS:
                    u = [c[op]["us_per_row"] for c in runs["unsynced"]]
                    s = [c[op]["us_per_row"] for c in runs["synced"]]
                    ratios = [y / x for x, y in zip(u, s)]
                    print("  %-42s %-6s unsynced %7.1f  synced %7.1f  synced/unsynced %5.2fx  (rounds: %s)"
                          % (label, op, median_of(u), median_of(s), median_of(ratios),
                             " ".join("%.2f" % r for r in ratios)), flush=True)
                syn = runs["synced"]
                lag = [c["lag_max_ms"] for c in syn if c["lag_max_ms"] is not None]
                print("  %-42s walsync: decoding %.1f us CPU per fence transition (walsender + walsync), "
                      "everything in the changelog %.2f s after the last write, max commit-to-changelog lag %s ms"
                      % ("", median_of([c["decode_us"] for c in syn]), max(c["catch_up_s"] for c in syn),
                         max(lag) if lag else "n/a"), flush=True)
                # per round, all three operations: the synced and unsynced runs of one round
                # saw the same background load
                per_round = [sum(s[op]["us_per_row"] for op in OPS) / sum(u[op]["us_per_row"] for op in OPS)
                             for u, s in zip(runs["unsynced"], syn)]
                summary.append((fence, label, median_of(per_round), per_round))
        print("== summary (insert + update + delete, per row; median round)")
        for fence, label, ratio, rounds in summary:
            met = "MET" if ratio <= TARGET else "MISSED"
            print("fence %-8s %-42s synced/unsynced %.2fx (rounds: %s)%s"
                  % (fence, label, ratio, " ".join("%.2f" % r for r in rounds),
                     ("  target <= %.2fx: %s" % (TARGET, met)) if fence == "c" else ""))
        print("load average at the end: %.2f" % os.getloadavg()[0])
        return push_bench.report_invalid(b.invalid)
    finally:
        st.stop()


if __name__ == "__main__":
    sys.exit(main())
