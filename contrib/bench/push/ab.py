#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/push/ab.py (run it through contrib/bench/push/ab): the same push load against
two or more synchro-fcgi binaries on one stack, in interleaved rounds, optionally beside the
trivial responder. On a shared machine, runs minutes apart differ by more than most changes
do; binaries swapped in one stack, round after round, see the same load and the same tables.
Environment: AB_BINS ("name=path name=path ..."; required), AB_MODE (fresh or replay, default
replay), AB_BATCH (mutations per request, default 1), AB_TRIVIAL (1: add the trivial
responder to each round), and contrib/bench/push's BENCH_WORKERS, BENCH_CONNECTIONS,
BENCH_SECONDS, BENCH_ROUNDS, BENCH_WARMUP."""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402
import synchro_e2e as e2e  # noqa: E402


def main():
    bins = [b.split("=", 1) for b in os.environ.get("AB_BINS", "").split()]
    if not bins or any(len(b) != 2 or not os.access(b[1], os.X_OK) for b in bins):
        raise SystemExit("AB_BINS: name=path of executable synchro-fcgi binaries, separated by spaces")
    mode = os.environ.get("AB_MODE", "replay")
    if mode not in ("fresh", "replay"):
        raise SystemExit("AB_MODE: fresh or replay")
    batch = int(os.environ.get("AB_BATCH", "1"))
    trivial = os.environ.get("AB_TRIVIAL") == "1"
    print("== contrib/bench/push/ab: %s batches of %d, %d rounds of %gs, %d responders, %d connections"
          % (mode, batch, B.ROUNDS, B.SECONDS, B.WORKERS, B.CONNECTIONS), flush=True)
    st = B.BenchStack(workers=B.WORKERS)
    st.start()
    results = {}
    try:
        b = B.Bench(st)
        b.connect_clients()
        replay_phase = b.next_phase()

        def one(name, path=None):
            # bench.py's own measurements; the trivial responder answers every body alike,
            # so its figure is that of the same requests sent again (replay mode).
            if path is None:
                b.use_trivial()
                j = b.replay(batch, replay_phase, trivial=True)
            else:
                e2e.FCGI = path
                b.use_synchro()
                j = b.push_fresh(batch) if mode == "fresh" else b.replay(batch, replay_phase)
            cpu = j["server_cpu"] / j["requests"] * 1e6
            results.setdefault(name, []).append((j["req_per_s"], cpu))
            print("  %-10s %9.1f req/s  %8.1f us server CPU per request" % (name, j["req_per_s"], cpu),
                  flush=True)

        for r in range(B.ROUNDS):
            print("-- round %d" % (r + 1), flush=True)
            for name, path in bins:
                one(name, path)
            if trivial:
                one("trivial")
        print("== medians", flush=True)
        first = statistics.median(x[0] for x in results[bins[0][0]])
        for name, v in results.items():
            rps = statistics.median(x[0] for x in v)
            print("  %-10s %9.1f req/s (%5.1f%% of %s)  %8.1f us server CPU per request"
                  % (name, rps, 100 * rps / first, bins[0][0], statistics.median(x[1] for x in v)))
        if b.invalid:
            print("INVALID: " + "; ".join(b.invalid))
            return 1
        return 0
    finally:
        st.stop()


if __name__ == "__main__":
    sys.exit(main())
