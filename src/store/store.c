/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c: the libpq helpers the store modules share: checked execution, one-line errors
 * and quoting.
 *
 * Layer: base of src/store (doc/hacking.md).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "synchro/alloc.h"
#include "synchro/scalar.h"

static sy_errcode status_errcode(sy_store_status st)
{
	switch (st) {
	case SY_STORE_OK: return SY_ERR_NONE;
	case SY_STORE_INVALID: return SY_ERR_INVALID_REQUEST;
	case SY_STORE_NOT_FOUND: return SY_ERR_NOT_FOUND;
	case SY_STORE_NOMEM: return SY_ERR_NOMEM;
	case SY_STORE_CONFLICT:
	case SY_STORE_FAILED:
	case SY_STORE_CONNECTION: break;
	}
	return SY_ERR_TEMPORARY_UNAVAILABLE;
}

/* Server and libpq messages can span lines (DETAIL, HINT, "Is the server running..."). */
static void one_line(char *s)
{
	char *nl = strpbrk(s, "\r\n");
	if (nl)
		*nl = '\0';
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

sy_store_status sy_store_fail(sy_error *err, sy_store_status st, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = status_errcode(st);
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
		one_line(err->message);
	}
	return st;
}

static sy_store_error_observer observer;
static void *observer_arg;

void sy_store_observe_errors(sy_store_error_observer fn, void *arg)
{
	observer = fn;
	observer_arg = arg;
}

/*
 * The connections whose server said they cannot serve this process any longer, though libpq
 * still holds them open (a responder's primary and replica sessions, walsync's three), each
 * cleared when it is closed through sy_store_disconnect(). Read by sy_store_connection_usable().
 * Full, the oldest mark gives way: its connection still fails its next statement.
 */
#define UNUSABLE_MAX 8
static const PGconn *unusable[UNUSABLE_MAX];

static bool marked_unusable(const PGconn *c)
{
	for (int i = 0; i < UNUSABLE_MAX; i++)
		if (unusable[i] == c)
			return true;
	return false;
}

static void mark_unusable(const PGconn *c)
{
	if (marked_unusable(c))
		return;
	memmove(unusable + 1, unusable, sizeof unusable[0] * (UNUSABLE_MAX - 1));
	unusable[0] = c;
}

/* SQLSTATEs after which the session is of no use, though the socket may live on: 25006
 * read_only_sql_transaction (a standby, or a demoted or read-only server, refuses writes),
 * class 57P0 (the server shuts down, crashed, cannot take connections yet, the database was
 * dropped, the session timed out) and class 08 (connection exceptions). */
static bool session_ended(const char *code)
{
	return code != NULL && (strcmp(code, "25006") == 0 || strncmp(code, "57P0", 4) == 0 ||
	                        strncmp(code, "08", 2) == 0);
}

/* A setting the server reports on its own (GUC_REPORT, PostgreSQL 14 and later), "on". */
static bool reported_on(const PGconn *c, const char *name)
{
	const char *v = PQparameterStatus(c, name);
	return v != NULL && strcmp(v, "on") == 0;
}

bool sy_store_connection_usable(const PGconn *c)
{
	/* A server that says it is a standby or read only now (a fenced old primary) is left
	 * before the next request: a read there would be served from a stale database. */
	return c != NULL && !marked_unusable(c) && PQstatus(c) == CONNECTION_OK &&
	       !reported_on(c, "in_hot_standby") &&
	       !reported_on(c, "default_transaction_read_only");
}

void sy_store_connection_forget(const PGconn *c)
{
	for (int i = 0; c != NULL && i < UNUSABLE_MAX; i++)
		if (unusable[i] == c)
			unusable[i] = NULL;
}

PGresult *sy_store_result_failure(PGconn *c, PGresult *r, const char *what, char sqlstate[6],
                                  sy_store_status *st, sy_error *err)
{
	char msg[SY_ERROR_MESSAGE_MAX];
	const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (primary)
		snprintf(msg, sizeof msg, "%s", primary);
	else if (r &&
	         (PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK))
		snprintf(msg, sizeof msg, "unexpected result from the server");
	else
		snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
	one_line(msg);
	if (observer != NULL && code != NULL && code[0] != '\0')
		observer(code, observer_arg);
	if (sqlstate && code)
		snprintf(sqlstate, 6, "%s", code);
	bool ended = session_ended(code);
	PQclear(r);
	*st = PQstatus(c) == CONNECTION_BAD || ended ? SY_STORE_CONNECTION : SY_STORE_FAILED;
	if (ended)
		mark_unusable(c); /* the caller drops it; the next connect finds the primary */
	if (*st == SY_STORE_CONNECTION && msg[0] == '\0')
		snprintf(msg, sizeof msg, "connection to the server lost");
	else if (msg[0] == '\0')
		snprintf(msg, sizeof msg, "no result from the server");
	sy_store_fail(err, *st, "%s: %s", what, msg);
	return NULL;
}

PGresult *sy_store_exec_plain(PGconn *c, const char *sql, int nparams, const char *const *params,
                              ExecStatusType expect, const char *what, char sqlstate[6],
                              sy_store_status *st, sy_error *err)
{
	if (sqlstate)
		sqlstate[0] = '\0';
	PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	if (r && PQresultStatus(r) == expect) {
		*st = SY_STORE_OK;
		return r;
	}
	return sy_store_result_failure(c, r, what, sqlstate, st, err);
}

sy_store_status sy_store_command(PGconn *c, const char *sql, const char *what, sy_error *err)
{
	/* BEGIN [ISOLATION LEVEL ...] must come before any query of its transaction; the
	 * statements after it carry the settings (until COMMIT) behind a transaction pool. */
	sy_store_status st;
	PGresult *r = sy_store_exec_plain(c, sql, 0, NULL, PGRES_COMMAND_OK, what, NULL, &st, err);
	PQclear(r);
	return st;
}

void sy_store_rollback(PGconn *c)
{
	if (PQtransactionStatus(c) == PQTRANS_IDLE || PQstatus(c) != CONNECTION_OK)
		return;
	PQclear(PQexec(c, "ROLLBACK"));
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* [+-]HH[:MM[:SS]] at the end of a timestamptz text: the offset in seconds east of UTC. */
static bool utc_offset(const char *s, size_t n, int64_t *seconds)
{
	if (n != 3 && n != 6 && n != 9)
		return false;
	if ((s[0] != '+' && s[0] != '-') || !digits(s + 1, 2))
		return false;
	int64_t off = ((s[1] - '0') * 10 + (s[2] - '0')) * 3600;
	for (size_t i = 3, unit = 60; i < n; i += 3, unit /= 60) {
		if (s[i] != ':' || !digits(s + i + 1, 2) || s[i + 1] > '5')
			return false;
		off += (int64_t)((s[i + 1] - '0') * 10 + (s[i + 2] - '0')) * (int64_t)unit;
	}
	*seconds = s[0] == '-' ? -off : off;
	return true;
}

bool sy_store_format_time(const char *pg, char out[SY_STORE_TIME_LEN + 1])
{
	size_t n = strlen(pg);
	/* YYYY-MM-DD HH:MM:SS[.f{1,6}] then the offset */
	bool ok = n >= 22 && digits(pg, 4) && pg[4] == '-' && digits(pg + 5, 2) && pg[7] == '-' &&
	          digits(pg + 8, 2) && pg[10] == ' ' && digits(pg + 11, 2) && pg[13] == ':' &&
	          digits(pg + 14, 2) && pg[16] == ':' && digits(pg + 17, 2);
	size_t frac = 0;
	if (ok && pg[19] == '.') {
		while (20 + frac < n && pg[20 + frac] >= '0' && pg[20 + frac] <= '9')
			frac++;
		ok = frac >= 1 && frac <= 6;
	}
	size_t zone = 19 + (frac > 0 ? frac + 1 : 0);
	int64_t offset = 0;
	char local[SY_STORE_TIME_LEN + 1];
	int64_t usec = 0;
	if (ok) {
		ok = utc_offset(pg + zone, n - zone, &offset);
		memcpy(local, pg, 19);
		local[10] = 'T';
		local[19] = '.';
		memcpy(local + 20, "000000", 6);
		memcpy(local + 20, pg + 20, frac);
		local[26] = 'Z';
		local[27] = '\0';
	}
	/* The text is local time at that offset, whatever the session's TimeZone: UTC is local
	 * minus offset, and must still have a four-digit year. */
	ok = ok && sy_server_time_parse(local, SY_STORE_TIME_LEN, &usec);
	if (ok) {
		usec -= offset * 1000000;
		ok = usec >= SY_SERVER_TIME_MIN_USEC && usec <= SY_SERVER_TIME_MAX_USEC;
	}
	if (!ok) {
		snprintf(out, SY_STORE_TIME_LEN + 1, "%s", pg);
		return n == 0;
	}
	sy_server_time_format(usec, out);
	return true;
}

char *sy_store_quote_ident(PGconn *c, const char *name, sy_error *err)
{
	char *q = PQescapeIdentifier(c, name, strlen(name));
	if (!q) {
		sy_store_fail(err, SY_STORE_INVALID, "cannot quote identifier \"%s\"", name);
		return NULL;
	}
	char *out = sy_strndup(q, strlen(q));
	PQfreemem(q);
	if (!out)
		sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	return out;
}

char *sy_store_quote_relation(PGconn *c, const char *relation, sy_error *err)
{
	char *schema = NULL, *name = NULL, *out = NULL;
	const char *dot = strchr(relation, '.');
	if (dot) {
		char *part = sy_strndup(relation, (size_t)(dot - relation));
		if (!part) {
			sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
			goto fail;
		}
		schema = sy_store_quote_ident(c, part, err);
		sy_free(part);
		if (!schema)
			goto fail;
	}
	name = sy_store_quote_ident(c, dot ? dot + 1 : relation, err);
	if (!name)
		goto fail;
	size_t n = (schema ? strlen(schema) + 1 : 0) + strlen(name) + 1;
	out = sy_malloc(n);
	if (!out) {
		sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
		goto fail;
	}
	snprintf(out, n, "%s%s%s", schema ? schema : "", schema ? "." : "", name);
fail:
	sy_free(schema);
	sy_free(name);
	return out;
}

void sy_store_array_elem(sy_buf *col, bool first, const char *s)
{
	if (!first)
		sy_buf_putc(col, ',');
	if (!s) {
		sy_buf_puts(col, "NULL");
		return;
	}
	sy_buf_putc(col, '"');
	for (const char *p = s; *p;) {
		size_t run = strcspn(p, "\\\"");
		sy_buf_append(col, p, run);
		p += run;
		if (*p) {
			sy_buf_putc(col, '\\');
			sy_buf_putc(col, *p++);
		}
	}
	sy_buf_putc(col, '"');
}

sy_store_status sy_store_check_client(const char *user, const char *client_id, sy_error *err)
{
	if (!user || !user[0])
		return sy_store_fail(err, SY_STORE_INVALID, "the user must not be empty");
	if (!sy_uuid_valid(client_id, strlen(client_id)))
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "client id \"%.40s\" is not a lowercase non-nil UUID",
		                     client_id);
	return SY_STORE_OK;
}

sy_store_status sy_store_transaction(PGconn *c, sy_store_txn_fn fn, void *arg, sy_error *err)
{
	sy_store_status st = sy_store_command(c, "BEGIN", "begin", err);
	if (st == SY_STORE_OK)
		st = fn(c, arg, err);
	if (st == SY_STORE_OK)
		st = sy_store_command(c, "COMMIT", "commit", err);
	if (st != SY_STORE_OK)
		sy_store_rollback(c);
	return st;
}
