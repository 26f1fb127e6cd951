/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest_policy.c: a manifest table's policy. It says who reads and writes the table's
 * rows: owner, all, none or members.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#policies (the policies),
 * doc/protocol.md#membership-scopes (the membership path).
 * Notes: The policy also names the owner field. For members, it names the path to the
 * relation that lists each scope's users.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "synchro/alloc.h"

#include "manifest_common.h"

/* Room for "tables[<size_t>].policy", then ".members", then ".hops[<size_t>]". */
#define POLICY_PATH_CAP  64
#define MEMBERS_PATH_CAP (POLICY_PATH_CAP + 8)
#define HOP_PATH_CAP     (MEMBERS_PATH_CAP + 28)

static bool parse_policy_value(const sy_json *v, const char *path, const char *name, bool is_write,
                               sy_policy *out, sy_error *err)
{
	char shown[SY_MF_SHOW_CAP];
	const char *s;
	size_t len;
	if (!sy_mf_get_string(v, path, name, &s, &len, err))
		return false;
	if (sy_mf_bytes_equal(s, len, "owner", 5))
		*out = SY_POLICY_OWNER;
	else if (sy_mf_bytes_equal(s, len, "all", 3))
		*out = SY_POLICY_ALL;
	else if (is_write && sy_mf_bytes_equal(s, len, "none", 4))
		*out = SY_POLICY_NONE;
	else if (sy_mf_bytes_equal(s, len, "members", 7))
		*out = SY_POLICY_MEMBERS;
	else
		return sy_mf_fail_at(
		        err, path, name, "unknown policy \"%s\" (%s)", sy_mf_show(shown, s, len),
		        is_write ? "owner, all, none, members" : "owner, all, members");
	return true;
}

/* A non-pk field of t by field_id or by column. */
static const sy_field *field_by(const sy_table *t, bool by_column, const char *s, size_t len)
{
	for (size_t i = 0; i < t->field_count; i++) {
		const char *name = by_column ? t->fields[i].column : t->fields[i].field_id;
		if (sy_mf_bytes_equal(name, strlen(name), s, len))
			return &t->fields[i];
	}
	return NULL;
}

static bool parse_owner_field(const sy_json *v, const char *path, sy_table *t, sy_error *err)
{
	char shown[SY_MF_SHOW_CAP];
	const char *owner;
	size_t owner_len;
	bool needs_owner = t->read == SY_POLICY_OWNER || t->write == SY_POLICY_OWNER;
	/* Under read "members" an owner field is optional: the owner reads the row too. */
	bool may_own = needs_owner || t->read == SY_POLICY_MEMBERS;

	if (sy_json_get(v, "owner_field") == NULL) {
		if (needs_owner)
			return sy_mf_fail_at(err, path, "owner_field",
			                     "required when read or write is \"owner\"");
		return true;
	}
	if (!may_own)
		return sy_mf_fail_at(err, path, "owner_field",
		                     "only allowed when read or write is \"owner\", or read is "
		                     "\"members\"");
	if (!sy_mf_get_string(v, path, "owner_field", &owner, &owner_len, err))
		return false;
	/* The owner is server-set from the caller's identity, never client-chosen like a pk. */
	if (sy_mf_bytes_equal(owner, owner_len, t->pk.field_id, strlen(t->pk.field_id)))
		return sy_mf_fail_at(err, path, "owner_field", "\"%s\" is the primary key",
		                     sy_mf_show(shown, owner, owner_len));
	const sy_field *f = field_by(t, false, owner, owner_len);
	if (f == NULL)
		return sy_mf_fail_at(err, path, "owner_field", "no field \"%s\"",
		                     sy_mf_show(shown, owner, owner_len));
	if (f->type != SY_TYPE_TEXT)
		return sy_mf_fail_at(err, path, "owner_field", "field \"%s\" must have type text",
		                     sy_mf_show(shown, owner, owner_len));
	t->owner_field = f->field_id;
	return true;
}

/* A relation member: "name" or "schema.name", not yet on the path (that would be a cycle). */
static bool get_path_relation(const sy_json *v, const char *path, const sy_table *t,
                              const sy_members *m, size_t hops_before, const char **s, size_t *len,
                              sy_error *err)
{
	char shown[SY_MF_SHOW_CAP];
	if (!sy_mf_get_string(v, path, "relation", s, len, err))
		return false;
	if (!sy_mf_relation_valid(*s, *len))
		return sy_mf_fail_at(err, path, "relation",
		                     "invalid relation \"%s\" (name or schema.name, lowercase SQL "
		                     "identifiers)",
		                     sy_mf_show(shown, *s, *len));
	bool seen = sy_mf_bytes_equal(*s, *len, t->relation, strlen(t->relation));
	for (size_t i = 0; i < hops_before && !seen; i++)
		seen = sy_mf_bytes_equal(*s, *len, m->hops[i].relation,
		                         strlen(m->hops[i].relation));
	if (seen)
		return sy_mf_fail_at(err, path, "relation",
		                     "cycle: relation \"%s\" is already on the membership path",
		                     sy_mf_show(shown, *s, *len));
	return true;
}

static bool parse_hop(const sy_json *v, const char *path, const sy_table *t, sy_members *m,
                      size_t i, sy_error *err)
{
	static const char *const names[] = {"column", "relation", "key"};
	char shown[SY_MF_SHOW_CAP];
	const char *column, *relation, *key;
	size_t column_len, relation_len, key_len;
	sy_scope_hop *h = &m->hops[i];

	if (!sy_mf_check_members(v, path, names, NULL, 3, err) ||
	    !sy_mf_get_sql_name(v, path, "column", &column, &column_len, err) ||
	    !get_path_relation(v, path, t, m, i, &relation, &relation_len, err) ||
	    !sy_mf_get_sql_name(v, path, "key", &key, &key_len, err))
		return false;
	if (i == 0) {
		/* The scope key's first step is a value the row carries, as the manifest maps it.
		 */
		if (sy_mf_bytes_equal(column, column_len, t->pk.column, strlen(t->pk.column)))
			return sy_mf_fail_at(err, path, "column",
			                     "\"%s\" is the primary key column",
			                     sy_mf_show(shown, column, column_len));
		const sy_field *f = field_by(t, true, column, column_len);
		if (f == NULL)
			return sy_mf_fail_at(err, path, "column",
			                     "no field of the table has column \"%s\"",
			                     sy_mf_show(shown, column, column_len));
		if (!sy_mf_key_type(f->type))
			return sy_mf_fail_at(err, path, "column",
			                     "field \"%s\" has type %s (uuid, int64, int32, text)",
			                     sy_mf_show(shown, f->field_id, strlen(f->field_id)),
			                     sy_type_name(f->type));
		m->field = f;
	}
	h->column = sy_strndup(column, column_len);
	h->relation = sy_strndup(relation, relation_len);
	h->key = sy_strndup(key, key_len);
	if (h->column == NULL || h->relation == NULL || h->key == NULL)
		return sy_mf_nomem(err);
	return true;
}

static bool parse_members(const sy_json *v, const char *policy_path, sy_table *t, sy_error *err)
{
	static const char *const names[] = {"hops", "relation", "match", "user"};
	char path[MEMBERS_PATH_CAP], hop_path[HOP_PATH_CAP];
	const char *relation, *match, *user;
	size_t relation_len, match_len, user_len;

	snprintf(path, sizeof path, "%s.members", policy_path);
	if (!sy_mf_check_members(v, path, names, NULL, 4, err))
		return false;
	const sy_json *hops = sy_json_get(v, "hops");
	if (hops->type != SY_JSON_ARRAY)
		return sy_mf_fail_at(err, path, "hops", "expected array, got %s",
		                     sy_json_type_name(hops->type));
	size_t n = hops->u.array.count;
	if (n == 0)
		return sy_mf_fail_at(err, path, "hops", "at least one hop");
	if (n > 2) {
		snprintf(hop_path, sizeof hop_path, "%s.hops[2]", path);
		return sy_mf_fail_at(err, hop_path, NULL, "at most two hops");
	}
	sy_members *m = sy_calloc(1, sizeof *m);
	if (m == NULL)
		return sy_mf_nomem(err);
	/* Owned by the table from here, so the table's release frees a partly filled path. */
	t->members = m;
	for (size_t i = 0; i < n; i++) {
		snprintf(hop_path, sizeof hop_path, "%s.hops[%zu]", path, i);
		m->hop_count = i + 1;
		if (!parse_hop(hops->u.array.items[i], hop_path, t, m, i, err))
			return false;
	}
	if (!get_path_relation(v, path, t, m, n, &relation, &relation_len, err) ||
	    !sy_mf_get_sql_name(v, path, "match", &match, &match_len, err) ||
	    !sy_mf_get_sql_name(v, path, "user", &user, &user_len, err))
		return false;
	m->relation = sy_strndup(relation, relation_len);
	m->match = sy_strndup(match, match_len);
	m->user = sy_strndup(user, user_len);
	if (m->relation == NULL || m->match == NULL || m->user == NULL)
		return sy_mf_nomem(err);
	return true;
}

bool sy_mf_parse_policy(const sy_json *v, const char *table_path, sy_table *t, sy_error *err)
{
	static const char *const names[] = {"read", "write", "owner_field", "members"};
	static const bool optional[] = {false, false, true, true};
	char path[POLICY_PATH_CAP];

	snprintf(path, sizeof path, "%s.policy", table_path);
	if (!sy_mf_check_members(v, path, names, optional, 4, err) ||
	    !parse_policy_value(v, path, "read", false, &t->read, err) ||
	    !parse_policy_value(v, path, "write", true, &t->write, err))
		return false;
	/* A writer must read the row before and after its write: members write what they read. */
	if (t->write == SY_POLICY_MEMBERS && t->read != SY_POLICY_MEMBERS)
		return sy_mf_fail_at(err, path, "write", "\"members\" needs read \"members\"");
	/* Anyone could then write a row into a scope they do not read. */
	if (t->read == SY_POLICY_MEMBERS && t->write == SY_POLICY_ALL)
		return sy_mf_fail_at(err, path, "write",
		                     "\"all\" is refused when read is \"members\" (members, owner, "
		                     "none)");
	if (!parse_owner_field(v, path, t, err))
		return false;
	bool uses_members = t->read == SY_POLICY_MEMBERS || t->write == SY_POLICY_MEMBERS;
	const sy_json *members = sy_json_get(v, "members");
	if (members == NULL) {
		if (uses_members)
			return sy_mf_fail_at(err, path, "members",
			                     "required when read or write is \"members\"");
		return true;
	}
	if (!uses_members)
		return sy_mf_fail_at(err, path, "members",
		                     "only allowed when read or write is \"members\"");
	return parse_members(members, path, t, err);
}

void sy_mf_members_free(sy_members *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->hop_count; i++) {
		sy_free(m->hops[i].column);
		sy_free(m->hops[i].relation);
		sy_free(m->hops[i].key);
	}
	sy_free(m->relation);
	sy_free(m->match);
	sy_free(m->user);
	sy_free(m);
}
