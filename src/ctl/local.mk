# synchroctl: administration and the offline tools.
bin_PROGRAMS += src/ctl/synchroctl
src_ctl_synchroctl_SOURCES = src/ctl/main.c
src_ctl_synchroctl_LDADD = src/core/libsycore.la $(CRYPTO_LIBS) -lm
