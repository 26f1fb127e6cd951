-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 5: what synchro-walsync needs beyond migration 1: the accepted-epoch message that
-- lets it advance materialized_write_epoch in commit order, and the progress columns its
-- heartbeat keeps in the writer lease for synchroctl lease status.

SET ROLE synchro_owner;

-- doc/contract.md#accepted-write-epoch: accepted_write_epoch advances in the push transaction;
-- pull's read-your-writes wait needs to know when the WAL pipeline has materialized everything up
-- to that epoch. Each increase emits one transactional logical message (prefix synchro-epoch, JSON
-- {"client_id","epoch"}) in the same transaction as the push's rows and their fence
-- messages, so walsync sees it at that transaction's commit, in commit order, and raises
-- materialized_write_epoch in the same changelog transaction as those rows. The push path
-- needs nothing beyond its UPDATE of accepted_write_epoch.
CREATE FUNCTION synchro.emit_accepted_epoch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	PERFORM pg_logical_emit_message(true, 'synchro-epoch', json_build_object(
		'client_id', NEW.client_id, 'epoch', NEW.accepted_write_epoch)::text);
	RETURN NULL;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.emit_accepted_epoch() FROM PUBLIC;
CREATE TRIGGER clients_accepted_epoch AFTER UPDATE OF accepted_write_epoch ON synchro.clients
	FOR EACH ROW WHEN (NEW.accepted_write_epoch > OLD.accepted_write_epoch)
	EXECUTE FUNCTION synchro.emit_accepted_epoch();

-- Progress the lease holder reports with each heartbeat (never used to decide anything):
-- the slot it reads, the end of the last commit it materialized, and how long after its
-- commit the newest materialized transaction became visible in the changelog.
ALTER TABLE synchro.writer_lease
	ADD COLUMN slot text,
	ADD COLUMN materialized_lsn pg_lsn,
	ADD COLUMN lag_ms bigint CHECK (lag_ms >= 0);

RESET ROLE;
