-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 6: what pull and rebuild need beyond migration 1: the compaction horizon that
-- makes older cursors expire, the full stream position a rebuild session binds, and the
-- ordered scans of the changelog a pull page starts with.

SET ROLE synchro_owner;

-- doc/contract.md#cursors: a cursor older than retained history answers 409 cursor_expired.
-- synchroctl changelog compact removes every changelog entry at or below a position and raises this
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

-- doc/contract.md#rebuild: a rebuild session binds the position of the last materialized entry,
-- which is a commit LSN and the ordinal within that transaction (stream_lsn of migration 1 is the
-- first half).
ALTER TABLE synchro.rebuild_sessions
	ADD COLUMN stream_ordinal integer NOT NULL DEFAULT 0 CHECK (stream_ordinal >= 0);

GRANT SELECT ON synchro.changelog_horizon TO synchro_app, synchro_walsync;

-- doc/contract.md#pull-changes, pull in commit order: the entries after a cursor that concern a
-- user (tables read by all; owner-read tables whose owner before or after the entry is the user),
-- at most p_limit of them among the next p_budget entries. Always an ordered scan of the
-- changelog's primary key that stops when p_limit entries are found: the planner cannot know how
-- many entries concern one user, and would otherwise sort a whole stretch of history. The SET
-- clauses hold for these statements only.
-- visible tells whether the source transaction is visible in the caller's snapshot (the
-- function is STABLE, so it runs in that snapshot): walsync decodes a commit once its WAL
-- is flushed, which can be an instant before the committing backend makes it visible, and
-- a pull must not read the source row of such an entry yet, nor move its cursor past it.
-- Such a source is in the snapshot's in-progress list: walsync's own transaction, which
-- the snapshot sees, took its xid after the source did, so the source's xid is below xmax.
-- An xid at or past xmax can only be a misread one, and never holds a pull back.
CREATE FUNCTION synchro.pull_window(p_lsn pg_lsn, p_ordinal integer, p_user text,
	p_all text[], p_owner text[], p_limit integer, p_budget integer)
	RETURNS TABLE (commit_lsn pg_lsn, ordinal integer, table_id text, pk text, version text,
		mutation_id uuid, client_id uuid, owner_after text, visible boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $fn$
	SELECT s.commit_lsn, s.ordinal, s.table_id, s.pk, s.version, s.mutation_id, s.client_id,
		s.owner_after,
		s.xid IS NULL OR s.xid >= pg_snapshot_xmax(pg_current_snapshot())
		OR pg_visible_in_snapshot(s.xid, pg_current_snapshot())
	  FROM (SELECT l.commit_lsn, l.ordinal, l.xid, l.table_id, l.pk, l.version,
			l.mutation_id, l.client_id, l.owner_before, l.owner_after
		  FROM synchro.changelog l
		 WHERE (l.commit_lsn, l.ordinal) > (p_lsn, p_ordinal)
		 ORDER BY l.commit_lsn, l.ordinal
		 LIMIT p_budget) s
	 WHERE s.table_id = ANY (p_all)
	    OR (s.table_id = ANY (p_owner) AND (s.owner_before = p_user OR s.owner_after = p_user))
	 ORDER BY s.commit_lsn, s.ordinal
	 LIMIT p_limit
$fn$;

-- doc/contract.md#rebuild, the stream position a rebuild session binds: the last entry whose source
-- transaction, and every earlier one's, is visible in the caller's snapshot (see
-- pull_window), so that the rows the rebuild reads in that snapshot include every entry
-- at or before the position. Transactions not yet visible are the latest few commits; the
-- search looks at the last p_recent entries.
CREATE FUNCTION synchro.changelog_visible_tail(p_recent integer,
	OUT commit_lsn pg_lsn, OUT ordinal integer) RETURNS SETOF record
LANGUAGE sql STABLE ROWS 1
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $fn$
	WITH recent AS MATERIALIZED (
		SELECT l.commit_lsn, l.ordinal, l.xid FROM synchro.changelog l
		 ORDER BY l.commit_lsn DESC, l.ordinal DESC LIMIT p_recent),
	cut AS (
		SELECT min(r.commit_lsn) AS commit_lsn FROM recent r
		 WHERE r.xid < pg_snapshot_xmax(pg_current_snapshot())
		   AND NOT pg_visible_in_snapshot(r.xid, pg_current_snapshot()))
	SELECT l.commit_lsn, l.ordinal FROM synchro.changelog l, cut
	 WHERE cut.commit_lsn IS NULL OR l.commit_lsn < cut.commit_lsn
	 ORDER BY l.commit_lsn DESC, l.ordinal DESC LIMIT 1
$fn$;

-- The position of the p_n-th entry after a position (none when there are fewer): where a
-- pull continues when its scan budget ran out before its page filled.
CREATE FUNCTION synchro.changelog_nth_after(p_lsn pg_lsn, p_ordinal integer, p_n integer,
	OUT commit_lsn pg_lsn, OUT ordinal integer) RETURNS SETOF record
LANGUAGE sql STABLE ROWS 1
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $fn$
	SELECT l.commit_lsn, l.ordinal FROM synchro.changelog l
	 WHERE (l.commit_lsn, l.ordinal) > (p_lsn, p_ordinal)
	 ORDER BY l.commit_lsn, l.ordinal
	 OFFSET p_n - 1 LIMIT 1
$fn$;

GRANT EXECUTE ON FUNCTION synchro.pull_window(pg_lsn, integer, text, text[], text[], integer,
	integer), synchro.changelog_nth_after(pg_lsn, integer, integer),
	synchro.changelog_visible_tail(integer) TO synchro_app;

RESET ROLE;
