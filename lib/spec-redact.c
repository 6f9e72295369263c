/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * spec-redact.c - a store spec as messages show it, its password "***".
 *
 * - After "://" (or from the start, in a spec without it: mistyped), the
 *   password is taken to run from the first ':' to the last '@'.  The Redis
 * spec parser (redis/spec.c) ends the user part at the last '@' before the
 * first '/' or '?', so this span holds every password it can read, and also
 * whatever a mistyped password holds past a raw '/', '?' or '@': a spec is
 * redacted before anyone knows whether the library takes it.
 * - The cost is hiding too much when an option (key_prefix=) holds '@':
 *   the host between is hidden as well.  Never too little.
 * - An option's password (redis+sentinel://'s sentinel_password=, a
 *   libpq URI's password=) is hidden up to the next '&', wherever
 *   "password=" appears: the one match covers both names (and libpq's
 *   sslpassword=); so is an option's whose name holds a '%', which
 *   libpq would decode into password.
 * - No snprintf(3): the copy is plain byte moves, so that a signal handler
 *   or a logger may call it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <throttlekit.h>

/* Append s[0, n) to the @len bytes of @buf at offset @at, as far as it
 * fits before the NUL; returns the offset past it had it all fit. */
static size_t put(char *buf, size_t len, size_t at, const char *s, size_t n)
{
	size_t room;

	if (len && at < len - 1) {
		room = len - 1 - at;
		memcpy(buf + at, s, n < room ? n : room);
	}
	return at + n;
}

#define OPT_PASSWORD "password="

/*
 * Where the next value to hide begins in s[0, end): past an OPT_PASSWORD,
 * or past the '=' of an option whose name holds a '%' (libpq decodes a
 * name, so pass%77ord= is a password too); NULL if there is none.
 */
static const char *secret_at(const char *s, const char *end)
{
	const size_t n = sizeof(OPT_PASSWORD) - 1;
	int in_name = 0, escaped = 0;
	const char *p;

	for (p = s; p < end; p++) {
		if ((size_t)(end - p) >= n && memcmp(p, OPT_PASSWORD, n) == 0)
			return p + n;
		if (*p == '?' || *p == '&') {
			in_name = 1;
			escaped = 0;
		} else if (*p == '=') {
			if (in_name && escaped)
				return p + 1;
			in_name = 0;
		} else if (*p == '%') {
			escaped = in_name;
		}
	}
	return NULL;
}

/* put() of s[0, n), the value of every secret_at() in it "***". */
static size_t put_hiding(char *buf, size_t len, size_t at, const char *s,
			 size_t n)
{
	const char *end = s + n, *v, *amp;

	while ((v = secret_at(s, end)) != NULL) {
		at = put(buf, len, at, s, (size_t)(v - s));
		at = put(buf, len, at, "***", 3);
		amp = memchr(v, '&', (size_t)(end - v));
		s = amp ? amp : end;
	}
	return put(buf, len, at, s, (size_t)(end - s));
}

TK_API int tk_spec_redact(const char *spec, char *buf, size_t len)
{
	const char *auth, *at = NULL, *colon = NULL;
	size_t n, total;

	if (!spec || (!buf && len))
		return -EINVAL;
	n = strlen(spec);
	/* The result may be 3 bytes longer than the spec ("u:@h"). */
	if (n > (size_t)INT_MAX - 3)
		return -EINVAL;
	auth = strstr(spec, "://");
	auth = auth ? auth + 3 : spec;
	at = strrchr(auth, '@');
	colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (colon) {
		total = put(buf, len, 0, spec, (size_t)(colon + 1 - spec));
		total = put(buf, len, total, "***", 3);
		total = put_hiding(buf, len, total, at, strlen(at));
	} else {
		total = put_hiding(buf, len, 0, spec, n);
	}
	if (len)
		buf[total < len ? total : len - 1] = '\0';
	return (int)total;
}
