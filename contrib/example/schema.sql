-- SPDX-License-Identifier: BSD-2-Clause
-- The application tables of the example manifest (contrib/example/manifest.json): plain
-- tables of the application, nothing of schema synchro. synchroctl schema publish installs
-- their version-fence triggers. The integration suites use them too.

-- Hard delete; read and written by its owner only (policy owner: the server sets owner).
CREATE TABLE public.todo (
	id uuid PRIMARY KEY,
	title text NOT NULL,
	done boolean NOT NULL DEFAULT false,
	note text,
	owner text NOT NULL
);

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
