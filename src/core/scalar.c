/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scalar.c: the scalars: identities, schema references, generations and times.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Rules: doc/contract.md#scalars (their forms).
 */
#include "config.h"

#include <string.h>

#include "synchro/octets.h"
#include "synchro/scalar.h"

#define USEC_PER_SEC 1000000LL
#define USEC_PER_DAY (86400LL * USEC_PER_SEC)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* n decimal digits at s, as a number. */
static bool take_digits(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

static void put_digits(char *p, uint64_t v, size_t n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
	static const unsigned days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/*
 * Day numbers in 400-year eras starting on March 1st, so the leap day ends
 * each era-year and the month lengths from March repeat as 31/30 pairs.
 */
int64_t sy_days_from_civil(int64_t year, unsigned month, unsigned day)
{
	int64_t y = month <= 2 ? year - 1 : year;
	int64_t era = floor_div(y, 400);
	int64_t yoe = y - era * 400;                                      /* 0..399 */
	int64_t mp = month > 2 ? (int64_t)month - 3 : (int64_t)month + 9; /* 0 = March */
	int64_t doy = (153 * mp + 2) / 5 + (int64_t)day - 1;              /* 0..365 */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;              /* 0..146096 */
	return era * 146097 + doe - 719468; /* 719468: days from 0000-03-01 to 1970-01-01 */
}

void sy_civil_from_days(int64_t days, int64_t *year, unsigned *month, unsigned *day)
{
	int64_t z = days + 719468;
	int64_t era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*day = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*year = yoe + era * 400 + (*month <= 2 ? 1 : 0);
}

/* YYYY-MM-DD at s[0..10), years 0001..9999. */
static bool parse_date(const char *s, unsigned *y, unsigned *m, unsigned *d)
{
	if (s[4] != '-' || s[7] != '-')
		return false;
	if (!take_digits(s, 4, y) || !take_digits(s + 5, 2, m) || !take_digits(s + 8, 2, d))
		return false;
	return *y >= 1 && *m >= 1 && *m <= 12 && *d >= 1 && *d <= days_in_month(*y, *m);
}

/* HH:MM:SS at s[0..8); the leap second 60 is not a value (see scalar.h). */
static bool parse_clock(const char *s, unsigned *h, unsigned *mi, unsigned *sec)
{
	if (s[2] != ':' || s[5] != ':')
		return false;
	if (!take_digits(s, 2, h) || !take_digits(s + 3, 2, mi) || !take_digits(s + 6, 2, sec))
		return false;
	return *h <= 23 && *mi <= 59 && *sec <= 59;
}

/* YYYY-MM-DDTHH:MM:SS at s[0..19). */
static bool parse_date_time(const char *s, int64_t *unix_sec)
{
	unsigned y, m, d, h, mi, sec;
	if (!parse_date(s, &y, &m, &d) || s[10] != 'T' || !parse_clock(s + 11, &h, &mi, &sec))
		return false;
	*unix_sec = sy_days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + sec;
	return true;
}

static bool uuid_shape(const char *s, size_t len)
{
	if (s == NULL || len != SY_UUID_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool hyphen = i == 8 || i == 13 || i == 18 || i == 23;
		if (hyphen ? s[i] != '-' : !is_lower_hex(s[i]))
			return false;
	}
	return true;
}

bool sy_uuid_text_valid(const char *s, size_t len)
{
	return uuid_shape(s, len);
}

bool sy_uuid_octets(const char *s, size_t len, uint8_t out[16])
{
	if (!uuid_shape(s, len))
		return false;
	size_t k = 0;
	for (size_t i = 0; i < len; i += s[i] == '-' ? 1 : 2) {
		if (s[i] == '-')
			continue;
		/* uuid_shape allowed lowercase hex digits only */
		out[k++] = (uint8_t)(sy_hex_digit(s[i]) << 4 | sy_hex_digit(s[i + 1]));
	}
	return k == 16;
}

bool sy_uuid_valid(const char *s, size_t len)
{
	if (!uuid_shape(s, len))
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] != '0' && s[i] != '-')
			return true;
	return false;
}

bool sy_hash_hex_valid(const char *s, size_t len)
{
	if (s == NULL || len != SY_HASH_HEX_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

bool sy_positive_integer(const sy_json *v, uint64_t max, uint64_t *out)
{
	if (v == NULL || v->type != SY_JSON_NUMBER || !v->u.number.is_integer)
		return false;
	const char *t = v->u.number.text;
	size_t n = v->u.number.text_len;
	if (t == NULL || n == 0 || t[0] < '1' || t[0] > '9')
		return false;
	uint64_t val = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(t[i]))
			return false;
		uint64_t d = (uint64_t)(t[i] - '0');
		if (d > max || val > (max - d) / 10)
			return false;
		val = val * 10 + d;
	}
	if (out != NULL)
		*out = val;
	return true;
}

static bool key_is(const sy_json_member *m, const char *name)
{
	size_t n = strlen(name);
	return m->key_len == n && memcmp(m->key, name, n) == 0;
}

bool sy_schema_ref_parse(const sy_json *v, sy_schema_ref *out)
{
	if (v == NULL || v->type != SY_JSON_OBJECT || v->u.object.count != 2)
		return false;
	const sy_json *version = NULL, *hash = NULL;
	for (size_t i = 0; i < 2; i++) {
		const sy_json_member *m = &v->u.object.members[i];
		if (key_is(m, "version") && version == NULL)
			version = m->value;
		else if (key_is(m, "hash") && hash == NULL)
			hash = m->value;
		else
			return false;
	}
	uint64_t n;
	if (!sy_positive_integer(version, SY_GENERATION_MAX, &n))
		return false;
	if (hash == NULL || hash->type != SY_JSON_STRING ||
	    !sy_hash_hex_valid(hash->u.string.data, hash->u.string.len))
		return false;
	if (out != NULL) {
		out->version = n;
		memcpy(out->hash, hash->u.string.data, SY_HASH_HEX_LEN);
		out->hash[SY_HASH_HEX_LEN] = '\0';
	}
	return true;
}

bool sy_generation_parse(const sy_json *v, uint64_t *out)
{
	return sy_positive_integer(v, SY_GENERATION_MAX, out);
}

bool sy_client_version_valid(const char *s, size_t len)
{
	int64_t sec;
	if (s == NULL || len < 20 || s[len - 1] != 'Z' || !parse_date_time(s, &sec))
		return false;
	if (len == 20)
		return true;
	size_t frac = len - 21; /* between '.' and 'Z' */
	if (s[19] != '.' || frac < 1 || frac > 9)
		return false;
	for (size_t i = 20; i < len - 1; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

bool sy_opaque_version_valid(const char *s, size_t len)
{
	if (s == NULL || len == 0 || len > SY_OPAQUE_VERSION_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

void sy_server_time_format(int64_t unix_usec, char out[SY_SERVER_TIME_LEN + 1])
{
	if (unix_usec < SY_SERVER_TIME_MIN_USEC)
		unix_usec = SY_SERVER_TIME_MIN_USEC;
	if (unix_usec > SY_SERVER_TIME_MAX_USEC)
		unix_usec = SY_SERVER_TIME_MAX_USEC;
	int64_t days = floor_div(unix_usec, USEC_PER_DAY);
	int64_t rem = unix_usec - days * USEC_PER_DAY; /* 0..USEC_PER_DAY-1 */
	int64_t y;
	unsigned m, d;
	sy_civil_from_days(days, &y, &m, &d);
	int64_t sec = rem / USEC_PER_SEC;
	memcpy(out, "0000-00-00T00:00:00.000000Z", SY_SERVER_TIME_LEN + 1);
	put_digits(out, (uint64_t)y, 4);
	put_digits(out + 5, m, 2);
	put_digits(out + 8, d, 2);
	put_digits(out + 11, (uint64_t)(sec / 3600), 2);
	put_digits(out + 14, (uint64_t)(sec / 60 % 60), 2);
	put_digits(out + 17, (uint64_t)(sec % 60), 2);
	put_digits(out + 20, (uint64_t)(rem % USEC_PER_SEC), 6);
}

bool sy_server_time_parse(const char *s, size_t len, int64_t *unix_usec)
{
	int64_t sec;
	unsigned frac;
	if (s == NULL || len != SY_SERVER_TIME_LEN || s[19] != '.' || s[26] != 'Z')
		return false;
	if (!parse_date_time(s, &sec) || !take_digits(s + 20, 6, &frac))
		return false;
	if (unix_usec != NULL)
		*unix_usec = sec * USEC_PER_SEC + frac;
	return true;
}

bool sy_server_time_valid(const char *s, size_t len)
{
	int64_t usec;
	return sy_server_time_parse(s, len, &usec);
}

bool sy_date_valid(const char *s, size_t len)
{
	unsigned y, m, d;
	return s != NULL && len == SY_DATE_LEN && parse_date(s, &y, &m, &d);
}
