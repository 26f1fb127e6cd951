/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_curl.c: the options every libcurl handle of the native client takes. The
 * transport (client_transport.c) and the live subscription (client_live.c) use them.
 *
 * Layer: base of src/client (doc/hacking.md).
 * Notes: The options set basic credentials, the body and header callbacks and the
 * transfer's timeout. They turn off signals and allow HTTP and HTTPS only. Credentials go to
 * libcurl only. Nothing here logs.
 */
#include "config.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"

bool sy_cl_curl_setup(void *easy, const char *user, const char *password, char **userpwd,
                      sy_cl_curl_cb body_cb, sy_cl_curl_cb header_cb, void *ud, long timeout_s)
{
	if (user != NULL) {
		size_t n = strlen(user) + (password ? strlen(password) : 0) + 2;
		if ((*userpwd = sy_malloc(n)) == NULL)
			return false;
		snprintf(*userpwd, n, "%s:%s", user, password ? password : "");
		curl_easy_setopt(easy, CURLOPT_USERPWD, *userpwd);
		curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	}
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, ud);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, ud);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	return true;
}
