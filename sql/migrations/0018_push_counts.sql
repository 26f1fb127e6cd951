-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 18: synchro_push also says what it decided, for the adapter's metrics
-- (doc/operations.md "Metrics"), so that no adapter parses a 200 body to count it:
-- - error: the request-level error code of the answer (the codes of doc/contract.md#error-codes:
-- invalid_request,
--   retry_later, ...); NULL for a 200 and for an exact batch replay.
-- - counts: for a first execution answered 200, the outcomes it decided, eleven integers in
--   this order: applied, version_conflict, row_already_exists, row_deleted, row_not_found,
--   policy_rejected, validation_failed, table_not_synced, schema_incompatible,
--   atomic_batch_rejected, then the mutations answered with the stored outcome of another
--   batch (cross-batch replays); NULL for every other answer.
-- - sqlstate: the SQLSTATE of the database error that rolled a first execution back and made
--   the answer 503 (55P03 for a lock wait past lock_timeout_ms); NULL otherwise.
-- The four columns before them are unchanged, so an adapter that selects them by name (as
-- doc/protocol.md "Writing an adapter" does) keeps working. A function's result type cannot
-- be altered in place: it is dropped and created again, with the same settings and grants,
-- in this migration's transaction. Creating a C function needs a superuser, as migration
-- 13 did.

DO $check$
BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
		RAISE EXCEPTION 'synchro: migration 18 creates the C function synchro.synchro_push again and must run as a superuser'
			USING ERRCODE = '42501',
			      HINT = 'Run synchroctl migrate (or psql -f install.sql) as a superuser.';
	END IF;
END
$check$;

-- The module must be the one this migration declares for: a module from before it would
-- answer the seven-column declaration with four values (a backend crash). Only a module of
-- migration 18 or later has the symbol synchro_module_abi; creating a function on it fails
-- at once otherwise, before anything below has changed.
DO $abi$
BEGIN
	CREATE FUNCTION synchro.module_abi() RETURNS integer
		LANGUAGE C IMMUTABLE PARALLEL SAFE STRICT
		AS 'synchro', 'synchro_module_abi';
EXCEPTION WHEN undefined_function OR undefined_file THEN
	RAISE EXCEPTION 'synchro: migration 18 needs the server module of its release; the installed synchro module is older'
		USING ERRCODE = '0A000',
		      HINT = 'Install the new module (make install, or the package) first, then run synchroctl migrate again (doc/operations.md, migration 18).';
END
$abi$;
ALTER FUNCTION synchro.module_abi() OWNER TO synchro_owner;
REVOKE ALL ON FUNCTION synchro.module_abi() FROM PUBLIC;
DO $abi_level$
BEGIN
	IF synchro.module_abi() < 18 THEN
		RAISE EXCEPTION 'synchro: the installed synchro module serves migration %, older than 18', synchro.module_abi()
			USING ERRCODE = '0A000';
	END IF;
END
$abi_level$;

DROP FUNCTION synchro.synchro_push(text, bytea, integer, integer, integer, integer);

CREATE FUNCTION synchro.synchro_push(user_id text, body bytea,
	lock_timeout_ms integer DEFAULT 0, max_inflight integer DEFAULT 0,
	max_inflight_per_client integer DEFAULT 0, retry_after_s integer DEFAULT 1,
	OUT status integer, OUT response bytea, OUT replay boolean, OUT retry_after integer,
	OUT error text, OUT counts integer[], OUT sqlstate text)
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
