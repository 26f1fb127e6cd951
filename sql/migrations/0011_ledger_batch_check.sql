-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 11: "every mutation ledger row names a batch of its client" checked once per
-- statement instead of once per row. The foreign key of migration 1 ran one referential
-- query per mutation row; a push writes all its mutation rows in one statement, and in
-- contrib/bench/push those per-row checks were about 4% of PostgreSQL's CPU per pushed
-- mutation. Two statement-level triggers keep the same rule: inserted mutation rows must
-- name an existing batch, and a batch cannot be deleted while mutation rows name it (the
-- retirement purge deletes the mutations first). Ledger keys never change (the update
-- triggers refuse it), so inserts and deletes are the only ways to break the rule.

SET ROLE synchro_owner;

ALTER TABLE synchro.mutations DROP CONSTRAINT mutations_user_id_client_id_batch_id_fkey;

CREATE FUNCTION synchro.mutations_after_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF EXISTS (SELECT 1 FROM synchro_new_mutations n
	           WHERE NOT EXISTS (SELECT 1 FROM synchro.batches b
	                             WHERE b.user_id = n.user_id AND b.client_id = n.client_id
	                               AND b.batch_id = n.batch_id)) THEN
		RAISE EXCEPTION 'synchro: a mutation ledger row names no batch of its client'
			USING ERRCODE = 'foreign_key_violation';
	END IF;
	RETURN NULL;
END
$fn$;
CREATE TRIGGER mutations_after_insert AFTER INSERT ON synchro.mutations
	REFERENCING NEW TABLE AS synchro_new_mutations
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.mutations_after_insert();

CREATE FUNCTION synchro.batches_after_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF EXISTS (SELECT 1 FROM synchro_old_batches o
	           JOIN synchro.mutations m ON m.batch_id = o.batch_id
	                                   AND m.user_id = o.user_id
	                                   AND m.client_id = o.client_id) THEN
		RAISE EXCEPTION 'synchro: a batch named by mutation ledger rows stays'
			USING ERRCODE = 'foreign_key_violation';
	END IF;
	RETURN NULL;
END
$fn$;
CREATE TRIGGER batches_after_delete AFTER DELETE ON synchro.batches
	REFERENCING OLD TABLE AS synchro_old_batches
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.batches_after_delete();

REVOKE EXECUTE ON FUNCTION synchro.mutations_after_insert(), synchro.batches_after_delete()
	FROM PUBLIC;

RESET ROLE;
