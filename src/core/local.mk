# libsynchro: the pure core (no I/O). Tests link the convenience library
# statically (no libtool wrappers, so valgrind sees the real binary).
noinst_LTLIBRARIES += src/core/libsycore.la
src_core_libsycore_la_SOURCES = \
	src/core/alloc.c \
	src/core/buf.c \
	src/core/errors.c \
	src/core/json_arena.c \
	src/core/json_parse.c \
	src/core/json_build.c \
	src/core/decimal.c \
	src/core/jcs.c \
	src/core/scalar.c \
	src/core/types.c \
	src/core/manifest.c \
	src/core/manifest_policy.c \
	src/core/manifest_check.c \
	src/core/push_request.c \
	src/core/sha256.c \
	src/core/fingerprint.c \
	src/core/request_digest.c \
	src/core/matrix.c \
	src/core/outcome.c \
	src/core/outcome_response.c \
	src/core/outcome_validate.c
# The core's private headers (not in SOURCES: contrib's fuzz rule compiles SOURCES as given).
noinst_HEADERS += \
	src/core/json_arena.h \
	src/core/json_scan.h \
	src/include/synchro/sha256.h \
	src/core/decimal.h \
	src/core/outcome_common.h \
	src/core/manifest_common.h
src_core_libsycore_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS)
src_core_libsycore_la_LIBADD = $(CRYPTO_LIBS) -lm

lib_LTLIBRARIES += src/libsynchro.la
src_libsynchro_la_SOURCES =
src_libsynchro_la_LIBADD = src/core/libsycore.la
src_libsynchro_la_LDFLAGS = -version-info 0:0:0

pkginclude_HEADERS += \
	src/include/synchro/common.h \
	src/include/synchro/alloc.h \
	src/include/synchro/buf.h \
	src/include/synchro/json.h \
	src/include/synchro/jcs.h \
	src/include/synchro/scalar.h \
	src/include/synchro/octets.h \
	src/include/synchro/types.h \
	src/include/synchro/manifest.h \
	src/include/synchro/push.h \
	src/include/synchro/fingerprint.h \
	src/include/synchro/request_digest.h \
	src/include/synchro/matrix.h \
	src/include/synchro/outcome.h

# The rules every layer shares, one implementation each (the server module links them too):
# the dispatch order (doc/contract.md#dispatch-order).
src_core_libsycore_la_SOURCES += src/core/dispatch.c
pkginclude_HEADERS += src/include/synchro/dispatch.h
# The SQLSTATEs acted on, and the PostgreSQL type of each manifest type.
src_core_libsycore_la_SOURCES += src/core/sqlstate.c src/core/pgtypes.c
pkginclude_HEADERS += src/include/synchro/sqlstate.h src/include/synchro/pgtypes.h
