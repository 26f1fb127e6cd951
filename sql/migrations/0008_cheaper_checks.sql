-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 8: the same CHECK rules, cheaper on the push path.
-- PostgreSQL's regular expressions are slow on bounded repetition ({64}, {1,128}):
-- contrib/bench/push found about 13% of the server's CPU for a pushed mutation in
-- these checks (ledger hashes on every mutation row, the version on every fence
-- write). A length test plus an unbounded class accepts exactly the same values,
-- since both classes are ASCII (one octet per character), and costs 2-7 times less.

SET ROLE synchro_owner;

ALTER TABLE synchro.batches
	DROP CONSTRAINT batches_schema_hash_check,
	ADD CONSTRAINT batches_schema_hash_check
		CHECK (octet_length(schema_hash) = 64 AND schema_hash ~ '^[0-9a-f]+$');

ALTER TABLE synchro.mutations
	DROP CONSTRAINT mutations_authored_schema_hash_check,
	ADD CONSTRAINT mutations_authored_schema_hash_check
		CHECK (octet_length(authored_schema_hash) = 64 AND authored_schema_hash ~ '^[0-9a-f]+$'),
	DROP CONSTRAINT mutations_submitted_schema_hash_check,
	ADD CONSTRAINT mutations_submitted_schema_hash_check
		CHECK (octet_length(submitted_schema_hash) = 64
		       AND submitted_schema_hash ~ '^[0-9a-f]+$'),
	DROP CONSTRAINT mutations_outcome_schema_hash_check,
	ADD CONSTRAINT mutations_outcome_schema_hash_check
		CHECK (octet_length(outcome_schema_hash) = 64 AND outcome_schema_hash ~ '^[0-9a-f]+$');

-- Opaque versions: 1..128 printable ASCII characters without space (the server mints
-- 32 lowercase hex digits).
ALTER TABLE synchro.row_fences
	DROP CONSTRAINT row_fences_version_check,
	ADD CONSTRAINT row_fences_version_check
		CHECK (octet_length(version) BETWEEN 1 AND 128 AND version ~ '^[!-~]+$');

RESET ROLE;
