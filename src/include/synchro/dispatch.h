/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dispatch.h: the dispatch order, as one pure function. It says which gate answers a
 * request when several would refuse it.
 *
 * Rules: doc/contract.md#dispatch-order (the order).
 * Notes: The push (src/pg/push_gates.c), pull and rebuild (src/store/pull_gates.c) and the
 * routes of the responder use it. Each caller finds out the facts. The function says which
 * one counts.
 */
#ifndef SYNCHRO_DISPATCH_H
#define SYNCHRO_DISPATCH_H

#include "synchro/common.h"

/* The gates, in the dispatch order (doc/contract.md#dispatch-order): a refusal of an earlier gate
 * answers the request. */
typedef enum {
	SY_GATE_AUTH,       /* authentication: 401 auth_required */
	SY_GATE_PROTOCOL,   /* the protocol gate: 426 upgrade_required */
	SY_GATE_STRUCTURE,  /* structural validation: 400 invalid_request */
	SY_GATE_CLIENT,     /* the client exists and is bound to the caller: 401 auth_required */
	SY_GATE_RETIRED,    /* permanent retirement: 409 client_retired */
	SY_GATE_REPLAY,     /* batch and mutation replay lookup (push): the ledger answers */
	SY_GATE_PUBLISHED,  /* a schema is published: 503 temporary_unavailable */
	SY_GATE_PK,         /* the current schema's primary-key rule (push): 400 invalid_request */
	SY_GATE_GENERATION, /* first execution: 409 client_generation_expired */
	SY_GATE_SCHEMA,     /* first execution: 422 schema_mismatch */
	SY_GATE_ADMISSION,  /* admission control (push): 429 retry_later */
	SY_GATE__COUNT
} sy_gate;

#define SY_GATE_BIT(g) (1u << (g))
/* The gates each kind of route runs (a route table names one of these). */
#define SY_GATES_FRONT (SY_GATE_BIT(SY_GATE_AUTH) | SY_GATE_BIT(SY_GATE_PROTOCOL))
/* connect and retire: the client's own gates, nothing of a schema. */
#define SY_GATES_CLIENT                                                                            \
	(SY_GATES_FRONT | SY_GATE_BIT(SY_GATE_STRUCTURE) | SY_GATE_BIT(SY_GATE_CLIENT) |           \
	 SY_GATE_BIT(SY_GATE_RETIRED))
/* pull and rebuild: "gates as for push (no replay step)". */
#define SY_GATES_READ                                                                              \
	(SY_GATES_CLIENT | SY_GATE_BIT(SY_GATE_PUBLISHED) | SY_GATE_BIT(SY_GATE_GENERATION) |      \
	 SY_GATE_BIT(SY_GATE_SCHEMA))
/* push: every gate. */
#define SY_GATES_PUSH ((1u << SY_GATE__COUNT) - 1u)

/* What a caller knows of one gate. */
typedef enum {
	SY_CHECK_SKIP = 0, /* not a gate of this route, or one an earlier step already ran */
	SY_CHECK_UNKNOWN,  /* a gate of the route, not looked at yet */
	SY_CHECK_PASS,
	SY_CHECK_FAIL
} sy_check;

typedef struct {
	sy_check check[SY_GATE__COUNT];
} sy_gate_facts;

typedef enum {
	/* No gate refuses. gate: the first gate still SY_CHECK_UNKNOWN (its refusal would not
	 * change the answer yet, but a first execution needs it), else SY_GATE__COUNT. */
	SY_DISPATCH_GO,
	/* gate refuses the request, and no gate before it is unknown: answer its error. */
	SY_DISPATCH_REFUSE,
	/* gate is unknown and precedes a refusal: find it out, then decide again. */
	SY_DISPATCH_CHECK
} sy_dispatch_verdict;

typedef struct {
	sy_dispatch_verdict verdict;
	sy_gate gate;
} sy_dispatch;

/* Facts of a route: each gate of the mask `gates` SY_CHECK_UNKNOWN, every other SKIP. */
void sy_gate_facts_init(sy_gate_facts *f, unsigned gates);

/*
 * The dispatch order (doc/contract.md#dispatch-order) over f: the first gate that is SY_CHECK_FAIL
 * refuses, unless an SY_CHECK_UNKNOWN gate precedes it (CHECK that one first: it would take
 * precedence); GO when none fails. SKIP and PASS gates are passed over. Pure: no I/O, no
 * allocation.
 */
sy_dispatch sy_dispatch_decide(const sy_gate_facts *f);

/*
 * The error a refusing gate answers: SY_ERR_NONE for SY_GATE_REPLAY (the ledger's answer is
 * an exact replay, an idempotency_conflict or a rule of the mutation ledger, which the
 * caller knows) and for an out-of-range value.
 */
sy_errcode sy_gate_errcode(sy_gate g);

/* "auth", "protocol", ..., "admission" (borrowed, static); NULL for an out-of-range value. */
const char *sy_gate_name(sy_gate g);

#endif
