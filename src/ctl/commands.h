/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * commands.h: the commands of synchroctl. Each returns the process exit status.
 */
#ifndef SY_CTL_COMMANDS_H
#define SY_CTL_COMMANDS_H

/* Exit statuses (documented in synchroctl(1)). */
#define SY_CTL_EXIT_OK        0
#define SY_CTL_EXIT_FAILURE   1 /* the operation failed (database error, refused) */
#define SY_CTL_EXIT_USAGE     2 /* bad usage or invalid input */
#define SY_CTL_EXIT_NOTFOUND  3 /* the named object does not exist */
#define SY_CTL_EXIT_CONNECT   4 /* cannot connect to PostgreSQL */
#define SY_CTL_EXIT_ATTENTION 5 /* status: read every fact, and something needs attention */

#include <libpq-fe.h>

#include "store/cfg.h"

/* Offline tools (src/ctl/offline.c): argv[0] is the command name. */
int sy_ctl_canonicalize(int argc, char **argv);
int sy_ctl_fingerprint(int argc, char **argv);

/*
 * Database commands (src/ctl/admin.c): conf is the -c path or NULL; argv[0] is
 * the command name ("init", "migrate", "schema", "client", "ledger", ...).
 */
int sy_ctl_admin(const char *conf, int argc, char **argv);

/* A connection as [database] conninfo says (cfg may be NULL), or NULL with the failure
 * reported on stderr and its exit status in *code (src/ctl/ctl_db.c). */
PGconn *sy_ctl_open_db(const sy_cfg *cfg, int *code);

/* synchroctl status [--json] [--max-lag-bytes N] [--exact-max-bytes N] (src/ctl/status.c):
 * argv[0] is "status". */
int sy_ctl_status(const sy_cfg *cfg, int argc, char **argv);

#endif
