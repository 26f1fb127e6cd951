/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.h: process logging, to stderr or syslog.
 *
 * Rules: doc/contract.md#no-payloads-in-logs (what never goes to a log).
 * Notes: Never log request bodies, rows, credentials or ledger responses. Callers pass
 * identifiers and counts only.
 */
#ifndef SY_LOG_H
#define SY_LOG_H

#include "synchro/common.h"

typedef enum { SY_LOG_ERR = 3, SY_LOG_WARNING = 4, SY_LOG_INFO = 6, SY_LOG_DEBUG = 7 } sy_log_level;

/* target: "stderr" (default) or "syslog"; level: the most verbose level written. */
void sy_log_open(const char *ident, const char *target, sy_log_level level);
bool sy_log_level_parse(const char *name, sy_log_level *out);
void sy_log(sy_log_level level, const char *fmt, ...) SY_PRINTF(2, 3);

#endif
