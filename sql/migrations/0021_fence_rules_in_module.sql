-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 21: the fence table's row rules in the server module (src/pg/version_fence.c), as
-- migration 17 did for the ledger. The two CHECK constraints of synchro.row_fences (state, of
-- migration 1; version, of migration 8) become one CHECK calling synchro.row_fence_rules, a C
-- function that holds exactly their rules and still names the broken one in its refusal
-- (SQLSTATE 23514, the same message). PostgreSQL reads every CHECK's expression back from its
-- text at each execution of a statement that writes the table, and the version fence's upsert
-- runs on every write of a synced table, the application's own writes as well as a push's.
-- A CHECK is evaluated on every update of a row, whichever column it sets: synchro_walsync,
-- which may update source_lsn, may execute the function.
-- The new constraint is added NOT VALID, as migration 17's: every stored row passed the same
-- rules when it was written (ALTER TABLE ... VALIDATE CONSTRAINT confirms it later without
-- blocking writes). Creating a C function needs a superuser, as migration 13 did; the module
-- must be one that has the function (synchro.module_abi() >= 21, migration 18).

DO $check$
BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
		RAISE EXCEPTION 'synchro: migration 21 installs a C function of the module synchro and must run as a superuser'
			USING ERRCODE = '42501',
			      HINT = 'Run synchroctl migrate (or psql -f install.sql) as a superuser.';
	END IF;
END
$check$;

DO $abi_level$
BEGIN
	IF synchro.module_abi() < 21 THEN
		RAISE EXCEPTION 'synchro: migration 21 needs the server module of its release; the installed synchro module serves migration %', synchro.module_abi()
			USING ERRCODE = '0A000',
			      HINT = 'Install the new module (make install, or the package) first, then run synchroctl migrate again (doc/operations.md, migration 21).';
	END IF;
END
$abi_level$;

CREATE FUNCTION synchro.row_fence_rules(state text, version text) RETURNS boolean
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'synchro', 'synchro_row_fence_rules';
ALTER FUNCTION synchro.row_fence_rules(text, text) OWNER TO synchro_owner;
REVOKE ALL ON FUNCTION synchro.row_fence_rules(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.row_fence_rules(text, text) TO synchro_walsync;

SET ROLE synchro_owner;

ALTER TABLE synchro.row_fences
	DROP CONSTRAINT row_fences_state_check,
	DROP CONSTRAINT row_fences_version_check,
	ADD CONSTRAINT row_fences_row_rules CHECK (synchro.row_fence_rules(state, version)) NOT VALID;

RESET ROLE;
