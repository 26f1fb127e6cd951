/* SPDX-License-Identifier: BSD-2-Clause */
/* synchroctl: administration commands and the offline tools (PROTOCOL.md §9). */
#include "config.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fputs("usage: synchroctl [-c synchro.conf] COMMAND ...\n", f);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	fprintf(stderr, "synchroctl: unknown command '%s'\n", argv[1]);
	return 2;
}
