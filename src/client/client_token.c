/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_token.c: the bearer token a client sends.
 *
 * Layer: base of src/client (doc/hacking.md).
 * Notes: The token must be printable ASCII with no space, as an Authorization header
 * carries it. It is kept in memory only. It is wiped when replaced or freed.
 */
#include "config.h"

#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"

void sy_cl_wipe_free(char *s)
{
	if (s == NULL)
		return;
	volatile char *v = s;
	while (*v != '\0')
		*v++ = '\0';
	sy_free(s);
}

bool sy_cl_token_ok(const char *t)
{
	if (t == NULL || *t == '\0' || strlen(t) > 16384)
		return false;
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

bool sy_cl_token_take(sy_client *c, char *t)
{
	if (!sy_cl_token_ok(t)) {
		sy_cl_wipe_free(t);
		return false;
	}
	sy_cl_wipe_free(c->token);
	c->token = t;
	return true;
}
