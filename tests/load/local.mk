# Load at 4x the admission caps and slow clients, through nginx and synchro-fcgi on a
# throwaway PostgreSQL: a short run in make check (about a minute), the long one with
# contrib/check --load SECONDS. It skips (exit 77) without a PostgreSQL server or nginx.
if HAVE_PG_SERVER
TESTS += tests/load/test_load.pgt
endif
EXTRA_DIST += tests/load/test_load.pgt tests/load/push_load.py tests/load/slow_clients.py
