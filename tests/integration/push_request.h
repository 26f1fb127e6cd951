/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The push requests of the integration suites that call synchro.synchro_push (test_push.pgt
 * and test_push_units.pgt), one copy: fresh identities, the request body of a batch built
 * from its parts (doc/contract.md#push-request), and the outcomes of a 200 body as the tests check
 * them.
 */
#ifndef SY_PUSH_REQUEST_H
#define SY_PUSH_REQUEST_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "synchro/buf.h"
#include "synchro/json.h"
#include "synchro/scalar.h"

/* Each suite defines these: its superuser connection, its current schema, the serial of its
 * fresh identities (its first value sets the suite's identity range), its default client. */
extern PGconn *db;
extern sy_schema_ref cur;
extern unsigned long serial;
#define CA1 "c0000000-0000-4000-8000-0000000000a1"

/* A fresh identity UUID with a recognizable prefix ('b' batch, 'a' mutation, 'e' todo). */
void fresh(char out[SY_UUID_LEN + 1], char kind);

typedef struct {
	const char *id; /* mutation id; NULL: fresh */
	const char *table;
	const char *pk; /* JSON of the pk value */
	const char *op;
	const char *base;              /* NULL: absent */
	const char *cols;              /* JSON object, or NULL: absent */
	const sy_schema_ref *authored; /* NULL: the current schema */
} mspec;

typedef struct {
	const char *client; /* NULL: CA1 */
	long long gen;      /* 0: the client's current generation */
	const char *batch;  /* NULL: fresh */
	bool atomic;
	const sy_schema_ref *schema; /* NULL: current */
} rspec;

void put_ref(sy_buf *b, const sy_schema_ref *r);
/* The client's generation in synchro.clients. */
long long client_generation(const char *client);
/* The generation build() writes when rspec.gen is 0: client_generation() unless the suite
 * says otherwise (test_push_units.pgt's clients never reconnect: always 1, no query). */
extern long long (*generation_of)(const char *client);
/* The request body (free()); rs NULL: every default; every mutation id used goes to ids[i]
 * (may be NULL). */
char *build(const rspec *rs, const mspec *ms, size_t n, char (*ids)[SY_UUID_LEN + 1]);

/* The outcome of mutation id in a 200 body (doc NULL: none), and whether it is in
 * "accepted". */
const sy_json *push_outcome(const sy_json_doc *doc, const char *id, bool *accepted);
/* The outcome of id in the 200 body of a suite's result (r->doc). */
#define outcome(r, id, accepted) push_outcome((r)->doc, (id), (accepted))

/* A string member of o, or NULL. */
const char *str(const sy_json *o, const char *key);
bool has(const sy_json *o, const char *key);

/*
 * Checks the outcome of id: status, code (NULL: none), and whether server_version and
 * server_row (with its row_checksum) are present. Returns the outcome.
 */
const sy_json *check_at(const sy_json_doc *doc, const char *id, const char *status,
                        const char *code, bool version, bool row, const char *file, int line);
#define check(r, id, status, code, version, row)                                                   \
	check_at((r)->doc, (id), (status), (code), (version), (row), __FILE__, __LINE__)

/* A member of server_row as JCS text (or "<absent>"); free(). */
char *row_value(const sy_json *o, const char *field);
void check_row_value_at(const sy_json *o, const char *field, const char *want, const char *file,
                        int line);
#define CHECK_ROW_VALUE(o, field, want) check_row_value_at((o), (field), (want), __FILE__, __LINE__)

#endif
