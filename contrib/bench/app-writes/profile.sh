#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# contrib/bench/app-writes/profile.sh [BUILD_DIR]: where the writing backend's time goes on the
# synced table's trigger path: perf (system-wide, cycles) over one
# app_writes run into public.app_synced on a throwaway PostgreSQL (tests/integration/with-pg),
# reported for the backend's pid only. BENCH_OP (insert), BENCH_PER_TXN (100), BENCH_MODE (set),
# BENCH_ROWS (20000) choose the run, BENCH_FENCE=plpgsql profiles migration 16's function instead
# of the C one; BENCH_TABLE=app_plain the unsynced table;
# BENCH_SQL, run after the setup, changes it for an experiment. Needs perf (Debian: linux-perf).
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$top/_check/default}" && pwd)
command -v perf >/dev/null 2>&1 || { echo "profile.sh: no perf (apt-get install linux-perf)" >&2; exit 1; }
make -C "$build" contrib/bench/app-writes/app_writes src/ctl/synchroctl src/pg/synchro.la >/dev/null
PG_BINDIR=${PG_BINDIR:-$(sed -n 's/^PG_BINDIR = //p' "$build/Makefile")}
export PG_BINDIR SYNCHRO_SRCDIR="$top" SYNCHRO_BUILDDIR="$build"
export BENCH_OP="${BENCH_OP:-insert}" BENCH_PER_TXN="${BENCH_PER_TXN:-100}" BENCH_MODE="${BENCH_MODE:-set}"
export BENCH_ROWS="${BENCH_ROWS:-20000}" BENCH_FENCE="${BENCH_FENCE:-c}" BENCH_TABLE="${BENCH_TABLE:-app_synced}"
# shellcheck disable=SC2016
exec "$top/tests/integration/with-pg" sh -c '
set -eu
b=$SYNCHRO_BUILDDIR/contrib/bench/app-writes/app_writes
printf "[database]\nconninfo = host=%s port=%s dbname=%s user=postgres\n" "$PGHOST" "$PGPORT" "$PGDATABASE" \
	>"$SYNCHRO_PG_TMP/admin.conf"
"$SYNCHRO_BUILDDIR/src/ctl/synchroctl" -c "$SYNCHRO_PG_TMP/admin.conf" init >/dev/null
python3 -B -c "
import os, sys
sys.argv = [\"x\"]
os.environ.setdefault(\"SYNCHRO_SRCDIR\", \"$SYNCHRO_SRCDIR\")
sys.path.insert(0, os.path.join(os.environ[\"SYNCHRO_SRCDIR\"], \"contrib/bench/app-writes\"))
import bench
print(bench.SCHEMA)
if os.environ[\"BENCH_FENCE\"] == \"plpgsql\":
    print(bench.FENCE_SQL[\"plpgsql\"])
" >"$SYNCHRO_PG_TMP/schema.sql"
psql -X -q -v ON_ERROR_STOP=1 -f "$SYNCHRO_PG_TMP/schema.sql" >/dev/null
[ -z "${BENCH_SQL:-}" ] || psql -X -q -v ON_ERROR_STOP=1 -c "$BENCH_SQL" >/dev/null
# the rows the measured run updates or deletes, and a warm-up
if [ "$BENCH_OP" != insert ]; then
	"$b" -t "$BENCH_TABLE" -o insert -n 100 -m set -b 1 -r "$BENCH_ROWS" -w 0 >/dev/null
fi
perf record -q -a -o "$SYNCHRO_PG_TMP/perf.data" -- \
	"$b" -t "$BENCH_TABLE" -o "$BENCH_OP" -n "$BENCH_PER_TXN" -m "$BENCH_MODE" -b 1 -r "$BENCH_ROWS" -w 0 \
	>"$SYNCHRO_PG_TMP/run.txt" 2>/dev/null
cat "$SYNCHRO_PG_TMP/run.txt"
pid=$(sed -n "s/.*backend_pid=\([0-9]*\).*/\1/p" "$SYNCHRO_PG_TMP/run.txt")
echo "== the backend ($pid): self time by symbol"
perf report -q -i "$SYNCHRO_PG_TMP/perf.data" --pid="$pid" --no-children --percentage relative --sort=dso -g none 2>/dev/null | head -8
echo "== by symbol"
perf report -q -i "$SYNCHRO_PG_TMP/perf.data" --pid="$pid" --no-children --percentage relative --sort=sym -g none 2>/dev/null |
	head -"${BENCH_TOP:-45}"
'
