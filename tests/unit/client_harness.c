/* SPDX-License-Identifier: BSD-2-Clause */
/* The shared steps of the client suites (client_harness.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_harness.h"
#include "synchro/alloc.h"

fake *F;
sy_client *C;
char path[256];
sy_client_error E;

void reopen(void)
{
	sy_client_close(C);
	sy_client_options o;
	fake_options(F, &o);
	C = NULL;
	OK(sy_client_open(path, &o, &C, &E));
}

void sync_ok(void)
{
	sy_client_rc rc = sy_client_sync(C, 3600 * 1000, &E);
	if (rc != SY_CLIENT_OK)
		fprintf(stderr, "sync: %s: %s\n", sy_client_rc_name(rc), E.message);
	CU_ASSERT_EQUAL(rc, SY_CLIENT_OK);
}

void start(void)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof path, "%s/sy-client-XXXXXX", tmp);
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	unlink(path);
	F = fake_new();
	C = NULL;
	reopen();
	sync_ok(); /* connect, schema, rebuild */
}

void stop(void)
{
	sy_client_close(C);
	C = NULL;
	fake_free(F);
	F = NULL;
	char p[300];
	unlink(path);
	snprintf(p, sizeof p, "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", path);
	unlink(p);
}

/* One write in its own transaction; the new mutation id in a static buffer (ring of 8). */
const char *w(char op, const char *pk, const char *cols)
{
	static char ids[8][SY_UUID_LEN + 1];
	static int k;
	char *id = ids[k++ % 8];
	sy_client_txn *t;
	OK(sy_client_begin(C, false, &t, &E));
	sy_client_rc rc = op == 'i'   ? sy_client_insert(t, "todo", pk, cols, id, &E)
	                  : op == 'u' ? sy_client_update(t, "todo", pk, cols, id, &E)
	                              : sy_client_delete(t, "todo", pk, id, &E);
	if (rc != SY_CLIENT_OK)
		fprintf(stderr, "write: %s\n", E.message);
	CU_ASSERT_EQUAL_FATAL(rc, SY_CLIENT_OK);
	OK(sy_client_commit(t, &E));
	return id;
}

sy_client_intent *intent(const char *id)
{
	sy_client_intent *i = NULL;
	OK(sy_client_intent_get(C, id, &i, &E));
	return i;
}

sy_intent_state state(const char *id)
{
	sy_client_intent *i = intent(id);
	sy_intent_state s = i->state;
	sy_client_intent_free(i);
	return s;
}

/* Steps until a request is in flight (the fake holds it). */
void step_until_inflight(void)
{
	for (int n = 0; n < 100 && C->inflight == SY_CL_REQ_NONE; n++) {
		int64_t next;
		OK(sy_client_step(C, &next, &E));
		if (next > fake_now(F) && C->inflight == SY_CL_REQ_NONE)
			fake_advance(F, next - fake_now(F));
	}
	CU_ASSERT_FATAL(C->inflight != SY_CL_REQ_NONE);
}

void step_until_settled(void)
{
	for (int n = 0; n < 100 && C->inflight != SY_CL_REQ_NONE; n++) {
		int64_t next;
		OK(sy_client_step(C, &next, &E));
	}
}

bool push_has(size_t i, const char *needle)
{
	const char *b = fake_push_body(F, i, NULL);
	return b != NULL && strstr(b, needle) != NULL;
}

char *batch_of(const char *id)
{
	sy_client_intent *i = intent(id);
	char *b = sy_strndup(i->batch_id, strlen(i->batch_id));
	sy_client_intent_free(i);
	return b;
}
