# contrib/bench/client: make bench-client, make bench-client-web (needs nginx and a PostgreSQL
# server; -web the browser build and Chromium); see bench.py.
EXTRA_PROGRAMS += contrib/bench/client/bench_client
contrib_bench_client_bench_client_SOURCES = contrib/bench/client/bench_client.c
contrib_bench_client_bench_client_CFLAGS = $(AM_CFLAGS) $(UUID_CFLAGS)
contrib_bench_client_bench_client_LDADD = $(CLIENT_LIBS)
CLEANFILES += contrib/bench/client/bench_client
EXTRA_DIST += contrib/bench/client/run contrib/bench/client/bench.py \
	contrib/bench/client/web_bench.mjs contrib/bench/client/web_bench.html \
	contrib/bench/results/client-rows-1m.txt
# Dated runs of bench-client-rows, linked from doc/performance.md.
EXTRA_DIST += contrib/bench/results/2026-12-07-2342-client-rows-100k-main-1.txt \
	contrib/bench/results/2026-12-07-2342-client-rows-100k-1.txt \
	contrib/bench/results/2026-12-07-2342-client-rows-100k-2.txt \
	contrib/bench/results/2026-12-07-2343-client-rows-100k-main-2.txt \
	contrib/bench/results/2026-12-07-2343-client-rows-1m-main.txt \
	contrib/bench/results/2026-12-07-2348-client-rows-1m.txt \
	contrib/bench/results/2026-12-07-2352-client-rows-1m-shared-buffers.txt \
	contrib/bench/results/2026-12-07-2357-rebuild-pages-cpu-1m.md \
	contrib/bench/results/2026-12-08-0002-client-rows-100k-explain.txt \
	contrib/bench/results/2026-12-08-0009-rebuild-pages-round-trips-1m.md \
	contrib/bench/results/2026-12-08-0015-rebuild-pages-owner-100k.md \
	contrib/bench/results/2026-12-08-0016-client-rows-100k-pairs.txt
bench-client: contrib/bench/client/bench_client
	$(top_srcdir)/contrib/bench/client/run $(abs_top_builddir)
# the browser client beside it (configure --enable-web, Chromium): bench.py --web
bench-client-web: contrib/bench/client/bench_client all
	$(top_srcdir)/contrib/bench/client/run $(abs_top_builddir) --web
# a new device's first sync of ROWS rows (default 100000; N,N... for several) and queries over
# them: bench.py --rows
bench-client-rows: contrib/bench/client/bench_client
	$(top_srcdir)/contrib/bench/client/run $(abs_top_builddir) --rows "$${ROWS:-100000}"
bench-client-rows-web: contrib/bench/client/bench_client all
	$(top_srcdir)/contrib/bench/client/run $(abs_top_builddir) --rows "$${ROWS:-100000}" --web
.PHONY: bench-client bench-client-web bench-client-rows bench-client-rows-web
