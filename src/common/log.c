/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.c: process logging, to stderr or syslog (log.h).
 *
 * Layer: base of src/common (doc/hacking.md).
 * Rules: doc/contract.md#no-payloads-in-logs (never a request payload, row, credential or
 * ledger body).
 * Notes: Callers pass identifiers, counts and SQLSTATEs.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static const char *log_ident = "synchro";
static bool use_syslog;
static sy_log_level max_level = SY_LOG_INFO;

void sy_log_open(const char *ident, const char *target, sy_log_level level)
{
	log_ident = ident;
	max_level = level;
	use_syslog = target != NULL && strcmp(target, "syslog") == 0;
	if (use_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

bool sy_log_level_parse(const char *name, sy_log_level *out)
{
	static const struct {
		const char *name;
		sy_log_level level;
	} names[] = {{"error", SY_LOG_ERR},
	             {"warning", SY_LOG_WARNING},
	             {"info", SY_LOG_INFO},
	             {"debug", SY_LOG_DEBUG}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].level;
			return true;
		}
	}
	return false;
}

void sy_log(sy_log_level level, const char *fmt, ...)
{
	if (level > max_level)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (use_syslog) {
		syslog((int)level, "%s", msg);
		return;
	}
	static const char *const names[] = {"", "", "", "error", "warning", "", "info", "debug"};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s: %s\n", tm.tm_year + 1900,
	        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
	        log_ident, (int)getpid(), names[level], msg);
}
