/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest_check.c: the checks every part of a manifest shares. They check exact members,
 * strings and SQL names, and write messages that name the member's path.
 *
 * Layer: middle of src/core (doc/hacking.md).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "manifest_common.h"

bool sy_mf_fail_at(sy_error *err, const char *path, const char *member, const char *fmt, ...)
{
	char msg[SY_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (member != NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s.%s: %s", path, member, msg);
	return sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s: %s", path, msg);
}

bool sy_mf_nomem(sy_error *err)
{
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
}

const char *sy_mf_show(char out[SY_MF_SHOW_CAP], const char *s, size_t len)
{
	size_t n = len;
	if (n > SY_MF_SHOW_BYTES) {
		n = SY_MF_SHOW_BYTES;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (n < len) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
	return out;
}

bool sy_mf_sql_name_valid(const char *s, size_t len)
{
	if (len == 0 || len > SY_MANIFEST_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || c == '_' ||
		          (i > 0 && ((c >= '0' && c <= '9') || c == '$'));
		if (!ok)
			return false;
	}
	return true;
}

bool sy_mf_relation_valid(const char *s, size_t len)
{
	const char *dot = memchr(s, '.', len);
	if (dot == NULL)
		return sy_mf_sql_name_valid(s, len);
	size_t head = (size_t)(dot - s);
	return sy_mf_sql_name_valid(s, head) && sy_mf_sql_name_valid(dot + 1, len - head - 1);
}

bool sy_mf_check_members(const sy_json *obj, const char *path, const char *const *names,
                         const bool *optional, size_t n, sy_error *err)
{
	char shown[SY_MF_SHOW_CAP];
	if (obj->type != SY_JSON_OBJECT)
		return sy_mf_fail_at(err, path, NULL, "expected object, got %s",
		                     sy_json_type_name(obj->type));
	for (size_t i = 0; i < obj->u.object.count; i++) {
		const sy_json_member *m = &obj->u.object.members[i];
		bool known = false;
		for (size_t j = 0; j < n && !known; j++)
			known = sy_mf_bytes_equal(m->key, m->key_len, names[j], strlen(names[j]));
		if (!known)
			return sy_mf_fail_at(err, path, NULL, "unknown member \"%s\"",
			                     sy_mf_show(shown, m->key, m->key_len));
	}
	for (size_t j = 0; j < n; j++) {
		if ((optional == NULL || !optional[j]) && sy_json_get(obj, names[j]) == NULL)
			return sy_mf_fail_at(err, path, NULL, "missing member \"%s\"", names[j]);
	}
	return true;
}

bool sy_mf_get_string(const sy_json *obj, const char *path, const char *name, const char **s,
                      size_t *len, sy_error *err)
{
	const sy_json *v = sy_json_get(obj, name);
	*s = "";
	*len = 0;
	if (v->type != SY_JSON_STRING)
		return sy_mf_fail_at(err, path, name, "expected string, got %s",
		                     sy_json_type_name(v->type));
	*s = v->u.string.data;
	*len = v->u.string.len;
	return true;
}

bool sy_mf_get_sql_name(const sy_json *obj, const char *path, const char *name, const char **s,
                        size_t *len, sy_error *err)
{
	char shown[SY_MF_SHOW_CAP];
	if (!sy_mf_get_string(obj, path, name, s, len, err))
		return false;
	if (!sy_mf_sql_name_valid(*s, *len))
		return sy_mf_fail_at(
		        err, path, name,
		        "invalid column \"%s\" (lowercase SQL identifier, at most 63 bytes)",
		        sy_mf_show(shown, *s, *len));
	return true;
}
