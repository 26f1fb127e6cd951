/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_json.h: the JSON forms that synchro-cli --json and the browser API share
 * (client_json.c).
 */
#ifndef SY_CLIENT_JSON_H
#define SY_CLIENT_JSON_H

#include <stdbool.h>

#include "synchro/buf.h"
#include "synchro/client.h"

void sy_cl_json_str(sy_buf *b, const char *s);
/* "key":"value" (or null) / "key":raw (or null), with a leading comma unless *first. */
void sy_cl_json_member(sy_buf *b, bool *first, const char *key, const char *value);
void sy_cl_json_raw(sy_buf *b, bool *first, const char *key, const char *raw);
/* The status object and one intent object, as synchro-cli status / show --json print. */
void sy_cl_status_json(sy_buf *b, const sy_client_status *s);
void sy_cl_intent_json(sy_buf *b, const sy_client_intent *i);

#endif
