/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctl_db.c: synchroctl's connection to the database, as [database] conninfo says. Every
 * database command uses it (admin.c and status.c).
 *
 * Layer: base of src/ctl (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>

#include "ctl/commands.h"
#include "store/conn.h"

PGconn *sy_ctl_open_db(const sy_cfg *cfg, int *code)
{
	sy_error err = {0};
	PGconn *c = sy_store_connect(sy_cfg_str(cfg, "database", "conninfo"), "synchroctl", &err);
	if (c)
		return c;
	if (err.code == SY_ERR_INVALID_REQUEST) {
		fprintf(stderr, "synchroctl: %s\n", err.message);
		*code = SY_CTL_EXIT_USAGE;
	} else {
		/* libpq's own hint ("Is the server running...") is on a line the message leaves
		 * out. */
		fprintf(stderr,
		        "synchroctl: %s (is PostgreSQL running, and does [database] conninfo name it? "
		        "nothing was changed)\n",
		        err.message);
		*code = SY_CTL_EXIT_CONNECT;
	}
	return NULL;
}
