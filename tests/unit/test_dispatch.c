/* SPDX-License-Identifier: BSD-2-Clause */
/* The dispatch order (doc/contract.md#dispatch-order) (src/core/dispatch.c): which gate answers a
 * request. */
#include "config.h"

#include <string.h>

#include "synchro/dispatch.h"
#include "testutil.h"

/* Facts with every gate c. */
static sy_gate_facts all(sy_check c)
{
	sy_gate_facts f;
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		f.check[g] = c;
	return f;
}

static void test_order_is_the_contract_list(void)
{
	/* doc/contract.md#dispatch-order: "authentication, protocol gate, structural validation,
	 * permanent client retirement, batch and mutation replay lookup, first-execution
	 * client-generation gate, first-execution schema gate, admission control";
	 * doc/contract.md#dispatch-order puts the client bound to the caller before retirement, and
	 * the current schema's existence and primary-key rule after the replay lookup, before the
	 * generation gate. */
	static const char *const order[] = {"auth",       "protocol", "structure", "client",
	                                    "retired",    "replay",   "published", "pk",
	                                    "generation", "schema",   "admission"};
	CU_ASSERT_EQUAL(sizeof order / sizeof order[0], SY_GATE__COUNT);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		CU_ASSERT_STRING_EQUAL(sy_gate_name((sy_gate)g), order[g]);
	CU_ASSERT_PTR_NULL(sy_gate_name(SY_GATE__COUNT));
	CU_ASSERT_PTR_NULL(sy_gate_name((sy_gate)-1));
}

static void test_errcodes(void)
{
	static const struct {
		sy_gate gate;
		sy_errcode code;
		int status;
	} rows[] = {
	        {SY_GATE_AUTH, SY_ERR_AUTH_REQUIRED, 401},
	        {SY_GATE_PROTOCOL, SY_ERR_UPGRADE_REQUIRED, 426},
	        {SY_GATE_STRUCTURE, SY_ERR_INVALID_REQUEST, 400},
	        {SY_GATE_CLIENT, SY_ERR_AUTH_REQUIRED, 401},
	        {SY_GATE_RETIRED, SY_ERR_CLIENT_RETIRED, 409},
	        {SY_GATE_REPLAY, SY_ERR_NONE, 200},
	        {SY_GATE_PUBLISHED, SY_ERR_TEMPORARY_UNAVAILABLE, 503},
	        {SY_GATE_PK, SY_ERR_INVALID_REQUEST, 400},
	        {SY_GATE_GENERATION, SY_ERR_CLIENT_GENERATION_EXPIRED, 409},
	        {SY_GATE_SCHEMA, SY_ERR_SCHEMA_MISMATCH, 422},
	        {SY_GATE_ADMISSION, SY_ERR_RETRY_LATER, 429},
	};
	CU_ASSERT_EQUAL(sizeof rows / sizeof rows[0], SY_GATE__COUNT);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CU_ASSERT_EQUAL(sy_gate_errcode(rows[i].gate), rows[i].code);
		CU_ASSERT_EQUAL(sy_errcode_http_status(sy_gate_errcode(rows[i].gate)),
		                rows[i].status);
	}
	CU_ASSERT_EQUAL(sy_gate_errcode(SY_GATE__COUNT), SY_ERR_NONE);
}

static void test_all_pass_goes(void)
{
	sy_gate_facts f = all(SY_CHECK_PASS);
	sy_dispatch d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_GO);
	CU_ASSERT_EQUAL(d.gate, SY_GATE__COUNT);
	f = all(SY_CHECK_SKIP);
	d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_GO);
	CU_ASSERT_EQUAL(d.gate, SY_GATE__COUNT);
}

static void test_each_gate_alone_refuses(void)
{
	for (unsigned g = 0; g < SY_GATE__COUNT; g++) {
		sy_gate_facts f = all(SY_CHECK_PASS);
		f.check[g] = SY_CHECK_FAIL;
		sy_dispatch d = sy_dispatch_decide(&f);
		CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_REFUSE);
		CU_ASSERT_EQUAL(d.gate, g);
	}
}

static void test_earlier_refusal_wins(void)
{
	for (unsigned a = 0; a < SY_GATE__COUNT; a++)
		for (unsigned b = a + 1; b < SY_GATE__COUNT; b++) {
			sy_gate_facts f = all(SY_CHECK_PASS);
			f.check[a] = SY_CHECK_FAIL;
			f.check[b] = SY_CHECK_FAIL;
			sy_dispatch d = sy_dispatch_decide(&f);
			CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_REFUSE);
			CU_ASSERT_EQUAL(d.gate, a);
		}
}

static void test_unknown_before_a_refusal_is_checked(void)
{
	for (unsigned a = 0; a < SY_GATE__COUNT; a++)
		for (unsigned b = 0; b < SY_GATE__COUNT; b++) {
			if (a == b)
				continue;
			sy_gate_facts f = all(SY_CHECK_PASS);
			f.check[a] = SY_CHECK_UNKNOWN;
			f.check[b] = SY_CHECK_FAIL;
			sy_dispatch d = sy_dispatch_decide(&f);
			if (a < b) {
				CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_CHECK);
				CU_ASSERT_EQUAL(d.gate, a);
			} else {
				/* An unknown later gate cannot change the answer. */
				CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_REFUSE);
				CU_ASSERT_EQUAL(d.gate, b);
			}
		}
}

static void test_unknown_without_refusal_goes(void)
{
	sy_gate_facts f = all(SY_CHECK_PASS);
	f.check[SY_GATE_ADMISSION] = SY_CHECK_UNKNOWN;
	f.check[SY_GATE_REPLAY] = SY_CHECK_UNKNOWN;
	sy_dispatch d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_GO);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_REPLAY); /* the first still unknown */
}

static void test_skip_is_passed_over(void)
{
	sy_gate_facts f = all(SY_CHECK_SKIP);
	f.check[SY_GATE_SCHEMA] = SY_CHECK_FAIL;
	sy_dispatch d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_REFUSE);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_SCHEMA);
}

static void test_route_masks(void)
{
	sy_gate_facts f;
	sy_gate_facts_init(&f, SY_GATES_READ);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++) {
		bool read = g != SY_GATE_REPLAY && g != SY_GATE_PK && g != SY_GATE_ADMISSION;
		CU_ASSERT_EQUAL(f.check[g], read ? SY_CHECK_UNKNOWN : SY_CHECK_SKIP);
	}
	sy_gate_facts_init(&f, SY_GATES_PUSH);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		CU_ASSERT_EQUAL(f.check[g], SY_CHECK_UNKNOWN);
	sy_gate_facts_init(&f, SY_GATES_CLIENT);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		CU_ASSERT_EQUAL(f.check[g],
		                g <= SY_GATE_RETIRED ? SY_CHECK_UNKNOWN : SY_CHECK_SKIP);
	sy_gate_facts_init(&f, SY_GATES_FRONT);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		CU_ASSERT_EQUAL(f.check[g],
		                g <= SY_GATE_PROTOCOL ? SY_CHECK_UNKNOWN : SY_CHECK_SKIP);
	/* Nothing known yet: go on and find the first out. */
	sy_gate_facts_init(&f, SY_GATES_READ);
	sy_dispatch d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_GO);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_AUTH);
}

/* The contract's consequences (doc/contract.md#push), as the push meets them. */
static void test_push_scenarios(void)
{
	/* "An exact completed replay therefore does not change because the current schema or
	 * client generation later changes." */
	sy_gate_facts f;
	sy_gate_facts_init(&f, SY_GATES_PUSH);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		f.check[g] = SY_CHECK_PASS;
	f.check[SY_GATE_REPLAY] = SY_CHECK_FAIL;
	f.check[SY_GATE_GENERATION] = SY_CHECK_FAIL;
	f.check[SY_GATE_SCHEMA] = SY_CHECK_FAIL;
	sy_dispatch d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_REFUSE);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_REPLAY);
	/* A retired client is told so before its replay. */
	f.check[SY_GATE_RETIRED] = SY_CHECK_FAIL;
	d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_RETIRED);
	/* The mutation ledger not read yet and a stale generation: read the ledger first. */
	sy_gate_facts_init(&f, SY_GATES_PUSH);
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		f.check[g] = SY_CHECK_PASS;
	f.check[SY_GATE_REPLAY] = SY_CHECK_UNKNOWN;
	f.check[SY_GATE_GENERATION] = SY_CHECK_FAIL;
	d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_CHECK);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_REPLAY);
	/* ... and so before a 429: admission comes after every other gate. */
	f.check[SY_GATE_GENERATION] = SY_CHECK_PASS;
	f.check[SY_GATE_ADMISSION] = SY_CHECK_FAIL;
	d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_CHECK);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_REPLAY);
	f.check[SY_GATE_REPLAY] = SY_CHECK_PASS;
	d = sy_dispatch_decide(&f);
	CU_ASSERT_EQUAL(d.verdict, SY_DISPATCH_REFUSE);
	CU_ASSERT_EQUAL(d.gate, SY_GATE_ADMISSION);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"order is the contract's list", test_order_is_the_contract_list},
	        {"errcodes", test_errcodes},
	        {"all pass goes", test_all_pass_goes},
	        {"each gate alone refuses", test_each_gate_alone_refuses},
	        {"earlier refusal wins", test_earlier_refusal_wins},
	        {"unknown before a refusal is checked", test_unknown_before_a_refusal_is_checked},
	        {"unknown without refusal goes", test_unknown_without_refusal_goes},
	        {"skip is passed over", test_skip_is_passed_over},
	        {"route masks", test_route_masks},
	        {"push scenarios", test_push_scenarios},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("dispatch", tests);
	return sy_test_run();
}
