/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * migrations.h: the database migrations embedded in synchroctl.
 *
 * Notes: sql/embed.sh makes them at build time from sql/migrations/NNNN_name.sql, into
 * src/store/sql_migrations.c in the build tree.
 */
#ifndef SY_STORE_MIGRATIONS_H
#define SY_STORE_MIGRATIONS_H

#include <stddef.h>

/* One migration: version is the NNNN prefix of the file name, name the rest without ".sql"
 * (e.g. {1, "init", "..."}), sql the exact file contents. Applied in one transaction each;
 * the runner records {version, name} in synchro.migrations, which 0001 creates. */
typedef struct {
	int version;
	const char *name;
	const char *sql;
} sy_sql_migration;

/* Sorted by strictly increasing version; versions start at 1 with no gaps. */
extern const sy_sql_migration sy_sql_migrations[];
extern const size_t sy_sql_migration_count;

#endif
