#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# contrib/bench/push/statements.sh [BUILD_DIR]: where a push's time goes inside PostgreSQL
# (pg_stat_statements over synchro_push and its triggers, beside plain inserts), on a
# throwaway cluster. BENCH_PUSHES (default 1000) and BENCH_BATCH (default 1) set the load.
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$top/_check/default}" && pwd)
make -C "$build" src/ctl/synchroctl src/pg/synchro.la >/dev/null
PG_BINDIR=${PG_BINDIR:-$(sed -n 's/^PG_BINDIR = //p' "$build/Makefile")}
SYNCHRO_SRCDIR=$top
SYNCHRO_BUILDDIR=$build
export PG_BINDIR SYNCHRO_SRCDIR SYNCHRO_BUILDDIR
exec "$top/tests/integration/with-pg" /usr/bin/python3 -B "$top/contrib/bench/push/statements.py"
