-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 1: the roles, schema synchro, its tables (ledgers, clients, retirements, schema
-- versions, row fences, changelog, rebuild sessions, writer lease), the triggers that keep
-- the ledgers append-only and retirement irreversible, and the least grants of each role.
-- Run once per database by synchroctl init/migrate (one transaction, which then records
-- this migration in synchro.migrations) or through sql/install.sql with psql -1.
-- Refusals raised here carry SQLSTATEs of class SY (doc/operations.md):
--   SY002 immutable ledger record   SY003 retirement is permanent
--   SY004 client retired            SY005 ledger deletion refused

-- Roles are cluster-wide: another database of the cluster may have created them already.
-- All are NOLOGIN groups; a sysadmin grants them to login roles (doc/operations.md).
DO $roles$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['synchro_owner', 'synchro_app', 'synchro_walsync'] LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
		END IF;
	END LOOP;
	-- The installer creates the objects as synchro_owner (SET ROLE below); a non-superuser
	-- with CREATEROLE needs the membership for that and keeps it to administer later.
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)
	   AND NOT pg_catalog.pg_has_role(current_user, 'synchro_owner', 'USAGE') THEN
		EXECUTE pg_catalog.format('GRANT synchro_owner TO %I', current_user);
	END IF;
END
$roles$;

CREATE SCHEMA synchro AUTHORIZATION synchro_owner;

-- Everything below is owned by synchro_owner; SECURITY DEFINER functions run as it.
SET ROLE synchro_owner;

REVOKE ALL ON SCHEMA synchro FROM PUBLIC;
GRANT USAGE ON SCHEMA synchro TO synchro_app, synchro_walsync;
-- Functions synchro_owner creates are not callable by PUBLIC unless granted one by one.
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- Which migrations ran (the runner inserts the row in the migration's own transaction).
CREATE TABLE synchro.migrations (
	version integer PRIMARY KEY CHECK (version > 0),
	name text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
);

-- Published schema manifests: version n+1 per publish whose hash differs, kept forever
-- (doc/contract.md#schema-hash); manifest holds the exact JCS bytes the hash covers.
CREATE TABLE synchro.schema_versions (
	version bigint PRIMARY KEY CHECK (version > 0),
	hash text NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$'),
	manifest text NOT NULL,
	published_at timestamptz NOT NULL DEFAULT now()
);

-- Every table_id ever published (synchroctl schema publish records it with the first
-- schema version naming it): a table absent from the current schema is
-- schema_incompatible when it is here, table_not_synced when it never was.
CREATE TABLE synchro.synced_tables (
	table_id text PRIMARY KEY CHECK (table_id <> ''),
	first_version bigint CHECK (first_version > 0),
	recorded_at timestamptz NOT NULL DEFAULT now()
);

-- Registered clients. client_id is globally unique (another user's id answers 401);
-- generation opens n+1 per connect; accepted_write_epoch advances once per batch that
-- accepted a source write (doc/contract.md#accepted-write-epoch); materialized_write_epoch is what
-- walsync has caught up to.
CREATE TABLE synchro.clients (
	client_id uuid PRIMARY KEY,
	user_id text NOT NULL,
	generation bigint NOT NULL DEFAULT 0 CHECK (generation >= 0),
	accepted_write_epoch bigint NOT NULL DEFAULT 1 CHECK (accepted_write_epoch > 0),
	materialized_write_epoch bigint NOT NULL DEFAULT 1 CHECK (materialized_write_epoch > 0),
	created_at timestamptz NOT NULL DEFAULT now(),
	last_seen_at timestamptz,
	UNIQUE (user_id, client_id)
);

-- The permanent retirement marker (doc/contract.md#retirement): never updated, never deleted; its
-- client can never register, reconnect or push again, and only its existence makes that client's
-- ledger rows deletable.
CREATE TABLE synchro.retirements (
	client_id uuid PRIMARY KEY,
	user_id text NOT NULL,
	retirement_id uuid NOT NULL UNIQUE,
	retired_at timestamptz NOT NULL DEFAULT now(),
	FOREIGN KEY (user_id, client_id) REFERENCES synchro.clients (user_id, client_id)
);

-- Batch ledger (doc/contract.md#ledgers-and-retirement): one row per scoped batch identity.
-- Only a complete row is replayable, and a complete row always has its exact canonical
-- response; it is never changed afterwards and never expires by age.
CREATE TABLE synchro.batches (
	user_id text NOT NULL,
	client_id uuid NOT NULL,
	batch_id uuid NOT NULL,
	protocol_version integer NOT NULL CHECK (protocol_version > 0),
	client_generation bigint NOT NULL CHECK (client_generation > 0),
	schema_version bigint NOT NULL CHECK (schema_version > 0),
	schema_hash text NOT NULL CHECK (schema_hash ~ '^[0-9a-f]{64}$'),
	fp_algorithm text NOT NULL CHECK (fp_algorithm = 'sha256'),
	fp_version integer NOT NULL CHECK (fp_version > 0),
	fp_domain text NOT NULL CHECK (fp_domain <> ''),
	fingerprint bytea NOT NULL CHECK (length(fingerprint) = 32),
	atomic boolean NOT NULL,
	state text NOT NULL CHECK (state IN ('claimed', 'complete')),
	http_status integer CHECK (http_status BETWEEN 100 AND 599),
	response bytea,
	created_at timestamptz NOT NULL DEFAULT now(),
	completed_at timestamptz,
	PRIMARY KEY (user_id, client_id, batch_id),
	FOREIGN KEY (user_id, client_id) REFERENCES synchro.clients (user_id, client_id),
	CONSTRAINT batch_complete_has_response CHECK (state <> 'complete' OR
		(http_status IS NOT NULL AND response IS NOT NULL AND completed_at IS NOT NULL))
);

-- Mutation ledger: one row per scoped mutation identity, inserted once with its one
-- terminal outcome (exact canonical bytes) and never changed.
CREATE TABLE synchro.mutations (
	user_id text NOT NULL,
	client_id uuid NOT NULL,
	mutation_id uuid NOT NULL,
	fp_algorithm text NOT NULL CHECK (fp_algorithm = 'sha256'),
	fp_version integer NOT NULL CHECK (fp_version > 0),
	fp_domain text NOT NULL CHECK (fp_domain <> ''),
	fingerprint bytea NOT NULL CHECK (length(fingerprint) = 32),
	batch_id uuid NOT NULL,
	ordinal integer NOT NULL CHECK (ordinal >= 0),
	authored_schema_version bigint CHECK (authored_schema_version > 0),
	authored_schema_hash text CHECK (authored_schema_hash ~ '^[0-9a-f]{64}$'),
	submitted_schema_version bigint CHECK (submitted_schema_version > 0),
	submitted_schema_hash text CHECK (submitted_schema_hash ~ '^[0-9a-f]{64}$'),
	table_id text NOT NULL,
	pk text NOT NULL,
	operation text NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
	status text NOT NULL CHECK (status IN ('applied', 'conflict', 'rejected_terminal')),
	code text,
	outcome bytea NOT NULL,
	outcome_schema_version bigint NOT NULL CHECK (outcome_schema_version > 0),
	outcome_schema_hash text NOT NULL CHECK (outcome_schema_hash ~ '^[0-9a-f]{64}$'),
	completed_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (user_id, client_id, mutation_id),
	FOREIGN KEY (user_id, client_id, batch_id)
		REFERENCES synchro.batches (user_id, client_id, batch_id),
	-- The outcome partition (doc/contract.md#outcome-partition): a code exactly for the
	-- non-applied statuses.
	CONSTRAINT mutation_status_code CHECK (
		(status = 'applied' AND code IS NULL) OR
		(status = 'conflict' AND code IN ('version_conflict', 'row_already_exists',
			'row_deleted', 'row_not_found')) OR
		(status = 'rejected_terminal' AND code IN ('policy_rejected', 'validation_failed',
			'table_not_synced', 'schema_incompatible', 'atomic_batch_rejected')))
);
CREATE INDEX mutations_batch ON synchro.mutations (user_id, client_id, batch_id);

-- Row-version write fences (doc/contract.md#server-versions): the current state and opaque
-- version of every synced row identity ever written, kept for deleted rows too (a
-- fence-only delete stays distinguishable from absence). Written only by the
-- version-fence trigger, in the transaction of the source write.
CREATE TABLE synchro.row_fences (
	table_id text NOT NULL,
	pk text NOT NULL,
	state text NOT NULL CHECK (state IN ('live', 'deleted')),
	version text NOT NULL CHECK (version ~ '^[!-~]{1,128}$'),
	mutation_id uuid,
	client_id uuid,
	user_id text,
	source_xid xid8 NOT NULL,
	source_lsn pg_lsn,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (table_id, pk)
);

-- Pull-visible changes in commit order, written only by walsync under the writer lease;
-- compaction (synchroctl, as owner) removes old entries.
CREATE TABLE synchro.changelog (
	commit_lsn pg_lsn NOT NULL,
	ordinal integer NOT NULL CHECK (ordinal >= 0),
	xid xid8,
	table_id text NOT NULL,
	pk text NOT NULL,
	version text NOT NULL,
	state text NOT NULL CHECK (state IN ('live', 'deleted')),
	mutation_id uuid,
	client_id uuid,
	user_id text,
	owner_before text,
	owner_after text,
	committed_at timestamptz,
	written_epoch bigint,
	PRIMARY KEY (commit_lsn, ordinal)
);

-- Rebuild sessions bind the client's accepted_write_epoch at creation: a later accepted
-- write makes the session non-replayable (doc/contract.md#rebuild-invalidation).
CREATE TABLE synchro.rebuild_sessions (
	user_id text NOT NULL,
	client_id uuid NOT NULL,
	rebuild_id uuid NOT NULL,
	accepted_write_epoch bigint NOT NULL CHECK (accepted_write_epoch > 0),
	stream_lsn pg_lsn NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (user_id, client_id, rebuild_id),
	FOREIGN KEY (user_id, client_id) REFERENCES synchro.clients (user_id, client_id)
);

-- The single-writer lease of walsync: takeover bumps writer_epoch and fencing_token, and
-- every changelog write is guarded by them.
CREATE TABLE synchro.writer_lease (
	role text PRIMARY KEY,
	writer_id text NOT NULL,
	writer_epoch bigint NOT NULL CHECK (writer_epoch > 0),
	fencing_token uuid NOT NULL,
	lease_until timestamptz NOT NULL,
	heartbeat_at timestamptz
);

-- Ledger rows are immutable once complete; identity and fingerprint never change
-- (doc/contract.md#exact-replay). Applies to every role, the owner included.
CREATE FUNCTION synchro.batches_before_update() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF OLD.state = 'complete' THEN
		RAISE EXCEPTION 'synchro: a complete batch ledger row is immutable'
			USING ERRCODE = 'SY002';
	END IF;
	IF (NEW.user_id, NEW.client_id, NEW.batch_id, NEW.protocol_version,
	    NEW.client_generation, NEW.schema_version, NEW.schema_hash, NEW.fp_algorithm,
	    NEW.fp_version, NEW.fp_domain, NEW.fingerprint, NEW.atomic, NEW.created_at)
	   IS DISTINCT FROM
	   (OLD.user_id, OLD.client_id, OLD.batch_id, OLD.protocol_version,
	    OLD.client_generation, OLD.schema_version, OLD.schema_hash, OLD.fp_algorithm,
	    OLD.fp_version, OLD.fp_domain, OLD.fingerprint, OLD.atomic, OLD.created_at) THEN
		RAISE EXCEPTION 'synchro: the identity and fingerprint of a batch never change'
			USING ERRCODE = 'SY002';
	END IF;
	RETURN NEW;
END
$fn$;
CREATE TRIGGER batches_before_update BEFORE UPDATE ON synchro.batches
	FOR EACH ROW EXECUTE FUNCTION synchro.batches_before_update();

-- Every mutation ledger row has exactly one terminal outcome, written at insert.
CREATE FUNCTION synchro.refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	RAISE EXCEPTION 'synchro: rows of %.% are immutable', TG_TABLE_SCHEMA, TG_TABLE_NAME
		USING ERRCODE = 'SY002';
END
$fn$;
CREATE TRIGGER mutations_before_update BEFORE UPDATE ON synchro.mutations
	FOR EACH ROW EXECUTE FUNCTION synchro.refuse_change();
-- Published manifests are kept forever and their bytes are what the hash covers.
CREATE TRIGGER schema_versions_before_update BEFORE UPDATE OR DELETE ON synchro.schema_versions
	FOR EACH ROW EXECUTE FUNCTION synchro.refuse_change();

-- Ledger rows never expire: deletion is allowed only for a retired client's rows
-- (doc/contract.md#ledger-retention).
CREATE FUNCTION synchro.ledger_before_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM synchro.retirements r
	               WHERE r.client_id = OLD.client_id AND r.user_id = OLD.user_id) THEN
		RAISE EXCEPTION 'synchro: ledger rows of a client that is not retired stay'
			USING ERRCODE = 'SY005';
	END IF;
	RETURN OLD;
END
$fn$;
CREATE TRIGGER batches_before_delete BEFORE DELETE ON synchro.batches
	FOR EACH ROW EXECUTE FUNCTION synchro.ledger_before_delete();
CREATE TRIGGER mutations_before_delete BEFORE DELETE ON synchro.mutations
	FOR EACH ROW EXECUTE FUNCTION synchro.ledger_before_delete();

-- TRUNCATE skips row triggers, so it is refused outright on the permanent tables.
CREATE FUNCTION synchro.refuse_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	RAISE EXCEPTION 'synchro: %.% cannot be truncated', TG_TABLE_SCHEMA, TG_TABLE_NAME
		USING ERRCODE = 'SY005';
END
$fn$;
CREATE TRIGGER batches_no_truncate BEFORE TRUNCATE ON synchro.batches
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();
CREATE TRIGGER mutations_no_truncate BEFORE TRUNCATE ON synchro.mutations
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();
CREATE TRIGGER retirements_no_truncate BEFORE TRUNCATE ON synchro.retirements
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();
CREATE TRIGGER clients_no_truncate BEFORE TRUNCATE ON synchro.clients
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();
CREATE TRIGGER schema_versions_no_truncate BEFORE TRUNCATE ON synchro.schema_versions
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();
CREATE TRIGGER row_fences_no_truncate BEFORE TRUNCATE ON synchro.row_fences
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();

-- Retirement is irreversible, for every role including the owner.
CREATE FUNCTION synchro.retirements_before_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF TG_OP = 'INSERT' THEN
		-- Serializes with a concurrent connect or push, which update or lock this row:
		-- once the marker commits, their trigger and gate checks see it.
		PERFORM 1 FROM synchro.clients c WHERE c.client_id = NEW.client_id FOR UPDATE;
		RETURN NEW;
	END IF;
	RAISE EXCEPTION 'synchro: client retirement is permanent' USING ERRCODE = 'SY003';
END
$fn$;
CREATE TRIGGER retirements_before_change BEFORE INSERT OR UPDATE OR DELETE
	ON synchro.retirements
	FOR EACH ROW EXECUTE FUNCTION synchro.retirements_before_change();

-- A retired client_id can never register again, reconnect (generation) or accept writes
-- (accepted_write_epoch); walsync may still record materialization of writes it accepted
-- before. Identity never changes and the counters never go back.
CREATE FUNCTION synchro.clients_before_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF TG_OP = 'INSERT' THEN
		IF EXISTS (SELECT 1 FROM synchro.retirements r
		           WHERE r.client_id = NEW.client_id) THEN
			RAISE EXCEPTION 'synchro: client % is retired', NEW.client_id
				USING ERRCODE = 'SY004';
		END IF;
		RETURN NEW;
	END IF;
	IF (NEW.client_id, NEW.user_id, NEW.created_at)
	   IS DISTINCT FROM (OLD.client_id, OLD.user_id, OLD.created_at) THEN
		RAISE EXCEPTION 'synchro: the identity of a client never changes'
			USING ERRCODE = 'SY002';
	END IF;
	IF NEW.generation < OLD.generation
	   OR NEW.accepted_write_epoch < OLD.accepted_write_epoch
	   OR NEW.materialized_write_epoch < OLD.materialized_write_epoch THEN
		RAISE EXCEPTION 'synchro: client generation and write epochs never decrease'
			USING ERRCODE = 'SY002';
	END IF;
	IF (NEW.generation <> OLD.generation
	    OR NEW.accepted_write_epoch <> OLD.accepted_write_epoch)
	   AND EXISTS (SELECT 1 FROM synchro.retirements r WHERE r.client_id = OLD.client_id) THEN
		RAISE EXCEPTION 'synchro: client % is retired', OLD.client_id
			USING ERRCODE = 'SY004';
	END IF;
	RETURN NEW;
END
$fn$;
CREATE TRIGGER clients_before_change BEFORE INSERT OR UPDATE ON synchro.clients
	FOR EACH ROW EXECUTE FUNCTION synchro.clients_before_change();

-- No new batch for a retired client, whatever raced with the retirement.
CREATE FUNCTION synchro.batches_before_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF EXISTS (SELECT 1 FROM synchro.retirements r WHERE r.client_id = NEW.client_id) THEN
		RAISE EXCEPTION 'synchro: client % is retired', NEW.client_id
			USING ERRCODE = 'SY004';
	END IF;
	RETURN NEW;
END
$fn$;
CREATE TRIGGER batches_before_insert BEFORE INSERT ON synchro.batches
	FOR EACH ROW EXECUTE FUNCTION synchro.batches_before_insert();

REVOKE EXECUTE ON FUNCTION synchro.batches_before_update(), synchro.refuse_change(),
	synchro.ledger_before_delete(), synchro.refuse_truncate(),
	synchro.retirements_before_change(), synchro.clients_before_change(),
	synchro.batches_before_insert() FROM PUBLIC;

-- Least grants (SQL-CONTRACT, doc/operations.md). synchro_app: the responders.
GRANT SELECT ON synchro.migrations, synchro.schema_versions, synchro.synced_tables,
	synchro.row_fences, synchro.changelog, synchro.writer_lease TO synchro_app;
GRANT SELECT, INSERT ON synchro.clients, synchro.retirements, synchro.batches,
	synchro.mutations TO synchro_app;
GRANT UPDATE (generation, accepted_write_epoch, last_seen_at) ON synchro.clients
	TO synchro_app;
GRANT UPDATE (state, http_status, response, completed_at) ON synchro.batches TO synchro_app;
GRANT SELECT, INSERT, UPDATE ON synchro.rebuild_sessions TO synchro_app;

-- synchro_walsync: materializes the WAL into the changelog under the writer lease.
GRANT SELECT ON synchro.migrations, synchro.schema_versions, synchro.synced_tables,
	synchro.clients, synchro.row_fences TO synchro_walsync;
GRANT SELECT, INSERT ON synchro.changelog TO synchro_walsync;
GRANT SELECT, INSERT, UPDATE ON synchro.writer_lease TO synchro_walsync;
GRANT UPDATE (materialized_write_epoch) ON synchro.clients TO synchro_walsync;
GRANT UPDATE (source_lsn) ON synchro.row_fences TO synchro_walsync;

RESET ROLE;
