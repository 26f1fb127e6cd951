#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/push/instructions (run it through contrib/bench/push/instructions.sh): the
instructions synchro_push executes per push, counted by callgrind, which no other load on the
machine changes (CPU time from /proc does: on 2 shared cores it moved by a third between runs).
The cluster of with-pg gets the example schema and a client, as statements.py; the server is
then stopped and 5 + BENCH_PUSHES fresh pushes of BENCH_BATCH inserts (default 300 x 1) run in
`postgres --single` under `valgrind --tool=callgrind --toggle-collect=synchro_push` (the first
five, with cold caches, are counted too). Prints Ir per push and per mutation; BENCH_CALLGRIND_OUT=FILE
keeps the profile for callgrind_annotate (--inclusive=yes). BENCH_REPLAY=1: one batch is executed
before, and every counted push is an exact replay of it (the same octets). BENCH_WHOLE=1: every
statement's life in the backend is counted (its transaction's start, parse, analysis, plan, run
and commit), not only synchro_push; not the reading of its text, which single-user mode does a
character at a time and a client's protocol message does not. The push is a prepared statement, as
the responders run it, but its body travels as a SQL literal, whose scanning and input function a
binary parameter would not cost (a few instructions per octet). BENCH_PLAIN=1 (whole
backend too): the same rows (id and qty) inserted by a prepared INSERT, one transaction of
BENCH_BATCH per batch, as contrib/bench/push's plain SQL reference does. Needs valgrind."""

import os
import re
import subprocess
import sys
import uuid

from push_bodies import PushBodies

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
BUILD = os.environ.get("SYNCHRO_BUILDDIR", SRC)
PUSHES = int(os.environ.get("BENCH_PUSHES", "300"))
BATCH = int(os.environ.get("BENCH_BATCH", "1"))
REPLAY = os.environ.get("BENCH_REPLAY") == "1"
PLAIN = os.environ.get("BENCH_PLAIN") == "1"
WHOLE = PLAIN or os.environ.get("BENCH_WHOLE") == "1"
WARM = 5


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit("%s: %s%s" % (argv[0], r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout


def main():
    tmp = os.environ["SYNCHRO_PG_TMP"]
    base = "host=%s port=%s dbname=%s user=" % (os.environ["PGHOST"], os.environ["PGPORT"], os.environ["PGDATABASE"])
    conf = os.path.join(tmp, "admin.conf")
    with open(conf, "w") as f:
        f.write("[database]\nconninfo = %spostgres\n" % base)
    ctl = os.path.join(BUILD, "src/ctl/synchroctl")
    example = os.path.join(SRC, "contrib/example")
    run([ctl, "-c", conf, "init"])
    for f in ("roles.sql", "schema.sql"):
        run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", os.path.join(example, f)])
    run([ctl, "-c", conf, "schema", "publish", os.path.join(example, "manifest.json")])
    client = str(uuid.uuid4())
    run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c",
         "INSERT INTO synchro.clients (client_id, user_id, generation) VALUES ('%s', 'alice', 1)" % client])
    version, hash_ = run(["psql", "-X", "-At", "-F", " ", "-c",
                          "SELECT version, hash FROM synchro.schema_versions ORDER BY version DESC LIMIT 1"]).split()
    schema = {"version": int(version), "hash": hash_}
    body = PushBodies(client, schema, BATCH)
    script = os.path.join(tmp, "pushes.sql")
    first = body()
    if REPLAY:  # executed here, so that callgrind counts replays only
        run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c",
             "SELECT status FROM synchro.synchro_push('alice', '%s'::bytea)" % first])
    with open(script, "w") as f:
        if PLAIN:
            f.write("PREPARE ins(bigint) AS INSERT INTO public.item (id, qty) VALUES ($1, 1)\n")
            for _ in range(WARM + PUSHES):
                f.write("BEGIN\n")
                for _ in range(BATCH):
                    body.last_pk += 1
                    f.write("EXECUTE ins(%d)\n" % body.last_pk)
                f.write("COMMIT\n")
        elif WHOLE:
            # prepared, as the responders run it (parsed and planned once)
            f.write("PREPARE push(text, bytea) AS SELECT status FROM synchro.synchro_push($1, $2)\n")
            for _ in range(WARM + PUSHES):
                f.write("EXECUTE push('alice', '%s')\n" % (first if REPLAY else body()))
        else:
            for _ in range(WARM + PUSHES):
                f.write("SELECT status FROM synchro.synchro_push('alice', '%s'::bytea)\n"
                        % (first if REPLAY else body()))
    prefix = os.environ.get("SYNCHRO_PG_RUN", "").split()
    data = os.environ["SYNCHRO_PG_DATA"]
    bindir = os.environ["PG_BINDIR"]
    subprocess.run(prefix + [os.path.join(bindir, "pg_ctl"), "-D", data, "-w", "stop"],
                   stdout=subprocess.DEVNULL, check=True)
    out = os.environ.get("BENCH_CALLGRIND_OUT") or os.path.join(tmp, "callgrind.out")
    cg_out = os.path.join(tmp, "cg.out")
    os.chmod(tmp, 0o777)
    # The statement's life in the backend (single-user mode reads its input a character at a
    # time, which a client's protocol message does not cost: left out).
    toggles = ["--toggle-collect=" + f for f in
               (("StartTransactionCommand", "pg_parse_query", "pg_analyze_and_rewrite_fixedparams",
                 "pg_plan_queries", "PortalRun", "CommitTransactionCommand") if WHOLE else ("synchro_push",))]
    try:
        # --toggle-collect counts every call, the WARM first ones too (their cold caches are
        # a small part of the total over BENCH_PUSHES, the same for every build).
        with open(script) as stdin:
            single = subprocess.run(prefix + ["valgrind", "--tool=callgrind", *toggles,
                                              "--callgrind-out-file=" + cg_out,
                                              os.path.join(bindir, "postgres"), "--single", "-D", data,
                                              os.environ["PGDATABASE"]],
                                    stdin=stdin, capture_output=True, text=True, check=True)
    finally:
        subprocess.run(prefix + [os.path.join(bindir, "pg_ctl"), "-D", data, "-l", os.environ["SYNCHRO_PG_LOG"],
                                 "-w", "start"], stdout=subprocess.DEVNULL, check=True)
    if PLAIN:
        inserted = int(run(["psql", "-X", "-At", "-c", "SELECT count(*) FROM public.item"]))
        if inserted != (WARM + PUSHES) * BATCH:
            raise SystemExit("%d of %d rows inserted:\n%s" % (inserted, (WARM + PUSHES) * BATCH,
                                                             single.stdout[-3000:]))
    else:
        answered = single.stdout.count('status = "200"')
        if answered != WARM + PUSHES:
            raise SystemExit("%d of %d pushes answered 200:\n%s" % (answered, WARM + PUSHES,
                                                                    single.stdout[-3000:]))
    totals = re.search(r"([0-9,]+) \([0-9.]+%\)\s+PROGRAM TOTALS", run(["callgrind_annotate", cg_out]))
    total = int(totals.group(1).replace(",", ""))
    what = "plain SQL transactions" if PLAIN else "exact replays" if REPLAY else "pushes"
    where = "the whole backend" if WHOLE else "synchro_push"
    print("%d %s of %d insert(s) (+%d warm-up, counted): %d Ir in %s, %.0f per %s, %.0f per %s"
          % (PUSHES, what, BATCH, WARM, total, where, total / (PUSHES + WARM),
             "transaction" if PLAIN else "push", total / (PUSHES + WARM) / BATCH,
             "row" if PLAIN else "mutation"))
    if os.environ.get("BENCH_CALLGRIND_OUT"):
        subprocess.run(["cp", cg_out, out], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
