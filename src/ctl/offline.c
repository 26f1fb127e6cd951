/* SPDX-License-Identifier: BSD-2-Clause */
/* synchroctl canonicalize and fingerprint (PROTOCOL.md §9). placeholder */
#include "config.h"

#include <stdio.h>

#include "ctl/commands.h"

int sy_ctl_canonicalize(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("synchroctl: canonicalize: not built yet\n", stderr);
	return SY_CTL_EXIT_USAGE;
}

int sy_ctl_fingerprint(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("synchroctl: fingerprint: not built yet\n", stderr);
	return SY_CTL_EXIT_USAGE;
}
