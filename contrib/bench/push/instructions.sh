#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# contrib/bench/push/instructions.sh [BUILD_DIR]: the instructions synchro_push executes per
# push, counted by callgrind in a single-user backend, on a throwaway cluster (instructions.py).
# BENCH_PUSHES (default 300) and BENCH_BATCH (default 1) set the load; BENCH_WHOLE=1 counts the
# whole backend, BENCH_PLAIN=1 the same rows by plain SQL (see instructions.py).
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$top/_check/default}" && pwd)
make -C "$build" src/ctl/synchroctl src/pg/synchro.la >/dev/null
PG_BINDIR=${PG_BINDIR:-$(sed -n 's/^PG_BINDIR = //p' "$build/Makefile")}
SYNCHRO_SRCDIR=$top
SYNCHRO_BUILDDIR=$build
export PG_BINDIR SYNCHRO_SRCDIR SYNCHRO_BUILDDIR
exec "$top/tests/integration/with-pg" /usr/bin/python3 -B "$top/contrib/bench/push/instructions.py"
