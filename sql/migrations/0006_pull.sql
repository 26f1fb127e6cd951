-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 6: what pull and rebuild need beyond migration 1: the compaction horizon that
-- makes older cursors expire, and the full stream position a rebuild session binds.

SET ROLE synchro_owner;

-- PROTOCOL 7: a cursor older than retained history answers 409 cursor_expired. synchroctl
-- changelog compact removes every changelog entry at or below a position and raises this
-- one row to it, in one transaction: a cursor below the horizon may have missed removed
-- entries, a cursor at or above it has not. The horizon never goes down.
CREATE TABLE synchro.changelog_horizon (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	commit_lsn pg_lsn NOT NULL,
	ordinal integer NOT NULL CHECK (ordinal >= 0),
	compacted_at timestamptz
);
INSERT INTO synchro.changelog_horizon (commit_lsn, ordinal) VALUES ('0/0', 0);
CREATE TRIGGER changelog_horizon_no_truncate BEFORE TRUNCATE ON synchro.changelog_horizon
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();

-- PROTOCOL 8: a rebuild session binds the position of the last materialized entry, which is
-- a commit LSN and the ordinal within that transaction (stream_lsn of migration 1 is the
-- first half).
ALTER TABLE synchro.rebuild_sessions
	ADD COLUMN stream_ordinal integer NOT NULL DEFAULT 0 CHECK (stream_ordinal >= 0);

GRANT SELECT ON synchro.changelog_horizon TO synchro_app, synchro_walsync;

RESET ROLE;
