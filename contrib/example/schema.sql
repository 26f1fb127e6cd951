-- SPDX-License-Identifier: BSD-2-Clause
-- The application tables of the example manifest (contrib/example/manifest.json): plain
-- tables of the application, nothing of schema synchro. synchroctl schema publish installs
-- their version-fence triggers. The integration suites use them too.

-- A to-do list, read and written by its owner (policy owner: the server sets owner).
CREATE TABLE public.todo_list (
	id uuid PRIMARY KEY,
	name text NOT NULL,
	owner text NOT NULL
);

-- Who shares a list: the membership relation of the to-dos' members policy. Not synced:
-- the triggers below keep it. A list's owner is its first member, so the owner may share
-- it; a push may not insert its own membership row, because the write policy asks for the
-- membership the row would give (doc/protocol.md, "Membership scopes in a push").
CREATE TABLE public.list_member (
	list_id uuid NOT NULL REFERENCES public.todo_list (id) ON DELETE CASCADE,
	user_id text NOT NULL,
	PRIMARY KEY (list_id, user_id)
);

-- A share of a list with another user, by name: read by the list's members (so they see
-- the list's name), written by the member who shared it. Its insert makes the user a
-- member; its delete removes them (not the list's owner).
CREATE TABLE public.list_share (
	id uuid PRIMARY KEY,
	list_id uuid NOT NULL REFERENCES public.todo_list (id) ON DELETE CASCADE,
	user_id text NOT NULL,
	list_name text NOT NULL,
	owner text NOT NULL,
	UNIQUE (list_id, user_id)
);

-- Hard delete. A to-do in a list is read and written by the list's members and its owner;
-- a to-do in no list (list_id null) by its owner only (policy members, owner_field owner).
CREATE TABLE public.todo (
	id uuid PRIMARY KEY,
	title text NOT NULL,
	done boolean NOT NULL DEFAULT false,
	note text,
	owner text NOT NULL,
	list_id uuid REFERENCES public.todo_list (id) ON DELETE CASCADE
);
CREATE INDEX todo_list_id ON public.todo (list_id);

-- Keeps list_member: a new list's owner, a share's user in and out.
CREATE FUNCTION public.list_member_sync() RETURNS trigger LANGUAGE plpgsql AS $sync$
BEGIN
	IF TG_TABLE_NAME = 'todo_list' THEN
		INSERT INTO public.list_member VALUES (NEW.id, NEW.owner) ON CONFLICT DO NOTHING;
	ELSIF TG_OP = 'INSERT' THEN
		INSERT INTO public.list_member VALUES (NEW.list_id, NEW.user_id) ON CONFLICT DO NOTHING;
	ELSE
		DELETE FROM public.list_member m
		 WHERE m.list_id = OLD.list_id AND m.user_id = OLD.user_id
		   AND NOT EXISTS (SELECT 1 FROM public.todo_list l
		                    WHERE l.id = OLD.list_id AND l.owner = OLD.user_id);
	END IF;
	RETURN NULL;
END
$sync$;
CREATE TRIGGER list_member_owner AFTER INSERT ON public.todo_list
	FOR EACH ROW EXECUTE FUNCTION public.list_member_sync();
CREATE TRIGGER list_member_share AFTER INSERT OR DELETE ON public.list_share
	FOR EACH ROW EXECUTE FUNCTION public.list_member_sync();

-- Soft delete (deleted_at non-null = deleted); one column per portable type, all nullable.
CREATE TABLE public.item (
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
	deleted_at timestamptz
);
