/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dispatch order (doc/contract.md#dispatch-order) (synchro/dispatch.h): "authentication,
 * protocol gate, structural validation, permanent client retirement, batch and mutation replay
 * lookup, first-execution client-generation gate, first-execution schema gate, admission control,
 * then transactional execution" (doc/contract.md#dispatch-order). Its one implementation.
 * Layer: middle of src/core (doc/hacking.md).
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
