/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stream.c: the logical replication connection: slot creation, START_REPLICATION with
 * pgoutput and messages, reads that do not block, and standby status updates.
 *
 * Layer: base of src/walsync (doc/hacking.md).
 * Notes: It runs on libpq's CopyBoth.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/conn.h"
#include "walsync/pgoutput.h"
#include "walsync/stream.h"

bool sy_ws_slot_name_valid(const char *slot)
{
	size_t n = strlen(slot);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((slot[i] >= 'a' && slot[i] <= 'z') || (slot[i] >= '0' && slot[i] <= '9') ||
		      slot[i] == '_'))
			return false;
	return true;
}

/* Server and libpq messages can span lines (DETAIL, HINT). */
static void one_line(char *s)
{
	char *nl = strpbrk(s, "\r\n");
	if (nl)
		*nl = '\0';
}

static bool fail_result(PGconn *r, PGresult *res, const char *what, sy_error *err)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "%s: %s", what,
	             primary ? primary : PQerrorMessage(r));
	one_line(err->message);
	return false;
}

PGconn *sy_ws_connect(const char *conninfo, sy_error *err)
{
	if (!sy_store_conninfo_check(conninfo)) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST,
		             "invalid connection string (not shown: it may hold a password)");
		return NULL;
	}
	/* Keywords after the expanded dbname override what the string says. */
	const char *keys[] = {"fallback_application_name", "dbname", "replication", NULL};
	const char *vals[] = {"synchro-walsync", conninfo ? conninfo : "", "database", NULL};
	PGconn *r = PQconnectdbParams(keys, vals, 1);
	if (!r) {
		sy_error_set(err, SY_ERR_NOMEM, "replication connection: out of memory");
		return NULL;
	}
	if (PQstatus(r) != CONNECTION_OK) {
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "replication connection: %s",
		             PQerrorMessage(r));
		one_line(err->message);
		PQfinish(r);
		return NULL;
	}
	return r;
}

bool sy_ws_slot_create(PGconn *r, const char *slot, bool *created, sy_error *err)
{
	*created = false;
	if (!sy_ws_slot_name_valid(slot))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "invalid slot name");
	char cmd[160];
	/* NOEXPORT_SNAPSHOT: the pre-15 spelling, still accepted, so 14 works too. */
	snprintf(cmd, sizeof cmd,
	         "CREATE_REPLICATION_SLOT \"%s\" LOGICAL pgoutput NOEXPORT_SNAPSHOT", slot);
	PGresult *res = PQexec(r, cmd);
	ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
		*created = true;
		PQclear(res);
		return true;
	}
	const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (code && strcmp(code, "42710") == 0) { /* duplicate_object: a racing creator */
		PQclear(res);
		return true;
	}
	fail_result(r, res, "create the replication slot", err);
	PQclear(res);
	return false;
}

sy_ws_start_status sy_ws_start(PGconn *r, const char *slot, sy_error *err)
{
	if (!sy_ws_slot_name_valid(slot)) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "invalid slot name");
		return SY_WS_START_FAILED;
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd,
	         "START_REPLICATION SLOT \"%s\" LOGICAL 0/0 (proto_version '1',"
	         " publication_names '\"synchro\"', messages 'true')",
	         slot);
	PGresult *res = PQexec(r, cmd);
	if (res && PQresultStatus(res) == PGRES_COPY_BOTH) {
		PQclear(res);
		if (PQsetnonblocking(r, 1) != 0) {
			sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE,
			             "replication connection: cannot set non-blocking mode");
			return SY_WS_START_FAILED;
		}
		return SY_WS_START_OK;
	}
	const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	sy_ws_start_status st =
	        code && strcmp(code, "55006") == 0 ? SY_WS_START_BUSY : SY_WS_START_FAILED;
	fail_result(r, res, "start streaming", err);
	PQclear(res);
	return st;
}

bool sy_ws_consume(PGconn *r, sy_error *err)
{
	if (PQconsumeInput(r) == 1)
		return true;
	sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "replication stream: %s",
	             PQerrorMessage(r));
	one_line(err->message);
	return false;
}

int sy_ws_read(PGconn *r, char **buf, sy_error *err)
{
	*buf = NULL;
	int n = PQgetCopyData(r, buf, 1);
	if (n > 0)
		return n;
	if (n == 0)
		return 0;
	if (n == -1) {
		/* The server ended the copy: its result says why. */
		PGresult *res = PQgetResult(r);
		if (res && PQresultStatus(res) != PGRES_COMMAND_OK)
			fail_result(r, res, "replication stream ended", err);
		else
			sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE,
			             "replication stream ended by the server");
		PQclear(res);
		return -1;
	}
	sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "replication stream: %s",
	             PQerrorMessage(r));
	one_line(err->message);
	return -1;
}

int64_t sy_ws_now_pg(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - SY_WS_PG_EPOCH_USEC;
}

bool sy_ws_send_status(PGconn *r, uint64_t confirmed, sy_error *err)
{
	unsigned char msg[SY_WS_STATUS_LEN];
	sy_ws_status_build(msg, confirmed, confirmed, confirmed, sy_ws_now_pg(), false);
	if (PQputCopyData(r, (const char *)msg, (int)sizeof msg) != 1) {
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "standby status update: %s",
		             PQerrorMessage(r));
		one_line(err->message);
		return false;
	}
	/* Non-blocking: what does not fit now goes with the next flush or status. */
	if (PQflush(r) < 0) {
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "standby status update: %s",
		             PQerrorMessage(r));
		one_line(err->message);
		return false;
	}
	return true;
}
