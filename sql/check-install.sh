#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Fails when sql/install.sql is not the concatenation of sql/migrations/*.sql that
# sql/embed.sh --install makes (fix: make update-install-sql).
set -eu
src=${SYNCHRO_SRCDIR:-.}
# Every migration file must be listed in sql/local.mk, or synchroctl would not embed it.
for f in "$src"/sql/migrations/[0-9][0-9][0-9][0-9]_*.sql; do
	b=$(basename "$f")
	if ! grep -q "sql/migrations/$b" "$src/sql/local.mk"; then
		echo "sql/migrations/$b is missing from SQL_MIGRATIONS in sql/local.mk" >&2
		exit 1
	fi
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM HUP
sh "$src/sql/embed.sh" --install "$src"/sql/migrations/[0-9][0-9][0-9][0-9]_*.sql >"$out"
if ! cmp -s "$out" "$src/sql/install.sql"; then
	echo "sql/install.sql is stale; run make update-install-sql. Difference:" >&2
	diff -u "$src/sql/install.sql" "$out" >&2 || true
	exit 1
fi
echo "sql/install.sql matches sql/migrations"
