-- SPDX-License-Identifier: BSD-2-Clause
-- The login roles of contrib/quickstart and of the e2e stacks (tests/e2e/synchro_e2e.py), as
-- doc/operations.md ("Login roles") tells a sysadmin to create them: the responders log in
-- as synchro_fcgi, a member of synchro_app only; synchro-walsync as synchro_ws, a member of
-- synchro_walsync only, with REPLICATION (an attribute of the login role, not inherited).
-- Neither is a superuser nor a member of synchro_owner: synchroctl's administration keeps
-- the installer's role. Run as a superuser after `synchroctl init` (which creates the
-- groups); roles are cluster-wide, so a second run, or another database, changes nothing.
-- No password: these stacks reach PostgreSQL through a private UNIX socket with trust
-- authentication; give real deployments scram-sha-256 and a password.
DO $roles$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'synchro_fcgi') THEN
		CREATE ROLE synchro_fcgi LOGIN;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'synchro_ws') THEN
		CREATE ROLE synchro_ws LOGIN;
	END IF;
END
$roles$;
ALTER ROLE synchro_fcgi LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
ALTER ROLE synchro_ws LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS INHERIT;
GRANT synchro_app TO synchro_fcgi;
GRANT synchro_walsync TO synchro_ws;
