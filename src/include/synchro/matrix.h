/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * matrix.h: the pure decision logic of push: outcome statuses and codes, their wire names,
 * the order of the terminal rules and the operation and row-state matrix.
 *
 * Rules: doc/contract.md#operation-and-row-state-matrix (the matrix),
 * doc/contract.md#outcome-partition (the statuses and codes).
 */
#ifndef SYNCHRO_MATRIX_H
#define SYNCHRO_MATRIX_H

#include "synchro/common.h"
#include "synchro/push.h"

/* The authoritative state of one typed row identity. */
typedef enum {
	SY_ROW_ABSENT,  /* no live row and no retained deletion fence */
	SY_ROW_LIVE,    /* a live row with a current opaque version */
	SY_ROW_DELETED, /* a canonical tombstone or deletion fence with a current version */
	SY_ROW__COUNT
} sy_row_state;

/* The per-mutation status (wire "status"). */
typedef enum {
	SY_STATUS_APPLIED,
	SY_STATUS_CONFLICT,
	SY_STATUS_REJECTED_TERMINAL,
	SY_STATUS__COUNT
} sy_status;

/* The per-mutation code (wire "code"); SY_CODE_NONE for applied outcomes. */
typedef enum {
	SY_CODE_NONE,
	/* conflicts */
	SY_CODE_VERSION_CONFLICT,
	SY_CODE_ROW_ALREADY_EXISTS,
	SY_CODE_ROW_DELETED,
	SY_CODE_ROW_NOT_FOUND,
	/* terminal rejections */
	SY_CODE_POLICY_REJECTED,
	SY_CODE_VALIDATION_FAILED,
	SY_CODE_TABLE_NOT_SYNCED,
	SY_CODE_SCHEMA_INCOMPATIBLE,
	SY_CODE_ATOMIC_BATCH_REJECTED,
	SY_CODE__COUNT
} sy_code;

/* "applied", "conflict", "rejected_terminal" (borrowed, static); NULL when out of range. */
const char *sy_status_name(sy_status s);
/* Looks the wire name s[0..len) up; false when it names no status. */
SY_MUST_CHECK bool sy_status_from_name(const char *s, size_t len, sy_status *out);

/* "version_conflict", ... (borrowed, static); NULL for SY_CODE_NONE (it has no wire
 * form) and out of range. */
const char *sy_code_name(sy_code c);
/* Looks the wire name s[0..len) up; false when it names no code ("none" names none). */
SY_MUST_CHECK bool sy_code_from_name(const char *s, size_t len, sy_code *out);

/* The four conflict codes. */
bool sy_code_is_conflict(sy_code c);
/* The five terminal codes, atomic_batch_rejected included. */
bool sy_code_is_terminal(sy_code c);
/* The status a code belongs to: none -> applied, conflicts -> conflict, else rejected_terminal. */
sy_status sy_code_status(sy_code c);

typedef struct {
	sy_status status;
	sy_code code;
} sy_matrix_result;

/*
 * The matrix of doc/contract.md#operation-and-row-state-matrix, evaluated only after request-shape,
 * schema, policy and value validation passed. base_equals_current (byte equality of the mutation's
 * base_version with the row's current version) is read only for update and
 * delete of a live row. An out-of-range op or state never yields applied.
 */
sy_matrix_result sy_matrix_classify(sy_op op, sy_row_state state, bool base_equals_current);

/* The terminal semantic rules that may apply to one mutation (a bit set). */
enum {
	SY_RULE_SCHEMA_INCOMPATIBLE = 1u << 0,
	SY_RULE_TABLE_NOT_SYNCED = 1u << 1,
	SY_RULE_POLICY_REJECTED = 1u << 2,
	SY_RULE_VALIDATION_FAILED = 1u << 3
};

/*
 * The code of the first applicable rule in the order of doc/contract.md#terminal-rules:
 * schema_incompatible, table_not_synced, policy_rejected, validation_failed; SY_CODE_NONE when no
 * rule applies (only then are conflicts evaluated). Unknown bits are ignored.
 */
sy_code sy_matrix_terminal(unsigned rules);

/*
 * The whole classification of one mutation: the first terminal rule when any
 * applies, else the matrix cell.
 */
sy_matrix_result sy_matrix_evaluate(unsigned rules, sy_op op, sy_row_state state,
                                    bool base_equals_current);

#endif
