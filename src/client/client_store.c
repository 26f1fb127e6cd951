/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_store.c: the client's SQLite store: the versioned schema and its upgrades, the
 * meta values and statement helpers.
 *
 * Layer: base of src/client (doc/hacking.md).
 * Rules: doc/contract.md#sealing (two triggers keep sealed content immutable).
 * Notes: The meta values are the client identity, generation, schema, cursor and flags.
 *
 * The store runs WAL with synchronous=FULL. So a commit that returned survives a SIGKILL or
 * a power cut. Every state transition of the protocol is one commit.
 *
 * Two triggers make immutability a property of the file, not only of the code. A sealed
 * batch's bytes never change. An intent's fingerprinted content never changes. Only the
 * server-owned base of an unsealed intent may change.
 */
#include "config.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef SY_WEB
#include <stdlib.h>
#include <unistd.h>
#else
#include <uuid/uuid.h>
#endif

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"

/* Each entry upgrades the store from version i to i + 1, in one transaction. */
static const char *const upgrades[] = {
        /* 0 -> 1 */
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
        /* the server rows of the user's scope, as the server last said */
        "CREATE TABLE rows(tbl TEXT NOT NULL, pk TEXT NOT NULL, row TEXT,"
        " deleted INTEGER NOT NULL, server_version TEXT NOT NULL,"
        " schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, checksum TEXT,"
        " PRIMARY KEY(tbl, pk)) WITHOUT ROWID;"
        "CREATE TABLE rebuild_rows(tbl TEXT NOT NULL, pk TEXT NOT NULL, row TEXT,"
        " deleted INTEGER NOT NULL, server_version TEXT NOT NULL,"
        " schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, checksum TEXT,"
        " PRIMARY KEY(tbl, pk)) WITHOUT ROWID;"
        "CREATE TABLE schemas(version INTEGER PRIMARY KEY, hash TEXT NOT NULL,"
        " manifest TEXT NOT NULL);"
        "CREATE TABLE txns(id INTEGER PRIMARY KEY, atomic INTEGER NOT NULL,"
        " created_ms INTEGER NOT NULL);"
        /* immutable local intents; ord is the local order (doc/contract.md#sealing: never changed)
         * */
        "CREATE TABLE intents(seq INTEGER PRIMARY KEY, mutation_id TEXT NOT NULL UNIQUE,"
        " txn INTEGER NOT NULL, normalized INTEGER NOT NULL, ord INTEGER NOT NULL,"
        " tbl TEXT NOT NULL, pk TEXT NOT NULL, pk_field TEXT NOT NULL, op TEXT NOT NULL,"
        " columns TEXT, base TEXT, client_version TEXT NOT NULL,"
        " schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, state TEXT NOT NULL,"
        " pred TEXT, link TEXT, batch_id TEXT, code TEXT, outcome TEXT, resolution TEXT,"
        " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);"
        "CREATE INDEX intents_row ON intents(tbl, pk, ord);"
        "CREATE INDEX intents_state ON intents(state, ord);"
        "CREATE INDEX intents_pred ON intents(pred) WHERE pred IS NOT NULL;"
        "CREATE TABLE batches(seq INTEGER PRIMARY KEY, batch_id TEXT NOT NULL UNIQUE,"
        " state TEXT NOT NULL, generation INTEGER NOT NULL, schema_version INTEGER NOT NULL,"
        " schema_hash TEXT NOT NULL, atomic INTEGER NOT NULL, body BLOB NOT NULL,"
        " sha256 TEXT NOT NULL, successor TEXT, response BLOB, sealed_ms INTEGER NOT NULL,"
        " completed_ms INTEGER);"
        "CREATE TABLE batch_members(batch_id TEXT NOT NULL, ordinal INTEGER NOT NULL,"
        " mutation_id TEXT NOT NULL, PRIMARY KEY(batch_id, ordinal)) WITHOUT ROWID;"
        "CREATE INDEX batch_members_mutation ON batch_members(mutation_id);"
        "CREATE TABLE attempts(id INTEGER PRIMARY KEY, batch_id TEXT NOT NULL,"
        " at_ms INTEGER NOT NULL, status INTEGER NOT NULL, retry_after INTEGER,"
        " response BLOB);"
        /* doc/contract.md#sealing: a sealed batch never changes and every retry sends its exact
         * bytes */
        "CREATE TRIGGER batches_sealed BEFORE UPDATE OF batch_id, generation, schema_version,"
        " schema_hash, atomic, body, sha256, sealed_ms ON batches"
        " BEGIN SELECT RAISE(ABORT, 'a sealed batch never changes'); END;"
        "CREATE TRIGGER batches_kept BEFORE DELETE ON batches"
        " BEGIN SELECT RAISE(ABORT, 'sealed batches are kept'); END;"
        /* doc/contract.md#base-refresh: identities and authored content are immutable; only the
         * server-owned base of an unsealed intent may be refreshed */
        "CREATE TRIGGER intents_immutable BEFORE UPDATE OF mutation_id, txn, normalized, ord,"
        " tbl, pk, pk_field, op, columns, client_version, schema_version, schema_hash"
        " ON intents BEGIN SELECT RAISE(ABORT, 'an intent never changes'); END;"
        "CREATE TRIGGER intents_base BEFORE UPDATE OF base ON intents"
        " WHEN OLD.state NOT IN ('pending', 'waiting')"
        " BEGIN SELECT RAISE(ABORT, 'the base of a sealed mutation never changes'); END;"
        "CREATE TRIGGER intents_kept BEFORE DELETE ON intents"
        " BEGIN SELECT RAISE(ABORT, 'intents are kept'); END;",
        /* 1 -> 2: a completed batch's response is the response of its last attempt (logged
         * in the same transaction), no longer a second copy in the batch row: 1000 outcomes
         * are some 450 KB (110 pages) written and synced twice. SQLite 3.35 or later. */
        "ALTER TABLE batches DROP COLUMN response;",
        /* 2 -> 3: the visible tables (client_visible.c), built at the next open for the
         * current schema; the indexes the app asked for on them, made again with them. */
        "CREATE TABLE IF NOT EXISTS visible_indexes(tbl TEXT NOT NULL, columns TEXT NOT NULL,"
        " PRIMARY KEY(tbl, columns)) WITHOUT ROWID;"
        "DELETE FROM meta WHERE key = 'visible_schema';",
        /* 3 -> 4: the rows that left the user's scope (a pull's delete with left_scope):
         * gone from rows and from the visible tables, their intents kept and explained. */
        ("CREATE TABLE IF NOT EXISTS scope_exits(tbl TEXT NOT NULL, pk TEXT NOT NULL,"
         " server_version TEXT NOT NULL, PRIMARY KEY(tbl, pk)) WITHOUT ROWID;"),
};
#define STORE_VERSION ((int)(sizeof upgrades / sizeof upgrades[0]))

sy_client_rc sy_cl_fail(sy_client_error *err, sy_client_rc rc, const char *fmt, ...)
{
	if (err != NULL) {
		err->rc = rc;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return rc;
}

sy_client_rc sy_cl_store_fail(sy_client *c, sy_client_error *err, const char *what)
{
	int code = sqlite3_errcode(c->db);
	if (code == SQLITE_NOMEM)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "%s: out of memory", what);
	return sy_cl_fail(err, SY_CLIENT_ESTORE, "%s: %s", what, sqlite3_errmsg(c->db));
}

int64_t sy_cl_now(const sy_client *c)
{
	if (c->clock_ms != NULL)
		return c->clock_ms(c->clock_ctx);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Random (v4): never derived from time or a sequence a second device could repeat. */
#ifdef SY_WEB
/*
 * The WebAssembly build (no libuuid): getentropy() is crypto.getRandomValues() there,
 * which the worker checks before it opens a store (src/web/worker.ts); an id never
 * falls back to a weaker source.
 */
void sy_cl_new_uuid(char out[SY_UUID_LEN + 1])
{
	unsigned char u[16];
	if (getentropy(u, sizeof u) != 0)
		abort();
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
	static const char hex[] = "0123456789abcdef";
	char *o = out;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*o++ = '-';
		*o++ = hex[u[i] >> 4];
		*o++ = hex[u[i] & 15];
	}
	*o = '\0';
}
#else
void sy_cl_new_uuid(char out[SY_UUID_LEN + 1])
{
	uuid_t u;
	uuid_generate_random(u);
	uuid_unparse_lower(u, out);
}
#endif

void sy_cl_client_version(const sy_client *c, char out[SY_SERVER_TIME_LEN + 1])
{
	sy_server_time_format(sy_cl_now(c) * 1000, out);
}

sy_client_rc sy_cl_exec(sy_client *c, const char *sql, sy_client_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		sy_client_rc rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "store: %s",
		                             msg != NULL ? msg : sqlite3_errmsg(c->db));
		sqlite3_free(msg);
		return rc;
	}
	return SY_CLIENT_OK;
}

sy_client_rc sy_cl_prepare(sy_client *c, const char *sql, sqlite3_stmt **st, sy_client_error *err)
{
	if (sqlite3_prepare_v2(c->db, sql, -1, st, NULL) != SQLITE_OK) {
		*st = NULL;
		return sy_cl_store_fail(c, err, "prepare");
	}
	return SY_CLIENT_OK;
}

sy_client_rc sy_cl_prepare_cached(sy_client *c, const char *sql, sqlite3_stmt **st,
                                  sy_client_error *err)
{
	for (size_t i = 0; i < c->ncache; i++)
		if (c->cache[i].sql == sql) {
			*st = c->cache[i].st;
			return SY_CLIENT_OK;
		}
	/* The cache is sized for the hot paths; a miss past it is a bug (asserted in tests). */
	if (c->ncache == sizeof c->cache / sizeof c->cache[0])
		return sy_cl_fail(err, SY_CLIENT_ESTORE, "statement cache full");
	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
		*st = NULL;
		return sy_cl_store_fail(c, err, "prepare");
	}
	c->cache[c->ncache].sql = sql;
	c->cache[c->ncache].st = *st;
	c->ncache++;
	return SY_CLIENT_OK;
}

void sy_cl_release(sqlite3_stmt *st)
{
	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

sy_client_rc sy_cl_run_cached(sy_client *c, sqlite3_stmt *st, sy_client_error *err)
{
	int rc = sqlite3_step(st);
	sy_client_rc out = SY_CLIENT_OK;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		out = sy_cl_store_fail(c, err, "store");
	sy_cl_release(st);
	return out;
}

void sy_cl_cache_free(sy_client *c)
{
	for (size_t i = 0; i < c->ncache; i++)
		sqlite3_finalize(c->cache[i].st);
	c->ncache = 0;
}

sy_client_rc sy_cl_run(sy_client *c, sqlite3_stmt *st, sy_client_error *err)
{
	int rc = sqlite3_step(st);
	sy_client_rc out = SY_CLIENT_OK;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		out = sy_cl_store_fail(c, err, "store");
	sqlite3_finalize(st);
	return out;
}

sy_client_rc sy_cl_begin(sy_client *c, sy_client_error *err)
{
	return sy_cl_exec(c, "BEGIN IMMEDIATE", err);
}

sy_client_rc sy_cl_commit(sy_client *c, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db));
	/* the visible tables change in the same transaction as their inputs */
	sy_client_rc rc = c->before_commit != NULL ? c->before_commit(c, err) : SY_CLIENT_OK;
	if (rc != SY_CLIENT_OK) {
		sy_cl_rollback(c);
		return rc;
	}
	rc = sy_cl_exec(c, "COMMIT", err);
	if (rc != SY_CLIENT_OK)
		sy_cl_rollback(c);
	return rc;
}

void sy_cl_rollback(sy_client *c)
{
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

char *sy_cl_col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	if (t == NULL)
		return NULL;
	return sy_strndup((const char *)t, (size_t)sqlite3_column_bytes(st, i));
}

sy_client_rc sy_cl_meta_get(sy_client *c, const char *key, char **value, sy_client_error *err)
{
	sqlite3_stmt *st;
	*value = NULL;
	sy_client_rc rc = sy_cl_prepare(c, "SELECT value FROM meta WHERE key = ?", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*value = sy_cl_col_text(st, 0);
		if (*value == NULL)
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	} else if (s != SQLITE_ROW && s != SQLITE_DONE) {
		rc = sy_cl_store_fail(c, err, "meta");
	}
	sqlite3_finalize(st);
	return rc;
}

sy_client_rc sy_cl_meta_set(sy_client *c, const char *key, const char *value, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc =
	        sy_cl_prepare(c, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (value != NULL)
		sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	return sy_cl_run(c, st, err);
}

sy_client_rc sy_cl_meta_set_int(sy_client *c, const char *key, int64_t value, sy_client_error *err)
{
	char text[32];
	snprintf(text, sizeof text, "%lld", (long long)value);
	return sy_cl_meta_set(c, key, text, err);
}

static sy_client_rc user_version(sy_client *c, int *v, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(c, "PRAGMA user_version", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		*v = sqlite3_column_int(st, 0);
	else
		rc = sy_cl_store_fail(c, err, "user_version");
	sqlite3_finalize(st);
	return rc;
}

static sy_client_rc upgrade(sy_client *c, sy_client_error *err)
{
	int v = 0;
	sy_client_rc rc = user_version(c, &v, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (v > STORE_VERSION)
		return sy_cl_fail(err, SY_CLIENT_ESTATE,
		                  "the store has version %d; this library knows up to %d", v,
		                  STORE_VERSION);
	for (; v < STORE_VERSION; v++) {
		char pragma[48];
		snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
		if ((rc = sy_cl_begin(c, err)) != SY_CLIENT_OK)
			return rc;
		if ((rc = sy_cl_exec(c, upgrades[v], err)) != SY_CLIENT_OK ||
		    (rc = sy_cl_exec(c, pragma, err)) != SY_CLIENT_OK) {
			sy_cl_rollback(c);
			return rc;
		}
		if (v == 0) {
			/* doc/contract.md#persist-before-sending: the client identity is generated
			 * once and persisted before any request can carry it. */
			char id[SY_UUID_LEN + 1];
			sy_cl_new_uuid(id);
			if ((rc = sy_cl_meta_set(c, "client_id", id, err)) != SY_CLIENT_OK) {
				sy_cl_rollback(c);
				return rc;
			}
		}
		if ((rc = sy_cl_commit(c, err)) != SY_CLIENT_OK)
			return rc;
	}
	return SY_CLIENT_OK;
}

sy_client_rc sy_cl_store_open(sy_client *c, const char *path, sy_client_error *err)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(path, &c->db, flags, NULL) != SQLITE_OK) {
		sy_client_rc rc = c->db != NULL
		                          ? sy_cl_store_fail(c, err, path)
		                          : sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		return rc;
	}
	sqlite3_busy_timeout(c->db, 5000);
	/*
	 * A 16 MiB page cache: sealing and reconciling touch each queued intent's pages
	 * several times, and a smaller cache reads them again through read(2).
	 * Checkpoints after 8192 WAL pages (32 MiB), not SQLite's 1000: one
	 * 1000-intent batch cycle writes some 1,800 pages (random keys: rows, the
	 * members' mutation index), so the default copied every cycle's pages into the
	 * database at once (three more fdatasyncs a cycle); every few cycles, a page
	 * written in several is copied once. Durability does not depend on it: with
	 * synchronous = FULL every commit's WAL frames are synced before COMMIT returns,
	 * and a checkpoint only copies frames already durable (a crash in one is
	 * recovered from the WAL).
	 */
#ifdef SY_WEB
	/*
	 * The browser's store (src/web/web_vfs.c): one connection per store, its files
	 * locked by their OPFS handles; in EXCLUSIVE locking mode SQLite keeps the WAL
	 * index in memory and needs no shared-memory file.
	 */
	sy_client_rc rc0 = sy_cl_exec(c, "PRAGMA locking_mode = EXCLUSIVE", err);
	if (rc0 != SY_CLIENT_OK)
		return rc0;
#endif
	sy_client_rc rc = sy_cl_exec(c,
	                             "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
	                             " PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;"
	                             " PRAGMA temp_store = MEMORY;"
	                             " PRAGMA wal_autocheckpoint = 8192",
	                             err);
	if (rc == SY_CLIENT_OK)
		rc = upgrade(c, err);
	return rc;
}

sy_manifest *sy_cl_schema_manifest(sy_client *c, uint64_t version)
{
	sqlite3_stmt *st;
	sy_manifest *m = NULL;
	if (sy_cl_prepare(c, "SELECT manifest FROM schemas WHERE version = ?", &st, NULL) !=
	    SY_CLIENT_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)version);
	if (sqlite3_step(st) == SQLITE_ROW) {
		sy_error e = {0};
		m = sy_manifest_parse((const char *)sqlite3_column_text(st, 0),
		                      (size_t)sqlite3_column_bytes(st, 0), &e);
	}
	sqlite3_finalize(st);
	return m;
}

sy_client_rc sy_cl_schema_store(sy_client *c, const sy_schema_ref *ref, const char *manifest,
                                size_t len, bool current, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(
	        c, "INSERT OR IGNORE INTO schemas(version, hash, manifest) VALUES (?, ?, ?)", &st,
	        err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ref->version);
	sqlite3_bind_text(st, 2, ref->hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, manifest, (int)len, SQLITE_STATIC);
	if ((rc = sy_cl_run(c, st, err)) != SY_CLIENT_OK || !current)
		return rc;
	if ((rc = sy_cl_meta_set_int(c, "schema_version", (int64_t)ref->version, err)) !=
	    SY_CLIENT_OK)
		return rc;
	return sy_cl_meta_set(c, "schema_hash", ref->hash, err);
}

static sy_client_rc meta_u64(sy_client *c, const char *key, uint64_t *out, sy_client_error *err)
{
	char *v = NULL;
	sy_client_rc rc = sy_cl_meta_get(c, key, &v, err);
	*out = v != NULL ? strtoull(v, NULL, 10) : 0;
	sy_free(v);
	return rc;
}

sy_client_rc sy_cl_load_state(sy_client *c, sy_client_error *err)
{
	char *id = NULL, *hash = NULL;
	uint64_t frozen = 0, retired = 0;
	sy_client_rc rc = sy_cl_meta_get(c, "client_id", &id, err);
	if (rc == SY_CLIENT_OK && (id == NULL || !sy_uuid_valid(id, strlen(id))))
		rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "the store has no valid client_id");
	if (rc == SY_CLIENT_OK) {
		memcpy(c->client_id, id, SY_UUID_LEN + 1);
		rc = meta_u64(c, "generation", &c->generation, err);
	}
	if (rc == SY_CLIENT_OK)
		rc = meta_u64(c, "schema_version", &c->schema.version, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_meta_get(c, "schema_hash", &hash, err);
	if (rc == SY_CLIENT_OK)
		rc = meta_u64(c, "frozen", &frozen, err);
	if (rc == SY_CLIENT_OK)
		rc = meta_u64(c, "retired", &retired, err);
	if (rc == SY_CLIENT_OK) {
		c->frozen = frozen != 0;
		c->retired = retired != 0;
		c->schema.hash[0] = '\0';
		if (hash != NULL && strlen(hash) == SY_HASH_HEX_LEN)
			memcpy(c->schema.hash, hash, SY_HASH_HEX_LEN + 1);
		sy_manifest_free(c->manifest);
		c->manifest =
		        c->schema.version != 0 ? sy_cl_schema_manifest(c, c->schema.version) : NULL;
		if (c->schema.version != 0 && c->manifest == NULL)
			rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "the current schema is not stored");
	}
	sy_free(id);
	sy_free(hash);
	return rc;
}

char *sy_cl_jcs(const sy_json *v, size_t *len)
{
	sy_buf b = SY_BUF_INIT;
	sy_error e = {0};
	if (!sy_jcs_write(&b, v, &e)) {
		sy_buf_free(&b);
		return NULL;
	}
	if (b.data == NULL && !sy_buf_puts(&b, ""))
		return NULL;
	return sy_buf_steal(&b, len);
}

const char *sy_cl_jstr(const sy_json *obj, const char *key)
{
	const sy_json *v = sy_json_get(obj, key);
	return v != NULL && v->type == SY_JSON_STRING ? v->u.string.data : NULL;
}
