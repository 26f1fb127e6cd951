/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqlstate.h: the SQLSTATEs Synchro acts on, as one table (src/core/sqlstate.c). The server
 * module (src/pg) and the store (src/store) use it.
 *
 * Rules: doc/contract.md#operational-failures (which failures are tried again),
 * doc/operations.md#ddl-between-publishes (which say a statement no longer fits).
 * Notes: Some failures are tried again in a new transaction: the adapter runs synchro_push
 * again. Others say that what a statement names no longer fits.
 */
#ifndef SYNCHRO_SQLSTATE_H
#define SYNCHRO_SQLSTATE_H

#include "synchro/common.h"

/*
 * Whether the five-character SQLSTATE state (NUL-terminated; "" or NULL: none) rolled the
 * transaction back for a reason a new transaction may not meet: serialization_failure
 * (40001) and deadlock_detected (40P01).
 */
bool sy_sqlstate_retryable(const char *state);

/*
 * Whether state says that what the statement names no longer exists or fits: class 42,
 * syntax error or access rule violation (undefined column 42703, undefined table 42P01,
 * datatype mismatch 42804, undefined function 42883 for a cast).
 */
bool sy_sqlstate_is_mapping(const char *state);

#endif
