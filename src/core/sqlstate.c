/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqlstate.c: the SQLSTATEs Synchro acts on (synchro/sqlstate.h). One table holds them, as
 * prefixes of classes or of codes.
 *
 * Layer: base of src/core (doc/hacking.md).
 */
#include "config.h"

#include <string.h>

#include "synchro/sqlstate.h"

typedef enum { RETRY, MAPPING } kind;

static const struct {
	const char *prefix; /* a whole code, or its two-character class */
	kind what;
} table[] = {
        {"40001", RETRY}, /* serialization_failure */
        {"40P01", RETRY}, /* deadlock_detected */
        {"42", MAPPING},  /* syntax error or access rule violation */
};

static bool is(const char *state, kind what)
{
	if (state == NULL || strlen(state) != 5)
		return false;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (table[i].what == what &&
		    strncmp(state, table[i].prefix, strlen(table[i].prefix)) == 0)
			return true;
	return false;
}

bool sy_sqlstate_retryable(const char *state)
{
	return is(state, RETRY);
}

bool sy_sqlstate_is_mapping(const char *state)
{
	return is(state, MAPPING);
}
