#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/push/statements (run it through contrib/bench/push/statements.sh): where a push's
time goes inside PostgreSQL. One session pushes BENCH_PUSHES fresh batches of BENCH_BATCH inserts
(default 1000 x 1) straight into synchro.synchro_push as the responders' login role, with
pg_stat_statements tracking every nested statement (the function's own, and the triggers'),
then the same rows are inserted by a plpgsql loop (one INSERT statement each) for reference.
Prints the backend's CPU per mutation for both, and the statements by execution time per call
(pg_stat_statements measures ExecutorRun and ExecutorFinish, not ExecutorStart: the per-call
figures add up to less than the function's own).
BENCH_REPLAY=1 measures exact replays of one batch instead of fresh batches.
With BENCH_PERF=FILE, `perf record -g` samples the pushing backend into FILE during the push loop
(cpu-clock; pg_stat_statements stops tracking for that run, so it does not weigh in the profile);
BENCH_PERF_CALLGRAPH=dwarf,16384 unwinds through Debian's postgres, which has no frame pointers.
Needs python3-psycopg2 and postgresql-contrib (pg_stat_statements)."""

import os
import subprocess
import sys
import uuid

import psycopg2

from push_bodies import PushBodies

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
BUILD = os.environ.get("SYNCHRO_BUILDDIR", SRC)
PUSHES = int(os.environ.get("BENCH_PUSHES", "1000"))
BATCH = int(os.environ.get("BENCH_BATCH", "1"))
REPLAY = os.environ.get("BENCH_REPLAY") == "1"
BASE = "host=%s port=%s dbname=%s user=" % (os.environ["PGHOST"], os.environ["PGPORT"], os.environ["PGDATABASE"])


def cpu(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s: %s" % (argv[0], r.stderr))


def main():
    conf = os.path.join(os.environ["SYNCHRO_PG_TMP"], "admin.conf")
    with open(conf, "w") as f:
        f.write("[database]\nconninfo = %s%s\n" % (BASE, os.environ.get("PGUSER", "postgres")))
    ctl = os.path.join(BUILD, "src/ctl/synchroctl")
    example = os.path.join(SRC, "contrib/example")
    run(["psql", "-X", "-q", "-c", "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"])
    # The restarted server keeps whatever output pg_ctl had: the log file, not a pipe.
    subprocess.run(os.environ.get("SYNCHRO_PG_RUN", "").split() +
                   [os.path.join(os.environ["PG_BINDIR"], "pg_ctl"), "-D", os.environ["SYNCHRO_PG_DATA"],
                    "-l", os.environ["SYNCHRO_PG_LOG"], "-w", "restart"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    run([ctl, "-c", conf, "init"])
    for f in ("roles.sql", "schema.sql"):
        run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", os.path.join(example, f)])
    run([ctl, "-c", conf, "schema", "publish", os.path.join(example, "manifest.json")])
    admin = psycopg2.connect(BASE + os.environ.get("PGUSER", "postgres"))
    admin.autocommit = True
    a = admin.cursor()
    a.execute("CREATE EXTENSION pg_stat_statements")
    perf_out = os.environ.get("BENCH_PERF", "")
    a.execute("ALTER SYSTEM SET pg_stat_statements.track = %s", ("none" if perf_out else "all",))
    a.execute("SELECT pg_reload_conf()")
    client = str(uuid.uuid4())
    a.execute("INSERT INTO synchro.clients (client_id, user_id, generation) VALUES (%s, 'alice', 1)", (client,))
    a.execute("SELECT version, hash FROM synchro.schema_versions ORDER BY version DESC LIMIT 1")
    version, hash_ = a.fetchone()
    schema = {"version": version, "hash": hash_}
    db = psycopg2.connect(BASE + "synchro_fcgi")
    db.autocommit = True
    cur = db.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    text = PushBodies(client, schema, BATCH)

    def body():
        return text().encode()
    push = "SELECT status FROM synchro.synchro_push('alice', %s::bytea)"
    for _ in range(5):  # warm the backend's plans and manifests
        cur.execute(push, (psycopg2.Binary(body()),))
    bodies = [body() for _ in range(PUSHES)]
    if REPLAY:
        # BENCH_REPLAY=1: the first batch executes once; the measured loop replays it.
        cur.execute(push, (psycopg2.Binary(bodies[0]),))
        bodies = [bodies[0]] * PUSHES
    a.execute("SELECT pg_stat_statements_reset()")
    perf = None
    if perf_out:
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph",
                                 os.environ.get("BENCH_PERF_CALLGRAPH", "fp"), "-p", str(pid), "-o", perf_out],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import time
        time.sleep(1)
    c0 = cpu(pid)
    for b in bodies:
        cur.execute(push, (psycopg2.Binary(b),))
        status = cur.fetchone()[0]
        if status != 200:
            raise SystemExit("push answered %d" % status)
    push_cpu = cpu(pid) - c0
    if perf is not None:
        perf.send_signal(2)
        perf.wait(timeout=60)
    a.execute("SELECT pg_backend_pid()")
    apid = a.fetchone()[0]
    c0 = cpu(apid)
    for _ in range(PUSHES):
        a.execute("DO $$ BEGIN FOR i IN %d..%d LOOP INSERT INTO public.item (id, qty) VALUES (i, 1); END LOOP;"
                  " END $$" % (text.last_pk + 1, text.last_pk + BATCH))
        text.last_pk += BATCH
    plain_cpu = cpu(apid) - c0
    n = PUSHES * BATCH
    print("%d pushes of %d insert(s): backend CPU %.1f us per mutation; the same rows, one INSERT each in a"
          " plpgsql loop: %.1f us per row" % (PUSHES, BATCH, 1e6 * push_cpu / n, 1e6 * plain_cpu / n))
    a.execute("SELECT round(avg(length(response))) FROM synchro.batches")
    print("request body %d bytes, stored response %s bytes (mean)" % (len(bodies[0]), a.fetchone()[0]))
    a.execute("SELECT round((total_exec_time * 1000 / calls)::numeric, 1), calls,"
              "       left(regexp_replace(query, '\\s+', ' ', 'g'), 100)"
              "  FROM pg_stat_statements WHERE calls >= %s ORDER BY total_exec_time DESC LIMIT 20",
              (PUSHES * 9 // 10,))
    print("%9s %8s  statement (nested ones included in their caller's time)" % ("us/call", "calls"))
    for us, calls, q in a.fetchall():
        print("%9s %8d  %s" % (us, calls, q))
    return 0


if __name__ == "__main__":
    sys.exit(main())
