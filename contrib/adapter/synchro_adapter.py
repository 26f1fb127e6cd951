# SPDX-License-Identifier: BSD-2-Clause
"""A Synchro push adapter for any WSGI server, on psycopg2 (doc/protocol.md "Writing an adapter")."""
import json
import random
import time
import psycopg2
import psycopg2.errors

def error(status, code, message, retryable=False):
    body = json.dumps({"error": {"code": code, "message": message, "retryable": retryable}},
                      sort_keys=True, separators=(",", ":")).encode()   # RFC 8785 for these bodies
    return status, body, [("Retry-After", "1")] if retryable else []

def push(db, user, protocol, body):
    """One POST /v3/push: user from your authentication, never from the request."""
    if not user:
        return error(401, "auth_required", "authentication required")
    if protocol != "3":
        return error(426, "upgrade_required", "this server speaks protocol 3")
    if len(body) > 1048576:
        return error(400, "invalid_request", "(root): the body exceeds 1048576 octets")
    status = None
    for _ in range(3):
        try:
            with db.cursor() as cur:   # db: autocommit, a login role in synchro_app only
                cur.execute("SELECT status, response, replay, retry_after"
                            " FROM synchro.synchro_push(%s, %s)", (user, psycopg2.Binary(body)))
                status, response, replay, retry_after = cur.fetchone()
                break
        except psycopg2.errors.TransactionRollbackError:   # deadlock: run it again, a little later
            time.sleep(random.uniform(0.01, 0.04))
            continue
        except psycopg2.Error:     # nothing was committed: the client retries the same bytes
            break
    if status is None:
        return error(503, "temporary_unavailable", "request could not be committed", True)
    headers = [("Synchro-Replay", "batch")] if replay else []
    return status, bytes(response), headers + ([("Retry-After", str(retry_after))] if retry_after else [])
