/* SPDX-License-Identifier: BSD-2-Clause */
/* contrib/bench/push/trivial_fcgi: the web stack's limit for the push benchmark: preforked
 * FastCGI responders that read each request body and answer one fixed 200 JSON body. With a
 * third argument, each responder also runs that statement once per request on its own
 * PostgreSQL connection (libpq's environment), prepared, with the arguments after it as its
 * parameters: the web stack plus one database round trip, the least an exact replay can cost
 * (doc/contract.md#dispatch-order checks retirement in the database first). With
 * TRIVIAL_ANSWER_BYTES=N in the environment the answer is padded to N bytes (a reference for
 * replays whose stored response is that large: the web stack moving the same bytes). With
 * TRIVIAL_BODY_PARAM=1 the statement's parameters are instead the request body ($1) and the answer
 * ($2): the web stack plus the push's row writes and a ledger row in one round trip (a statement
 * that fails answers 409 with its SQLSTATE only, and the responder goes on; a request without a
 * body, /healthz, is answered without the statement). A bench reference: it trusts the bench's
 * bodies. */
#include "config.h"

#include <fcgiapp.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char answer[] =
        "{\"accepted\":[],\"batch_id\":\"00000000-0000-4000-8000-000000000000\","
        "\"rejected\":[],\"server_time\":\"2026-11-29T10:11:12.123456Z\"}";

static volatile sig_atomic_t stopping;

/* The answer, padded to TRIVIAL_ANSWER_BYTES when that is larger: {"pad":"xxx...",...}. */
static char *padded_answer(int *len)
{
	const char *env = getenv("TRIVIAL_ANSWER_BYTES");
	long want = env != NULL ? strtol(env, NULL, 10) : 0;
	int base = (int)sizeof answer - 1;
	if (want <= base + 10 || want > 64L * 1024 * 1024) {
		*len = base;
		return (char *)answer;
	}
	char *s = malloc((size_t)want + 1);
	if (s == NULL)
		_exit(1);
	int head = snprintf(s, (size_t)want + 1, "{\"pad\":\"");
	int fill = (int)want - head - 2 - (base - 1);
	memset(s + head, 'x', (size_t)fill);
	s[head + fill] = '"';
	s[head + fill + 1] = ',';
	memcpy(s + head + fill + 2, answer + 1, (size_t)base - 1);
	*len = (int)want;
	return s;
}

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* TRIVIAL_BODY_PARAM: the body read whole into *in (grown as needed), the statement run with
 * it and the answer as parameters, the answer sent (or 409 with the SQLSTATE). False when
 * memory runs out. */
static bool serve_writes(FCGX_Request *rq, PGconn *pg, char **in, size_t *cap,
                         const char *answer_body, int answer_len)
{
	size_t len = 0;
	for (;;) {
		if (*cap - len < 65537) {
			size_t ncap = *cap == 0 ? 131072 : *cap * 2;
			char *n = realloc(*in, ncap);
			if (n == NULL)
				return false;
			*in = n;
			*cap = ncap;
		}
		int got = FCGX_GetStr(*in + len, 65536, rq->in);
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	(*in)[len] = '\0';
	if (len == 0) { /* /healthz: no body, no statement */
		FCGX_FPrintF(rq->out, "Status: 200 OK\r\nContent-Type: text/plain\r\n\r\nok\n");
		return true;
	}
	const char *values[2] = {*in, answer_body};
	PGresult *r = PQexecPrepared(pg, "q", 2, values, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		FCGX_FPrintF(rq->out,
		             "Status: 200 OK\r\nContent-Type: application/json\r\n"
		             "Content-Length: %d\r\n\r\n",
		             answer_len);
		FCGX_PutStr(answer_body, answer_len, rq->out);
	} else {
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		FCGX_FPrintF(rq->out,
		             "Status: 409 Conflict\r\nContent-Type: application/json\r\n\r\n"
		             "{\"error\":{\"code\":\"batch_rejected\",\"message\":\"SQLSTATE %s\","
		             "\"retryable\":false}}",
		             state != NULL ? state : "?");
	}
	PQclear(r);
	return true;
}

static void serve(int fd, const char *sql, int nparams, char **params)
{
	FCGX_Request rq;
	char buf[65536];
	PGconn *pg = NULL;
	if (sql != NULL) {
		pg = PQconnectdb("");
		if (PQstatus(pg) != CONNECTION_OK) {
			fprintf(stderr, "trivial_fcgi: %s", PQerrorMessage(pg));
			_exit(1);
		}
		PGresult *r = PQprepare(pg, "q", sql, 0, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			fprintf(stderr, "trivial_fcgi: %s", PQerrorMessage(pg));
			_exit(1);
		}
		PQclear(r);
	}
	int answer_len;
	const char *body = padded_answer(&answer_len);
	if (FCGX_InitRequest(&rq, fd, 0) != 0)
		_exit(1);
	const char *env = getenv("TRIVIAL_BODY_PARAM");
	bool body_param = pg != NULL && env != NULL && strcmp(env, "1") == 0;
	char *in = NULL;
	size_t in_cap = 0;
	while (!stopping && FCGX_Accept_r(&rq) >= 0) {
		if (body_param) {
			if (!serve_writes(&rq, pg, &in, &in_cap, body, answer_len))
				_exit(1);
			FCGX_Finish_r(&rq);
			continue;
		}
		/* Read the whole body, as a real responder does before it answers. */
		while (FCGX_GetStr(buf, sizeof buf, rq.in) > 0)
			;
		if (pg != NULL) {
			/* binary results, as synchro-fcgi reads its replay lookup */
			PGresult *r = PQexecPrepared(pg, "q", nparams, (const char *const *)params,
			                             NULL, NULL, 1);
			if (PQresultStatus(r) != PGRES_TUPLES_OK)
				_exit(1);
			PQclear(r);
		}
		FCGX_FPrintF(rq.out,
		             "Status: 200 OK\r\nContent-Type: application/json\r\n"
		             "Content-Length: %d\r\n\r\n",
		             answer_len); /* FCGX_FPrintF knows no %zu */
		FCGX_PutStr(body, answer_len, rq.out);
		FCGX_Finish_r(&rq);
	}
	free(in);
	if (pg != NULL)
		PQfinish(pg);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fputs("usage: trivial_fcgi SOCKET_PATH PROCESSES [STATEMENT [PARAMETER...]]\n"
		      "  (TRIVIAL_BODY_PARAM=1: STATEMENT's parameters are the body and the "
		      "answer)\n",
		      stderr);
		return 2;
	}
	int procs = atoi(argv[2]);
	if (procs < 1 || procs > 256) {
		fputs("trivial_fcgi: PROCESSES must be 1..256\n", stderr);
		return 2;
	}
	if (FCGX_Init() != 0)
		return 1;
	unlink(argv[1]);
	int fd = FCGX_OpenSocket(argv[1], 1024);
	if (fd < 0) {
		perror("trivial_fcgi: FCGX_OpenSocket");
		return 1;
	}
	chmod(argv[1], 0666);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pid_t *kids = calloc((size_t)procs, sizeof *kids);
	if (kids == NULL)
		return 1;
	for (int i = 0; i < procs; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			serve(fd, argc >= 4 ? argv[3] : NULL, argc > 4 ? argc - 4 : 0, argv + 4);
		if (kids[i] < 0) {
			perror("trivial_fcgi: fork");
			return 1;
		}
	}
	while (!stopping)
		pause();
	for (int i = 0; i < procs; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < procs; i++)
		waitpid(kids[i], NULL, 0);
	unlink(argv[1]);
	free(kids);
	return 0;
}
