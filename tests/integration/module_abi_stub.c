/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A stand-in for a server module of an earlier release, for tests/integration/test_ctl.pgt:
 * it loads (PostgreSQL's magic block) and answers synchro_module_abi with a level below this
 * release's migrations, as the module of migration 19 would. synchroctl must refuse to
 * migrate past it before applying anything.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(synchro_module_abi);

Datum synchro_module_abi(PG_FUNCTION_ARGS)
{
	(void)fcinfo;
	PG_RETURN_INT32(19);
}
