-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 13: the push runs inside PostgreSQL, as the one statement of
-- doc/contract.md#request-path: synchro.synchro_push(user_id, body, ...), a C function of the
-- server module synchro (src/pg, installed into pg_config --pkglibdir). It is SECURITY DEFINER
-- owned by synchro_owner with a pinned search_path, and only synchro_app may EXECUTE it; every
-- ledger write and every push write to an application table happens inside it, so
-- synchro_app loses those write grants (doc/operations.md "Roles and grants").
-- A C function can only be created by a superuser: this migration refuses to run as
-- anyone else, with that reason. doc/operations.md "Upgrading to migration 13" says why
-- this is a migration and not CREATE EXTENSION.

DO $check$
BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
		RAISE EXCEPTION 'synchro: migration 13 installs the C function synchro.synchro_push and must run as a superuser'
			USING ERRCODE = '42501',
			      HINT = 'Run synchroctl migrate (or psql -f install.sql) as a superuser once; later migrations need only synchro_owner.';
	END IF;
END
$check$;

-- The settings pin what the module reads and writes: canonical text output of every
-- portable type (doc/contract.md#portable-types: UTC, ISO, shortest exact floats, hex bytea), no
-- JIT for a statement of index probes, and the trigger functions of synced tables running as
-- synchro_owner with pg_catalog first and pg_temp last.
CREATE FUNCTION synchro.synchro_push(user_id text, body bytea,
	lock_timeout_ms integer DEFAULT 0, max_inflight integer DEFAULT 0,
	max_inflight_per_client integer DEFAULT 0, retry_after_s integer DEFAULT 1,
	OUT status integer, OUT response bytea, OUT replay boolean, OUT retry_after integer)
RETURNS record
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET "DateStyle" = 'ISO, YMD'
SET "TimeZone" = 'UTC'
SET extra_float_digits = 1
SET bytea_output = 'hex'
SET "IntervalStyle" = 'postgres'
SET jit = off
AS 'synchro', 'synchro_push';

ALTER FUNCTION synchro.synchro_push(text, bytea, integer, integer, integer, integer)
	OWNER TO synchro_owner;
REVOKE ALL ON FUNCTION synchro.synchro_push(text, bytea, integer, integer, integer, integer)
	FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_push(text, bytea, integer, integer, integer, integer)
	TO synchro_app;

SET ROLE synchro_owner;

-- The responders no longer write ledgers or lock fences themselves.
REVOKE INSERT ON synchro.batches, synchro.mutations FROM synchro_app;
REVOKE UPDATE ON synchro.batches FROM synchro_app;
REVOKE UPDATE (accepted_write_epoch) ON synchro.clients FROM synchro_app;
REVOKE EXECUTE ON FUNCTION synchro.lock_fence(text, text) FROM synchro_app;

RESET ROLE;

-- Tables published before this migration: synchro_owner gets the writes (the push writes
-- as it), synchro_app keeps reading (pull, rebuild) and loses its writes. schema publish
-- grants the same from now on. Unqualified relations resolve as publish resolved them.
DO $grants$
DECLARE
	v_rel regclass;
	v_seq record;
BEGIN
	FOR v_rel IN
		SELECT DISTINCT pg_catalog.to_regclass(t.value ->> 'relation')
		  FROM synchro.schema_versions v,
		       LATERAL pg_catalog.jsonb_array_elements(v.manifest::jsonb -> 'tables') t
		 WHERE v.version = (SELECT max(version) FROM synchro.schema_versions)
	LOOP
		CONTINUE WHEN v_rel IS NULL;
		EXECUTE pg_catalog.format('GRANT SELECT ON TABLE %s TO synchro_app', v_rel);
		EXECUTE pg_catalog.format(
			'REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON TABLE %s FROM synchro_app', v_rel);
		EXECUTE pg_catalog.format(
			'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE %s TO synchro_owner', v_rel);
		EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %I TO synchro_owner',
			(SELECT n.nspname FROM pg_catalog.pg_class c
			   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			  WHERE c.oid = v_rel));
		FOR v_seq IN
			SELECT s.oid::regclass AS seq FROM pg_catalog.pg_depend d
			  JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
			 WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND d.refobjid = v_rel AND d.deptype IN ('a', 'i')
		LOOP
			EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO synchro_owner', v_seq.seq);
		END LOOP;
	END LOOP;
END
$grants$;
