/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_scope.c: the read scope of a row, as the push judges its policy.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/protocol.md#membership-scopes-in-a-push (the scope in a push),
 * doc/contract.md#policies (a row the caller does not read is a missing row).
 * Notes: The caller reads a row it owns. Under read "members", it also reads a row whose
 * scope key has a live membership row naming it. That membership row is locked FOR KEY
 * SHARE; with two hops, the hop-1 row is locked too. So a removal committed before the
 * check refuses the write. A removal after it waits for the push's commit. A row the caller
 * does not read is answered as a missing row. An update or delete gets row_not_found. An
 * insert over its key gets policy_rejected. A write that puts a row into a scope key needs
 * the caller's membership of that key, owner or not. Otherwise it gets policy_rejected.
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "push_module.h"

static const sp_row absent_row = {.state = SY_ROW_ABSENT};

static bool same_user(const sp_push *x, const char *owner)
{
	return owner != NULL && strcmp(owner, x->user) == 0;
}

/* A live membership row of the scope key that hop-1 value scope (PostgreSQL text) reaches
 * names the caller; the rows read are locked FOR KEY SHARE. */
static bool member(const sp_push *x, const sp_table *ti, const char *scope)
{
	static const Oid types[] = {TEXTOID, TEXTOID};
	if (scope == NULL)
		return false;
	Datum v[] = {sp_text_datum(scope, strlen(scope)), x->user_d};
	sp_run(sp_plan(ti->member_sql, 2, types), v, NULL, SPI_OK_SELECT);
	bool found = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/* Whether the caller reads a row of ti whose owner field and hop-1 value are these (NULL:
 * null, or no such field). */
static bool reads(const sp_push *x, const sp_table *ti, const char *owner, const char *scope)
{
	switch (ti->t->read) {
	case SY_POLICY_OWNER: return same_user(x, owner);
	case SY_POLICY_MEMBERS: return same_user(x, owner) || member(x, ti, scope);
	default: return true;
	}
}

static const char *row_value(const sp_row *row, int field)
{
	return field >= 0 ? row->vals[field] : NULL;
}

/* The value mutation k writes into field f; false when it does not write f. */
static bool written(const sp_push *x, size_t k, const sy_field *f, const char **val)
{
	const sp_pre *pr = &x->pre[k];
	for (size_t i = 0; i < x->req->mutations[k].column_count; i++) {
		if (pr->fields[i] == f) {
			*val = pr->vals[i];
			return true;
		}
	}
	return false;
}

static bool same_value(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/*
 * Whether the caller may leave the row where mutation k puts it (doc/protocol.md
 * "Membership scopes in a push"). A write that puts the row into a scope key (an insert with
 * a non-null hop-1 value, an update that changes it to a non-null one) needs the caller's
 * membership of that key, owner or not: the key's members read the row. A row in no scope is
 * the owner's: an insert's owner is the caller (set by the server), an update keeps the
 * row's. An insert that does not name the hop-1 column reaches no scope the push can know.
 * An update that keeps the hop-1 value keeps owner and scope as they were: the caller read
 * the row before, or meets a missing row (row_not_found); one that moves a row the caller
 * cannot see is judged on the new scope alone, as a missing row's move would be.
 */
static bool may_place(const sp_push *x, size_t k, const sp_row *row)
{
	const sp_table *ti = x->pre[k].ti;
	bool insert = x->req->mutations[k].op == SY_OP_INSERT;
	const char *scope = NULL;
	bool named = written(x, k, ti->t->members->field, &scope);
	if (!insert && (!named || same_value(scope, row->has_row ? row_value(row, ti->scope) : NULL)))
		return true;
	if (scope != NULL)
		return member(x, ti, scope);
	if (insert)
		return ti->owner >= 0;
	return row->has_row && same_user(x, row_value(row, ti->owner));
}

void sp_scope_judge(sp_push *x, size_t k, const sp_row **row, unsigned *rules)
{
	const sp_pre *pr = &x->pre[k];
	const sp_table *ti = pr->ti;
	const sy_table *t = ti->t;
	sy_op op = x->req->mutations[k].op;
	const sp_row *r = *row;

	if (r->has_row && !reads(x, ti, row_value(r, ti->owner), row_value(r, ti->scope))) {
		/* Nothing of a row outside the caller's scope shows: an update or delete meets a
		 * missing row; an insert cannot take the key. */
		if (op == SY_OP_INSERT) {
			*rules |= SY_RULE_POLICY_REJECTED;
			return;
		}
		*row = r = &absent_row;
	}
	if (t->write == SY_POLICY_OWNER && r->has_row && !same_user(x, row_value(r, ti->owner)))
		*rules |= SY_RULE_POLICY_REJECTED;
	/* A mutation validation refuses has no values to judge (a missing row's alike). Under
	 * write "owner" too, the owner's row goes into a scope key only through membership. */
	if (t->read == SY_POLICY_MEMBERS && t->write != SY_POLICY_NONE && op != SY_OP_DELETE &&
	    !(*rules & (SY_RULE_POLICY_REJECTED | SY_RULE_VALIDATION_FAILED)) &&
	    !may_place(x, k, r))
		*rules |= SY_RULE_POLICY_REJECTED;
}
