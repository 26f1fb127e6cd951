-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 9: materialized_write_epoch moves to a table only synchro-walsync writes.
-- Every push holds its client's row FOR NO KEY UPDATE for its whole transaction, so
-- walsync's UPDATE of clients.materialized_write_epoch waited on pushes most of the time
-- under a push load (contrib/bench/pull: commit-to-visible p99 1.6 s). The foreign key
-- below takes FOR KEY SHARE on the clients row, which conflicts only with FOR UPDATE
-- (retirement, rare), never with the pushes' FOR NO KEY UPDATE.

SET ROLE synchro_owner;

CREATE TABLE synchro.client_progress (
	client_id uuid PRIMARY KEY REFERENCES synchro.clients,
	materialized_write_epoch bigint NOT NULL CHECK (materialized_write_epoch > 0)
);
-- A client without a row here has materialized epoch 1 (nothing accepted yet).
INSERT INTO synchro.client_progress (client_id, materialized_write_epoch)
	SELECT client_id, materialized_write_epoch FROM synchro.clients
	 WHERE materialized_write_epoch > 1;

-- The epoch never goes back (as clients_before_change enforced on the old column).
CREATE FUNCTION synchro.client_progress_before_update() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF NEW.client_id <> OLD.client_id
	   OR NEW.materialized_write_epoch < OLD.materialized_write_epoch THEN
		RAISE EXCEPTION 'synchro: client generation and write epochs never decrease'
			USING ERRCODE = 'SY002';
	END IF;
	RETURN NEW;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.client_progress_before_update() FROM PUBLIC;
CREATE TRIGGER client_progress_before_update BEFORE UPDATE ON synchro.client_progress
	FOR EACH ROW EXECUTE FUNCTION synchro.client_progress_before_update();

COMMENT ON COLUMN synchro.clients.materialized_write_epoch IS
	'Superseded by synchro.client_progress (migration 9): no longer written or read.';
REVOKE UPDATE (materialized_write_epoch) ON synchro.clients FROM synchro_walsync;

GRANT SELECT ON synchro.client_progress TO synchro_app;
GRANT SELECT, INSERT, UPDATE ON synchro.client_progress TO synchro_walsync;

RESET ROLE;
