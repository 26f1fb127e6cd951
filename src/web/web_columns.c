/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * web_columns.c: one SQLite result column as JSON. The browser API's answers that carry rows
 * use it: query() in web_api.c and records() in web_inspect.c.
 *
 * Layer: base of src/web (doc/hacking.md).
 * Notes: Integers and reals come as SQLite has them. Text is a JSON string and NULL is null.
 * A blob is in hex.
 */
#include "config.h"

#include <sqlite3.h>

#include "client_json.h"
#include "synchro/buf.h"
#include "web.h"

void sy_web_put_column(sy_buf *b, sqlite3_stmt *st, int i, bool blob_tagged)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		sy_buf_printf(b, "%lld", (long long)sqlite3_column_int64(st, i));
		break;
	case SQLITE_FLOAT: sy_buf_printf(b, "%.17g", sqlite3_column_double(st, i)); break;
	case SQLITE_TEXT: sy_cl_json_str(b, (const char *)sqlite3_column_text(st, i)); break;
	case SQLITE_BLOB: {
		const unsigned char *p = sqlite3_column_blob(st, i);
		int n = sqlite3_column_bytes(st, i);
		sy_buf_puts(b, blob_tagged ? "{\"hex\":\"" : "\"");
		for (int k = 0; k < n; k++)
			sy_buf_printf(b, "%02x", p[k]);
		sy_buf_puts(b, blob_tagged ? "\"}" : "\"");
		break;
	}
	default: sy_buf_puts(b, "null");
	}
}
