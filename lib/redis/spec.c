/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * spec.c - parse the specs of the Redis store:
 *
 *   redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]
 *   redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]
 *   redis+cluster://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][?OPTIONS]
 *   rediss://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]   (TLS)
 *   redis+sentinel://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/NAME[?OPTIONS]
 *
 * OPTIONS are NAME=VALUE pairs joined by '&': timeout=, connect_timeout=
 * (durations of the policy grammar), server_time=0|1, key_prefix=,
 * max_connections=, for rediss:// only tls_ca=, tls_cert=, tls_key=
 * (files), and for redis+sentinel:// only db= (its path is the master's
 * NAME) and sentinel_password=.  A sentinel spec's hosts are sentinels
 * (port 26379 unless given); its USER and PASSWORD are the data nodes'.
 * USER, PASSWORD, PATH, NAME, key_prefix, sentinel_password and the tls_
 * files may percent-encode any byte (%40 for '@').  rediss:// needs a build
 * with hiredis_ssl (TK_HAVE_HIREDIS_SSL); without it the spec is -ENOTSUP, and
 * says so. Every error names the byte offset and what was expected there; none
 * quotes the spec, so a password never reaches a message.
 */
#include "config.h"
#include "parse.h"
#include "redis/spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct cursor {
	const char *s;
	size_t pos;
	char *why;
	size_t why_len;
};

static int fail(struct cursor *c, size_t at, const char *expected)
{
	if (c->why_len)
		snprintf(c->why, c->why_len, "byte %zu: expected %s", at,
			 expected);
	return -EINVAL;
}

static int hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * Percent-decode s[from, to) into @out (@cap bytes with the NUL); a NUL
 * byte is refused, as C strings carry these values.  Sets *len if given.
 */
static int decode(struct cursor *c, size_t from, size_t to, char *out,
		  size_t cap, size_t *len, const char *what)
{
	size_t n = 0, i;
	int hi, lo;
	char ch;

	for (i = from; i < to; i++) {
		ch = c->s[i];
		if (ch == '%') {
			hi = i + 2 < to ? hex(c->s[i + 1]) : -1;
			lo = hi >= 0 ? hex(c->s[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi | lo) == 0)
				return fail(c, i,
					    "%XX with XX a hex byte, not 00");
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		if (n + 1 >= cap)
			return fail(c, from, what);
		out[n++] = ch;
	}
	out[n] = '\0';
	if (len)
		*len = n;
	return 0;
}

/* A decimal in s[from, to) of at most @max. */
static int number(struct cursor *c, size_t from, size_t to, long min, long max,
		  long *out, const char *what)
{
	long v = 0;
	size_t i;

	if (from == to)
		return fail(c, from, what);
	for (i = from; i < to; i++) {
		if (c->s[i] < '0' || c->s[i] > '9' ||
		    v > (max - (c->s[i] - '0')) / 10)
			return fail(c, from, what);
		v = v * 10 + (c->s[i] - '0');
	}
	if (v < min || v > max)
		return fail(c, from, what);
	*out = v;
	return 0;
}

static size_t find(const char *s, size_t from, size_t to, const char *set)
{
	while (from < to && !strchr(set, s[from]))
		from++;
	return from;
}

static size_t find_last(const char *s, size_t from, size_t to, char ch)
{
	size_t at = to;

	for (; from < to; from++)
		if (s[from] == ch)
			at = from;
	return at;
}

/* [USER[:PASSWORD]@] in s[from, to); returns where the rest starts. */
static int userinfo(struct cursor *c, size_t from, size_t to,
		    struct tk__redis_spec *out, size_t *rest)
{
	size_t at = find_last(c->s, from, to, '@'), colon;
	int rc;

	*rest = from;
	if (at == to)
		return 0;
	colon = find(c->s, from, at, ":");
	rc = decode(c, from, colon, out->user, sizeof(out->user), NULL,
		    "a user name of at most 255 bytes");
	if (rc == 0 && colon < at) {
		out->has_password = 1;
		rc = decode(c, colon + 1, at, out->password,
			    sizeof(out->password), NULL,
			    "a password of at most 255 bytes");
	}
	*rest = at + 1;
	return rc;
}

static int host_port(struct cursor *c, size_t from, size_t to,
		     struct tk__redis_spec *out, long port)
{
	size_t end, port_at;
	int rc;

	if (from < to && c->s[from] == '[') {
		end = find(c->s, from, to, "]");
		if (end == to)
			return fail(c, from, "an IPv6 address in [...]");
		port_at = end + 1;
		from++;
	} else {
		end = port_at = find(c->s, from, to, ":");
	}
	if (end == from)
		return fail(c, from, "a host");
	if (end - from > TK__REDIS_HOST_MAX)
		return fail(c, from, "a host of at most 255 bytes");
	if (find(c->s, from, end, "%[]") != end)
		return fail(c, find(c->s, from, end, "%[]"),
			    "a host name or address");
	memcpy(out->host, c->s + from, end - from);
	out->host[end - from] = '\0';
	if (port_at < to) {
		if (c->s[port_at] != ':')
			return fail(c, port_at, "':' and a port");
		rc = number(c, port_at + 1, to, 1, 65535, &port,
			    "a port from 1 to 65535");
		if (rc)
			return rc;
	}
	out->port = (int)port;
	return 0;
}

static int duration(struct cursor *c, size_t from, size_t to, uint64_t *out)
{
	struct tk__parser ps = { .text = c->s, .pos = from };

	/* 1 us to 1 h: hiredis takes microseconds, 0 would mean none. */
	if (tk__parse_duration(&ps, out) || ps.pos != to || *out < 1000 ||
	    *out > UINT64_C(3600) * 1000000000)
		return fail(c, from, "a duration from 1us to 1h (100ms, 2s)");
	return 0;
}

static int is(struct cursor *c, size_t from, size_t to, const char *name)
{
	return to - from == strlen(name) &&
	       memcmp(c->s + from, name, to - from) == 0;
}

/* A tls_ option's file: a path of at most 107 bytes, not empty. */
static int file(struct cursor *c, size_t from, size_t to, char *out)
{
	if (from == to)
		return fail(c, from, "a file's path");
	return decode(c, from, to, out, TK__REDIS_PATH_MAX + 1, NULL,
		      "a file's path of at most 107 bytes");
}

/*
 * The index of the option named s[from, to) in names[] of option(), or
 * 10 for none this form of spec takes: tls_ options are rediss://'s,
 * db= and sentinel_password= redis+sentinel://'s.
 */
static size_t option_index(struct cursor *c, size_t from, size_t to,
			   const struct tk__redis_spec *out,
			   const char *const *names)
{
	size_t i;

	for (i = 0; i < 10 && !is(c, from, to, names[i]); i++)
		;
	if ((i >= 5 && i < 8 && !out->tls) || (i >= 8 && !out->sentinel))
		return 10;
	return i;
}

/* One NAME=VALUE of s[from, to). @seen: a bit per option already given. */
static int option(struct cursor *c, size_t from, size_t to,
		  struct tk__redis_spec *out, unsigned int *seen)
{
	static const char *const names[] = {
		"timeout",	    "connect_timeout", "server_time",
		"key_prefix",	    "max_connections", "tls_ca",
		"tls_cert",	    "tls_key",	       "db",
		"sentinel_password"
	};
	size_t eq = find(c->s, from, to, "="),
	       i = option_index(c, from, eq, out, names);
	long flag;
	int rc;

	if (i == 10 || eq == to)
		return fail(c, from,
			    "an option timeout=, connect_timeout=, "
			    "server_time=, key_prefix=, max_connections= "
			    "(tls_ca=, tls_cert=, tls_key= with rediss:// "
			    "only; db=, sentinel_password= with "
			    "redis+sentinel:// only)");
	if (*seen & (1u << i))
		return fail(c, from, "each option at most once");
	*seen |= 1u << i;
	switch (i) {
	case 0:
		return duration(c, eq + 1, to, &out->timeout);
	case 1:
		return duration(c, eq + 1, to, &out->connect_timeout);
	case 2:
		rc = number(c, eq + 1, to, 0, 1, &flag, "server_time=0 or 1");
		out->server_time = (int)flag;
		return rc;
	case 3:
		return decode(c, eq + 1, to, out->key_prefix,
			      sizeof(out->key_prefix), &out->key_prefix_len,
			      "a key_prefix of at most 255 bytes");
	case 4:
		rc = number(c, eq + 1, to, 1, 65535, &flag,
			    "max_connections= from 1 to 65535");
		out->max_connections = (unsigned int)flag;
		return rc;
	case 8:
		return number(c, eq + 1, to, 0, (1L << 30) - 1, &out->db,
			      "a database number below 2^30");
	case 9:
		out->has_sentinel_password = 1;
		return decode(c, eq + 1, to, out->sentinel_password,
			      sizeof(out->sentinel_password), NULL,
			      "a sentinel_password of at most 255 bytes");
	default:
		return file(c, eq + 1, to,
			    i == 5   ? out->tls_ca
			    : i == 6 ? out->tls_cert
				     : out->tls_key);
	}
}

static int options(struct cursor *c, size_t from, size_t to,
		   struct tk__redis_spec *out)
{
	unsigned int seen = 0;
	size_t end;
	int rc;

	while (from < to) {
		end = find(c->s, from, to, "&");
		rc = option(c, from, end, out, &seen);
		if (rc)
			return rc;
		from = end + 1;
		if (end + 1 == to)
			return fail(c, to, "an option after '&'");
	}
	return 0;
}

/* HOST[:PORT][,HOST[:PORT]...] in s[from, to), @port where none is
 * given; the first is also out->host and out->port. */
static int seeds(struct cursor *c, size_t from, size_t to,
		 struct tk__redis_spec *out, long port)
{
	size_t end;
	int rc;

	for (;;) {
		end = find(c->s, from, to, ",");
		if (out->seeds == TK__REDIS_SEEDS_MAX)
			return fail(c, from, "at most 16 hosts");
		rc = host_port(c, from, end, out, port);
		if (rc)
			return rc;
		memcpy(out->seed[out->seeds].host, out->host,
		       sizeof(out->host));
		out->seed[out->seeds++].port = out->port;
		if (end == to)
			break;
		from = end + 1;
	}
	memcpy(out->host, out->seed[0].host, sizeof(out->host));
	out->port = out->seed[0].port;
	return 0;
}

/* redis+sentinel://'s s[17, @q): the sentinels, then "/" and the name. */
static int sentinel(struct cursor *c, size_t q, struct tk__redis_spec *out)
{
	size_t slash = find(c->s, 17, q, "/"), at;
	int rc = userinfo(c, 17, slash, out, &at);

	out->sentinel = 1;
	if (rc == 0 && slash == q)
		rc = fail(c, q, "'/' and the master's name");
	if (rc == 0)
		rc = seeds(c, at, slash, out, TK__REDIS_SENTINEL_PORT);
	if (rc == 0 && slash + 1 == q)
		rc = fail(c, q, "the master's name");
	if (rc == 0)
		rc = decode(c, slash + 1, q, out->master_name,
			    sizeof(out->master_name), NULL,
			    "a master's name of at most 255 bytes");
	return rc;
}

int tk__redis_spec_parse(const char *spec, struct tk__redis_spec *out,
			 char *why, size_t why_len)
{
	struct cursor c = { .s = spec, .why = why, .why_len = why_len };
	size_t len = strlen(spec), q, auth_end, at;
	long db;
	int rc;

	memset(out, 0, sizeof(*out));
	out->timeout = out->connect_timeout = TK__REDIS_DEFAULT_TIMEOUT;
	/* Hosts whose clocks differ agree (issue #25); server_time=0 opts
	 * out, as a limiter on a manual or custom clock must. */
	out->server_time = 1;
	memcpy(out->key_prefix, "tk:", 4);
	out->key_prefix_len = 3;
	if (why_len)
		why[0] = '\0';
	if (strncmp(spec, "rediss://", 9) == 0) {
#ifndef TK_HAVE_HIREDIS_SSL
		if (why_len)
			snprintf(why, why_len,
				 "rediss:// (TLS) needs a library built with "
				 "hiredis_ssl (hiredis 1.0 or later); this one "
				 "was built without it");
		return -ENOTSUP;
#else
		out->tls = 1;
#endif
	}
	q = find(spec, 0, len, "?");
	if (strncmp(spec, "redis+unix://", 13) == 0) {
		out->unix_socket = 1;
		auth_end = find(spec, 13, q, "/");
		rc = userinfo(&c, 13, auth_end, out, &at);
		if (rc == 0 && at != auth_end)
			rc = fail(&c, at, "'/' and an absolute socket path");
		if (rc == 0 && (auth_end == q || auth_end + 1 == q))
			rc = fail(&c, auth_end, "an absolute socket path");
		if (rc == 0)
			rc = decode(&c, auth_end, q, out->path,
				    sizeof(out->path), NULL,
				    "a socket path of at most 107 bytes");
	} else if (out->tls || strncmp(spec, "redis://", 8) == 0) {
		/* rediss:// is redis:// over TLS. */
		auth_end = find(spec, 8 + (size_t)out->tls, q, "/");
		rc = userinfo(&c, 8 + (size_t)out->tls, auth_end, out, &at);
		if (rc == 0)
			rc = host_port(&c, at, auth_end, out,
				       TK__REDIS_DEFAULT_PORT);
		if (rc == 0 && auth_end + 1 < q) {
			rc = number(&c, auth_end + 1, q, 0, (1L << 30) - 1, &db,
				    "a database number below 2^30");
			out->db = db;
		}
	} else if (strncmp(spec, "redis+cluster://", 16) == 0) {
		auth_end = find(spec, 16, q, "/");
		rc = userinfo(&c, 16, auth_end, out, &at);
		if (rc == 0 && auth_end != q)
			rc = fail(&c, auth_end,
				  "'?' or the end (a cluster has no database)");
		out->cluster = 1;
		if (rc == 0)
			rc = seeds(&c, at, q, out, TK__REDIS_DEFAULT_PORT);
	} else if (strncmp(spec, "redis+sentinel://", 17) == 0) {
		rc = sentinel(&c, q, out);
	} else {
		return fail(&c, 0,
			    "redis://, redis+unix://, redis+cluster:// or "
			    "redis+sentinel://");
	}
	if (rc == 0 && q < len)
		rc = options(&c, q + 1, len, out);
	if (rc) {
		memset(out->password, 0, sizeof(out->password));
		memset(out->sentinel_password, 0,
		       sizeof(out->sentinel_password));
	}
	return rc;
}
