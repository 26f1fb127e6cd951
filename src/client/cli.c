/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.c: synchro-cli, libsynchro-client on the command line, for people and tests.
 *
 * Layer: top of src/client (doc/hacking.md).
 * Notes: Every command opens the store, does one thing and closes it. synchro-cli(1) lists
 * the exit codes. Credentials come from files, the environment or a prompt. They never
 * come from argv, where every user of the host can read them. They are never printed or
 * stored.
 */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "synchro/alloc.h"
#include "synchro/json.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int fail(sy_client_rc rc, const sy_client_error *err)
{
	fprintf(stderr, "synchro-cli: %s\n",
	        err->message[0] ? err->message : sy_client_rc_name(rc));
	return sy_cli_exit(rc);
}

static void usage(FILE *f)
{
	fputs("usage: synchro-cli -d FILE [-u URL] [--user NAME [--password-file F] | --token-file "
	      "F]\n"
	      "                   [--poll MS] [--no-live] [--json] COMMAND ...\n"
	      "credentials: the password from --password-file, $SYNCHRO_PASSWORD or a prompt;\n"
	      "  a bearer token from --token-file or $SYNCHRO_TOKEN\n"
	      "commands:\n"
	      "  connect                         register / reconnect and fetch the schema\n"
	      "  insert TABLE PK field=value...  write intents (field:=JSON for a raw value)\n"
	      "  update TABLE PK field=value...\n"
	      "  delete TABLE PK\n"
	      "  atomic OP TABLE PK f=v... [-- OP TABLE PK f=v...]  one atomic transaction\n"
	      "  sync [--once] [--timeout S]     push and pull (--once: one round)\n"
	      "  status | pending | show ID | explain ID | batch ID [--bytes] | rows TABLE\n"
	      "  resolve discard|accept|rebase|remap ID [field=value...]\n"
	      "  query SQL [PARAM...]            one read-only SELECT over the synced tables\n"
	      "  index TABLE COLUMN...           an index on a synced table, for queries\n"
	      "  verify                          check the store\n"
	      "Read commands take --json. See synchro-cli(1).\n",
	      f);
}

/* PK: JSON when it parses as a canonical value of the pk type, else a JSON string. */
static char *json_value(const sy_field *f, sy_type type, const char *text, bool raw)
{
	sy_error e = {0};
	if (raw)
		return sy_strndup(text, strlen(text));
	if (strcmp(text, "null") == 0 && (f == NULL || f->nullable))
		return sy_strndup("null", 4);
	bool literal = type == SY_TYPE_INT32 || type == SY_TYPE_FLOAT64 || type == SY_TYPE_BOOL;
	if (literal) {
		sy_json_doc *d = sy_json_parse(text, strlen(text), &e);
		sy_json_doc_free(d);
		if (d != NULL)
			return sy_strndup(text, strlen(text));
	}
	sy_buf b = SY_BUF_INIT;
	if (!sy_jcs_write_string(&b, text, strlen(text))) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

char *sy_cli_pk(sy_client *c, const char *table, const char *text)
{
	const sy_manifest *m = sy_client_manifest(c);
	const sy_table *t = m ? sy_manifest_table(m, table, strlen(table)) : NULL;
	if (t == NULL) {
		fprintf(stderr, "synchro-cli: no synced table %s (connect first?)\n", table);
		return NULL;
	}
	return json_value(NULL, t->pk.type, text, false);
}

char *sy_cli_columns(sy_client *c, const char *table, int argc, char **argv)
{
	const sy_manifest *m = sy_client_manifest(c);
	const sy_table *t = m ? sy_manifest_table(m, table, strlen(table)) : NULL;
	if (t == NULL) {
		fprintf(stderr, "synchro-cli: no synced table %s (connect first?)\n", table);
		return NULL;
	}
	sy_buf b = SY_BUF_INIT;
	sy_buf_putc(&b, '{');
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq == NULL || eq == argv[i]) {
			fprintf(stderr, "synchro-cli: expected field=value, not %s\n", argv[i]);
			sy_buf_free(&b);
			return NULL;
		}
		bool raw = eq[-1] == ':';
		size_t nlen = (size_t)(eq - argv[i]) - (raw ? 1 : 0);
		const sy_field *f = sy_table_field(t, argv[i], nlen);
		char *v = json_value(f, f ? f->type : SY_TYPE_TEXT, eq + 1, raw);
		if (i > 0)
			sy_buf_putc(&b, ',');
		if (v == NULL || !sy_jcs_write_string(&b, argv[i], nlen)) {
			sy_free(v);
			sy_buf_free(&b);
			return NULL;
		}
		sy_buf_putc(&b, ':');
		sy_buf_puts(&b, v);
		sy_free(v);
	}
	sy_buf_putc(&b, '}');
	if (b.failed) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

static int cmd_write(sy_client *c, const char *cmd, int argc, char **argv, bool json)
{
	if (argc < 2 || (strcmp(cmd, "delete") == 0 && argc != 2)) {
		usage(stderr);
		return SY_CLI_USAGE;
	}
	sy_client_error err = {0};
	char *pk = sy_cli_pk(c, argv[0], argv[1]);
	char *cols = NULL;
	if (pk == NULL)
		return SY_CLI_REFUSED;
	if (strcmp(cmd, "delete") != 0 &&
	    (cols = sy_cli_columns(c, argv[0], argc - 2, argv + 2)) == NULL) {
		sy_free(pk);
		return SY_CLI_REFUSED;
	}
	sy_client_txn *t = NULL;
	char id[SY_CLIENT_ID_LEN + 1];
	sy_client_rc rc = sy_client_begin(c, false, &t, &err);
	if (rc == SY_CLIENT_OK) {
		rc = strcmp(cmd, "insert") == 0   ? sy_client_insert(t, argv[0], pk, cols, id, &err)
		     : strcmp(cmd, "update") == 0 ? sy_client_update(t, argv[0], pk, cols, id, &err)
		                                  : sy_client_delete(t, argv[0], pk, id, &err);
		if (rc == SY_CLIENT_OK)
			rc = sy_client_commit(t, &err);
		else
			sy_client_rollback(t);
	}
	sy_free(pk);
	sy_free(cols);
	if (rc != SY_CLIENT_OK)
		return fail(rc, &err);
	if (json)
		printf("{\"mutation_id\":\"%s\"}\n", id);
	else
		printf("%s\n", id);
	return SY_CLI_OK;
}

/* One write of an open transaction: OP TABLE PK [field=value...]. */
static sy_client_rc txn_write(sy_client *c, sy_client_txn *t, int argc, char **argv, char *id,
                              sy_client_error *err)
{
	if (argc < 3)
		return SY_CLIENT_EINVAL;
	const char *op = argv[0], *table = argv[1];
	char *pk = sy_cli_pk(c, table, argv[2]);
	char *cols = NULL;
	sy_client_rc rc = SY_CLIENT_EINVAL;
	if (pk != NULL && strcmp(op, "delete") == 0 && argc == 3)
		rc = sy_client_delete(t, table, pk, id, err);
	else if (pk != NULL && (strcmp(op, "insert") == 0 || strcmp(op, "update") == 0) &&
	         (cols = sy_cli_columns(c, table, argc - 3, argv + 3)) != NULL)
		rc = op[0] == 'i' ? sy_client_insert(t, table, pk, cols, id, err)
		                  : sy_client_update(t, table, pk, cols, id, err);
	sy_free(pk);
	sy_free(cols);
	return rc;
}

/* atomic OP TABLE PK f=v... [-- OP TABLE PK f=v...]...: one atomic transaction. */
static int cmd_atomic(sy_client *c, int argc, char **argv, bool json)
{
	sy_client_error err = {0};
	sy_client_txn *t = NULL;
	char ids[64][SY_CLIENT_ID_LEN + 1];
	size_t n = 0;
	sy_client_rc rc = sy_client_begin(c, true, &t, &err);
	if (rc != SY_CLIENT_OK)
		return fail(rc, &err);
	for (int i = 0; i < argc && rc == SY_CLIENT_OK;) {
		int j = i;
		while (j < argc && strcmp(argv[j], "--") != 0)
			j++;
		if (n == 64) {
			rc = SY_CLIENT_EINVAL;
			snprintf(err.message, sizeof err.message, "at most 64 writes");
			break;
		}
		rc = txn_write(c, t, j - i, argv + i, ids[n], &err);
		if (rc == SY_CLIENT_OK)
			n++;
		i = j + 1;
	}
	if (rc != SY_CLIENT_OK || n == 0) {
		sy_client_rollback(t);
		if (rc == SY_CLIENT_OK) {
			usage(stderr);
			return SY_CLI_USAGE;
		}
		return fail(rc, &err);
	}
	if ((rc = sy_client_commit(t, &err)) != SY_CLIENT_OK)
		return fail(rc, &err);
	for (size_t k = 0; k < n; k++)
		printf(json ? "{\"mutation_id\":\"%s\"}\n" : "%s\n", ids[k]);
	return SY_CLI_OK;
}

static int cmd_sync(sy_client *c, int argc, char **argv)
{
	bool once = false;
	long timeout_s = 60;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--once") == 0)
			once = true;
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			timeout_s = strtol(argv[++i], NULL, 10);
		else {
			usage(stderr);
			return SY_CLI_USAGE;
		}
	}
	sy_client_error err = {0};
	do {
		sy_client_rc rc = sy_client_sync(c, (int)(timeout_s * 1000), &err);
		if (rc != SY_CLIENT_OK && (once || rc != SY_CLIENT_ETIMEOUT))
			return fail(rc, &err);
		if (once)
			break;
		/* Until SIGINT/SIGTERM: steps at their due times. */
		int64_t next = 0;
		while (!stop_requested) {
			rc = sy_client_step(c, &next, &err);
			if (rc != SY_CLIENT_OK)
				return fail(rc, &err);
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			int64_t ms = next - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
			if (ms > 0) {
				/* In flight: the transport wakes us; idle: a live notification, or
				 * the due time (1 s at most, to see a signal). */
				sy_client_wait(c, ms > 1000 ? 1000 : (int)ms);
			}
		}
	} while (!once && !stop_requested);
	return SY_CLI_OK;
}

static int cmd_connect(sy_client *c, bool json)
{
	sy_client_error err = {0};
	sy_client_rc rc = sy_client_sync(c, 60000, &err);
	if (rc != SY_CLIENT_OK)
		return fail(rc, &err);
	sy_client_status s;
	if ((rc = sy_client_status_get(c, &s, &err)) != SY_CLIENT_OK)
		return fail(rc, &err);
	if (json)
		printf("{\"client_generation\":%llu,\"client_id\":\"%s\",\"schema\":{\"hash\":\"%"
		       "s\","
		       "\"version\":%llu}}\n",
		       (unsigned long long)s.generation, s.client_id, s.schema_hash,
		       (unsigned long long)s.schema_version);
	else
		printf("client %s generation %llu schema v%llu\n", s.client_id,
		       (unsigned long long)s.generation, (unsigned long long)s.schema_version);
	return SY_CLI_OK;
}

static int cmd_resolve(sy_client *c, int argc, char **argv, bool json)
{
	if (argc < 2) {
		usage(stderr);
		return SY_CLI_USAGE;
	}
	sy_client_error err = {0};
	sy_client_rc rc;
	char nid[SY_CLIENT_ID_LEN + 1] = "";
	const char *how = argv[0], *id = argv[1];
	if (strcmp(how, "discard") == 0 && argc == 2) {
		rc = sy_client_discard(c, id, &err);
	} else if (strcmp(how, "accept") == 0 && argc == 2) {
		rc = sy_client_accept_server(c, id, &err);
	} else if (strcmp(how, "rebase") == 0 || strcmp(how, "remap") == 0) {
		char *cols = NULL;
		if (argc > 2) {
			sy_client_intent *i = NULL;
			if ((rc = sy_client_intent_get(c, id, &i, &err)) != SY_CLIENT_OK)
				return fail(rc, &err);
			cols = sy_cli_columns(c, i->table, argc - 2, argv + 2);
			sy_client_intent_free(i);
			if (cols == NULL)
				return SY_CLI_REFUSED;
		} else if (strcmp(how, "remap") == 0) {
			fprintf(stderr, "synchro-cli: remap needs the new field=value list\n");
			return SY_CLI_USAGE;
		}
		rc = strcmp(how, "rebase") == 0 ? sy_client_rebase(c, id, cols, nid, &err)
		                                : sy_client_remap(c, id, cols, nid, &err);
		sy_free(cols);
	} else {
		usage(stderr);
		return SY_CLI_USAGE;
	}
	if (rc != SY_CLIENT_OK)
		return fail(rc, &err);
	if (nid[0] != '\0')
		printf(json ? "{\"mutation_id\":\"%s\"}\n" : "%s\n", nid);
	return SY_CLI_OK;
}

static void wipe_free(char *s)
{
	if (s == NULL)
		return;
	volatile char *v = s;
	while (*v != '\0')
		*v++ = '\0';
	sy_free(s);
}

/* The first line of what f holds, without its line end (new), or NULL with a message. */
static char *read_secret(FILE *f, const char *what)
{
	sy_buf b = SY_BUF_INIT;
	int ch;
	while ((ch = fgetc(f)) != EOF && ch != '\n' && b.len < 65536)
		sy_buf_putc(&b, (char)ch);
	while (b.len > 0 && b.data[b.len - 1] == '\r')
		b.len--;
	if (!sy_buf_putc(&b, '\0')) {
		if (b.data != NULL)
			memset(b.data, 0, b.len);
		sy_buf_free(&b);
		fprintf(stderr, "synchro-cli: %s: out of memory\n", what);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

static char *read_secret_file(const char *path, const char *what)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "synchro-cli: %s %s: cannot read it\n", what, path);
		return NULL;
	}
	char *s = read_secret(f, what);
	fclose(f);
	return s;
}

/* The password typed at the terminal, without echo (new), or NULL when there is none. */
static char *prompt_password(const char *user)
{
	if (!isatty(STDIN_FILENO))
		return NULL;
	FILE *tty = fopen("/dev/tty", "r+");
	if (tty == NULL)
		return NULL;
	struct termios old, quiet;
	bool restore = tcgetattr(fileno(tty), &old) == 0;
	if (restore) {
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
	}
	fprintf(tty, "Password for %s: ", user);
	fflush(tty);
	char *s = read_secret(tty, "password");
	if (restore)
		tcsetattr(fileno(tty), TCSAFLUSH, &old);
	fputc('\n', tty);
	fclose(tty);
	return s;
}

/* token_fn: the token file read again after a 401 (something else may have renewed it). */
static char *token_again(void *ctx)
{
	char *t = read_secret_file(ctx, "--token-file");
	char *out = t ? sy_client_alloc(strlen(t) + 1) : NULL;
	if (out != NULL)
		memcpy(out, t, strlen(t) + 1);
	wipe_free(t);
	return out;
}

typedef struct {
	const char *user, *password_file, *token_file;
	bool user_arg;          /* user came from --user, not from $SYNCHRO_USER */
	char *password, *token; /* new */
} cli_creds;

static char *dup_secret(const char *s)
{
	char *d = sy_strndup(s, strlen(s));
	if (d == NULL)
		fprintf(stderr, "synchro-cli: out of memory\n");
	return d;
}

/*
 * Where the credentials come from: --token-file; --user with --password-file,
 * $SYNCHRO_PASSWORD or the prompt; else $SYNCHRO_TOKEN; else $SYNCHRO_USER as --user.
 * SY_CLI_OK, or SY_CLI_USAGE with a message.
 */
static int get_creds(cli_creds *k, bool network)
{
	if (k->user != NULL && strchr(k->user, ':') != NULL) {
		fprintf(stderr,
		        "synchro-cli: %s takes a name only: a password on the command line is"
		        " visible to every user of this host (ps, /proc). Put it in a file for"
		        " --password-file, in $SYNCHRO_PASSWORD, or type it at the prompt.\n",
		        k->user_arg ? "--user" : "$SYNCHRO_USER");
		return SY_CLI_USAGE;
	}
	if (k->user_arg && k->token_file != NULL) {
		fprintf(stderr, "synchro-cli: --user and --token-file: give one\n");
		return SY_CLI_USAGE;
	}
	const char *env_token = getenv("SYNCHRO_TOKEN");
	bool by_token =
	        k->token_file != NULL || (!k->user_arg && env_token != NULL && *env_token != '\0');
	if (by_token)
		k->user = NULL;
	if (k->user == NULL && k->password_file != NULL) {
		fprintf(stderr, "synchro-cli: --password-file needs --user NAME\n");
		return SY_CLI_USAGE;
	}
	if (!network)
		return SY_CLI_OK; /* local commands send nothing */
	if (k->token_file != NULL) {
		if ((k->token = read_secret_file(k->token_file, "--token-file")) == NULL)
			return SY_CLI_USAGE;
	} else if (by_token) {
		if ((k->token = dup_secret(env_token)) == NULL)
			return SY_CLI_ERROR;
	} else if (k->user != NULL) {
		const char *env_pw = getenv("SYNCHRO_PASSWORD");
		if (k->password_file != NULL) {
			if ((k->password = read_secret_file(k->password_file, "--password-file")) ==
			    NULL)
				return SY_CLI_USAGE;
		} else if (env_pw != NULL) {
			if ((k->password = dup_secret(env_pw)) == NULL)
				return SY_CLI_ERROR;
		} else {
			k->password = prompt_password(k->user);
		}
	}
	return SY_CLI_OK;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {{"db", required_argument, NULL, 'd'},
	                                      {"url", required_argument, NULL, 'u'},
	                                      {"user", required_argument, NULL, 'U'},
	                                      {"json", no_argument, NULL, 'j'},
	                                      {"help", no_argument, NULL, 'h'},
	                                      {"password-file", required_argument, NULL, 'P'},
	                                      {"token-file", required_argument, NULL, 'T'},
	                                      {"poll", required_argument, NULL, 'p'},
	                                      {"no-live", no_argument, NULL, 'L'},
	                                      {NULL, 0, NULL, 0}};
	const char *db = NULL, *url = getenv("SYNCHRO_URL");
	cli_creds k = {.user = getenv("SYNCHRO_USER")};
	bool json = false;
	unsigned poll_ms = 0;
	bool live_off = false;
	int opt;
	while ((opt = getopt_long(argc, argv, "+d:u:jh", longs, NULL)) != -1) {
		switch (opt) {
		case 'd': db = optarg; break;
		case 'u': url = optarg; break;
		case 'U':
			k.user = optarg;
			k.user_arg = true;
			break;
		case 'P': k.password_file = optarg; break;
		case 'T': k.token_file = optarg; break;
		case 'j': json = true; break;
		case 'L': live_off = true; break;
		case 'p': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 1 || v > 86400000) {
				fprintf(stderr,
				        "synchro-cli: --poll: milliseconds, 1 to 86400000\n");
				return SY_CLI_USAGE;
			}
			poll_ms = (unsigned)v;
			break;
		}
		case 'h': usage(stdout); return SY_CLI_OK;
		default: usage(stderr); return SY_CLI_USAGE;
		}
	}
	if (db == NULL || optind >= argc) {
		usage(stderr);
		return SY_CLI_USAGE;
	}
	const char *cmd = argv[optind];
	int cargc = argc - optind - 1;
	char **cargv = argv + optind + 1;
	/* --json may also follow the command */
	for (int i = 0; i < cargc; i++)
		if (strcmp(cargv[i], "--json") == 0) {
			json = true;
			memmove(&cargv[i], &cargv[i + 1], (size_t)(cargc - i - 1) * sizeof *cargv);
			cargc--;
			i--;
		}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	bool network = strcmp(cmd, "connect") == 0 || strcmp(cmd, "sync") == 0;
	int cs = get_creds(&k, network);
	if (cs != SY_CLI_OK)
		return cs;
	sy_client_options o = {.url = url,
	                       .user = k.token == NULL ? k.user : NULL,
	                       .password = k.password,
	                       .token = k.token,
	                       .token_fn = k.token_file != NULL && network ? token_again : NULL,
	                       .token_ctx = (void *)k.token_file,
	                       .poll_interval_ms = poll_ms,
	                       .live_off = live_off};
	sy_client *c = NULL;
	sy_client_error err = {0};
	sy_client_rc rc = sy_client_open(db, &o, &c, &err);
	wipe_free(k.password);
	wipe_free(k.token);
	if (rc != SY_CLIENT_OK)
		return fail(rc, &err);
	int status;
	if (network && url == NULL) {
		fprintf(stderr, "synchro-cli: %s needs -u URL\n", cmd);
		status = SY_CLI_USAGE;
	} else if (strcmp(cmd, "connect") == 0) {
		status = cmd_connect(c, json);
	} else if (strcmp(cmd, "sync") == 0) {
		status = cmd_sync(c, cargc, cargv);
	} else if (strcmp(cmd, "insert") == 0 || strcmp(cmd, "update") == 0 ||
	           strcmp(cmd, "delete") == 0) {
		status = cmd_write(c, cmd, cargc, cargv, json);
	} else if (strcmp(cmd, "atomic") == 0) {
		status = cmd_atomic(c, cargc, cargv, json);
	} else if (strcmp(cmd, "resolve") == 0) {
		status = cmd_resolve(c, cargc, cargv, json);
	} else {
		status = sy_cli_read(c, cmd, cargc, cargv, json);
	}
	sy_client_close(c);
	return status;
}
