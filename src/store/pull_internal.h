/* SPDX-License-Identifier: BSD-2-Clause */
/* The read side's per-process state (src/store/pull.c), shared with the files that build on
 * it: pull_broken.c (tables whose mapping broke between publishes). Not an API. */
#ifndef SY_STORE_PULL_INTERNAL_H
#define SY_STORE_PULL_INTERNAL_H

#include "store/prepared.h"
#include "store/pull.h"
#include "synchro/buf.h"
#include "synchro/manifest.h"

/* A synced table of the current manifest, with its quoted names and rebuild statements. */
typedef struct {
	const sy_table *t;
	bool owner_scope; /* policy.read owner: only rows whose owner field is the caller */
	bool broken;      /* its mapping no longer matches the relation (pull_broken.h) */
	char *lit;        /* table_id as an SQL literal */
	char *rel;
	char *pk;
	char *owner; /* quoted owner column, or NULL */
	char **cols; /* per field */
	char first_name[48], after_name[48];
	char *first_sql, *after_sql;
	sy_store_stmt first, after;
} sy_store_ptab;

struct sy_store_pull {
	long long version; /* 0: nothing cached */
	char hash[SY_HASH_HEX_LEN + 1];
	sy_manifest *m;
	sy_store_ptab *tabs;             /* per table of m, in m's order */
	size_t *order;                   /* indexes into tabs sorted by table_id bytes */
	size_t maxf;                     /* most fields of a table */
	char *all_tables, *owner_tables; /* text[] literals for the page statement */
	char page_name[48];
	char *page_sql;
	sy_store_stmt page;
	unsigned page_gen;   /* page statements built for this version (unique names) */
	char *broken_tables; /* text[] literal of the broken tables' table_ids */
	size_t nbroken;
	long long probe_at_ms; /* when the broken tables are probed again */
};

/* b's bytes as a new string (b is emptied); NULL when b failed or memory ran out. */
char *sy_store_pull_steal(sy_buf *b);
/* Appends ", <column j of x as text>" over alias r (the statements' common row shape). */
void sy_store_pull_put_value(sy_buf *b, const sy_store_ptab *x, size_t j);
/* Appends one double-quoted text[] element (first: no comma before it). */
void sy_store_pull_array_elem(sy_buf *b, bool first, const char *s);
/* (Re)builds the page statement of p's manifest without its broken tables; false with
 * *err set when out of memory. */
SY_MUST_CHECK bool sy_store_pull_build_page_sql(sy_store_pull *p, sy_error *err);

/*
 * Probes the tables of p (only those marked broken when only_broken) with a statement that
 * reads every mapped column and no row; marks each broken or not and, when that changed
 * anything, builds the page statement again (*changed). Probes again are due
 * SY_STORE_PROBE_INTERVAL_MS later.
 */
SY_MUST_CHECK sy_store_status sy_store_pull_probe_tables(sy_store_pull *p, PGconn *c,
                                                         bool only_broken, bool *changed,
                                                         sy_error *err);

#endif
