-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 23: only Synchro writes the membership and link changes walsync believes. Any role
-- may call pg_logical_emit_message, so a membership or link message proves nothing; a forged
-- removal would hide a scope's rows from a user until its membership changed again. From
-- now on the scope trigger (src/pg/scope_trigger.c) writes each change as a row of
-- synchro.scope_changes, a table of the publication that only synchro_owner writes, and emits
-- no message: the row is the change, so there is nothing to pair. Walsync reads the rows from
-- the stream and refuses every membership or link message of a transaction committed after
-- the position this migration records (doc/operations.md "Forged messages").
-- Retention: the trigger deletes each row in its own transaction, right after writing it;
-- the stream keeps the insert, the table keeps nothing (its dead rows go to vacuum). REPLICA
-- IDENTITY NOTHING keeps that delete out of the stream, and refuses any UPDATE or DELETE by
-- statement, since the publication publishes them.
-- The module must be one whose scope trigger writes the rows (synchro.module_abi() >= 23).

DO $abi_level$
BEGIN
	IF synchro.module_abi() < 23 THEN
		RAISE EXCEPTION 'synchro: migration 23 needs the server module of its release; the installed synchro module serves migration %', synchro.module_abi()
			USING ERRCODE = '0A000',
			      HINT = 'Install the new module (make install, or the package) first, then run synchroctl migrate again (doc/operations.md, migration 23).';
	END IF;
END
$abi_level$;

-- Writers of memberships and links wait here: a publish that seeds the mirror (ROW EXCLUSIVE
-- on it conflicts with SHARE), then every relation with a scope trigger. Each transaction that
-- emitted a membership or link message before this migration has committed below the position
-- recorded last; each later one sees synchro.scope_changes and writes rows instead.
LOCK TABLE synchro.scope_members, synchro.scope_links IN SHARE MODE;
DO $lock$
DECLARE
	r regclass;
BEGIN
	FOR r IN SELECT DISTINCT t.tgrelid::regclass FROM pg_catalog.pg_trigger t
	          WHERE t.tgname = 'synchro_scope' ORDER BY 1 LOOP
		EXECUTE format('LOCK TABLE %s IN SHARE MODE', r);
	END LOOP;
END
$lock$;

SET ROLE synchro_owner;

-- One membership or link change of a scope trigger, as its message carried it: kind 'member'
-- or 'link', the scope or link, the key and the user (or the hop's column) before and after.
CREATE TABLE synchro.scope_changes (
	kind text NOT NULL,
	scope text NOT NULL,
	key_before text,
	value_before text,
	key_after text,
	value_after text
);
ALTER TABLE synchro.scope_changes REPLICA IDENTITY NOTHING;
CREATE TRIGGER scope_changes_no_truncate BEFORE TRUNCATE ON synchro.scope_changes
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();

-- Transactions committed after this position have their membership and link messages refused.
ALTER TABLE synchro.stream_position ADD COLUMN scope_messages_verified_from pg_lsn;
UPDATE synchro.stream_position
   SET scope_messages_verified_from = pg_catalog.pg_current_wal_insert_lsn();

RESET ROLE;

-- The publication belongs to the installer (migration 3), who runs this part.
ALTER PUBLICATION synchro ADD TABLE synchro.scope_changes;
