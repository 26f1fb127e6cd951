-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 2: the version-fence trigger of every synced relation, and the helpers that
-- install it and backfill fences of existing rows.
-- Refusals raised here carry SQLSTATEs of class SY (doc/operations.md):
--   SY001 primary key of a synced row changed    SY005 TRUNCATE of a synced table
--   SY010 invalid fence trigger configuration

SET ROLE synchro_owner;

-- doc/contract.md#compare-and-swap: every row operation on a synced
-- relation (push or direct application write; insert, update, soft delete, hard delete)
-- mints a new random version, moves the fence under its row lock (the same locked path
-- a push compare-and-swap takes) and emits one transactional logical message, so the
-- source write, the version transition and the message commit or vanish together.
-- Arguments: table_id, pk column, soft-delete column or '', owner column or ''.
-- Transaction-local settings synchro.mutation_id / client_id / user_id name the push
-- mutation that wrote the row; unset or empty means a direct application write.
CREATE FUNCTION synchro.version_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro, pg_temp
AS $fn$
DECLARE
	v_table_id text := TG_ARGV[0];
	v_pk_col text := TG_ARGV[1];
	v_soft_col text := coalesce(TG_ARGV[2], '');
	v_owner_col text := coalesce(TG_ARGV[3], '');
	v_old jsonb;
	v_new jsonb;
	v_pk text;
	v_state text := 'live';
	v_version text;
	v_mutation uuid;
	v_client uuid;
	v_user text;
	v_owner_before text;
	v_owner_after text;
BEGIN
	IF TG_WHEN <> 'AFTER' OR TG_LEVEL <> 'ROW' OR TG_NARGS <> 4
	   OR coalesce(v_table_id, '') = '' OR coalesce(v_pk_col, '') = '' THEN
		RAISE EXCEPTION 'synchro: install version_fence with synchro.install_fence_trigger'
			USING ERRCODE = 'SY010';
	END IF;
	IF TG_OP <> 'INSERT' THEN
		v_old := to_jsonb(OLD);
	END IF;
	IF TG_OP <> 'DELETE' THEN
		v_new := to_jsonb(NEW);
	END IF;
	IF NOT coalesce(v_new, v_old) ? v_pk_col THEN
		RAISE EXCEPTION 'synchro: %.% has no column %', TG_TABLE_SCHEMA, TG_TABLE_NAME,
			v_pk_col USING ERRCODE = 'SY010';
	END IF;

	IF TG_OP = 'DELETE' THEN
		v_pk := v_old ->> v_pk_col;
		v_state := 'deleted';
	ELSE
		v_pk := v_new ->> v_pk_col;
		IF TG_OP = 'UPDATE' AND (v_old ->> v_pk_col) IS DISTINCT FROM v_pk THEN
			RAISE EXCEPTION 'synchro: a primary key of synced table "%" cannot change',
				v_table_id
				USING ERRCODE = 'SY001',
				      DETAIL = pg_catalog.format('%s.%s: %s -> %s', TG_TABLE_SCHEMA,
				               TG_TABLE_NAME, v_old ->> v_pk_col, v_pk),
				      HINT = 'Delete the row and insert a new one.';
		END IF;
		IF v_soft_col <> '' THEN
			IF NOT v_new ? v_soft_col THEN
				RAISE EXCEPTION 'synchro: %.% has no column %', TG_TABLE_SCHEMA,
					TG_TABLE_NAME, v_soft_col USING ERRCODE = 'SY010';
			END IF;
			IF jsonb_typeof(v_new -> v_soft_col) <> 'null' THEN
				v_state := 'deleted';
			END IF;
		END IF;
	END IF;
	IF v_owner_col <> '' THEN
		v_owner_before := v_old ->> v_owner_col;
		v_owner_after := v_new ->> v_owner_col;
	END IF;

	-- Random, never derived from time or a sequence (doc/contract.md#server-versions): 32
	-- lowercase hex.
	v_version := replace(gen_random_uuid()::text, '-', '');
	v_mutation := nullif(current_setting('synchro.mutation_id', true), '')::uuid;
	v_client := nullif(current_setting('synchro.client_id', true), '')::uuid;
	v_user := nullif(current_setting('synchro.user_id', true), '');

	INSERT INTO synchro.row_fences AS f
		(table_id, pk, state, version, mutation_id, client_id, user_id, source_xid,
		 source_lsn, updated_at)
	VALUES (v_table_id, v_pk, v_state, v_version, v_mutation, v_client, v_user,
		pg_current_xact_id(), NULL, now())
	ON CONFLICT (table_id, pk) DO UPDATE SET
		state = EXCLUDED.state,
		version = EXCLUDED.version,
		mutation_id = EXCLUDED.mutation_id,
		client_id = EXCLUDED.client_id,
		user_id = EXCLUDED.user_id,
		source_xid = EXCLUDED.source_xid,
		source_lsn = NULL,
		updated_at = EXCLUDED.updated_at;

	PERFORM pg_logical_emit_message(true, 'synchro', jsonb_build_object(
		'table_id', v_table_id, 'pk', v_pk, 'version', v_version, 'state', v_state,
		'mutation_id', v_mutation, 'client_id', v_client, 'user_id', v_user,
		'owner_before', v_owner_before, 'owner_after', v_owner_after)::text);
	RETURN NULL;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.version_fence() FROM PUBLIC;

-- Validates one fence configuration against the catalog: the pk column must be a NOT NULL
-- column under a single-column unique index whose jsonb and text outputs agree (so the
-- fence pk equals the canonical wire value), the soft-delete column a timestamptz.
CREATE FUNCTION synchro.check_fence_config(relation regclass, pk_column text,
	soft_delete_column text, owner_column text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_kind "char";
	v_pk_att smallint;
	v_pk_type oid;
	v_pk_notnull boolean;
	v_type oid;
BEGIN
	SELECT c.relkind INTO v_kind FROM pg_class c
		WHERE c.oid = relation AND c.relnamespace <> 'synchro'::regnamespace;
	IF v_kind IS NULL OR v_kind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION 'synchro: % is not an application table', relation
			USING ERRCODE = 'SY010';
	END IF;
	SELECT a.attnum, coalesce(nullif(t.typbasetype, 0), a.atttypid), a.attnotnull
		INTO v_pk_att, v_pk_type, v_pk_notnull
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = relation AND a.attname = pk_column AND a.attnum > 0
		  AND NOT a.attisdropped;
	IF v_pk_att IS NULL THEN
		RAISE EXCEPTION 'synchro: % has no column %', relation, pk_column
			USING ERRCODE = 'SY010';
	END IF;
	IF v_pk_type NOT IN ('uuid'::regtype, 'int2'::regtype, 'int4'::regtype, 'int8'::regtype,
	                     'text'::regtype, 'varchar'::regtype) THEN
		RAISE EXCEPTION 'synchro: primary key %.% has unsupported type %', relation,
			pk_column, format_type(v_pk_type, NULL) USING ERRCODE = 'SY010';
	END IF;
	IF NOT v_pk_notnull OR NOT EXISTS (
		SELECT 1 FROM pg_index i
		WHERE i.indrelid = relation AND i.indisunique AND i.indnkeyatts = 1
		  AND i.indkey[0] = v_pk_att AND i.indpred IS NULL AND i.indexprs IS NULL) THEN
		RAISE EXCEPTION 'synchro: %.% is not a NOT NULL column with its own unique index',
			relation, pk_column USING ERRCODE = 'SY010';
	END IF;
	IF coalesce(soft_delete_column, '') <> '' THEN
		SELECT a.atttypid INTO v_type FROM pg_attribute a
			WHERE a.attrelid = relation AND a.attname = soft_delete_column
			  AND a.attnum > 0 AND NOT a.attisdropped;
		IF v_type IS DISTINCT FROM 'timestamptz'::regtype THEN
			RAISE EXCEPTION 'synchro: soft-delete column %.% is not a timestamptz',
				relation, soft_delete_column USING ERRCODE = 'SY010';
		END IF;
	END IF;
	IF coalesce(owner_column, '') <> '' AND NOT EXISTS (
		SELECT 1 FROM pg_attribute a
		WHERE a.attrelid = relation AND a.attname = owner_column AND a.attnum > 0
		  AND NOT a.attisdropped) THEN
		RAISE EXCEPTION 'synchro: % has no column %', relation, owner_column
			USING ERRCODE = 'SY010';
	END IF;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.check_fence_config(regclass, text, text, text) FROM PUBLIC;

-- (Re)installs the version fence on one synced relation, and refuses TRUNCATE on it (which
-- skips row triggers and would leave live fences without rows). Runs as the caller, who
-- needs TRIGGER on the relation (its owner or a superuser) and membership in synchro_owner.
CREATE FUNCTION synchro.install_fence_trigger(relation regclass, table_id text,
	pk_column text, soft_delete_column text, owner_column text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF coalesce(table_id, '') = '' THEN
		RAISE EXCEPTION 'synchro: empty table_id' USING ERRCODE = 'SY010';
	END IF;
	PERFORM synchro.check_fence_config(relation, pk_column, soft_delete_column, owner_column);
	-- Dropped and created in one transaction: no write can slip between the two.
	IF EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = relation
	           AND t.tgname = 'synchro_version_fence') THEN
		EXECUTE format('DROP TRIGGER synchro_version_fence ON %s', relation);
	END IF;
	EXECUTE format('CREATE TRIGGER synchro_version_fence AFTER INSERT OR UPDATE OR DELETE ON %s'
		' FOR EACH ROW EXECUTE FUNCTION synchro.version_fence(%L, %L, %L, %L)', relation,
		table_id, pk_column, coalesce(soft_delete_column, ''), coalesce(owner_column, ''));
	IF NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = relation
	               AND t.tgname = 'synchro_no_truncate') THEN
		EXECUTE format('CREATE TRIGGER synchro_no_truncate BEFORE TRUNCATE ON %s'
			' FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate()', relation);
	END IF;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.install_fence_trigger(regclass, text, text, text, text)
	FROM PUBLIC;

-- Creates fences, with random versions, for rows of a relation that have none (a table
-- that becomes synced with rows in it); emits one message per created fence like the
-- trigger, as a direct write. Existing fences are left alone. Returns the number created.
-- Runs as the caller (SELECT on the relation, membership in synchro_owner).
CREATE FUNCTION synchro.backfill_fences(relation regclass, table_id text, pk_column text,
	soft_delete_column text, owner_column text DEFAULT '') RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	n bigint;
BEGIN
	IF coalesce(table_id, '') = '' THEN
		RAISE EXCEPTION 'synchro: empty table_id' USING ERRCODE = 'SY010';
	END IF;
	PERFORM synchro.check_fence_config(relation, pk_column, soft_delete_column, owner_column);
	EXECUTE format($q$
		WITH src AS MATERIALIZED (
			SELECT r.%1$I::text AS pk, %2$s AS deleted, %3$s AS owner FROM %4$s AS r
		), ins AS (
			INSERT INTO synchro.row_fences (table_id, pk, state, version, source_xid)
			SELECT $1, src.pk, CASE WHEN src.deleted THEN 'deleted' ELSE 'live' END,
				replace(gen_random_uuid()::text, '-', ''), pg_current_xact_id()
			FROM src
			ON CONFLICT (table_id, pk) DO NOTHING
			RETURNING pk, state, version
		)
		SELECT count(pg_logical_emit_message(true, 'synchro', jsonb_build_object(
			'table_id', $1, 'pk', ins.pk, 'version', ins.version, 'state', ins.state,
			'mutation_id', NULL, 'client_id', NULL, 'user_id', NULL,
			'owner_before', NULL, 'owner_after', src.owner)::text))
		FROM ins JOIN src ON src.pk = ins.pk
		$q$,
		pk_column,
		CASE WHEN coalesce(soft_delete_column, '') = '' THEN 'false'
		     ELSE format('r.%I IS NOT NULL', soft_delete_column) END,
		CASE WHEN coalesce(owner_column, '') = '' THEN 'NULL::text'
		     ELSE format('r.%I::text', owner_column) END,
		relation)
		INTO n USING table_id;
	RETURN n;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.backfill_fences(regclass, text, text, text, text)
	FROM PUBLIC;

RESET ROLE;
