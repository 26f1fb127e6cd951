-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 4: what the push path (synchro-fcgi, role synchro_app) needs beyond plain grants:
-- the fence locks of the compare-and-swap, and the no-resurrection rule in the fence trigger.
-- Refusals raised here carry SQLSTATEs of class SY (doc/operations.md):
--   SY006 a push insert over a deleted row identity (no resurrection)

SET ROLE synchro_owner;

-- doc/contract.md#compare-and-swap: a push locks the row-version
-- identity before its source DML. synchro_app may read fences but not lock them (SELECT FOR
-- UPDATE needs UPDATE), so the lock is taken here, as the owner. The push path locks the
-- source row first and the fence second: the order of the fence trigger's own upsert after
-- a direct write, so a push and a direct write never wait on each other in opposite orders.
-- Returns no row when the identity has no fence (absent).
CREATE FUNCTION synchro.lock_fence(p_table_id text, p_pk text,
	OUT state text, OUT version text) RETURNS SETOF record
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
	SELECT f.state, f.version FROM synchro.row_fences f
	 WHERE f.table_id = p_table_id AND f.pk = p_pk
	   FOR UPDATE
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.lock_fence(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.lock_fence(text, text) TO synchro_app;

-- The version fence of migration 2, plus doc/contract.md#operation-and-row-state-matrix: in a
-- transaction that set synchro.no_resurrection to 'on' (the push path does, transaction-local), an
-- INSERT over an identity whose fence is deleted is refused with SY006, even when the deletion
-- committed after the push looked (a hard delete leaves no source row to collide with). The push
-- path answers it with a row_deleted conflict. Other transactions (direct application writes) keep
-- their freedom.
CREATE OR REPLACE FUNCTION synchro.version_fence() RETURNS trigger
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
	v_push_insert boolean;
BEGIN
	IF TG_WHEN <> 'AFTER' OR TG_LEVEL <> 'ROW' OR TG_NARGS <> 4
	   OR coalesce(v_table_id, '') = '' OR coalesce(v_pk_col, '') = '' THEN
		RAISE EXCEPTION 'synchro: version_fence must be installed by synchro.install_fence_trigger'
			USING ERRCODE = 'SY010';
	END IF;
	IF TG_OP <> 'INSERT' THEN
		v_old := to_jsonb(OLD);
	END IF;
	IF TG_OP <> 'DELETE' THEN
		v_new := to_jsonb(NEW);
	END IF;
	IF NOT coalesce(v_new, v_old) ? v_pk_col THEN
		RAISE EXCEPTION 'synchro: %.% has no column %', TG_TABLE_SCHEMA, TG_TABLE_NAME, v_pk_col
			USING ERRCODE = 'SY010';
	END IF;

	IF TG_OP = 'DELETE' THEN
		v_pk := v_old ->> v_pk_col;
		v_state := 'deleted';
	ELSE
		v_pk := v_new ->> v_pk_col;
		IF TG_OP = 'UPDATE' AND (v_old ->> v_pk_col) IS DISTINCT FROM v_pk THEN
			RAISE EXCEPTION 'synchro: the primary key of a row of synced table "%" cannot change',
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
	v_push_insert := TG_OP = 'INSERT'
		AND current_setting('synchro.no_resurrection', true) IS NOT DISTINCT FROM 'on';

	-- A refused update still locks the conflicting fence: the refusal holds until the
	-- transaction ends.
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
		updated_at = EXCLUDED.updated_at
	WHERE NOT (v_push_insert AND f.state = 'deleted');
	IF NOT FOUND THEN
		RAISE EXCEPTION 'synchro: row "%" of synced table "%" is deleted; a push cannot insert it again',
			v_pk, v_table_id
			USING ERRCODE = 'SY006';
	END IF;

	PERFORM pg_logical_emit_message(true, 'synchro', jsonb_build_object(
		'table_id', v_table_id, 'pk', v_pk, 'version', v_version, 'state', v_state,
		'mutation_id', v_mutation, 'client_id', v_client, 'user_id', v_user,
		'owner_before', v_owner_before, 'owner_after', v_owner_after)::text);
	RETURN NULL;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.version_fence() FROM PUBLIC;

RESET ROLE;
