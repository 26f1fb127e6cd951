-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 20: the version fence in the server module (src/pg/version_fence.c). The trigger
-- function synchro.version_fence of migrations 2, 4 and 16 runs on every write of a synced
-- table, the application's own writes as well as a push's; in plpgsql it turned both whole
-- rows into jsonb and ran two statements per row under a pinned search_path. The C function
-- has the same rules and refusals (message, DETAIL, HINT, SQLSTATE), upserts the fence with
-- the same statement and emits the same logical message, byte for byte, so walsync and the
-- changelog see no difference (tests/integration/test_version_fence.c runs both side by
-- side). It keeps its name, signature, owner and grants: every installed trigger
-- (install_fence_trigger) calls it from the next statement on, without being installed again.
-- It is SECURITY DEFINER, as before, but pins no search_path (a GUC save and restore per
-- row): its statement names every schema, function and operator, as migration 17's do.
-- Creating a C function needs a superuser, as migration 13 did; the module must be one that
-- has the function (synchro.module_abi() >= 20, migration 18).

DO $check$
BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
		RAISE EXCEPTION 'synchro: migration 20 installs a C function of the module synchro and must run as a superuser'
			USING ERRCODE = '42501',
			      HINT = 'Run synchroctl migrate (or psql -f install.sql) as a superuser.';
	END IF;
END
$check$;

DO $abi_level$
BEGIN
	IF synchro.module_abi() < 20 THEN
		RAISE EXCEPTION 'synchro: migration 20 needs the server module of its release; the installed synchro module serves migration %', synchro.module_abi()
			USING ERRCODE = '0A000',
			      HINT = 'Install the new module (make install, or the package) first, then run synchroctl migrate again (doc/operations.md, migration 20).';
	END IF;
END
$abi_level$;

-- The same function (its OID, which every fence trigger names), now in C.
CREATE OR REPLACE FUNCTION synchro.version_fence() RETURNS trigger
LANGUAGE C SECURITY DEFINER AS 'synchro', 'synchro_version_fence';
ALTER FUNCTION synchro.version_fence() OWNER TO synchro_owner;
REVOKE ALL ON FUNCTION synchro.version_fence() FROM PUBLIC;
