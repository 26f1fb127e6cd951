/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctl_main.c: synchroctl's command line: -c, the usage, and the dispatch of commands.
 *
 * Layer: top of src/ctl (doc/hacking.md).
 * Rules: doc/contract.md#offline-tools (the offline commands).
 * Notes: It sends the offline tools to offline.c, and the database administration to
 * admin.c and status.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ctl/commands.h"

static void usage(FILE *f)
{
	fputs("usage: synchroctl [-c synchro.conf] COMMAND [ARGS]\n"
	      "\n"
	      "offline tools (no database):\n"
	      "  canonicalize < FILE                 RFC 8785 bytes of one JSON value\n"
	      "  fingerprint --user USER < PUSH      batch and mutation fingerprints\n"
	      "\n"
	      "database administration:\n"
	      "  init | migrate\n"
	      "  schema publish FILE | schema show [VERSION]\n"
	      "  client list [--user U] | client retire --user U CLIENT_ID\n"
	      "  ledger inspect --user U --client C --batch B [--show-body]\n"
	      "  ledger purge-retired\n"
	      "  lease status | changelog compact --before DURATION\n"
	      "  status [--json] [--max-lag-bytes N] [--exact-max-bytes N]\n",
	      f);
}

int main(int argc, char **argv)
{
	const char *conf = NULL;
	int i = 1;
	while (i < argc && argv[i][0] == '-') {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			conf = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return SY_CTL_EXIT_OK;
		} else {
			fprintf(stderr, "synchroctl: unknown option '%s'\n", argv[i]);
			return SY_CTL_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return SY_CTL_EXIT_USAGE;
	}
	const char *cmd = argv[i];
	if (strcmp(cmd, "canonicalize") == 0)
		return sy_ctl_canonicalize(argc - i, argv + i);
	if (strcmp(cmd, "fingerprint") == 0)
		return sy_ctl_fingerprint(argc - i, argv + i);
	return sy_ctl_admin(conf, argc - i, argv + i);
}
