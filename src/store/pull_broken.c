/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_broken.c: pull's broken tables. It probes a synced table's mapping. It builds the
 * page statement without the tables that fail the probe.
 *
 * Layer: middle of src/store (doc/hacking.md).
 */
#include "config.h"

#include <string.h>

#include "common/clock.h"
#include "store/conn.h"
#include "store/pull_broken.h"
#include "store/pull_internal.h"
#include "synchro/alloc.h"
#include "synchro/sqlstate.h"

sy_store_status sy_store_probe(PGconn *c, const char *sql, bool *broken, sy_error *err)
{
	char sqlstate[6] = "";
	sy_store_status st;
	*broken = false;
	PGresult *r = sy_store_exec(c, sql, 0, NULL, PGRES_TUPLES_OK, "probe a synced table",
	                            sqlstate, &st, err);
	if (r) {
		PQclear(r);
		return SY_STORE_OK;
	}
	if (st == SY_STORE_FAILED && sy_sqlstate_is_mapping(sqlstate)) {
		*broken = true;
		return SY_STORE_OK;
	}
	return st;
}

/* The text[] literal of the broken tables and a page statement without them. */
static sy_store_status broken_rebuild(sy_store_pull *p, sy_error *err)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_putc(&b, '{');
	p->nbroken = 0;
	for (size_t i = 0; i < p->m->table_count; i++)
		if (p->tabs[i].broken) {
			sy_store_array_elem(&b, p->nbroken == 0, p->tabs[i].t->table_id);
			p->nbroken++;
		}
	sy_buf_putc(&b, '}');
	char *lit = sy_store_pull_steal(&b);
	if (lit == NULL)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	sy_free(p->broken_tables);
	p->broken_tables = lit;
	if (!sy_store_pull_build_page_sql(p, err))
		return SY_STORE_NOMEM;
	return SY_STORE_OK;
}

/*
 * Probes the tables (only those marked broken when only_broken) with a statement that reads
 * every mapped column (and a members table's path) and no row; marks each broken or not and, when
 * that changed anything, builds the page statement again. *changed tells whether it did.
 */
sy_store_status sy_store_pull_probe_tables(sy_store_pull *p, PGconn *c, bool only_broken,
                                           bool *changed, sy_error *err)
{
	*changed = false;
	p->probe_at_ms = sy_clock_ms() + SY_STORE_PROBE_INTERVAL_MS;
	for (size_t i = 0; i < p->m->table_count; i++) {
		sy_store_ptab *x = &p->tabs[i];
		if (only_broken && !x->broken)
			continue;
		sy_buf b = SY_BUF_INIT;
		sy_buf_printf(&b, "SELECT r.%s::text", x->pk);
		for (size_t j = 0; j < x->t->field_count; j++)
			sy_store_pull_put_value(&b, x, j);
		sy_buf_printf(&b, " FROM %s r", x->rel);
		if (x->members_scope) {
			/* and the relations of its membership path */
			sy_buf_puts(&b, " WHERE ");
			sy_store_pull_put_reads(&b, x, "''::text");
		}
		sy_buf_puts(&b, " LIMIT 0");
		char *sql = sy_store_pull_steal(&b);
		if (sql == NULL)
			return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
		bool broken;
		sy_store_status st = sy_store_probe(c, sql, &broken, err);
		sy_free(sql);
		if (st != SY_STORE_OK)
			return st;
		if (broken != x->broken) {
			x->broken = broken;
			*changed = true;
		}
	}
	return *changed ? broken_rebuild(p, err) : SY_STORE_OK;
}
