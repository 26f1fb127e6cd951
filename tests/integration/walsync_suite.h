/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of test_walsync.pgt (synchro-walsync processes against a real PostgreSQL)
 * share: the fixture, the walsync processes it starts and stops, waits, the expected changelog. */
#ifndef SY_WALSYNC_SUITE_H
#define SY_WALSYNC_SUITE_H

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pgtest.h"
#include "store/changelog.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/migrations.h"
#include "testutil.h"

#define CLIENT "c0000000-0000-4000-8000-0000000000c1"
#define MUT1   "a0000000-0000-4000-8000-000000000001"
#define MUT2   "a0000000-0000-4000-8000-000000000002"
#define MUT3   "a0000000-0000-4000-8000-000000000003"

#define STALE_S 2
/* Bounds of every wait (milliseconds). */
#define WAIT_TAKEOVER 20000
#define WAIT_ROWS     20000

/* Every walsync this suite started, reaped at the end. */
typedef struct {
	char name[16];
	pid_t pid;
	bool running;
} proc;
#define MAX_PROCS 128

extern PGconn *db;
extern char ctl_bin[1024];
extern proc procs[MAX_PROCS];
extern int nprocs;

long long now_ms(void);

void pause_ms(int ms);

/* The first value of a query, without recording a failure (for polling); a new string the
 * caller frees, or NULL on SQL NULL, no row or an error. */
char *peek(const char *fmt, ...) SY_PRINTF(1, 2);
char *peek(const char *fmt, ...);

long long peek_int(const char *fmt, ...) SY_PRINTF(1, 2);
long long peek_int(const char *fmt, ...);

/* Polls sql (one boolean) until it is true, at most ms; whether it became true. */
bool wait_true(int ms, const char *fmt, ...) SY_PRINTF(2, 3);
bool wait_true(int ms, const char *fmt, ...);
extern const char *extra_conf;

/* Starts synchro-walsync with writer_id name, its log in tmpdir/name.log; env_name, when
 * set, is one test switch of the environment with its value. */
pid_t start_walsync(const char *name, const char *env_name, const char *env_value);

/* kill() of one started process; never 0 or -1 (a process group, everything). */
void signal_proc(pid_t pid, int sig);

/* Waits for pid to exit (at most ms); its wait status, or -1 when it did not. */
int wait_exit(pid_t pid, int ms);

/* Waits until pid is stopped (SIGSTOP); whether it is. */
bool wait_stopped(pid_t pid, int ms);

/* SIGTERM, then the exit status (0 expected); SIGKILL after the bound. */
int stop_walsync(pid_t pid);

bool log_has(const char *name, const char *text);

bool wait_log(const char *name, const char *text, int ms);

/*
 * Waits until writer_id holds the lease and streams from the slot; its epoch, or -1. An
 * active slot alone is not enough: the walsender that creates it holds it too, before its
 * consistent point, and a write committed then is never decoded (the test's first write went
 * missing that way on a loaded machine). A walsender past 'startup' has run START_REPLICATION.
 */
long long wait_leader(const char *writer_id);
extern int nexpected;

void expect(const char *table_id, const char *pk, const char *mutation, const char *client,
            const char *user, const char *before, const char *after);

/* Compares the changelog rows from position (after_lsn, exclusive) in position order, as
 * expect() formats them, with the expected ones; fails the test on any difference. */
void check_changelog_since(const char *after_lsn);

char *last_lsn(void);
extern pid_t leader_a;

void test_direct_writes(void);

/* Mutation, client and user ids of the transaction-local settings travel with each change;
 * cleared settings make a direct write again, within one transaction. */
void test_mutation_ids(void);

/* Changelog order is commit order: transactions that interleave their writes appear whole,
 * in the order they committed. */
void test_commit_order(void);

/* materialized_write_epoch follows the accepted pushes as their transactions are decoded,
 * in the changelog transaction of their rows, never past accepted_write_epoch. */
void test_epochs(void);

/* The guard of every changelog statement, through the store: a lease whose token or epoch
 * no longer matches, or that expired, writes nothing; the heartbeat never claims. */
void test_lease_guard(void);

/* synchroctl lease status: holder, epoch, expiry, heartbeat age, slot and lag. */
void test_lease_status(void);

long long current_epoch(void);

/* A writer that dies after its changelog commit and before confirming it: the slot delivers
 * those transactions again to the next writer, which adds nothing twice. */
void test_crash_before_confirm(void);

/* kill -9 of the leading walsync in the middle of a stream: the standby takes over and the
 * changelog holds every transition of the writer loop exactly once, in commit order. */
void test_kill9_takeover(void);

/* A leader paused (SIGSTOP) past a takeover and then resumed cannot write: its write is
 * refused, it goes back to standby, and the changelog has each transition once. Then the
 * same for a holder paused while idle, whose heartbeat is refused. */
void test_paused_leader(void);

/* PostgreSQL restarts under a running leader: it reconnects, renews or claims the lease
 * again, and streams on from the slot; nothing is lost or doubled. */
void test_reconnect(void);

/* Entries compacted away (synchroctl changelog compact raises synchro.changelog_horizon) do
 * not come back when the slot delivers their transactions again. */
void test_compacted_not_resurrected(void);

/* A walsync that stops and starts again on its own slot finds no break: the durable
 * position covers what it confirmed, idle keepalives included. */
void test_restart_is_continuous(void);

/*
 * The slot dropped while walsync is down (an operator's mistake, a restore, a failover on
 * PostgreSQL 15): the writes committed in between never reach the changelog. walsync finds
 * the break, logs it as an error, expires every cursor and rebuild session before the new
 * slot and marks every accepted write materialized; synchroctl lease status shows it; later
 * writes stream on.
 */
void test_slot_dropped(void);

/* The slot dropped and created again (or advanced) behind walsync's back: it starts past
 * the durable position, which is a break as well. */
void test_slot_recreated(void);

/* ---- forged messages (migration 15, doc/operations.md "Forged messages") ---- */

/*
 * Any role may call pg_logical_emit_message. A role without a single privilege forges a
 * delete of alice's live row (her row leaving her scope), and a message with a key no table
 * type reads; a superuser slips a forged message into a transaction of its own genuine
 * write. None reaches the changelog; the genuine write does, and the stream goes on.
 */
void test_forged_messages(void);

/* ---- DDL between publishes (migration 16) ---- */

/*
 * The owner column renamed before the publish that follows: a write in that window would
 * carry no owner and reach its owner by pull never. The fence refuses it (SY010) until the
 * fence names the new column; then writes carry their owner again.
 */
void test_owner_column_renamed(void);

/* ---- large transactions ---- */

/*
 * A transaction whose changelog write takes longer than the stale-heartbeat limit (2 s here;
 * the test holds a lock the write waits for), with a standby waiting: the holder's heartbeat
 * keeps the lease on its own connection, so no takeover fences the write and nothing is
 * redone. The transaction (20000 changes, batch_rows 500) is written in pieces of 4000,
 * each change once, in order.
 */
void test_large_transaction(void);

/* ---- membership scopes (migration 22) ---- */

/*
 * Application writes through the fence and scope triggers: each change of a members-scoped
 * table carries its readers; a membership that comes or goes, a to-do moved between lists and
 * a project moved between teams make entries for the rows of the scope at their current
 * versions, after the transaction's own; the mirror is written with them and survives a
 * restart and a takeover after kill -9.
 */
void test_scope_effects(void);

/* test_walsync.c: the suite's temporary directory (logs, configurations). */
const char *test_tmpdir(void);

/* test_walsync_clock.c: libfaketime's library, or NULL when it is not installed. */
const char *faketime_library(void);

/* Clock steps of walsync's host (libfaketime): the lease stays right, the lag is the
 * primary's clock's. */
void test_clock_steps(void);

#endif
