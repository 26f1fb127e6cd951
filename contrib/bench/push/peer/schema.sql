-- SPDX-License-Identifier: BSD-2-Clause
-- contrib/bench/push/peer/schema.sql: the tables of the push benchmark's peer and limit, beside
-- (never inside) Synchro's: bench_peer.item has the shape of the example's synced
-- public.item (contrib/example/schema.sql) plus the version column a hand-written endpoint
-- checks; bench_peer.batches is the peer's idempotency ledger (a unique batch id, the stored
-- response); bench_peer.limit_batches the ledger row the "trivial + same writes" limit
-- inserts beside its rows; bench_peer.fast_item and bench_peer.fast_batches the same two for
-- the fast peer (contrib/bench/push/peer-fast). Both peers log in as bench_peer, which may
-- touch only these.
-- Run as a superuser on the bench's throwaway database (contrib/bench/push/bench.py).
CREATE SCHEMA bench_peer;

CREATE TABLE bench_peer.item (
	id bigint PRIMARY KEY,
	label text UNIQUE DEFERRABLE INITIALLY DEFERRED,
	qty integer CHECK (qty >= 0),
	price numeric,
	weight double precision,
	due date,
	seen_at timestamptz,
	tags jsonb,
	blob bytea,
	ref uuid,
	deleted_at timestamptz,
	version bigint NOT NULL DEFAULT 1
);

CREATE TABLE bench_peer.batches (
	batch_id uuid PRIMARY KEY,
	user_name text NOT NULL,
	response text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE bench_peer.limit_batches (
	batch_id uuid PRIMARY KEY,
	response text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

DO $roles$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'bench_peer') THEN
		CREATE ROLE bench_peer LOGIN;
	END IF;
END
$roles$;
-- A write the peer sees refused (a key or check the row breaks) would otherwise have the server
-- log quote the row's values; the peer logs the SQLSTATE itself.
ALTER ROLE bench_peer SET log_min_messages = fatal;
GRANT USAGE ON SCHEMA bench_peer TO bench_peer;
GRANT SELECT, INSERT, UPDATE, DELETE ON bench_peer.item TO bench_peer;
GRANT SELECT, INSERT ON bench_peer.batches TO bench_peer;

-- The fast peer's tables (contrib/bench/push/peer-fast): the same shapes, its own rows and keys.
CREATE TABLE bench_peer.fast_item (
	id bigint PRIMARY KEY,
	label text UNIQUE DEFERRABLE INITIALLY DEFERRED,
	qty integer CHECK (qty >= 0),
	price numeric,
	weight double precision,
	due date,
	seen_at timestamptz,
	tags jsonb,
	blob bytea,
	ref uuid,
	deleted_at timestamptz,
	version bigint NOT NULL DEFAULT 1
);

CREATE TABLE bench_peer.fast_batches (
	batch_id uuid PRIMARY KEY,
	user_name text NOT NULL,
	response text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON bench_peer.fast_item TO bench_peer;
GRANT SELECT, INSERT ON bench_peer.fast_batches TO bench_peer;
