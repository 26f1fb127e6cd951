-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 14: slot continuity. synchro-walsync records, in the transaction of each
-- changelog write (and before it confirms an idle position to the slot), the stream position
-- it materialized up to. A slot that does not cover that position (missing and created
-- again, created or advanced past it, a restored database) has lost the transactions in
-- between: walsync then calls synchro.stream_break, which expires every cursor and rebuild
-- session of the old stream and marks every accepted write materialized, and records the
-- break for synchroctl lease status (doc/operations.md "Slot continuity").
-- Refusals raised here carry SQLSTATEs of class SY (doc/operations.md):
--   SY020 the caller does not hold the writer lease
--   SY021 the new slot starts at or before the changelog's last entry

SET ROLE synchro_owner;

-- The position walsync materialized up to, durable: every commit at or below it that
-- carried a change is in the changelog (or compacted away). NULL until the first walsync of
-- this migration records one; slot is the slot it was read from.
CREATE TABLE synchro.stream_position (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	slot text,
	materialized_lsn pg_lsn,
	updated_at timestamptz
);
INSERT INTO synchro.stream_position (singleton) VALUES (true);
CREATE TRIGGER stream_position_no_truncate BEFORE TRUNCATE ON synchro.stream_position
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();

-- Every discontinuity walsync found, and what it did about it (never updated).
CREATE TABLE synchro.stream_breaks (
	break_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	detected_at timestamptz NOT NULL DEFAULT now(),
	writer_id text NOT NULL,
	writer_epoch bigint NOT NULL,
	slot text NOT NULL,
	reason text NOT NULL,
	materialized_lsn pg_lsn,
	slot_lsn pg_lsn NOT NULL,
	horizon_lsn pg_lsn NOT NULL,
	horizon_ordinal integer NOT NULL,
	clients bigint NOT NULL
);

-- The resolution of a break, chosen over completing the changelog from the fences
-- (doc/operations.md says why): in one transaction under the caller's lease, the compaction
-- horizon moves just past the last position any cursor or rebuild session can hold, so every
-- one of them answers cursor_expired or rebuild_invalidated and its client rebuilds from the
-- rows themselves; every client's accepted epoch counts as materialized, so no pull waits
-- for a write whose messages are gone; the stream position becomes the new slot's. Refused
-- (SY021) when the new slot starts at or before that position: its LSNs would sort before
-- entries already given out (a database restored from a logical dump into another cluster).
CREATE FUNCTION synchro.stream_break(p_writer_epoch bigint, p_token uuid, p_slot text,
	p_reason text, p_slot_lsn pg_lsn,
	OUT horizon_lsn pg_lsn, OUT horizon_ordinal integer, OUT clients bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_writer text;
	v_lsn pg_lsn;
	v_ord integer;
	v_tail_lsn pg_lsn;
	v_tail_ord integer;
	v_mat pg_lsn;
BEGIN
	SELECT l.writer_id INTO v_writer FROM synchro.writer_lease l
	 WHERE l.role = 'walsync' AND l.writer_epoch = p_writer_epoch
	   AND l.fencing_token = p_token AND l.lease_until > now()
	   FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'synchro: writer lease epoch % is not the holder''s', p_writer_epoch
			USING ERRCODE = 'SY020';
	END IF;
	SELECT h.commit_lsn, h.ordinal INTO v_lsn, v_ord FROM synchro.changelog_horizon h
	   FOR UPDATE;
	SELECT l.commit_lsn, l.ordinal INTO v_tail_lsn, v_tail_ord FROM synchro.changelog l
	 ORDER BY l.commit_lsn DESC, l.ordinal DESC LIMIT 1;
	IF v_tail_lsn IS NOT NULL AND (v_tail_lsn, v_tail_ord) > (v_lsn, v_ord) THEN
		v_lsn := v_tail_lsn;
		v_ord := v_tail_ord;
	END IF;
	IF p_slot_lsn <= v_lsn THEN
		RAISE EXCEPTION 'synchro: slot % starts at %, not after the changelog''s end %',
			p_slot, p_slot_lsn, v_lsn USING ERRCODE = 'SY021';
	END IF;
	horizon_lsn := v_lsn;
	horizon_ordinal := v_ord + 1;
	UPDATE synchro.changelog_horizon h SET commit_lsn = horizon_lsn,
		ordinal = horizon_ordinal, compacted_at = now();
	DELETE FROM synchro.rebuild_sessions s
	 WHERE (s.stream_lsn, s.stream_ordinal) < (horizon_lsn, horizon_ordinal);
	INSERT INTO synchro.client_progress AS p (client_id, materialized_write_epoch)
	SELECT c.client_id, c.accepted_write_epoch FROM synchro.clients c
	 WHERE c.accepted_write_epoch > 1
	ON CONFLICT (client_id) DO UPDATE
	   SET materialized_write_epoch = EXCLUDED.materialized_write_epoch
	 WHERE p.materialized_write_epoch < EXCLUDED.materialized_write_epoch;
	GET DIAGNOSTICS clients = ROW_COUNT;
	SELECT s.materialized_lsn INTO v_mat FROM synchro.stream_position s FOR UPDATE;
	UPDATE synchro.stream_position SET slot = p_slot, materialized_lsn = p_slot_lsn,
		updated_at = now();
	INSERT INTO synchro.stream_breaks (writer_id, writer_epoch, slot, reason,
		materialized_lsn, slot_lsn, horizon_lsn, horizon_ordinal, clients)
	VALUES (v_writer, p_writer_epoch, p_slot, p_reason, v_mat, p_slot_lsn, horizon_lsn,
		horizon_ordinal, clients);
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.stream_break(bigint, uuid, text, text, pg_lsn) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.stream_break(bigint, uuid, text, text, pg_lsn)
	TO synchro_walsync;

GRANT SELECT, UPDATE ON synchro.stream_position TO synchro_walsync;
GRANT SELECT ON synchro.stream_breaks TO synchro_walsync;
GRANT SELECT ON synchro.stream_position, synchro.stream_breaks TO synchro_app;

RESET ROLE;
