-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 17: the ledger's guards in the server module (src/pg/ledger_guards.c). The same
-- rules, the same refusals, cheaper on the push path:
-- - The 25 CHECK constraints of synchro.batches and synchro.mutations become one CHECK per
--   table, calling a C function that holds exactly their rules and still names the broken
--   one in its refusal (SQLSTATE 23514). PostgreSQL reads each CHECK's expression back from
--   its text for every statement that writes the table: for a one-mutation push that was
--   about a tenth of the backend's CPU (contrib/bench/push/statements.sh).
-- - The trigger functions every push fires (batches_before_insert, mutations_after_insert,
--   clients_before_change, emit_accepted_epoch) become C functions of the same names,
--   rules and messages. They are SECURITY DEFINER without a pinned search_path (a setting
--   per row costs a GUC save and restore): their statements name every schema and operator.
-- The new constraints are added NOT VALID: every stored row passed the same rules when it
-- was written, and validating would hold the ledger's exclusive lock for a full scan
-- (ALTER TABLE ... VALIDATE CONSTRAINT confirms it later without blocking writes).
-- Creating C functions needs a superuser, as migration 13 did.

DO $check$
BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
		RAISE EXCEPTION 'synchro: migration 17 installs C functions of the module synchro and must run as a superuser'
			USING ERRCODE = '42501',
			      HINT = 'Run synchroctl migrate (or psql -f install.sql) as a superuser.';
	END IF;
END
$check$;

CREATE FUNCTION synchro.batch_row_rules(protocol_version integer, client_generation bigint,
	schema_version bigint, schema_hash text, fp_algorithm text, fp_version integer,
	fp_domain text, fingerprint bytea, state text, http_status integer, response bytea,
	completed_at timestamptz) RETURNS boolean
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'synchro', 'synchro_batch_row_rules';

CREATE FUNCTION synchro.mutation_row_rules(fp_algorithm text, fp_version integer,
	fp_domain text, fingerprint bytea, ordinal integer, authored_schema_version bigint,
	authored_schema_hash text, submitted_schema_version bigint, submitted_schema_hash text,
	operation text, status text, code text, outcome_schema_version bigint,
	outcome_schema_hash text) RETURNS boolean
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'synchro', 'synchro_mutation_row_rules';

CREATE OR REPLACE FUNCTION synchro.batches_before_insert() RETURNS trigger
LANGUAGE C SECURITY DEFINER AS 'synchro', 'synchro_batches_before_insert';
CREATE OR REPLACE FUNCTION synchro.mutations_after_insert() RETURNS trigger
LANGUAGE C SECURITY DEFINER AS 'synchro', 'synchro_mutations_after_insert';
CREATE OR REPLACE FUNCTION synchro.clients_before_change() RETURNS trigger
LANGUAGE C SECURITY DEFINER AS 'synchro', 'synchro_clients_before_change';
CREATE OR REPLACE FUNCTION synchro.emit_accepted_epoch() RETURNS trigger
LANGUAGE C SECURITY DEFINER AS 'synchro', 'synchro_emit_accepted_epoch';

ALTER FUNCTION synchro.batch_row_rules(integer, bigint, bigint, text, text, integer, text,
	bytea, text, integer, bytea, timestamptz) OWNER TO synchro_owner;
ALTER FUNCTION synchro.mutation_row_rules(text, integer, text, bytea, integer, bigint, text,
	bigint, text, text, text, text, bigint, text) OWNER TO synchro_owner;
REVOKE ALL ON FUNCTION synchro.batch_row_rules(integer, bigint, bigint, text, text, integer,
	text, bytea, text, integer, bytea, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION synchro.mutation_row_rules(text, integer, text, bytea, integer, bigint,
	text, bigint, text, text, text, text, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION synchro.batches_before_insert(), synchro.mutations_after_insert(),
	synchro.clients_before_change(), synchro.emit_accepted_epoch() FROM PUBLIC;

SET ROLE synchro_owner;

ALTER TABLE synchro.batches
	DROP CONSTRAINT batch_complete_has_response,
	DROP CONSTRAINT batches_client_generation_check,
	DROP CONSTRAINT batches_fingerprint_check,
	DROP CONSTRAINT batches_fp_algorithm_check,
	DROP CONSTRAINT batches_fp_domain_check,
	DROP CONSTRAINT batches_fp_version_check,
	DROP CONSTRAINT batches_http_status_check,
	DROP CONSTRAINT batches_protocol_version_check,
	DROP CONSTRAINT batches_schema_hash_check,
	DROP CONSTRAINT batches_schema_version_check,
	DROP CONSTRAINT batches_state_check,
	ADD CONSTRAINT batches_row_rules CHECK (synchro.batch_row_rules(protocol_version,
		client_generation, schema_version, schema_hash, fp_algorithm, fp_version, fp_domain,
		fingerprint, state, http_status, response, completed_at)) NOT VALID;

ALTER TABLE synchro.mutations
	DROP CONSTRAINT mutation_status_code,
	DROP CONSTRAINT mutations_authored_schema_hash_check,
	DROP CONSTRAINT mutations_authored_schema_version_check,
	DROP CONSTRAINT mutations_fingerprint_check,
	DROP CONSTRAINT mutations_fp_algorithm_check,
	DROP CONSTRAINT mutations_fp_domain_check,
	DROP CONSTRAINT mutations_fp_version_check,
	DROP CONSTRAINT mutations_operation_check,
	DROP CONSTRAINT mutations_ordinal_check,
	DROP CONSTRAINT mutations_outcome_schema_hash_check,
	DROP CONSTRAINT mutations_outcome_schema_version_check,
	DROP CONSTRAINT mutations_status_check,
	DROP CONSTRAINT mutations_submitted_schema_hash_check,
	DROP CONSTRAINT mutations_submitted_schema_version_check,
	ADD CONSTRAINT mutations_row_rules CHECK (synchro.mutation_row_rules(fp_algorithm,
		fp_version, fp_domain, fingerprint, ordinal, authored_schema_version,
		authored_schema_hash, submitted_schema_version, submitted_schema_hash, operation,
		status, code, outcome_schema_version, outcome_schema_hash)) NOT VALID;

RESET ROLE;
