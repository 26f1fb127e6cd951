# Process support shared by the daemons (logging, the monotonic clock); no protocol logic here.
noinst_LTLIBRARIES += src/common/libsycommon.la
src_common_libsycommon_la_SOURCES = src/common/log.c src/common/log.h \
	src/common/clock.c src/common/clock.h
