# contrib/bench/app-writes: make bench-app-writes (needs nginx and a PostgreSQL server); see
# bench.py: the application's own writes to a synced table beside an unsynced one.
EXTRA_PROGRAMS += contrib/bench/app-writes/app_writes
contrib_bench_app_writes_app_writes_SOURCES = contrib/bench/app-writes/app_writes.c contrib/bench/bench.h
contrib_bench_app_writes_app_writes_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
contrib_bench_app_writes_app_writes_LDADD = $(LIBPQ_LIBS)
CLEANFILES += contrib/bench/app-writes/app_writes
EXTRA_DIST += contrib/bench/app-writes/run contrib/bench/app-writes/bench.py \
	contrib/bench/app-writes/profile.sh contrib/bench/results/app-writes-fence.txt
bench-app-writes: contrib/bench/app-writes/app_writes
	$(top_srcdir)/contrib/bench/app-writes/run $(abs_top_builddir)
.PHONY: bench-app-writes
