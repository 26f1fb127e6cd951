# synchroctl: administration and the offline tools.
bin_PROGRAMS += src/ctl/synchroctl
src_ctl_synchroctl_SOURCES = src/ctl/ctl_main.c src/ctl/commands.h src/ctl/offline.c src/ctl/admin.c \
	src/ctl/status.c src/ctl/ctl_db.c
src_ctl_synchroctl_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
src_ctl_synchroctl_LDADD = src/store/libsystore.la src/core/libsycore.la $(LIBPQ_LIBS) $(CRYPTO_LIBS) -lm
