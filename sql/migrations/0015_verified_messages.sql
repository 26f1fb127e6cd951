-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 15: only Synchro writes what walsync believes. PostgreSQL lets every role call
-- pg_logical_emit_message, so a version-fence message proves nothing by itself; the fence
-- transition the trigger writes in the same transaction does (only synchro_owner writes
-- synchro.row_fences). The publication now streams synchro.row_fences, and walsync accepts
-- a version-fence message only when its own transaction made the transition it names
-- (doc/operations.md "Forged messages"). Fence rows hold no application column: still no
-- application row leaves the database through replication.

-- Writers of fences wait here (SHARE conflicts with their ROW EXCLUSIVE): every transaction
-- that wrote a fence before this migration has committed below the position recorded last,
-- and every later one writes its fences after the publication streams them.
LOCK TABLE synchro.row_fences IN SHARE MODE;

-- The publication belongs to the installer (migration 3), who runs this part.
ALTER PUBLICATION synchro ADD TABLE synchro.row_fences;

SET ROLE synchro_owner;

-- Transactions committed after this position are checked; earlier ones were decoded
-- without their fence transitions.
ALTER TABLE synchro.stream_position ADD COLUMN messages_verified_from pg_lsn;
UPDATE synchro.stream_position SET messages_verified_from = pg_catalog.pg_current_wal_insert_lsn();

RESET ROLE;
