/* SPDX-License-Identifier: BSD-2-Clause */
/* contrib/bench/pull/pull_watch: one client pulling /v3/pull over one keep-alive HTTP/1.1
 * connection, noting when each change of a table first arrives (commit-to-pull-visible). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/json.h"

#include "../bench.h"

/*
 * The Python poller this replaces parsed a 600 kB page in tens of milliseconds and shared its
 * interpreter with the benchmark's samplers: on saturated cores it fell behind the load and
 * measured its own queue. Here a page costs the client well under a millisecond, so what is
 * measured is the server's. Times are CLOCK_REALTIME, comparable with PostgreSQL's commit
 * timestamps on the same machine.
 */

/* The connection: a socket and what was read past the last answer. */
typedef struct {
	int fd;
	int port;
	sy_buf in;
	size_t off; /* start of unconsumed bytes in in */
} conn;

static bool conn_open(conn *c)
{
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		return false;
	int one = 1;
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(c->fd);
		c->fd = -1;
		return false;
	}
	sy_buf_reset(&c->in);
	c->off = 0;
	return true;
}

static void conn_close(conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Reads more bytes into c->in; false on EOF or error. */
static bool fill(conn *c)
{
	if (!sy_buf_reserve(&c->in, 65536))
		return false;
	ssize_t n;
	do /* the buffer keeps room for its NUL */
		n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	c->in.len += (size_t)n;
	c->in.data[c->in.len] = '\0';
	return true;
}

/* Index past the next CRLF at or after c->off, filling as needed; 0 on failure. */
static size_t line_end(conn *c, size_t from)
{
	for (;;) {
		for (size_t i = from; i + 1 < c->in.len; i++)
			if (c->in.data[i] == '\r' && c->in.data[i + 1] == '\n')
				return i + 2;
		if (!fill(c))
			return 0;
	}
}

static bool need(conn *c, size_t n)
{
	while (c->in.len - c->off < n)
		if (!fill(c))
			return false;
	return true;
}

/* Reads one answer: status and body (Content-Length or chunked). */
static bool read_answer(conn *c, int *status, sy_buf *body, bool *keep)
{
	if (c->off == c->in.len) { /* only between answers: offsets stay valid within one */
		sy_buf_reset(&c->in);
		c->off = 0;
	}
	size_t e = line_end(c, c->off);
	if (e == 0 || sscanf(c->in.data + c->off, "HTTP/1.%*d %d", status) != 1)
		return false;
	long long clen = -1;
	bool chunked = false;
	*keep = true;
	size_t pos = e;
	for (;;) {
		e = line_end(c, pos);
		if (e == 0)
			return false;
		char *h = c->in.data + pos;
		size_t hl = e - pos - 2;
		pos = e;
		if (hl == 0)
			break;
		if (hl > 15 && strncasecmp(h, "content-length:", 15) == 0)
			clen = atoll(h + 15);
		else if (hl > 18 && strncasecmp(h, "transfer-encoding:", 18) == 0)
			chunked = memmem(h, hl, "chunked", 7) != NULL;
		else if (hl > 11 && strncasecmp(h, "connection:", 11) == 0)
			*keep = memmem(h, hl, "close", 5) == NULL;
	}
	c->off = pos;
	sy_buf_reset(body);
	if (!chunked) {
		if (clen < 0 || !need(c, (size_t)clen) ||
		    !sy_buf_append(body, c->in.data + c->off, (size_t)clen))
			return false;
		c->off += (size_t)clen;
		return true;
	}
	for (;;) {
		e = line_end(c, c->off);
		if (e == 0)
			return false;
		unsigned long n = strtoul(c->in.data + c->off, NULL, 16);
		c->off = e;
		if (n == 0) {
			e = line_end(c, c->off); /* no trailers from nginx: the final CRLF */
			if (e == 0)
				return false;
			c->off = e;
			return true;
		}
		if (!need(c, n + 2) || !sy_buf_append(body, c->in.data + c->off, n))
			return false;
		c->off += n + 2;
	}
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* A line (or EOF) on stdin asks the poller to drain: pull until an answer says has_more false,
 * then stop. */
static bool stop_asked(void)
{
	struct pollfd p = {0, POLLIN, 0};
	if (poll(&p, 1, 0) <= 0)
		return false;
	char b[64];
	ssize_t n = read(0, b, sizeof b);
	(void)n;
	return true;
}

typedef struct {
	char *pk;
	double at;
} seen;

/* One answer: when the request was sent and the answer read (wall clock), its changes. */
typedef struct {
	double sent, at;
	size_t changes;
} page;

int main(int argc, char **argv)
{
	const char *auth = NULL, *client = NULL, *hash = NULL, *table = "item", *out = NULL;
	char cursor[128] = "";
	long long generation = 0, version = 0;
	int limit = 1000, opt;
	double poll_ms = 5, max_s = 600;
	conn c = {.fd = -1};
	while ((opt = getopt(argc, argv, "p:a:C:G:V:H:k:l:i:d:t:o:")) != -1) {
		switch (opt) {
		case 'p': c.port = atoi(optarg); break;
		case 'a': auth = optarg; break;
		case 'C': client = optarg; break;
		case 'G': generation = atoll(optarg); break;
		case 'V': version = atoll(optarg); break;
		case 'H': hash = optarg; break;
		case 'k': snprintf(cursor, sizeof cursor, "%s", optarg); break;
		case 'l': limit = atoi(optarg); break;
		case 'i': poll_ms = atof(optarg); break;
		case 'd': max_s = atof(optarg); break;
		case 't': table = optarg; break;
		case 'o': out = optarg; break;
		default: goto usage;
		}
	}
	if (!c.port || !auth || !client || !generation || !version || !hash || !cursor[0] || !out)
		goto usage;

	size_t nseen = 0, capseen = 65536, npages = 0, cappages = 4096;
	seen *sv = malloc(capseen * sizeof *sv);
	double *rtt = malloc(cappages * sizeof *rtt);
	page *pv = malloc(cappages * sizeof *pv);
	sy_buf req = SY_BUF_INIT, body = SY_BUF_INIT;
	long long changes = 0, errors = 0, empty = 0;
	bool draining = false;
	double start = bench_mono();
	if (sv == NULL || rtt == NULL || pv == NULL)
		return 1;
	while (bench_mono() - start < max_s) {
		if (!draining)
			draining = stop_asked();
		if (c.fd < 0 && !conn_open(&c)) {
			errors++;
			(void)poll(NULL, 0, 50);
			continue;
		}
		char json[512];
		int jl = snprintf(json, sizeof json,
		                  "{\"client_id\":\"%s\",\"client_generation\":%lld,"
		                  "\"schema\":{\"version\":%lld,\"hash\":\"%s\"},"
		                  "\"cursor\":\"%s\",\"limit\":%d}",
		                  client, generation, version, hash, cursor, limit);
		char head[512];
		int hl = snprintf(
		        head, sizeof head,
		        "POST /v3/pull HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: %s\r\n"
		        "Synchro-Protocol: 3\r\nContent-Type: application/json\r\n"
		        "Content-Length: %d\r\n\r\n",
		        auth, jl);
		sy_buf_reset(&req);
		if (!sy_buf_append(&req, head, (size_t)hl) ||
		    !sy_buf_append(&req, json, (size_t)jl))
			return 1;
		double t0 = bench_mono(), sent = bench_wall();
		int status = 0;
		bool keep = false;
		if (!write_all(c.fd, req.data, req.len) ||
		    !read_answer(&c, &status, &body, &keep)) {
			errors++;
			conn_close(&c);
			continue;
		}
		double at = bench_wall(), t1 = bench_mono();
		if (!keep)
			conn_close(&c);
		if (status != 200) {
			if (errors++ < 3)
				fprintf(stderr, "pull_watch: HTTP %d: %.*s\n", status,
				        (int)(body.len < 300 ? body.len : 300), body.data);
			(void)poll(NULL, 0, 50);
			continue;
		}
		sy_error err = {0};
		sy_json_doc *doc = sy_json_parse(body.data, body.len, &err);
		const sy_json *root = doc ? sy_json_doc_root(doc) : NULL;
		const sy_json *ch = sy_json_get(root, "changes");
		const sy_json *cur = sy_json_get(root, "cursor");
		const sy_json *more = sy_json_get(root, "has_more");
		if (ch == NULL || ch->type != SY_JSON_ARRAY || cur == NULL ||
		    cur->type != SY_JSON_STRING || cur->u.string.len >= sizeof cursor ||
		    more == NULL) {
			fprintf(stderr,
			        "pull_watch: an answer without changes/cursor/has_more: %s\n",
			        err.message);
			return 1;
		}
		if (npages == cappages) {
			cappages *= 2;
			double *r = realloc(rtt, cappages * sizeof *r);
			page *q = realloc(pv, cappages * sizeof *q);
			if (r == NULL || q == NULL)
				return 1;
			rtt = r;
			pv = q;
		}
		pv[npages] = (page){sent, at, ch->u.array.count};
		rtt[npages++] = 1000.0 * (t1 - t0);
		changes += (long long)ch->u.array.count;
		for (size_t i = 0; i < ch->u.array.count; i++) {
			const sy_json *x = ch->u.array.items[i];
			const sy_json *t = sy_json_get(x, "table");
			const sy_json *pk = sy_json_get(sy_json_get(x, "pk"), "value");
			if (t == NULL || t->type != SY_JSON_STRING ||
			    strcmp(t->u.string.data, table) || pk == NULL)
				continue;
			if (nseen == capseen) {
				capseen *= 2;
				seen *s = realloc(sv, capseen * sizeof *s);
				if (s == NULL)
					return 1;
				sv = s;
			}
			const char *pt =
			        pk->type == SY_JSON_NUMBER ? pk->u.number.text : pk->u.string.data;
			sv[nseen].pk = strdup(pt ? pt : "");
			sv[nseen++].at = at;
		}
		memcpy(cursor, cur->u.string.data, cur->u.string.len + 1);
		bool has_more = more->type == SY_JSON_TRUE;
		if (ch->u.array.count == 0)
			empty++;
		sy_json_doc_free(doc);
		if (!has_more) {
			if (draining)
				break;
			struct timespec ts = {0, (long)(poll_ms * 1e6)};
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
		}
	}
	conn_close(&c);
	FILE *f = fopen(out, "w");
	if (f == NULL) {
		perror(out);
		return 1;
	}
	for (size_t i = 0; i < nseen; i++)
		fprintf(f, "%s %.6f\n", sv[i].pk, sv[i].at);
	for (size_t i = 0; i < npages; i++)
		fprintf(f, "page %.6f %.6f %zu\n", pv[i].sent, pv[i].at, pv[i].changes);
	if (fclose(f) != 0)
		return 1;
	qsort(rtt, npages, sizeof *rtt, bench_cmp_double);
	printf("pages=%zu empty=%lld changes=%lld seen=%zu errors=%lld drained=%d "
	       "page_p50_ms=%.2f page_p90_ms=%.2f page_p99_ms=%.2f page_max_ms=%.2f cursor=%s\n",
	       npages, empty, changes, nseen, errors, draining && bench_mono() - start < max_s,
	       bench_pct(rtt, npages, 50), bench_pct(rtt, npages, 90), bench_pct(rtt, npages, 99),
	       npages ? rtt[npages - 1] : 0.0, cursor);
	return 0;
usage:
	fputs("usage: pull_watch -p PORT -a AUTHORIZATION -C CLIENT_ID -G GENERATION -V "
	      "SCHEMA_VERSION\n"
	      "       -H SCHEMA_HASH -k CURSOR -o FILE [-l LIMIT] [-i POLL_MS] [-d MAX_SECONDS]\n"
	      "       [-t TABLE]\n"
	      "Pulls until a line (or EOF) on stdin, then until an answer has has_more false.\n"
	      "FILE gets \"pk epoch_seconds\" per change of TABLE (first arrival), then\n"
	      "\"page sent_epoch answered_epoch changes\" per answer; stdout one\n"
	      "key=value line: pages, changes, page round-trip percentiles, the last cursor.\n",
	      stderr);
	return 2;
}
