/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared steps of the client suites: one store (path) opened on one fake
 * server (F) as C, writes, state queries and stepping helpers.
 */
#ifndef SY_TEST_CLIENT_HARNESS_H
#define SY_TEST_CLIENT_HARNESS_H

#include "../../src/client/client_internal.h"
#include "client_fake.h"
#include "testutil.h"

extern fake *F;
extern sy_client *C;
extern char path[256];
extern sy_client_error E;

#define OK(x) CU_ASSERT_EQUAL_FATAL((x), SY_CLIENT_OK)

/* Closes C (when open) and opens path again on F. */
void reopen(void);
/* sy_client_sync with a bound, asserting OK. */
void sync_ok(void);
/* A new store on a new fake server, connected (connect, schema, rebuild). */
void start(void);
void stop(void);
/* One write (op 'i', 'u', 'd') in its own transaction; its mutation id (a ring of 8). */
const char *w(char op, const char *pk, const char *cols);
sy_client_intent *intent(const char *id);
sy_intent_state state(const char *id);
/* Steps until a request is in flight (the fake holds it). */
void step_until_inflight(void);
void step_until_settled(void);
/* Whether push number i contains needle. */
bool push_has(size_t i, const char *needle);
/* The batch an intent went in last (new string). */
char *batch_of(const char *id);

#endif
