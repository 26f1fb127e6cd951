/* SPDX-License-Identifier: BSD-2-Clause */
/* The matrix (doc/contract.md#operation-and-row-state-matrix), the terminal-rule order
 * (doc/contract.md#terminal-rules) and the outcome vocabulary. */
#include "config.h"

#include <string.h>

#include "synchro/matrix.h"
#include "testutil.h"

#define A SY_STATUS_APPLIED
#define C SY_STATUS_CONFLICT
#define T SY_STATUS_REJECTED_TERMINAL

/* The table of doc/contract.md#operation-and-row-state-matrix, cell by cell: 4 state/version rows x
 * 3 operations. */
static const struct {
	sy_row_state state;
	bool equal; /* update/delete base equals current */
	sy_op op;
	sy_status status;
	sy_code code;
} cells[] = {
        {SY_ROW_ABSENT, false, SY_OP_INSERT, A, SY_CODE_NONE},
        {SY_ROW_ABSENT, false, SY_OP_UPDATE, C, SY_CODE_ROW_NOT_FOUND},
        {SY_ROW_ABSENT, false, SY_OP_DELETE, C, SY_CODE_ROW_NOT_FOUND},
        {SY_ROW_LIVE, true, SY_OP_INSERT, C, SY_CODE_ROW_ALREADY_EXISTS},
        {SY_ROW_LIVE, true, SY_OP_UPDATE, A, SY_CODE_NONE},
        {SY_ROW_LIVE, true, SY_OP_DELETE, A, SY_CODE_NONE},
        {SY_ROW_LIVE, false, SY_OP_INSERT, C, SY_CODE_ROW_ALREADY_EXISTS},
        {SY_ROW_LIVE, false, SY_OP_UPDATE, C, SY_CODE_VERSION_CONFLICT},
        {SY_ROW_LIVE, false, SY_OP_DELETE, C, SY_CODE_VERSION_CONFLICT},
        {SY_ROW_DELETED, false, SY_OP_INSERT, C, SY_CODE_ROW_DELETED},
        {SY_ROW_DELETED, false, SY_OP_UPDATE, C, SY_CODE_ROW_DELETED},
        {SY_ROW_DELETED, false, SY_OP_DELETE, C, SY_CODE_ROW_DELETED},
};

static void test_matrix_cells(void)
{
	CU_ASSERT_EQUAL(sizeof cells / sizeof cells[0], 12);
	for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
		sy_matrix_result r =
		        sy_matrix_classify(cells[i].op, cells[i].state, cells[i].equal);
		CU_ASSERT_EQUAL(r.status, cells[i].status);
		CU_ASSERT_EQUAL(r.code, cells[i].code);
		/*
		 * Only a live row's update or delete reads the version relation: for
		 * every other cell the other relation must give the same answer.
		 */
		if (cells[i].state != SY_ROW_LIVE || cells[i].op == SY_OP_INSERT) {
			sy_matrix_result o =
			        sy_matrix_classify(cells[i].op, cells[i].state, !cells[i].equal);
			CU_ASSERT_EQUAL(o.status, cells[i].status);
			CU_ASSERT_EQUAL(o.code, cells[i].code);
		}
	}
}

static void test_matrix_invalid(void)
{
	/* a caller bug must never become a write */
	sy_matrix_result r = sy_matrix_classify((sy_op)7, SY_ROW_LIVE, true);
	CU_ASSERT_NOT_EQUAL(r.status, A);
	r = sy_matrix_classify(SY_OP_INSERT, (sy_row_state)9, true);
	CU_ASSERT_NOT_EQUAL(r.status, A);
	r = sy_matrix_classify(SY_OP_UPDATE, (sy_row_state)9, true);
	CU_ASSERT_NOT_EQUAL(r.status, A);
	CU_ASSERT_EQUAL(r.code, SY_CODE_VALIDATION_FAILED);
}

static void test_terminal_order(void)
{
	/* index = rule bits: 1 schema_incompatible, 2 table_not_synced, 4 policy, 8 validation */
	static const sy_code expected[16] = {
	        SY_CODE_NONE,                /* 0000 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 0001 */
	        SY_CODE_TABLE_NOT_SYNCED,    /* 0010 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 0011 */
	        SY_CODE_POLICY_REJECTED,     /* 0100 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 0101 */
	        SY_CODE_TABLE_NOT_SYNCED,    /* 0110 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 0111 */
	        SY_CODE_VALIDATION_FAILED,   /* 1000 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 1001 */
	        SY_CODE_TABLE_NOT_SYNCED,    /* 1010 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 1011 */
	        SY_CODE_POLICY_REJECTED,     /* 1100 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 1101 */
	        SY_CODE_TABLE_NOT_SYNCED,    /* 1110 */
	        SY_CODE_SCHEMA_INCOMPATIBLE, /* 1111 */
	};
	CU_ASSERT_EQUAL(SY_RULE_SCHEMA_INCOMPATIBLE, 1u);
	CU_ASSERT_EQUAL(SY_RULE_TABLE_NOT_SYNCED, 2u);
	CU_ASSERT_EQUAL(SY_RULE_POLICY_REJECTED, 4u);
	CU_ASSERT_EQUAL(SY_RULE_VALIDATION_FAILED, 8u);
	for (unsigned rules = 0; rules < 16; rules++) {
		CU_ASSERT_EQUAL(sy_matrix_terminal(rules), expected[rules]);
		/* unknown bits change nothing */
		CU_ASSERT_EQUAL(sy_matrix_terminal(rules | 0xf0u), expected[rules]);
	}
}

static void test_evaluate(void)
{
	/* a terminal rule wins over every matrix cell, even one that would apply */
	for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
		for (unsigned rules = 0; rules < 16; rules++) {
			sy_matrix_result r = sy_matrix_evaluate(rules, cells[i].op, cells[i].state,
			                                        cells[i].equal);
			if (rules == 0) {
				CU_ASSERT_EQUAL(r.status, cells[i].status);
				CU_ASSERT_EQUAL(r.code, cells[i].code);
			} else {
				CU_ASSERT_EQUAL(r.status, T);
				CU_ASSERT_EQUAL(r.code, sy_matrix_terminal(rules));
			}
		}
	}
	sy_matrix_result r = sy_matrix_evaluate(SY_RULE_POLICY_REJECTED | SY_RULE_VALIDATION_FAILED,
	                                        SY_OP_UPDATE, SY_ROW_LIVE, true);
	CU_ASSERT_EQUAL(r.status, T);
	CU_ASSERT_EQUAL(r.code, SY_CODE_POLICY_REJECTED);
}

static const struct {
	sy_code code;
	const char *name;
	sy_status status;
	bool conflict;
	bool terminal;
} codes[] = {
        {SY_CODE_NONE, NULL, A, false, false},
        {SY_CODE_VERSION_CONFLICT, "version_conflict", C, true, false},
        {SY_CODE_ROW_ALREADY_EXISTS, "row_already_exists", C, true, false},
        {SY_CODE_ROW_DELETED, "row_deleted", C, true, false},
        {SY_CODE_ROW_NOT_FOUND, "row_not_found", C, true, false},
        {SY_CODE_POLICY_REJECTED, "policy_rejected", T, false, true},
        {SY_CODE_VALIDATION_FAILED, "validation_failed", T, false, true},
        {SY_CODE_TABLE_NOT_SYNCED, "table_not_synced", T, false, true},
        {SY_CODE_SCHEMA_INCOMPATIBLE, "schema_incompatible", T, false, true},
        {SY_CODE_ATOMIC_BATCH_REJECTED, "atomic_batch_rejected", T, false, true},
};

static void test_code_names(void)
{
	CU_ASSERT_EQUAL(sizeof codes / sizeof codes[0], SY_CODE__COUNT);
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		const char *name = sy_code_name(codes[i].code);
		if (codes[i].name == NULL) {
			CU_ASSERT_PTR_NULL(name);
		} else {
			CU_ASSERT_PTR_NOT_NULL_FATAL(name);
			CU_ASSERT_STRING_EQUAL(name, codes[i].name);
			sy_code back = SY_CODE_NONE;
			CU_ASSERT_TRUE(sy_code_from_name(name, strlen(name), &back));
			CU_ASSERT_EQUAL(back, codes[i].code);
		}
		CU_ASSERT_EQUAL(sy_code_status(codes[i].code), codes[i].status);
		CU_ASSERT_EQUAL(sy_code_is_conflict(codes[i].code), codes[i].conflict);
		CU_ASSERT_EQUAL(sy_code_is_terminal(codes[i].code), codes[i].terminal);
	}
	CU_ASSERT_PTR_NULL(sy_code_name(SY_CODE__COUNT));
	CU_ASSERT_PTR_NULL(sy_code_name((sy_code)-1));
	CU_ASSERT_FALSE(sy_code_is_conflict((sy_code)99));
	CU_ASSERT_FALSE(sy_code_is_terminal((sy_code)99));

	/* protocol v2 leftovers and near misses name no code */
	static const char *const bad[] = {"none",
	                                  "server_retryable",
	                                  "unknown_scope_effect",
	                                  "row_deleted ",
	                                  "Row_deleted",
	                                  "row",
	                                  ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_code c;
		CU_ASSERT_FALSE(sy_code_from_name(bad[i], strlen(bad[i]), &c));
	}
	sy_code c;
	/* lengths are exact: a prefix or an embedded NUL names nothing */
	CU_ASSERT_FALSE(sy_code_from_name("row_deleted", 7, &c));
	CU_ASSERT_FALSE(sy_code_from_name("row_deleted\0x", 13, &c));
}

static void test_status_names(void)
{
	static const struct {
		sy_status s;
		const char *name;
	} rows[] = {{A, "applied"}, {C, "conflict"}, {T, "rejected_terminal"}};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CU_ASSERT_STRING_EQUAL(sy_status_name(rows[i].s), rows[i].name);
		sy_status back = SY_STATUS__COUNT;
		CU_ASSERT_TRUE(sy_status_from_name(rows[i].name, strlen(rows[i].name), &back));
		CU_ASSERT_EQUAL(back, rows[i].s);
	}
	CU_ASSERT_PTR_NULL(sy_status_name(SY_STATUS__COUNT));
	static const char *const bad[] = {"rejected_retryable", "accepted", "APPLIED", "applie",
	                                  ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_status s;
		CU_ASSERT_FALSE(sy_status_from_name(bad[i], strlen(bad[i]), &s));
	}
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"matrix cells", test_matrix_cells},
	        {"matrix invalid enumerators", test_matrix_invalid},
	        {"terminal rule order", test_terminal_order},
	        {"evaluate", test_evaluate},
	        {"code names", test_code_names},
	        {"status names", test_status_names},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("matrix", tests);
	return sy_test_run();
}
