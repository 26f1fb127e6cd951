/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.h: synchro-cli's parts: exit codes (synchro-cli(1)), argument helpers (cli.c) and
 * read commands (cli_read.c).
 *
 * Notes: cli_read.c sits below cli.c. cli.c calls it, never the other way.
 */
#ifndef SYNCHRO_CLI_H
#define SYNCHRO_CLI_H

#include "synchro/buf.h"
#include "synchro/client.h"
#include "synchro/jcs.h"

enum {
	SY_CLI_OK = 0,
	SY_CLI_ERROR = 1,      /* the store or the library failed */
	SY_CLI_USAGE = 2,      /* bad command line */
	SY_CLI_INCOMPLETE = 3, /* sync did not finish: network, 429/503, timeout (retry later) */
	SY_CLI_STOPPED = 4,    /* frozen queue, retired client, auth or upgrade: needs a person */
	SY_CLI_NOT_FOUND = 5,  /* no such row, intent or batch */
	SY_CLI_REFUSED = 6,    /* a write or resolution refused (invalid value, wrong state) */
	SY_CLI_VERIFY = 7      /* verify found a problem, or a response broke the contract */
};

/* The exit status of a library result (synchro-cli(1)); inline, so that cli_read.c, which cli.c
 * calls, never calls back into cli.c. */
static inline int sy_cli_exit(sy_client_rc rc)
{
	switch (rc) {
	case SY_CLIENT_OK: return SY_CLI_OK;
	case SY_CLIENT_ENOTFOUND: return SY_CLI_NOT_FOUND;
	case SY_CLIENT_EINVAL:
	case SY_CLIENT_ESTATE: return SY_CLI_REFUSED;
	case SY_CLIENT_ENETWORK:
	case SY_CLIENT_ETIMEOUT: return SY_CLI_INCOMPLETE;
	case SY_CLIENT_EFROZEN:
	case SY_CLIENT_EREADONLY:
	case SY_CLIENT_ESERVER: return SY_CLI_STOPPED;
	case SY_CLIENT_EPROTOCOL: return SY_CLI_VERIFY;
	default: return SY_CLI_ERROR;
	}
}
/* The JSON pk of text for table (new, sy_free), or NULL with a message on stderr. */
char *sy_cli_pk(sy_client *c, const char *table, const char *text);
/* The JSON object of field=value / field:=JSON arguments (new), or NULL. */
char *sy_cli_columns(sy_client *c, const char *table, int argc, char **argv);
/* status, pending, show, explain, batch, rows, verify. */
int sy_cli_read(sy_client *c, const char *cmd, int argc, char **argv, bool json);

#endif
