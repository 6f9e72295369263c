/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * spec.c - parse the spec of the PostgreSQL store:
 *
 *   postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB[?OPTIONS]
 *
 * The spec is a libpq connection URI.  The store takes its own options out
 * of it: timeout= (each statement, as the server's statement_timeout),
 * connect_timeout= (durations of the policy grammar; libpq counts whole
 * seconds, so it is rounded up), table= (the state's table, a lower-case
 * SQL identifier) and server_time=0|1 (default 0: docs/postgresql.md
 * says why not Redis's 1); any other option
 * (sslmode=, application_name=) is libpq's, which checks it.  Messages
 * name byte offsets, never the spec's text: the password stays out.
 *
 * Needs no libpq: a build without it parses the spec all the same, for
 * store-none.c's -ENOTSUP, except for what only libpq checks; so does a
 * host where libpq.so.5 does not load, whose -ENOTSUP says so (libpq.c).
 */
#include "config.h"
#include "parse.h"
#include "pg/spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef TK_HAVE_POSTGRESQL
#include "pg/libpq.h"
#endif

#define PREFIX "postgresql://"

int tk__pg_is_spec(const char *spec)
{
	return strncmp(spec, PREFIX, strlen(PREFIX)) == 0;
}

static int fail(char *why, size_t why_len, size_t at, const char *expected)
{
	if (why_len)
		snprintf(why, why_len, "byte %zu: expected %s", at, expected);
	return -EINVAL;
}

static int is(const char *s, size_t n, const char *name)
{
	return n == strlen(name) && memcmp(s, name, n) == 0;
}

static int duration(const char *spec, size_t from, size_t to, uint64_t *out)
{
	struct tk__parser ps = { .text = spec, .pos = from };

	return tk__parse_duration(&ps, out) || ps.pos != to || *out < 1000000 ||
	       *out > UINT64_C(3600) * 1000000000;
}

static int table_name(const char *s, size_t n, char *out)
{
	size_t i;

	if (n == 0 || n > TK__PG_TABLE_MAX || (s[0] >= '0' && s[0] <= '9'))
		return -1;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* One NAME=VALUE at spec[from, to): the store's, or appended for libpq. */
static int option(const char *spec, size_t from, size_t to,
		  struct tk__pg_spec *out, size_t *len, char *why,
		  size_t why_len)
{
	const char *eq = memchr(spec + from, '=', to - from);
	size_t name = eq ? (size_t)(eq - spec) - from : 0, v;
	int n;

	if (!eq || name == 0)
		return fail(why, why_len, from, "NAME=VALUE");
	v = from + name + 1;
	if (is(spec + from, name, "timeout")) {
		if (duration(spec, v, to, &out->timeout))
			return fail(why, why_len, v,
				    "a duration from 1ms to 1h (100ms, 2s)");
	} else if (is(spec + from, name, "connect_timeout")) {
		if (duration(spec, v, to, &out->connect_timeout))
			return fail(why, why_len, v,
				    "a duration from 1ms to 1h (100ms, 2s)");
	} else if (is(spec + from, name, "table")) {
		if (table_name(spec + v, to - v, out->table))
			return fail(why, why_len, v,
				    "a table name of 1 to 63 bytes of a-z, "
				    "0-9 and '_', not beginning with a digit");
	} else if (is(spec + from, name, "server_time")) {
		if (!is(spec + v, to - v, "0") && !is(spec + v, to - v, "1"))
			return fail(why, why_len, v, "0 or 1");
		out->server_time = spec[v] == '1';
	} else {
		n = snprintf(out->uri + *len, sizeof(out->uri) - *len, "%c%.*s",
			     strchr(out->uri, '?') ? '&' : '?',
			     (int)(to - from), spec + from);
		if (n < 0 || (size_t)n >= sizeof(out->uri) - *len)
			return fail(why, why_len, from,
				    "a spec of at most 1000 bytes");
		*len += (size_t)n;
	}
	return 0;
}

/* What libpq alone can say: is the rest a URI with a host and a DB? */
static int check_uri(const struct tk__pg_spec *out, char *why, size_t why_len)
{
#ifdef TK_HAVE_POSTGRESQL
	PQconninfoOption *opts, *o;
	int host = 0, db = 0;

	/* Only libpq reads a URI: a host without it takes none. */
	if (tk__libpq_load(why, why_len))
		return -ENOTSUP;
	opts = tk__pq.PQconninfoParse(out->uri, NULL);
	/* libpq's message may quote the URI: it is not passed on. */
	if (!opts)
		return fail(why, why_len, 0,
			    "a libpq connection URI "
			    "(postgresql://USER:PASSWORD@HOST:PORT/DB)");
	for (o = opts; o->keyword; o++) {
		if (o->val && o->val[0] && strcmp(o->keyword, "host") == 0)
			host = 1;
		if (o->val && o->val[0] && strcmp(o->keyword, "dbname") == 0)
			db = 1;
	}
	tk__pq.PQconninfoFree(opts);
	if (!host || !db)
		return fail(why, why_len, strlen(PREFIX),
			    "HOST[:PORT]/DB: a host and a database");
#else
	(void)out;
	(void)why;
	(void)why_len;
#endif
	return 0;
}

int tk__pg_spec_parse(const char *spec, struct tk__pg_spec *out, char *why,
		      size_t why_len)
{
	size_t q, from, to, len, n = strlen(spec);
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->timeout = TK__PG_DEFAULT_TIMEOUT;
	out->connect_timeout = TK__PG_DEFAULT_CONNECT_TIMEOUT;
	strcpy(out->table, TK__PG_DEFAULT_TABLE);
	if (!tk__pg_is_spec(spec))
		return fail(why, why_len, 0, PREFIX);
	q = strcspn(spec, "?");
	if (q > 900)
		return fail(why, why_len, 0, "a spec of at most 1000 bytes");
	if (!memchr(spec + strlen(PREFIX), '/', q - strlen(PREFIX)))
		return fail(why, why_len, q, "/DB after the host");
	memcpy(out->uri, spec, q);
	len = q;
	for (from = q + 1; rc == 0 && from <= n && q < n; from = to + 1) {
		to = from + strcspn(spec + from, "&");
		rc = option(spec, from, to, out, &len, why, why_len);
	}
	if (rc == 0)
		rc = len + 32 < sizeof(out->uri)
			     ? 0
			     : fail(why, why_len, 0, "a shorter spec");
	if (rc == 0)
		snprintf(out->uri + len, sizeof(out->uri) - len,
			 "%cconnect_timeout=%llu",
			 strchr(out->uri, '?') ? '&' : '?',
			 (unsigned long long)((out->connect_timeout +
					       999999999) /
					      1000000000));
	if (rc == 0)
		rc = check_uri(out, why, why_len);
	if (rc)
		memset(out->uri, 0, sizeof(out->uri));
	return rc;
}
