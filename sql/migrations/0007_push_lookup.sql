-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 7: the batch index of the mutation ledger leads with batch_id.
-- The push path looks up (user_id, client_id, mutation_id) for every mutation of a request,
-- before and inside its transaction. Led by (user_id, client_id), the batch index matched
-- that prefix as well as the primary key did, and before the first ANALYZE of a young
-- ledger the planner chose it and filtered the client's whole ledger on every lookup. Led
-- by batch_id it still serves every batch lookup (inspection, the purge's foreign-key
-- checks) and leaves the identity lookups to the primary key.

SET ROLE synchro_owner;

DROP INDEX synchro.mutations_batch;
CREATE INDEX mutations_batch ON synchro.mutations (batch_id, user_id, client_id);

RESET ROLE;
