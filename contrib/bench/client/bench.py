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
Target (issue 12): the client's push rate >= 80% of the raw push rate."""

import json
import os
import statistics
import subprocess
import sys
import time
import uuid

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, os.path.join(top, "tests/e2e"))
import synchro_e2e as e2e  # noqa: E402

BENCH = os.path.join(e2e.BUILD, "contrib/bench/client/bench_client")
N = int(os.environ.get("BENCH_INTENTS", "10000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
BATCH = 1000


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


def client(*args):
    # BENCH_CLIENT_WRAP: a profiler command line for the sync runs, e.g. "perf record -g -o F"
    wrap = os.environ.get("BENCH_CLIENT_WRAP", "").split() if args[0] == "sync" else []
    r = subprocess.run(wrap + [BENCH] + list(args), capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("bench_client %s: %s" % (args[0], r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    stack = e2e.Stack(server="nginx", workers=2, fcgi_conf={"pull_wait_ms": 30000})
    url = None
    try:
        stack.start()
        stack.start_walsync()
        url = "http://127.0.0.1:%d" % stack.port
        d = stack.dir
        w1 = client("writes", os.path.join(d, "w1.db"), url, "alice:alice", "2000", "1")
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
    main()
