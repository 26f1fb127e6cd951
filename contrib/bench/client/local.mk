# contrib/bench/client: make bench-client (needs nginx and a PostgreSQL server); see bench.py.
EXTRA_PROGRAMS += contrib/bench/client/bench_client
contrib_bench_client_bench_client_SOURCES = contrib/bench/client/bench_client.c
contrib_bench_client_bench_client_CFLAGS = $(AM_CFLAGS) $(UUID_CFLAGS)
contrib_bench_client_bench_client_LDADD = $(CLIENT_LIBS)
CLEANFILES += contrib/bench/client/bench_client
EXTRA_DIST += contrib/bench/client/run contrib/bench/client/bench.py
bench-client: contrib/bench/client/bench_client
	$(top_srcdir)/contrib/bench/client/run $(abs_top_builddir)
.PHONY: bench-client
