-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 10: the batch ledger's response bodies compressed with lz4 where the server
-- has it. A 100-mutation response is tens of kilobytes and is always toasted; pglz cost
-- about 0.6 ms of a push's transaction per batch in contrib/bench/push, lz4 a fraction of
-- it. Only the storage changes: the bytes read back are the exact bytes written, and rows
-- already stored keep their compression. A server built without lz4 keeps pglz.

SET ROLE synchro_owner;

DO $do$
BEGIN
	ALTER TABLE synchro.batches ALTER COLUMN response SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
	RAISE NOTICE 'synchro: this server has no lz4; batch responses stay compressed with pglz';
END
$do$;

RESET ROLE;
