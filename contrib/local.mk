# contrib: fuzz targets and benchmarks (built on request, not installed).

# The fuzz targets' regression corpora are replayed by make check without libFuzzer.
check_PROGRAMS += contrib/fuzz/fuzz_replay contrib/fuzz/fuzz_client_replay
contrib_fuzz_fuzz_replay_SOURCES = contrib/fuzz/fuzz_push.c contrib/fuzz/replay.c
contrib_fuzz_fuzz_replay_LDADD = src/core/libsycore.la $(CRYPTO_LIBS) -lm
contrib_fuzz_fuzz_client_replay_SOURCES = contrib/fuzz/fuzz_client.c contrib/fuzz/replay.c \
	tests/unit/client_fake.c tests/unit/client_fake.h
contrib_fuzz_fuzz_client_replay_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(UUID_CFLAGS)
contrib_fuzz_fuzz_client_replay_LDADD = $(CLIENT_LIBS)
TESTS += tests/unit/fuzz_replay.sh
EXTRA_DIST += tests/unit/fuzz_replay.sh contrib/fuzz/run tests/vectors/fuzz tests/vectors/client

# make fuzz: the libFuzzer binaries (need CC=clang; contrib/check --fuzz runs them):
# fuzz_push (reader, push validator, JCS, fingerprints, manifests) and fuzz_client
# (the client's handling of connect, schema, push, pull and rebuild answers).
FUZZ_CFLAGS = $(DEFS) -I$(top_builddir) $(AM_CPPFLAGS) $(CPPFLAGS) -std=c11 -g -O1 \
	-fsanitize=fuzzer,address,undefined
FUZZ_PUSH_SRCS = contrib/fuzz/fuzz_push.c $(src_core_libsycore_la_SOURCES)
FUZZ_CLIENT_SRCS = contrib/fuzz/fuzz_client.c tests/unit/client_fake.c \
	$(src_client_libsyclient_la_SOURCES) $(src_core_libsycore_la_SOURCES)
fuzz:
	@mkdir -p contrib/fuzz
	srcs=; for s in $(FUZZ_PUSH_SRCS); do case $$s in *.c) srcs="$$srcs $(top_srcdir)/$$s";; esac; done; \
	$(CC) $(FUZZ_CFLAGS) $$srcs -o contrib/fuzz/fuzz_push $(CRYPTO_LIBS) -lm
	srcs=; for s in $(FUZZ_CLIENT_SRCS); do case $$s in *.c) srcs="$$srcs $(top_srcdir)/$$s";; esac; done; \
	$(CC) $(FUZZ_CFLAGS) $(SQLITE_CFLAGS) $(CURL_CFLAGS) $(UUID_CFLAGS) $(CRYPTO_CFLAGS) $$srcs \
	  -o contrib/fuzz/fuzz_client $(SQLITE_LIBS) $(CURL_LIBS) $(UUID_LIBS) $(CRYPTO_LIBS) -lm
.PHONY: fuzz

# Benchmarks: make bench-core (or contrib/bench/core/run BUILD_DIR).
EXTRA_PROGRAMS = contrib/bench/core/bench_core
contrib_bench_core_bench_core_SOURCES = contrib/bench/core/bench_core.c contrib/bench/bench.h
contrib_bench_core_bench_core_LDADD = src/core/libsycore.la $(CRYPTO_LIBS) -lm
CLEANFILES += contrib/bench/core/bench_core contrib/fuzz/fuzz_push contrib/fuzz/fuzz_client
EXTRA_DIST += contrib/bench/core/run
bench-core: contrib/bench/core/bench_core
	$(top_srcdir)/contrib/bench/core/run $(abs_top_builddir)
.PHONY: bench-core

# make bench-push / make bench-pull: through nginx on a throwaway PostgreSQL, each figure beside
# its baseline measured in the same run (needs wrk and nginx; contrib/bench/push/bench.py).
# plain_sql and trivial_fcgi are built by make check too: tests/e2e/test_bench_push runs them.
check_PROGRAMS += contrib/bench/push/plain_sql contrib/bench/push/trivial_fcgi
EXTRA_PROGRAMS += contrib/bench/pull/changelog_watch contrib/bench/pull/pull_watch
contrib_bench_push_plain_sql_SOURCES = contrib/bench/push/plain_sql.c contrib/bench/bench.h
contrib_bench_push_plain_sql_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS) -pthread
contrib_bench_push_plain_sql_LDADD = $(LIBPQ_LIBS) -lpthread
contrib_bench_push_trivial_fcgi_SOURCES = contrib/bench/push/trivial_fcgi.c
contrib_bench_push_trivial_fcgi_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
contrib_bench_push_trivial_fcgi_LDADD = $(FCGI_LIBS) $(LIBPQ_LIBS)
contrib_bench_pull_changelog_watch_SOURCES = contrib/bench/pull/changelog_watch.c contrib/bench/bench.h
contrib_bench_pull_changelog_watch_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
contrib_bench_pull_changelog_watch_LDADD = $(LIBPQ_LIBS)
contrib_bench_pull_pull_watch_SOURCES = contrib/bench/pull/pull_watch.c contrib/bench/bench.h
contrib_bench_pull_pull_watch_LDADD = src/core/libsycore.la $(CRYPTO_LIBS) -lm
CLEANFILES += contrib/bench/push/plain_sql contrib/bench/push/trivial_fcgi \
	contrib/bench/pull/changelog_watch contrib/bench/pull/pull_watch
EXTRA_DIST += contrib/bench/push/run contrib/bench/push/bench.py contrib/bench/push/ab.py \
	contrib/bench/push/push.lua contrib/bench/push/statements.sh contrib/bench/push/statements.py \
	contrib/bench/push/instructions.sh contrib/bench/push/instructions.py contrib/bench/push/push_bodies.py \
	contrib/bench/push/peer.py contrib/bench/push/peer/package.json contrib/bench/push/peer/package-lock.json \
	contrib/bench/push/peer/server.js contrib/bench/push/peer/schema.sql \
	contrib/bench/push/peer-fast/package.json contrib/bench/push/peer-fast/package-lock.json \
	contrib/bench/push/peer-fast/server.js contrib/bench/push/peer_common.cjs \
	contrib/bench/results/2026-12-07-1752-push.md \
	contrib/bench/results/2026-12-07-1803-push.md contrib/bench/results/2026-12-07-1812-push.md \
	contrib/bench/results/2026-12-07-1824-push.md \
	contrib/bench/pull/run contrib/bench/pull/bench.py contrib/bench/pull/pull.lua \
	contrib/bench/pull/paced_push.lua contrib/bench/pull/replica.py contrib/bench/pull/scopes.py
bench-push: contrib/bench/push/plain_sql contrib/bench/push/trivial_fcgi src/fcgi/synchro-fcgi \
		src/ctl/synchroctl
	$(top_srcdir)/contrib/bench/push/run $(abs_top_builddir)
bench-pull: contrib/bench/push/plain_sql contrib/bench/pull/changelog_watch \
		contrib/bench/pull/pull_watch src/fcgi/synchro-fcgi \
		src/walsync/synchro-walsync src/ctl/synchroctl
	$(top_srcdir)/contrib/bench/pull/run $(abs_top_builddir)
# make bench-push-statements / bench-push-instructions: where a push's time goes inside
# PostgreSQL (pg_stat_statements, perf; callgrind instruction counts).
bench-push-statements: src/ctl/synchroctl src/pg/synchro.la
	$(top_srcdir)/contrib/bench/push/statements.sh $(abs_top_builddir)
bench-push-instructions: src/ctl/synchroctl src/pg/synchro.la
	$(top_srcdir)/contrib/bench/push/instructions.sh $(abs_top_builddir)
# make bench-live: commit-to-device latency of live updates through nginx's nchan module, quiet
# and with many idle subscribers (contrib/bench/live/bench.py).
EXTRA_DIST += contrib/bench/live/run contrib/bench/live/bench.py contrib/bench/live/web_live.mjs \
	contrib/bench/live/zero.py contrib/bench/live/zero/package.json contrib/bench/live/zero/package-lock.json \
	contrib/bench/live/zero/zero.mjs contrib/bench/live/watch.py
# Dated runs of the benchmarks, linked from doc/performance.md.
EXTRA_DIST += contrib/bench/results/2026-12-07-1834-live.md contrib/bench/results/2026-12-07-1838-live.md \
	contrib/bench/results/2026-12-08-0031-live-share.md \
	contrib/bench/results/2026-12-08-0035-scopes.md \
	contrib/bench/results/2026-12-08-0032-client-rows.md \
	contrib/bench/results/2026-12-08-0137-client-rows-web-1m.md \
	contrib/bench/results/2026-12-07-2123-scopes.md \
	contrib/bench/results/2026-12-07-2135-scopes.md \
	contrib/bench/results/2026-12-07-2347-scopes-breakdown.md \
	contrib/bench/results/2026-12-07-1824-push-runs-1-to-4.md \
	contrib/bench/results/2026-12-07-1811-app-writes.md \
	contrib/bench/results/2026-12-07-1908-live-traces.md \
	contrib/bench/results/2026-12-06-0236-browser-client.md \
	contrib/bench/results/2026-12-07-2129-client-rows.md
bench-live: src/fcgi/synchro-fcgi src/walsync/synchro-walsync src/ctl/synchroctl src/client/synchro-cli
	$(top_srcdir)/contrib/bench/live/run $(abs_top_builddir)
.PHONY: bench-push bench-pull bench-push-statements bench-push-instructions bench-live

# The push bench's peers run from a copy under the build directory, with the node_modules that
# npm ci installs there (contrib/bench/push/peer.py): make clean removes them, and the copy
# itself when the build is out of the source tree.
clean-local: clean-bench-peer
clean-bench-peer:
	rm -rf contrib/bench/push/peer/node_modules contrib/bench/push/peer/.npm-cache
	if test "$(abs_builddir)" != "$(abs_srcdir)"; then rm -rf contrib/bench/push/peer; fi
	rm -rf contrib/bench/push/peer-fast/node_modules contrib/bench/push/peer-fast/.npm-cache
	if test "$(abs_builddir)" != "$(abs_srcdir)"; then rm -rf contrib/bench/push/peer-fast; fi
	if test "$(abs_builddir)" != "$(abs_srcdir)"; then rm -f contrib/bench/push/peer_common.cjs; fi
	rm -rf contrib/bench/live/zero/node_modules
	if test "$(abs_builddir)" != "$(abs_srcdir)"; then rm -rf contrib/bench/live/zero; fi
.PHONY: clean-bench-peer
