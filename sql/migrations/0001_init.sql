-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 1: roles, schema synchro and the migrations ledger (placeholder, being filled in).
CREATE SCHEMA synchro;
CREATE TABLE synchro.migrations (
	version integer PRIMARY KEY,
	name text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
);
