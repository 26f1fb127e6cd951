-- SPDX-License-Identifier: BSD-2-Clause
-- What the roles may do on the example's app tables (contrib/example/schema.sql): the one
-- place for these grants, used by contrib/quickstart and the e2e stacks after `synchroctl
-- schema publish` (so this file has the last word over publish's own grants).
-- Run as a superuser or the tables' owner; GRANT and REVOKE are idempotent.
--
-- Every push write runs inside synchro.synchro_push (migration 13: SECURITY DEFINER, owned
-- by synchro_owner), so synchro_owner writes the rows and its triggers run with its
-- authority. The responders (synchro_app) only read them: pull and rebuild.
-- (Before migration 13 the responders' own connection wrote the pushed rows, and synchro_app
-- held SELECT, INSERT, UPDATE, DELETE instead.)

GRANT USAGE ON SCHEMA public TO synchro_app, synchro_owner;

-- the responders read (list_member too: pull reads who shares a list)
REVOKE INSERT, UPDATE, DELETE, TRUNCATE
	ON public.todo, public.item, public.todo_list, public.list_share, public.list_member,
	   public.list_leave
	FROM synchro_app;
GRANT SELECT ON public.todo, public.item, public.todo_list, public.list_share, public.list_member,
	public.list_leave TO synchro_app;

-- the owner writes, inside synchro_push; the triggers of todo_list, list_share and
-- list_leave keep list_member, the shares' names and the requests to leave
-- (contrib/example/schema.sql) with its authority
GRANT SELECT, INSERT, UPDATE, DELETE
	ON public.todo, public.item, public.todo_list, public.list_share, public.list_leave TO synchro_owner;
GRANT SELECT, INSERT, DELETE ON public.list_member TO synchro_owner;
