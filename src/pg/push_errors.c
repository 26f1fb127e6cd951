/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_errors.c: how every file of the push reports.
 *
 * Layer: base of src/pg (doc/hacking.md).
 * Notes: It gives a request-level error answer. It reports an operational failure of the
 * whole request: an ERROR, after which the entry point rolls everything back and answers
 * 503. It reports a failed allocation. It copies values into the outcome arena.
 */
#include "postgres.h"

#include "push_module.h"
#include "synchro/sqlstate.h"

void sp_answer_error(sp_push *x, sy_errcode code, const char *fmt, ...)
{
	va_list ap;
	x->error = code;
	x->status = sy_errcode_http_status(code);
	x->replay = false;
	x->body = NULL;
	x->body_len = 0;
	x->has_counts = false;
	va_start(ap, fmt);
	vsnprintf(x->message, sizeof x->message, fmt, ap);
	va_end(ap);
}

void sp_fail(const char *step)
{
	ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("synchro_push: %s", step)));
}

void sp_nomem(const char *step)
{
	ereport(ERROR,
	        (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("synchro_push: %s: out of memory", step)));
}

char *sp_arena_dup(sp_push *x, const char *s, size_t len)
{
	char *d = sy_json_doc_alloc(x->doc, len + 1);
	if (d == NULL)
		sp_nomem("outcome");
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}
