# Process support shared by the daemons (logging); no protocol logic here.
noinst_LTLIBRARIES += src/common/libsycommon.la
src_common_libsycommon_la_SOURCES = src/common/log.c src/common/log.h
