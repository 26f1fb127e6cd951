/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * matrix.c: the operation and row-state matrix, the order of the terminal rules, and the
 * outcome vocabulary.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#operation-and-row-state-matrix (the matrix),
 * doc/contract.md#terminal-rules (their order).
 */
#include "config.h"

#include <string.h>

#include "synchro/matrix.h"

static const char *const status_names[SY_STATUS__COUNT] = {
        [SY_STATUS_APPLIED] = "applied",
        [SY_STATUS_CONFLICT] = "conflict",
        [SY_STATUS_REJECTED_TERMINAL] = "rejected_terminal",
};

static const char *const code_names[SY_CODE__COUNT] = {
        [SY_CODE_NONE] = NULL,
        [SY_CODE_VERSION_CONFLICT] = "version_conflict",
        [SY_CODE_ROW_ALREADY_EXISTS] = "row_already_exists",
        [SY_CODE_ROW_DELETED] = "row_deleted",
        [SY_CODE_ROW_NOT_FOUND] = "row_not_found",
        [SY_CODE_POLICY_REJECTED] = "policy_rejected",
        [SY_CODE_VALIDATION_FAILED] = "validation_failed",
        [SY_CODE_TABLE_NOT_SYNCED] = "table_not_synced",
        [SY_CODE_SCHEMA_INCOMPATIBLE] = "schema_incompatible",
        [SY_CODE_ATOMIC_BATCH_REJECTED] = "atomic_batch_rejected",
};

static bool name_is(const char *name, const char *s, size_t len)
{
	return name != NULL && strlen(name) == len && memcmp(name, s, len) == 0;
}

const char *sy_status_name(sy_status s)
{
	return (unsigned)s < SY_STATUS__COUNT ? status_names[s] : NULL;
}

bool sy_status_from_name(const char *s, size_t len, sy_status *out)
{
	for (unsigned i = 0; i < SY_STATUS__COUNT; i++) {
		if (name_is(status_names[i], s, len)) {
			*out = (sy_status)i;
			return true;
		}
	}
	return false;
}

const char *sy_code_name(sy_code c)
{
	return (unsigned)c < SY_CODE__COUNT ? code_names[c] : NULL;
}

bool sy_code_from_name(const char *s, size_t len, sy_code *out)
{
	for (unsigned i = 0; i < SY_CODE__COUNT; i++) {
		if (name_is(code_names[i], s, len)) {
			*out = (sy_code)i;
			return true;
		}
	}
	return false;
}

bool sy_code_is_conflict(sy_code c)
{
	return c == SY_CODE_VERSION_CONFLICT || c == SY_CODE_ROW_ALREADY_EXISTS ||
	       c == SY_CODE_ROW_DELETED || c == SY_CODE_ROW_NOT_FOUND;
}

bool sy_code_is_terminal(sy_code c)
{
	return c == SY_CODE_POLICY_REJECTED || c == SY_CODE_VALIDATION_FAILED ||
	       c == SY_CODE_TABLE_NOT_SYNCED || c == SY_CODE_SCHEMA_INCOMPATIBLE ||
	       c == SY_CODE_ATOMIC_BATCH_REJECTED;
}

sy_status sy_code_status(sy_code c)
{
	if (c == SY_CODE_NONE)
		return SY_STATUS_APPLIED;
	return sy_code_is_conflict(c) ? SY_STATUS_CONFLICT : SY_STATUS_REJECTED_TERMINAL;
}

static sy_matrix_result result(sy_code code)
{
	sy_matrix_result r = {sy_code_status(code), code};
	return r;
}

sy_matrix_result sy_matrix_classify(sy_op op, sy_row_state state, bool base_equals_current)
{
	/* doc/contract.md#operation-and-row-state-matrix: deleted conflicts for every operation;
	 * there is no resurrection. */
	if (state == SY_ROW_DELETED)
		return result(SY_CODE_ROW_DELETED);
	switch (op) {
	case SY_OP_INSERT:
		/* insert carries no base, so any existing identity conflicts */
		if (state == SY_ROW_ABSENT)
			return result(SY_CODE_NONE);
		if (state == SY_ROW_LIVE)
			return result(SY_CODE_ROW_ALREADY_EXISTS);
		break;
	case SY_OP_UPDATE:
	case SY_OP_DELETE:
		/* no implicit insert for update, no state-idempotent delete */
		if (state == SY_ROW_ABSENT)
			return result(SY_CODE_ROW_NOT_FOUND);
		if (state == SY_ROW_LIVE)
			return result(base_equals_current ? SY_CODE_NONE
			                                  : SY_CODE_VERSION_CONFLICT);
		break;
	}
	/* An invalid enumerator is a caller bug; it must never turn into a write. */
	return result(SY_CODE_VALIDATION_FAILED);
}

sy_code sy_matrix_terminal(unsigned rules)
{
	/* doc/contract.md#terminal-rules: this order keeps the outcome independent of evaluation
	 * order. */
	if (rules & SY_RULE_SCHEMA_INCOMPATIBLE)
		return SY_CODE_SCHEMA_INCOMPATIBLE;
	if (rules & SY_RULE_TABLE_NOT_SYNCED)
		return SY_CODE_TABLE_NOT_SYNCED;
	if (rules & SY_RULE_POLICY_REJECTED)
		return SY_CODE_POLICY_REJECTED;
	if (rules & SY_RULE_VALIDATION_FAILED)
		return SY_CODE_VALIDATION_FAILED;
	return SY_CODE_NONE;
}

sy_matrix_result sy_matrix_evaluate(unsigned rules, sy_op op, sy_row_state state,
                                    bool base_equals_current)
{
	sy_code terminal = sy_matrix_terminal(rules);
	if (terminal != SY_CODE_NONE)
		return result(terminal);
	return sy_matrix_classify(op, state, base_equals_current);
}
