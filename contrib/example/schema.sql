-- SPDX-License-Identifier: BSD-2-Clause
-- The application tables of the example manifest (contrib/example/manifest.json): plain
-- tables of the application, nothing of schema synchro. synchroctl schema publish installs
-- their version-fence triggers. The integration suites use them too.

-- A to-do list, read and written by its owner (policy owner: the server sets owner): only
-- the owner renames or deletes it. Its delete takes its to-dos and shares with it.
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

-- A member's request to leave a list: synced, read and written by the user who leaves (policy
-- owner: the server sets owner). Its insert deletes the share that names the user, so the
-- list and its to-dos leave the user's devices; the list, its to-dos and the other shares
-- stay. Leaving needs no write on the list owner's rows: the trigger below does it. No
-- foreign key: a request for a list that does not exist, or that the user does not read,
-- is accepted like any other and changes nothing. A new share of the list with the user,
-- or the list's delete, deletes the request.
CREATE TABLE public.list_leave (
	id uuid PRIMARY KEY,
	list_id uuid NOT NULL,
	owner text NOT NULL
);
CREATE INDEX list_leave_list_id ON public.list_leave (list_id);

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

-- A list renamed by its owner: its shares carry the new name, so its members see it. A
-- list deleted, or shared again with a user who left it: the requests to leave it go.
-- A request to leave: the share naming its user goes (list_member_sync removes the member).
CREATE FUNCTION public.list_share_follow() RETURNS trigger LANGUAGE plpgsql AS $follow$
BEGIN
	IF TG_TABLE_NAME = 'list_leave' THEN
		DELETE FROM public.list_share s WHERE s.list_id = NEW.list_id AND s.user_id = NEW.owner;
	ELSIF TG_TABLE_NAME = 'list_share' THEN
		DELETE FROM public.list_leave r WHERE r.list_id = NEW.list_id AND r.owner = NEW.user_id;
	ELSIF TG_OP = 'DELETE' THEN
		DELETE FROM public.list_leave r WHERE r.list_id = OLD.id;
	ELSE
		UPDATE public.list_share s SET list_name = NEW.name
		 WHERE s.list_id = NEW.id AND s.list_name IS DISTINCT FROM NEW.name;
	END IF;
	RETURN NULL;
END
$follow$;
CREATE TRIGGER list_share_rename AFTER UPDATE OF name ON public.todo_list
	FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION public.list_share_follow();
CREATE TRIGGER list_leave_gone AFTER DELETE ON public.todo_list
	FOR EACH ROW EXECUTE FUNCTION public.list_share_follow();
CREATE TRIGGER list_leave_reshare AFTER INSERT ON public.list_share
	FOR EACH ROW EXECUTE FUNCTION public.list_share_follow();
CREATE TRIGGER list_leave_request AFTER INSERT ON public.list_leave
	FOR EACH ROW EXECUTE FUNCTION public.list_share_follow();

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
