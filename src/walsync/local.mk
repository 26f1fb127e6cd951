# synchro-walsync: the WAL materializer (logical replication stream, pgoutput decoding, the
# single-writer lease). Its SQL lives in the store (src/store/lease.c, src/store/changelog.c),
# which this fragment adds to libsystore; synchroctl lease status reads the lease through it.
src_store_libsystore_la_SOURCES += \
	src/store/lease.c src/store/lease.h \
	src/store/changelog.c src/store/changelog.h \
	src/store/changelog_scopes.c src/store/changelog_scopes.h \
	src/store/stream_continuity.c src/store/stream_continuity.h

sbin_PROGRAMS += src/walsync/synchro-walsync
src_walsync_synchro_walsync_SOURCES = \
	src/walsync/walsync_main.c src/walsync/walsync.h \
	src/walsync/walsync_lease.c \
	src/walsync/walsync_session.c \
	src/walsync/walsync_materialize.c \
	src/walsync/walsync_stats.c src/walsync/walsync_stats.h \
	src/walsync/walsync_metrics.c src/walsync/walsync_metrics.h \
	src/walsync/walsync_notify.c src/walsync/walsync_notify.h \
	src/walsync/walsync_decode.c \
	src/walsync/walsync_mirror.c \
	src/walsync/walsync_fences.c src/walsync/walsync_fences.h \
	src/walsync/walsync_scopes.c src/walsync/walsync_scopes.h \
	src/walsync/walsync_continuity.c src/walsync/walsync_continuity.h \
	src/walsync/stream.c src/walsync/stream.h \
	src/walsync/pgoutput.c src/walsync/pgoutput.h
src_walsync_synchro_walsync_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
src_walsync_synchro_walsync_LDADD = src/common/libsycommon.la src/store/libsystore.la \
	src/core/libsycore.la \
	$(LIBPQ_LIBS) $(CRYPTO_LIBS) -lm

dist_man_MANS += doc/synchro-walsync.8
walsyncunitdir = $(systemdsystemunitdir)
dist_walsyncunit_DATA = conf/systemd/synchro-walsync.service
