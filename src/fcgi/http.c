/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c: one FastCGI request as HTTP (http.h): the path and parameters, the body, and the
 * one response.
 *
 * Layer: base of src/fcgi (doc/hacking.md).
 * Rules: doc/contract.md#request-bodies (the body limit), doc/contract.md#error-codes (the
 * error bodies), doc/contract.md#retry-after (on 429 and 503).
 * Notes: The body is read whole, within a limit. A CONTENT_LENGTH above the limit is refused
 * before a byte is read. The body is read within a deadline too. SIGALRM interrupts the
 * read, and the router answers 408. The response goes straight to the socket in FastCGI
 * records when it can. Error bodies are the core's.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "common/log.h"
#include "fcgi/http.h"
#include "synchro/alloc.h"
#include "synchro/octets.h"
#include "synchro/outcome.h"

void sy_http_init(sy_http *h, FCGX_Request *fcgx)
{
	memset(h, 0, sizeof *h);
	h->fcgx = fcgx;
	const char *m = FCGX_GetParam("REQUEST_METHOD", fcgx->envp);
	h->method = m != NULL ? m : "";
	const char *uri = FCGX_GetParam("REQUEST_URI", fcgx->envp);
	if (uri == NULL || *uri == '\0')
		uri = FCGX_GetParam("DOCUMENT_URI", fcgx->envp);
	if (uri == NULL || *uri == '\0')
		uri = FCGX_GetParam("SCRIPT_NAME", fcgx->envp);
	if (uri != NULL) {
		size_t n = strcspn(uri, "?#");
		if (n < sizeof h->path) {
			memcpy(h->path, uri, n);
			h->path[n] = '\0';
		}
	}
}

void sy_http_done(sy_http *h)
{
	sy_free(h->body);
	h->body = NULL;
	h->body_len = 0;
}

const char *sy_http_param(const sy_http *h, const char *name)
{
	return FCGX_GetParam(name, h->fcgx->envp);
}

/*
 * The body's deadline. A web server that streams the body (Apache's mod_proxy_fcgi) holds
 * a responder for as long as its client takes to send it; without a deadline a few slow
 * uploads would hold every responder. SIGALRM, installed without SA_RESTART, interrupts
 * the read() libfcgi is blocked in: the stream then fails and the read returns short.
 * After the deadline the timer rings every 100 ms until disarmed, so that a signal that
 * came between two reads cannot leave the next one blocked.
 */
static volatile sig_atomic_t deadline_passed;

static void on_alarm(int sig)
{
	(void)sig;
	deadline_passed = 1;
}

static void deadline_arm(int timeout_ms)
{
	static bool installed;
	if (!installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_alarm;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, NULL);
		installed = true;
	}
	deadline_passed = 0;
	struct itimerval it = {.it_interval = {0, 100000},
	                       .it_value = {timeout_ms / 1000, (timeout_ms % 1000) * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
}

static void deadline_disarm(void)
{
	struct itimerval off;
	memset(&off, 0, sizeof off);
	setitimer(ITIMER_REAL, &off, NULL);
}

/* The body's octets and the end of stdin after them; false when the deadline passed. */
static bool read_within(sy_http *h, size_t len, int timeout_ms, size_t *got, bool *at_end)
{
	deadline_arm(timeout_ms);
	*got = 0;
	while (*got < len && !deadline_passed) {
		int n = FCGX_GetStr(h->body + *got, (int)(len - *got), h->fcgx->in);
		if (n <= 0)
			break;
		*got += (size_t)n;
	}
	/* The end of stdin follows the body at once: read it, so that the responder knows
	 * the web server has sent everything (it may then close without waiting). */
	*at_end = *got == len && !deadline_passed && FCGX_GetChar(h->fcgx->in) == EOF;
	deadline_disarm();
	return !deadline_passed || *at_end;
}

bool sy_http_read_body(sy_http *h, size_t max, int timeout_ms, sy_error *err)
{
	const char *cl = sy_http_param(h, "CONTENT_LENGTH");
	if (cl == NULL || *cl == '\0')
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "request body: Content-Length required");
	size_t len = 0;
	for (const char *p = cl; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || len > max)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    *p < '0' || *p > '9'
			                            ? "request body: invalid Content-Length"
			                            : "request body: larger than %zu octets",
			                    max);
		len = len * 10 + (size_t)(*p - '0');
	}
	if (len > max)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "request body: larger than %zu octets", max);
	h->body = sy_malloc(len + 1);
	if (h->body == NULL)
		return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
	size_t got = 0;
	bool at_end = false;
	if (!read_within(h, len, timeout_ms, &got, &at_end)) {
		h->timed_out = true;
		h->body[got] = '\0';
		h->body_len = got;
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "request body: not received within %d ms", timeout_ms);
	}
	h->body[got] = '\0';
	h->body_len = got;
	if (got != len)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "request body: shorter than Content-Length");
	if (!at_end)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "request body: longer than Content-Length");
	return true;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 422: return "Unprocessable Content";
	case 426: return "Upgrade Required";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/*
 * libfcgi sends stdout through an 8 KiB buffer, one write (and one wake-up of the web
 * server) per 8 KiB: a 66 KB push response took 9 of each. A larger answer is written
 * here instead, as FastCGI stdout records of up to 64 KiB in one writev; libfcgi then
 * ends the stream (the empty stdout record, the end of the request) as for any other.
 */
enum { LIBFCGI_BUFFER = 8192 - 8, RECORD_MAX = 65528 /* 64 KiB - 8, a multiple of 8 */ };

static void record_header(unsigned char h[8], int request_id, size_t len)
{
	h[0] = 1; /* FCGI_VERSION_1 */
	h[1] = 6; /* FCGI_STDOUT */
	sy_be_put(h + 2, (uint64_t)request_id, 2);
	sy_be_put(h + 4, len, 2);
	h[6] = 0; /* no padding */
	h[7] = 0;
}

/* Writes all of iov[0..n); false when the connection fails. */
static bool write_all(int fd, struct iovec *v, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, v, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			sy_log(SY_LOG_INFO, "response: write: %s", strerror(errno));
			return false;
		}
		while (n > 0 && (size_t)w >= v->iov_len) {
			w -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (char *)v->iov_base + w;
			v->iov_len -= (size_t)w;
		}
	}
	return true;
}

/* False when nothing was written (libfcgi's stream then takes the answer). */
static bool write_direct(FCGX_Request *rq, const char *head, size_t hlen, const char *body,
                         size_t len)
{
	enum { GROUP = 16 }; /* records per writev: up to 1 MiB */
	unsigned char hdr[GROUP][8];
	struct iovec iov[2 * GROUP];
	if (rq->ipcFd < 0 || hlen > RECORD_MAX || FCGX_FFlush(rq->out) != 0)
		return false;
	int nio = 0;
	record_header(hdr[0], rq->requestId, hlen);
	iov[nio++] = (struct iovec){hdr[0], 8};
	iov[nio++] = (struct iovec){(void *)head, hlen};
	for (size_t at = 0; at < len; at += RECORD_MAX) {
		if (nio == 2 * GROUP) {
			/* a failed connection fails libfcgi's end records the same way */
			if (!write_all(rq->ipcFd, iov, nio))
				return true;
			nio = 0;
		}
		size_t part = len - at < RECORD_MAX ? len - at : RECORD_MAX;
		record_header(hdr[nio / 2], rq->requestId, part);
		iov[nio] = (struct iovec){hdr[nio / 2], 8};
		iov[nio + 1] = (struct iovec){(void *)(body + at), part};
		nio += 2;
	}
	write_all(rq->ipcFd, iov, nio);
	return true;
}

void sy_http_respond(sy_http *h, int status, const char *content_type, const char *extra_headers,
                     const char *body, size_t len)
{
	if (h->answered)
		return;
	h->answered = true;
	h->status = status;
	/* libfcgi's own FCGX_FPrintF knows no size_t conversion: format here. */
	char head[1024];
	int n = snprintf(head, sizeof head,
	                 "Status: %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	                 "Cache-Control: no-store\r\n%s\r\n",
	                 status, reason(status), content_type, len,
	                 extra_headers ? extra_headers : "");
	if (n < 0 || (size_t)n >= sizeof head) {
		sy_log(SY_LOG_ERR, "bug: response headers longer than %zu bytes", sizeof head);
		n = snprintf(head, sizeof head, "Status: 500 %s\r\nContent-Length: 0\r\n\r\n",
		             reason(500));
		len = 0;
	}
	if (len <= LIBFCGI_BUFFER || !write_direct(h->fcgx, head, (size_t)n, body, len)) {
		FCGX_PutStr(head, n, h->fcgx->out);
		if (len > 0)
			FCGX_PutStr(body, (int)len, h->fcgx->out);
	}
}

void sy_http_json(sy_http *h, int status, const sy_buf *body, const char *extra_headers)
{
	sy_http_respond(h, status, "application/json", extra_headers, body->data, body->len);
}

void sy_http_error(sy_http *h, sy_errcode code, const char *message, unsigned retry_after_s,
                   const sy_schema_ref *current, const sy_schema_ref *received)
{
	int status = sy_errcode_http_status(code);
	sy_buf body = SY_BUF_INIT;
	sy_error err;
	if (!h->answered)
		h->error = code;
	if (!sy_outcome_error_body(&body, code, message, current, received, &err)) {
		/* Only memory can fail here: answer with a fixed canonical 503. */
		static const char fixed[] = "{\"error\":{\"code\":\"temporary_unavailable\","
		                            "\"message\":\"request could not be committed\","
		                            "\"retryable\":true}}";
		sy_buf_free(&body);
		if (!h->answered)
			h->error = SY_ERR_TEMPORARY_UNAVAILABLE;
		sy_http_respond(h, 503, "application/json", "Retry-After: 1\r\n", fixed,
		                sizeof fixed - 1);
		return;
	}
	char headers[64] = "";
	if (status == 429 || status == 503)
		snprintf(headers, sizeof headers, "Retry-After: %u\r\n",
		         retry_after_s ? retry_after_s : 1);
	sy_http_json(h, status, &body, headers);
	sy_buf_free(&body);
}
