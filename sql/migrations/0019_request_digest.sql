-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 19: the batch ledger keeps a digest of the exact request octets beside the
-- batch fingerprint (doc/contract.md#exact-replay;
-- doc/protocol.md#decisions-the-contract-leaves-open): SHA-256 over the domain
-- 'synchro:v3:push-request-octets:v1', the authenticated user and the request body, written by
-- synchro_push with the batch row. A later request of the same octets from the same user is
-- answered from the batch row without being parsed again; its parse, structural validation and
-- fingerprint would be those of the stored request.
-- - NULL for every batch written before this migration (and by a module older than it):
--   such a batch is replayed as before, after the request is parsed and fingerprinted. A
--   digest that is not 32 octets never matches; no CHECK is spent on it per push.
-- - Immutable like the rest of a batch row (batches_before_update, below).
-- - No index: the batch is found by its primary key, with the ids read from the body.
-- The module must be one that writes the column (synchro.module_abi() >= 19, migration 18):
-- an older one would keep storing batches without it.

DO $abi_level$
BEGIN
	IF synchro.module_abi() < 19 THEN
		RAISE EXCEPTION 'synchro: migration 19 needs the server module of its release; the installed synchro module serves migration %', synchro.module_abi()
			USING ERRCODE = '0A000',
			      HINT = 'Install the new module (make install, or the package) first, then run synchroctl migrate again (doc/operations.md, migration 19).';
	END IF;
END
$abi_level$;

ALTER TABLE synchro.batches ADD COLUMN request_digest bytea;
COMMENT ON COLUMN synchro.batches.request_digest IS
	'SHA-256 of synchro:v3:push-request-octets:v1, 0x00, the user''s length (uint32 big-endian), the user and the exact request body (migration 19); NULL before it';

-- Ledger rows are immutable once complete; identity, fingerprint and request digest never
-- change (doc/contract.md#exact-replay). Applies to every role, the owner included.
CREATE OR REPLACE FUNCTION synchro.batches_before_update() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF OLD.state = 'complete' THEN
		RAISE EXCEPTION 'synchro: a complete batch ledger row is immutable'
			USING ERRCODE = 'SY002';
	END IF;
	IF (NEW.user_id, NEW.client_id, NEW.batch_id, NEW.protocol_version,
	    NEW.client_generation, NEW.schema_version, NEW.schema_hash, NEW.fp_algorithm,
	    NEW.fp_version, NEW.fp_domain, NEW.fingerprint, NEW.atomic, NEW.created_at,
	    NEW.request_digest)
	   IS DISTINCT FROM
	   (OLD.user_id, OLD.client_id, OLD.batch_id, OLD.protocol_version,
	    OLD.client_generation, OLD.schema_version, OLD.schema_hash, OLD.fp_algorithm,
	    OLD.fp_version, OLD.fp_domain, OLD.fingerprint, OLD.atomic, OLD.created_at,
	    OLD.request_digest) THEN
		RAISE EXCEPTION 'synchro: the identity and fingerprint of a batch never change'
			USING ERRCODE = 'SY002';
	END IF;
	RETURN NEW;
END
$fn$;
