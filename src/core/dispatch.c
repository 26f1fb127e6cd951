/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dispatch.c: the one implementation of the dispatch order (synchro/dispatch.h).
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#dispatch-order (the order of the steps).
 * Notes: The steps run in this order. Authentication comes first, then the protocol gate
 * and structural validation. Then come permanent client retirement and the batch and
 * mutation replay lookup. The client-generation gate, the schema gate and admission control
 * follow, for a first execution only. Transactional execution comes last.
 */
#include "config.h"

#include "synchro/dispatch.h"

static const struct {
	const char *name;
	sy_errcode code;
} gates[SY_GATE__COUNT] = {
        [SY_GATE_AUTH] = {"auth", SY_ERR_AUTH_REQUIRED},
        [SY_GATE_PROTOCOL] = {"protocol", SY_ERR_UPGRADE_REQUIRED},
        [SY_GATE_STRUCTURE] = {"structure", SY_ERR_INVALID_REQUEST},
        [SY_GATE_CLIENT] = {"client", SY_ERR_AUTH_REQUIRED},
        [SY_GATE_RETIRED] = {"retired", SY_ERR_CLIENT_RETIRED},
        [SY_GATE_REPLAY] = {"replay", SY_ERR_NONE},
        /* Nothing published: no request can carry the current schema yet; retry. */
        [SY_GATE_PUBLISHED] = {"published", SY_ERR_TEMPORARY_UNAVAILABLE},
        [SY_GATE_PK] = {"pk", SY_ERR_INVALID_REQUEST},
        [SY_GATE_GENERATION] = {"generation", SY_ERR_CLIENT_GENERATION_EXPIRED},
        [SY_GATE_SCHEMA] = {"schema", SY_ERR_SCHEMA_MISMATCH},
        [SY_GATE_ADMISSION] = {"admission", SY_ERR_RETRY_LATER},
};

void sy_gate_facts_init(sy_gate_facts *f, unsigned mask)
{
	for (unsigned g = 0; g < SY_GATE__COUNT; g++)
		f->check[g] = mask & SY_GATE_BIT(g) ? SY_CHECK_UNKNOWN : SY_CHECK_SKIP;
}

sy_dispatch sy_dispatch_decide(const sy_gate_facts *f)
{
	sy_gate unknown = SY_GATE__COUNT;
	for (unsigned g = 0; g < SY_GATE__COUNT; g++) {
		switch (f->check[g]) {
		case SY_CHECK_SKIP:
		case SY_CHECK_PASS: break;
		case SY_CHECK_UNKNOWN:
			if (unknown == SY_GATE__COUNT)
				unknown = (sy_gate)g;
			break;
		case SY_CHECK_FAIL:
			/* An unknown earlier gate may refuse first: it must be known before. */
			if (unknown != SY_GATE__COUNT)
				return (sy_dispatch){SY_DISPATCH_CHECK, unknown};
			return (sy_dispatch){SY_DISPATCH_REFUSE, (sy_gate)g};
		}
	}
	return (sy_dispatch){SY_DISPATCH_GO, unknown};
}

sy_errcode sy_gate_errcode(sy_gate g)
{
	return (unsigned)g < SY_GATE__COUNT ? gates[g].code : SY_ERR_NONE;
}

const char *sy_gate_name(sy_gate g)
{
	return (unsigned)g < SY_GATE__COUNT ? gates[g].name : NULL;
}
