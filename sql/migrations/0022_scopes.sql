-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 22: membership scopes (doc/protocol.md, the manifest's members policy). A table read
-- by members is read by the users a membership relation names for the row's scope key, reached
-- from the row through one or two hops. What walsync needs to tell who reads a change, in
-- commit order:
--  * synchro.scope_members and synchro.scope_links, the mirror of every membership relation and
--    hop relation a published manifest names: what walsync has materialized, in commit order,
--    not the live relations. Publish seeds a scope or link when it starts to be mirrored;
--    after that only synchro_walsync writes them, under the writer lease.
--  * synchro.changelog's readers_before and readers_after: the members of the row's scope key
--    before and after the change, as walsync computed them from the mirror.
--  * synchro.scope_trigger, the C trigger (src/pg/scope_trigger.c) each membership relation and
--    hop relation gets, and the fence trigger's fifth argument (the hop column of a members
--    table, whose values the fence's message carries as scope_before and scope_after; the
--    backfill's messages carry it too).
--  * synchro.pull_window with the tables read by members: an entry concerns a user who is
--    its owner before or after, or one of its readers before or after.
-- Creating a C function needs a superuser, as migration 13 did; the module must be one that
-- has the function (synchro.module_abi() >= 22, migration 18).

DO $check$
BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
		RAISE EXCEPTION 'synchro: migration 22 installs a C function of the module synchro and must run as a superuser'
			USING ERRCODE = '42501',
			      HINT = 'Run synchroctl migrate (or psql -f install.sql) as a superuser.';
	END IF;
END
$check$;

DO $abi_level$
BEGIN
	IF synchro.module_abi() < 22 THEN
		RAISE EXCEPTION 'synchro: migration 22 needs the server module of its release; the installed synchro module serves migration %', synchro.module_abi()
			USING ERRCODE = '0A000',
			      HINT = 'Install the new module (make install, or the package) first, then run synchroctl migrate again (doc/operations.md, migration 22).';
	END IF;
END
$abi_level$;

-- AFTER INSERT OR UPDATE OR DELETE FOR EACH ROW on a membership or hop relation
-- (install_scope_trigger): one logical message 'synchro' per scope or link it mirrors.
CREATE FUNCTION synchro.scope_trigger() RETURNS trigger
LANGUAGE C SECURITY DEFINER AS 'synchro', 'synchro_scope_trigger';
ALTER FUNCTION synchro.scope_trigger() OWNER TO synchro_owner;
REVOKE ALL ON FUNCTION synchro.scope_trigger() FROM PUBLIC;

SET ROLE synchro_owner;

-- A scope is spelled relation(match,user) as the manifest writes it; key is the match column's
-- value as text, user_id the user column's.
CREATE TABLE synchro.scope_members (
	scope text NOT NULL,
	key text NOT NULL,
	user_id text NOT NULL,
	PRIMARY KEY (scope, key, user_id)
);
-- A link is spelled relation.key->column; key is the hop key's value as text, target the
-- column's (NULL when the column is).
CREATE TABLE synchro.scope_links (
	link text NOT NULL,
	key text NOT NULL,
	target text,
	PRIMARY KEY (link, key)
);
CREATE TRIGGER scope_members_no_truncate BEFORE TRUNCATE ON synchro.scope_members
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();
CREATE TRIGGER scope_links_no_truncate BEFORE TRUNCATE ON synchro.scope_links
	FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate();

ALTER TABLE synchro.changelog ADD COLUMN readers_before text[], ADD COLUMN readers_after text[];

GRANT SELECT ON synchro.scope_members, synchro.scope_links TO synchro_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON synchro.scope_members, synchro.scope_links
	TO synchro_walsync;

-- (Re)installs the version fence of a table read or written by members: as the five-argument
-- form, with the hop column (its message's scope_before and scope_after) as the trigger's
-- fifth argument. An empty scope_column installs exactly what the five-argument form does.
CREATE FUNCTION synchro.install_fence_trigger(relation regclass, table_id text,
	pk_column text, soft_delete_column text, owner_column text, scope_column text)
	RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	PERFORM synchro.install_fence_trigger(relation, table_id, pk_column, soft_delete_column,
		owner_column);
	IF coalesce(scope_column, '') = '' THEN
		RETURN;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_attribute a
	               WHERE a.attrelid = relation AND a.attname = scope_column AND a.attnum > 0
	                 AND NOT a.attisdropped) THEN
		RAISE EXCEPTION 'synchro: % has no column %', relation, scope_column
			USING ERRCODE = 'SY010';
	END IF;
	EXECUTE format('DROP TRIGGER synchro_version_fence ON %s', relation);
	EXECUTE format('CREATE TRIGGER synchro_version_fence AFTER INSERT OR UPDATE OR DELETE ON %s'
		' FOR EACH ROW EXECUTE FUNCTION synchro.version_fence(%L, %L, %L, %L, %L)', relation,
		table_id, pk_column, coalesce(soft_delete_column, ''), coalesce(owner_column, ''),
		scope_column);
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.install_fence_trigger(regclass, text, text, text, text, text)
	FROM PUBLIC;

-- backfill_fences of migration 2 for a table read or written by members: each created fence's
-- message also carries the row's hop column as scope_after (scope_before null), as the fence
-- trigger's does, so walsync tells the row's readers. An empty scope_column does exactly what
-- the five-argument form does.
CREATE FUNCTION synchro.backfill_fences(relation regclass, table_id text, pk_column text,
	soft_delete_column text, owner_column text, scope_column text) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	n bigint;
BEGIN
	IF coalesce(scope_column, '') = '' THEN
		RETURN synchro.backfill_fences(relation, table_id, pk_column, soft_delete_column,
			owner_column);
	END IF;
	IF coalesce(table_id, '') = '' THEN
		RAISE EXCEPTION 'synchro: empty table_id' USING ERRCODE = 'SY010';
	END IF;
	PERFORM synchro.check_fence_config(relation, pk_column, soft_delete_column, owner_column);
	EXECUTE format($q$
		WITH src AS MATERIALIZED (
			SELECT r.%1$I::text AS pk, %2$s AS deleted, %3$s AS owner, r.%5$I::text AS scope
			  FROM %4$s AS r
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
			'owner_before', NULL, 'owner_after', src.owner,
			'scope_before', NULL, 'scope_after', src.scope)::text))
		FROM ins JOIN src ON src.pk = ins.pk
		$q$,
		pk_column,
		CASE WHEN coalesce(soft_delete_column, '') = '' THEN 'false'
		     ELSE format('r.%I IS NOT NULL', soft_delete_column) END,
		CASE WHEN coalesce(owner_column, '') = '' THEN 'NULL::text'
		     ELSE format('r.%I::text', owner_column) END,
		relation, scope_column)
		INTO n USING table_id;
	RETURN n;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.backfill_fences(regclass, text, text, text, text, text)
	FROM PUBLIC;

-- (Re)installs the trigger synchro_scope on a membership or hop relation with its arguments,
-- four per scope or link it mirrors: 'member', the scope, the match column, the user column;
-- or 'link', the link, the key column, the column it reads. No arguments: the trigger is
-- dropped. Also refuses TRUNCATE on the relation (which skips row triggers and would leave
-- the mirror holding rows that are gone). Runs as the caller, who needs TRIGGER on the
-- relation and membership in synchro_owner.
CREATE FUNCTION synchro.install_scope_trigger(relation regclass, args text[]) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_args text;
	v_col text;
	i integer;
BEGIN
	IF coalesce(cardinality(args), 0) % 4 <> 0 THEN
		RAISE EXCEPTION 'synchro: scope trigger arguments come in fours' USING ERRCODE = 'SY010';
	END IF;
	FOR i IN 1 .. coalesce(cardinality(args), 0) LOOP
		IF i % 4 = 1 AND args[i] NOT IN ('member', 'link') OR coalesce(args[i], '') = '' THEN
			RAISE EXCEPTION 'synchro: bad scope trigger argument %', i USING ERRCODE = 'SY010';
		END IF;
		IF i % 4 IN (3, 0) AND NOT EXISTS (SELECT 1 FROM pg_attribute a
			WHERE a.attrelid = relation AND a.attname = args[i] AND a.attnum > 0
			  AND NOT a.attisdropped) THEN
			RAISE EXCEPTION 'synchro: % has no column %', relation, args[i]
				USING ERRCODE = 'SY010';
		END IF;
	END LOOP;
	IF EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = relation
	           AND t.tgname = 'synchro_scope') THEN
		EXECUTE format('DROP TRIGGER synchro_scope ON %s', relation);
	END IF;
	IF coalesce(cardinality(args), 0) = 0 THEN
		RETURN;
	END IF;
	SELECT string_agg(format('%L', a), ', ' ORDER BY n) INTO v_args
		FROM unnest(args) WITH ORDINALITY AS u(a, n);
	EXECUTE format('CREATE TRIGGER synchro_scope AFTER INSERT OR UPDATE OR DELETE ON %s'
		' FOR EACH ROW EXECUTE FUNCTION synchro.scope_trigger(%s)', relation, v_args);
	IF NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = relation
	               AND t.tgname = 'synchro_no_truncate') THEN
		EXECUTE format('CREATE TRIGGER synchro_no_truncate BEFORE TRUNCATE ON %s'
			' FOR EACH STATEMENT EXECUTE FUNCTION synchro.refuse_truncate()', relation);
	END IF;
END
$fn$;
REVOKE EXECUTE ON FUNCTION synchro.install_scope_trigger(regclass, text[]) FROM PUBLIC;

-- pull_window of migration 6 with the tables read by members (p_members): their entries
-- concern the user who is the owner before or after, or one of the readers before or after;
-- reader_after tells whether the user is one of the readers after. The seven-argument form
-- stays for a manifest without such tables.
CREATE FUNCTION synchro.pull_window(p_lsn pg_lsn, p_ordinal integer, p_user text,
	p_all text[], p_owner text[], p_members text[], p_limit integer, p_budget integer)
	RETURNS TABLE (commit_lsn pg_lsn, ordinal integer, table_id text, pk text, version text,
		mutation_id uuid, client_id uuid, owner_after text, visible boolean,
		reader_after boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $fn$
	SELECT s.commit_lsn, s.ordinal, s.table_id, s.pk, s.version, s.mutation_id, s.client_id,
		s.owner_after,
		s.xid IS NULL OR s.xid >= pg_snapshot_xmax(pg_current_snapshot())
		OR pg_visible_in_snapshot(s.xid, pg_current_snapshot()),
		coalesce(p_user = ANY (s.readers_after), false)
	  FROM (SELECT l.commit_lsn, l.ordinal, l.xid, l.table_id, l.pk, l.version,
			l.mutation_id, l.client_id, l.owner_before, l.owner_after,
			l.readers_before, l.readers_after
		  FROM synchro.changelog l
		 WHERE (l.commit_lsn, l.ordinal) > (p_lsn, p_ordinal)
		 ORDER BY l.commit_lsn, l.ordinal
		 LIMIT p_budget) s
	 WHERE s.table_id = ANY (p_all)
	    OR (s.table_id = ANY (p_owner) AND (s.owner_before = p_user OR s.owner_after = p_user))
	    OR (s.table_id = ANY (p_members)
		AND (s.owner_before = p_user OR s.owner_after = p_user
		     OR p_user = ANY (s.readers_before) OR p_user = ANY (s.readers_after)))
	 ORDER BY s.commit_lsn, s.ordinal
	 LIMIT p_limit
$fn$;
GRANT EXECUTE ON FUNCTION synchro.pull_window(pg_lsn, integer, text, text[], text[], text[],
	integer, integer) TO synchro_app;

RESET ROLE;
