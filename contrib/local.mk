# contrib: fuzz target and benchmarks (built on request, not installed).

# The fuzz target's regression corpus is replayed by make check without libFuzzer.
check_PROGRAMS += contrib/fuzz/fuzz_replay
contrib_fuzz_fuzz_replay_SOURCES = contrib/fuzz/fuzz_push.c contrib/fuzz/replay.c
contrib_fuzz_fuzz_replay_LDADD = src/core/libsycore.la $(CRYPTO_LIBS) -lm
TESTS += tests/unit/fuzz_replay.sh
EXTRA_DIST += tests/unit/fuzz_replay.sh contrib/fuzz/run tests/vectors/fuzz

# make fuzz: the libFuzzer binary (needs CC=clang; contrib/check --fuzz SECONDS runs it).
FUZZ_SRCS = contrib/fuzz/fuzz_push.c $(src_core_libsycore_la_SOURCES)
fuzz:
	@mkdir -p contrib/fuzz
	srcs=; for s in $(FUZZ_SRCS); do srcs="$$srcs $(top_srcdir)/$$s"; done; \
	$(CC) $(DEFS) -I$(top_builddir) $(AM_CPPFLAGS) $(CPPFLAGS) -std=c11 -g -O1 \
	  -fsanitize=fuzzer,address,undefined $$srcs -o contrib/fuzz/fuzz_push $(CRYPTO_LIBS) -lm
.PHONY: fuzz

# Benchmarks: make bench-core (or contrib/bench/core/run BUILD_DIR).
EXTRA_PROGRAMS = contrib/bench/core/bench_core
contrib_bench_core_bench_core_SOURCES = contrib/bench/core/bench_core.c
contrib_bench_core_bench_core_LDADD = src/core/libsycore.la $(CRYPTO_LIBS) -lm
CLEANFILES += contrib/bench/core/bench_core contrib/fuzz/fuzz_push
EXTRA_DIST += contrib/bench/core/run
bench-core: contrib/bench/core/bench_core
	$(top_srcdir)/contrib/bench/core/run $(abs_top_builddir)
.PHONY: bench-core
