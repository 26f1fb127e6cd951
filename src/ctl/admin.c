/* SPDX-License-Identifier: BSD-2-Clause */
/* synchroctl database administration. placeholder */
#include "config.h"

#include <stdio.h>

#include "ctl/commands.h"

int sy_ctl_admin(const char *conf, int argc, char **argv)
{
	(void)conf;
	(void)argc;
	fprintf(stderr, "synchroctl: unknown command '%s'\n", argv[0]);
	return SY_CTL_EXIT_USAGE;
}
