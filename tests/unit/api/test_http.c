/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http.c - the HTTP helpers: client keys and the header fields of
 * draft-ietf-httpapi-ratelimit-headers-11.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "rnd.h"

/* --- tk_client_key() ---------------------------------------------------- */

/* @addr under prefixes @v6 and @v4 gives @want. */
static void key_is(const char *addr, unsigned v6, unsigned v4, const char *want)
{
	char buf[64];
	int rc = tk_client_key(addr, v6, v4, buf, sizeof(buf));

	if (rc < 0)
		fail_msg("tk_client_key(\"%s\", %u, %u) = %s, want \"%s\"",
			 addr, v6, v4, tk_strerrorname(rc), want);
	if (strcmp(buf, want) != 0 || (size_t)rc != strlen(want))
		fail_msg("tk_client_key(\"%s\", %u, %u) = \"%s\" (%d), want "
			 "\"%s\"",
			 addr, v6, v4, buf, rc, want);
}

static void key_fails(const char *addr, unsigned v6, unsigned v4)
{
	char buf[64] = "untouched";
	int rc = tk_client_key(addr, v6, v4, buf, sizeof(buf));

	if (rc != -EINVAL)
		fail_msg("tk_client_key(\"%s\", %u, %u) = %d (\"%s\"), want "
			 "EINVAL",
			 addr ? addr : "(null)", v6, v4, rc, buf);
}

static void test_client_key_v6(void **state)
{
	(void)state;
	key_is("2001:db8:1:2:3:4:5:6", 0, 0, "2001:db8:1:2::/64");
	key_is("2001:db8:1:2:ffff:ffff:ffff:ffff", 0, 0, "2001:db8:1:2::/64");
	key_is("2001:DB8:1:2::1", 0, 0, "2001:db8:1:2::/64");
	key_is("2001:db8:1:2:3:4:5:6", 128, 0, "2001:db8:1:2:3:4:5:6/128");
	key_is("2001:db8:1:2:3:4:5:6", 48, 0, "2001:db8:1::/48");
	key_is("2001:db8:1:2:3:4:5:6", 56, 0, "2001:db8:1::/56");
	key_is("2001:db8:1:ff:3:4:5:6", 56, 0, "2001:db8:1::/56");
	key_is("2001:db8:1:1ff:3:4:5:6", 56, 0, "2001:db8:1:100::/56");
	key_is("2001:db8:1:2:3:4:5:6", 1, 0, "::/1");
	key_is("ffff::1", 1, 0, "8000::/1");
	key_is("ffff::1", 7, 0, "fe00::/7");
	key_is("ffff:ffff::1", 17, 0, "ffff:8000::/17");
	key_is("2001:db8:0:0:1:0:0:1", 127, 0, "2001:db8:0:0:1::/127");
	key_is("2001:db8::ff", 127, 0, "2001:db8::fe/127");
	key_is("::1", 0, 0, "::/64");
	key_is("::", 0, 0, "::/64");
	key_is("::1", 128, 0, "::1/128");
	/* The v4 prefix does not apply to IPv6 addresses. */
	key_is("2001:db8:1:2:3:4:5:6", 64, 8, "2001:db8:1:2::/64");
	/* A zone index is dropped (RFC 4007 11). */
	key_is("fe80::1%eth0", 0, 0, "fe80::/64");
	key_is("fe80::1:2:3:4%25", 128, 0, "fe80::1:2:3:4/128");
	key_is("fe80::1%en0.1_x~y-z", 0, 0, "fe80::/64");
}

static void test_client_key_v4(void **state)
{
	(void)state;
	key_is("192.0.2.7", 0, 0, "192.0.2.7/32");
	key_is("192.0.2.7", 0, 24, "192.0.2.0/24");
	key_is("192.0.2.7", 0, 31, "192.0.2.6/31");
	key_is("192.0.2.255", 0, 25, "192.0.2.128/25");
	key_is("255.255.255.255", 0, 1, "128.0.0.0/1");
	key_is("127.255.255.255", 0, 1, "0.0.0.0/1");
	key_is("203.0.113.77", 0, 16, "203.0.0.0/16");
	key_is("203.0.113.77", 0, 12, "203.0.0.0/12");
	key_is("203.31.113.77", 0, 12, "203.16.0.0/12");
	key_is("0.0.0.0", 0, 0, "0.0.0.0/32");
	/* The v6 prefix does not apply to IPv4 addresses. */
	key_is("192.0.2.7", 1, 32, "192.0.2.7/32");
	/* IPv4-mapped IPv6: masked and written as IPv4. */
	key_is("::ffff:192.0.2.7", 0, 0, "192.0.2.7/32");
	key_is("::ffff:192.0.2.7", 0, 24, "192.0.2.0/24");
	key_is("::FFFF:c000:0207", 0, 24, "192.0.2.0/24");
	key_is("::ffff:192.0.2.7%eth0", 128, 32, "192.0.2.7/32");
	key_is("0:0:0:0:0:ffff:192.0.2.7", 64, 32, "192.0.2.7/32");
	/* Not mapped: IPv4-compatible (deprecated) and NAT64 stay IPv6. */
	key_is("::192.0.2.7", 128, 8, "::192.0.2.7/128");
	key_is("64:ff9b::192.0.2.7", 96, 8, "64:ff9b::/96");
	key_is("::fffe:192.0.2.7", 128, 8, "::fffe:c000:207/128");
}

static void test_client_key_garbage(void **state)
{
	static const char *const bad[] = {
		"",
		" 192.0.2.7",
		"192.0.2.7 ",
		"192.0.2.7\n",
		"+192.0.2.7",
		"-1.2.3.4",
		"192.0.2",
		"192.0.2.7.1",
		"192.0.2.256",
		"192.0.02.7",
		"0x7f.0.0.1",
		"127.1",
		"1.2.3.4/32",
		"192.0.2.7%eth0",
		"2001:db8::1/64",
		" ::1",
		"::1 ",
		"::1%",
		"::1%eth 0",
		"::1%eth0%1",
		"::1%eth/0",
		"%eth0",
		"1:2:3:4:5:6:7:8:9",
		"1::2::3",
		"12345::1",
		"g::1",
		":",
		"::ffff:192.0.2.256",
		"[::1]",
		"localhost",
		"2001:0db8:0000:0000:0000:0000:0000:0001:",
		/* Longer than any address. */
		"0000:0000:0000:0000:0000:ffff:255.255.255.255x",
		"::1\xff",
	};
	char buf[8] = "x";
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		key_fails(bad[i], 0, 0);
	key_fails(NULL, 0, 0);
	/* Prefixes out of range, whatever the family. */
	key_fails("::1", 129, 0);
	key_fails("192.0.2.7", 129, 0);
	key_fails("192.0.2.7", 0, 33);
	key_fails("::1", 0, 33);
	key_fails("::1", 0xffffffffu, 0);
	assert_rc(tk_client_key("::1", 0, 0, NULL, 1), -EINVAL);
	/* A NULL buffer of length 0 measures, as snprintf(3). */
	assert_rc(tk_client_key("::1", 0, 0, NULL, 0), 5);
	assert_rc(tk_client_key("::1", 0, 0, buf, 0), 5);
	assert_string_equal(buf, "x");
}

/* Every buffer length: snprintf(3)'s truncation and return. */
static void test_client_key_truncates(void **state)
{
	static const char *const addrs[] = { "2001:db8:1:2:3:4:5:6",
					     "::ffff:192.0.2.7", "10.1.2.3" };
	char want[64], buf[64];
	size_t i, len;
	int n;

	(void)state;
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		n = tk_client_key(addrs[i], 128, 32, want, sizeof(want));
		assert_true(n > 0 && (size_t)n < sizeof(want));
		for (len = 1; len <= (size_t)n + 1; len++) {
			memset(buf, '#', sizeof(buf));
			assert_rc(tk_client_key(addrs[i], 128, 32, buf, len),
				  n);
			assert_int_equal(strlen(buf), len - 1 < (size_t)n
							      ? len - 1
							      : (size_t)n);
			assert_memory_equal(buf, want, strlen(buf));
			assert_int_equal(buf[len], '#');
		}
	}
}

/* Every v4 prefix on an all-ones address and on a random-looking one. */
static void test_client_key_every_prefix(void **state)
{
	char want[64];
	unsigned p;
	uint32_t m, a = 0xc0a8f5b7; /* 192.168.245.183 */

	(void)state;
	for (p = 1; p <= 32; p++) {
		m = p == 32 ? 0xffffffffu : ~(0xffffffffu >> p);
		snprintf(want, sizeof(want), "%u.%u.%u.%u/%u", (a & m) >> 24,
			 ((a & m) >> 16) & 0xff, ((a & m) >> 8) & 0xff,
			 (a & m) & 0xff, p);
		key_is("192.168.245.183", 0, p, want);
		key_is("::ffff:192.168.245.183", 0, p, want);
	}
	for (p = 1; p <= 128; p++) {
		char addr[64], canon[64], got[80], *s = want;
		unsigned char b[16];
		unsigned i, bits;

		/* ffff:...:ffff masked to p bits, written out in full. */
		snprintf(addr, sizeof(addr), "%s",
			 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
		for (i = 0; i < 8; i++) {
			bits = p > 16 * i ? p - 16 * i : 0;
			bits = bits > 16 ? 16 : bits;
			s += sprintf(s, "%s%x", i ? ":" : "",
				     bits ? (0xffffu << (16 - bits)) & 0xffffu
					  : 0);
		}
		/* Compare with the canonical text (RFC 5952) of want. */
		assert_int_equal(inet_pton(AF_INET6, want, b), 1);
		assert_non_null(inet_ntop(AF_INET6, b, canon, sizeof(canon)));
		snprintf(got, sizeof(got), "%s/%u", canon, p);
		key_is(addr, p, 0, got);
	}
}

/* --- A structured-field List parser (RFC 9651 4.2.1) ------------------- */

/*
 * Written from the RFC, independently of lib/http.c, to check every value
 * it produces against the grammar.  Bare items: sf-integer, sf-string,
 * sf-token and sf-boolean (the only ones these fields could hold).
 */
#define SF_MEMBERS 64
#define SF_PARAMS 8

struct sf_bare {
	char type; /* 'i'nteger, 's'tring, 't'oken, 'b'oolean */
	long long i;
	char s[128];
};

struct sf_item {
	struct sf_bare v;
	size_t np;
	char key[SF_PARAMS][16];
	struct sf_bare param[SF_PARAMS];
};

struct sf_list {
	size_t n;
	struct sf_item m[SF_MEMBERS];
};

static int lcalpha(char c)
{
	return c >= 'a' && c <= 'z';
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

static int tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit(c) ||
	       (c && strchr("!#$%&'*+-.^_`|~:/", c));
}

/* 4.2.4, 4.2.5, 4.2.6, 4.2.8 (no decimals: a '.' in a number fails). */
static int sf_bare(const char **pp, struct sf_bare *b)
{
	const char *p = *pp;
	size_t n = 0;
	int neg = 0;

	if (*p == '-' || digit(*p)) {
		if (*p == '-') {
			neg = 1;
			p++;
		}
		if (!digit(*p))
			return -1;
		b->type = 'i';
		b->i = 0;
		for (; digit(*p); p++) {
			if (++n > 15)
				return -1;
			b->i = b->i * 10 + (*p - '0');
		}
		if (*p == '.')
			return -1;
		if (neg)
			b->i = -b->i;
	} else if (*p == '"') {
		b->type = 's';
		for (p++;; p++) {
			if (*p == '\\') {
				p++;
				if (*p != '"' && *p != '\\')
					return -1;
			} else if (*p == '"') {
				p++;
				break;
			} else if (*p < 0x20 || *p > 0x7e) {
				return -1; /* also the end of the text */
			}
			if (n + 1 >= sizeof(b->s))
				return -1;
			b->s[n++] = *p;
		}
		b->s[n] = '\0';
	} else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		   *p == '*') {
		b->type = 't';
		for (; tchar(*p); p++)
			if (n + 1 < sizeof(b->s))
				b->s[n++] = *p;
		b->s[n] = '\0';
	} else if (*p == '?') {
		b->type = 'b';
		if (p[1] != '0' && p[1] != '1')
			return -1;
		b->i = p[1] == '1';
		p += 2;
	} else {
		return -1;
	}
	*pp = p;
	return 0;
}

/* 4.2.3.2: parameters after an item. */
static int sf_params(const char **pp, struct sf_item *it)
{
	const char *p = *pp;
	size_t n;

	it->np = 0;
	while (*p == ';') {
		p++;
		while (*p == ' ')
			p++;
		if (!lcalpha(*p) && *p != '*')
			return -1;
		if (it->np == SF_PARAMS)
			return -1;
		for (n = 0;
		     lcalpha(*p) || digit(*p) || (*p && strchr("_-.*", *p));
		     p++)
			if (n + 1 < sizeof(it->key[0]))
				it->key[it->np][n++] = *p;
		it->key[it->np][n] = '\0';
		if (*p == '=') {
			p++;
			if (sf_bare(&p, &it->param[it->np]))
				return -1;
		} else {
			it->param[it->np].type = 'b';
			it->param[it->np].i = 1;
		}
		it->np++;
	}
	*pp = p;
	return 0;
}

/* 4.2 and 4.2.1: a whole field value as a List; 0 if it parses. */
static int sf_list(const char *p, struct sf_list *l)
{
	memset(l, 0, sizeof(*l)); /* comparable with memcmp */
	while (*p == ' ')
		p++;
	while (*p) {
		if (l->n == SF_MEMBERS || *p == '(')
			return -1; /* inner lists: not in these fields */
		if (sf_bare(&p, &l->m[l->n].v) || sf_params(&p, &l->m[l->n]))
			return -1;
		l->n++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (*p++ != ',')
			return -1;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return -1; /* a trailing comma */
	}
	return 0;
}

static void test_sf_parser(void **state)
{
	struct sf_list l;

	(void)state;
	assert_int_equal(sf_list("\"a\\\"b\";q=1;w=2, tok;x, 3;y=?0", &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.m[0].v.s, "a\"b");
	assert_int_equal(l.m[0].np, 2);
	assert_string_equal(l.m[0].key[1], "w");
	assert_int_equal(l.m[0].param[1].i, 2);
	assert_int_equal(l.m[1].v.type, 't');
	assert_int_equal(l.m[2].param[0].type, 'b');
	assert_int_equal(sf_list("", &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(sf_list("\"a\",", &l), -1);
	assert_int_equal(sf_list("\"a\" \"b\"", &l), -1);
	assert_int_equal(sf_list("\"a\\n\"", &l), -1);
	assert_int_equal(sf_list("\"a", &l), -1);
	assert_int_equal(sf_list("\"a\";Q=1", &l), -1);
	assert_int_equal(sf_list("\"a\";q=1234567890123456", &l), -1);
	assert_int_equal(sf_list("\"a\";q=123456789012345", &l), 0);
	assert_int_equal(sf_list("\"a\";q=1.5", &l), -1);
	assert_int_equal(sf_list("\"\x80\"", &l), -1);
}

/* --- tk_http_headers() -------------------------------------------------- */

#define T0 (1700000000ull * SEC) /* a minute boundary: 1700000000 % 60 = 20 */
#define DAY (86400ull * SEC)

struct out {
	int n;
	struct tk_http_field f[TK_HTTP_FIELDS_MAX];
	char buf[4096];
};

static int headers(const struct tk_http_quota *q, size_t nq,
		   const struct tk_decision *d, uint64_t now, unsigned flags,
		   struct out *o)
{
	memset(o, 0, sizeof(*o));
	o->n = tk_http_headers(q, nq, d, now, flags, o->f, TK_HTTP_FIELDS_MAX,
			       o->buf, sizeof(o->buf));
	return o->n;
}

/* The value of field @name, or NULL. */
static const char *field(const struct out *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->f[i].name, name) == 0)
			return o->f[i].value;
	return NULL;
}

#define assert_field(o, name, want)                                            \
	do {                                                                   \
		const char *v_ = field((o), (name));                           \
		if (!v_ || strcmp(v_, (want)) != 0)                            \
			fail_msg("line %d: %s: %s, want %s", __LINE__, (name), \
				 v_ ? v_ : "(none)", (want));                  \
	} while (0)

static struct tk_policy *policy(const char *text)
{
	struct tk_parse_error err;
	struct tk_policy *p = NULL;

	if (tk_policy_parse(&p, text, &err))
		fail_msg("%s: %s", text, err.message);
	return p;
}

/* A limiter on a manual clock. */
struct lim {
	struct tk_clock *c;
	struct tk_limiter *l;
	struct tk_policy *p;
};

static void lim_open(struct lim *m, const char *text, uint64_t start)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_rc(tk_clock_manual_new(&m->c, start), 0);
	o.clock = m->c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(&m->l, text, "memory", &o), 0);
	m->p = policy(text);
}

static void lim_check(struct lim *m, uint64_t at, uint64_t cost,
		      struct tk_decision *d)
{
	assert_rc(tk_clock_set(m->c, at), 0);
	assert_rc(tk_limiter_check(m->l, "k", 1, cost, d), 0);
}

static void lim_close(struct lim *m)
{
	tk_limiter_close(m->l);
	tk_clock_free(m->c);
	tk_policy_free(m->p);
}

/* A decision by hand (the draft's servers lower values at will). */
static struct tk_decision decision(int allowed, uint64_t limit,
				   uint64_t remaining, uint64_t reset_at,
				   uint64_t retry_after)
{
	struct tk_decision d;

	memset(&d, 0, sizeof(d));
	d.allowed = allowed;
	d.limit = limit;
	d.remaining = remaining;
	d.reset_at = reset_at;
	d.retry_after = retry_after;
	return d;
}

/*
 * The examples of draft-ietf-httpapi-ratelimit-headers-11, each from a
 * policy of ours that means what the example says, with the decision the
 * example describes (servers may lower values at will, B.2.2) or, in
 * test_draft_examples_real(), a real limiter's.  NULL: not compared.
 */
static const struct example {
	const char *where, *policy, *name;
	int allowed;
	uint64_t limit, remaining, reset_s, retry_s, now_s;
	const char *policy_field, *ratelimit, *retry_after;
} examples[] = {
	{ "3.2", "fixed-window:100/10s", "default", 1, 100, 100, 10, 0, 0,
	  "\"default\";q=100;w=10", NULL, NULL },
	{ "4, 4.2", "fixed-window:100/1m", "default", 1, 100, 50, 30, 0, 0,
	  NULL, "\"default\";r=50;t=30", NULL },
	{ "4.2", "fixed-window:1000000000/1m", "default", 1, 1000000000,
	  300000000, 60, 0, 0, NULL, "\"default\";r=300000000;t=60", NULL },
	{ "6", "gcra:1/10s", "problemPolicy", 1, 1, 0, 10, 0, 0,
	  "\"problemPolicy\";q=1;w=10", "\"problemPolicy\";r=0;t=10", NULL },
	{ "7", "fixed-window:100/1m", "default", 1, 100, 1, 7, 0, 0, NULL,
	  "\"default\";r=1;t=7", NULL },
	/* A day that begins at 18:00 (UTC-06:00 at T0 + 1 day). */
	{ "8.5", "quota:5/day,offset=+06:00", "daily", 1, 5, 1, 86400, 0, 0,
	  "\"daily\";q=5;w=86400", "\"daily\";r=1;t=86400", NULL },
	{ "8.5", "sliding-window:10000/1000s", "somepolicy", 1, 10000, 10000,
	  10, 0, 0, "\"somepolicy\";q=10000;w=1000",
	  "\"somepolicy\";r=10000;t=10", NULL },
	{ "B.1.1", "fixed-window:100/1m", "default", 1, 100, 0, 50, 0, 0, NULL,
	  "\"default\";r=0;t=50", NULL },
	{ "B.1.1", "fixed-window:100/1m", "default", 1, 100, 0, 50, 0, 2, NULL,
	  "\"default\";r=0;t=48", NULL },
	/* Retry-After as delta-seconds for the example's HTTP-date. */
	{ "B.1.4", "fixed-window:100/1m", "default", 0, 100, 0, 5, 5, 0, NULL,
	  "\"default\";r=0;t=5", "5" },
	{ "B.2.2", "fixed-window:100/1m", "dynamic", 1, 100, 9, 50, 0, 0,
	  "\"dynamic\";q=100;w=60", "\"dynamic\";r=9;t=50", NULL },
	{ "B.2.3", "fixed-window:15/20s", "dynamic", 0, 15, 0, 20, 20, 0,
	  "\"dynamic\";q=15;w=20", "\"dynamic\";r=0;t=20", "20" },
	{ "B.3", "fixed-window:100/1m", "dynamic", 0, 100, 15, 40, 20, 0,
	  "\"dynamic\";q=100;w=60", "\"dynamic\";r=15;t=40", "20" },
	{ "8 (FAQ)", "gcra:50/1m", "default", 1, 50, 50, 60, 0, 0,
	  "\"default\";q=50;w=60", "\"default\";r=50;t=60", NULL },
};

static void test_draft_examples(void **state)
{
	const struct example *e;
	struct tk_http_quota q;
	struct tk_decision d;
	struct tk_policy *p;
	struct out o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		e = &examples[i];
		p = policy(e->policy);
		q = (struct tk_http_quota){ e->name, p, NULL };
		d = decision(e->allowed, e->limit, e->remaining,
			     T0 + e->reset_s * SEC, e->retry_s * SEC);
		if (headers(&q, 1, &d, T0 + e->now_s * SEC, TK_HTTP_IETF, &o) !=
		    2 + !e->allowed)
			fail_msg("section %s: %d fields", e->where, o.n);
		if (strcmp(o.f[0].name, "RateLimit-Policy") ||
		    strcmp(o.f[1].name, "RateLimit") ||
		    (e->policy_field &&
		     strcmp(o.f[0].value, e->policy_field)) ||
		    (e->ratelimit && strcmp(o.f[1].value, e->ratelimit)) ||
		    (!e->allowed && (strcmp(o.f[2].name, "Retry-After") ||
				     strcmp(o.f[2].value, e->retry_after))))
			fail_msg("section %s: %s: %s, %s: %s, %s", e->where,
				 o.f[0].name, o.f[0].value, o.f[1].name,
				 o.f[1].value, o.n > 2 ? o.f[2].value : "");
		tk_policy_free(p);
	}
}

static void test_draft_examples_real(void **state)
{
	struct tk_policy *p, *p2;
	struct tk_http_quota q[2];
	struct tk_decision d, d2;
	struct out o;
	struct lim m, m2;
	int h;

	(void)state;
	/* B.1.3: 100 per minute, 40 used 2 s into the window: a real
	 * fixed-window limiter (T0 + 40 s starts a minute). */
	lim_open(&m, "fixed-window:100/1m", T0);
	q[0] = (struct tk_http_quota){ "basic", m.p, NULL };
	for (h = 0; h < 39; h++)
		lim_check(&m, T0 + 40 * SEC + SEC, 1, &d);
	lim_check(&m, T0 + 42 * SEC, 1, &d);
	headers(q, 1, &d, T0 + 42 * SEC, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit-Policy", "\"basic\";q=100;w=60");
	assert_field(&o, "RateLimit", "\"basic\";r=60;t=58");
	lim_close(&m);

	/* B.2.1: one request 10 s into the window. */
	lim_open(&m, "fixed-window:100/1m", T0);
	q[0] = (struct tk_http_quota){ "fixedwindow", m.p, NULL };
	lim_check(&m, T0 + 50 * SEC, 1, &d);
	headers(q, 1, &d, T0 + 50 * SEC, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit", "\"fixedwindow\";r=99;t=50");
	assert_field(&o, "RateLimit-Policy", "\"fixedwindow\";q=100;w=60");
	lim_close(&m);

	/* B.2.2, B.2.3 and B.3: values lowered by the server. */
	p = policy("fixed-window:100/1m");
	q[0] = (struct tk_http_quota){ "dynamic", p, NULL };
	d = decision(1, 100, 9, T0 + 50 * SEC, 0);
	headers(q, 1, &d, T0, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit-Policy", "\"dynamic\";q=100;w=60");
	assert_field(&o, "RateLimit", "\"dynamic\";r=9;t=50");
	d = decision(0, 100, 15, T0 + 40 * SEC, 20 * SEC);
	assert_int_equal(headers(q, 1, &d, T0, TK_HTTP_IETF, &o), 3);
	assert_field(&o, "Retry-After", "20");
	assert_field(&o, "RateLimit-Policy", "\"dynamic\";q=100;w=60");
	assert_field(&o, "RateLimit", "\"dynamic\";r=15;t=40");
	tk_policy_free(p);
	p = policy("fixed-window:15/20s");
	q[0] = (struct tk_http_quota){ "dynamic", p, NULL };
	d = decision(0, 15, 0, T0 + 20 * SEC, 20 * SEC);
	headers(q, 1, &d, T0, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit-Policy", "\"dynamic\";q=15;w=20");
	assert_field(&o, "RateLimit", "\"dynamic\";r=0;t=20");
	tk_policy_free(p);

	/* B.3.1 (and B.1.2): 1000 per hour and 5000 per day, 4900 used in
	 * the first 14 hours, asked at 14:00; real limiters.  The List
	 * serialization (RFC 9651 4.1.1) is the example's, ", ". */
	lim_open(&m, "fixed-window:1000/1h", DAY * 20000);
	lim_open(&m2, "quota:5000/day", DAY * 20000);
	for (h = 0; h < 14; h++) {
		lim_check(&m, DAY * 20000 + (uint64_t)h * 3600 * SEC, 350, &d);
		lim_check(&m2, DAY * 20000 + (uint64_t)h * 3600 * SEC, 350,
			  &d2);
	}
	assert_rc(tk_clock_set(m.c, DAY * 20000 + 14 * 3600 * SEC), 0);
	assert_rc(tk_clock_set(m2.c, DAY * 20000 + 14 * 3600 * SEC), 0);
	assert_rc(tk_limiter_peek(m.l, "k", 1, &d), 0);
	assert_rc(tk_limiter_peek(m2.l, "k", 1, &d2), 0);
	q[0] = (struct tk_http_quota){ "hour", m.p, &d };
	q[1] = (struct tk_http_quota){ "day", m2.p, &d2 };
	headers(q, 2, &d2, DAY * 20000 + 14 * 3600 * SEC, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit-Policy",
		     "\"hour\";q=1000;w=3600, \"day\";q=5000;w=86400");
	assert_field(&o, "RateLimit",
		     "\"hour\";r=1000;t=3600, \"day\";r=100;t=36000");
	/* B.1.2 reports the day alone. */
	q[0] = (struct tk_http_quota){ "dayLimit", m2.p, &d2 };
	headers(q, 1, &d2, DAY * 20000 + 14 * 3600 * SEC, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit", "\"dayLimit\";r=100;t=36000");
	lim_close(&m);
	lim_close(&m2);

	/* 3 and 3.2: two policies; the draft writes "," alone there, so
	 * the values are compared as parsed Lists. */
	p = policy("fixed-window:100/1m");
	p2 = policy("quota:1000/day");
	q[0] = (struct tk_http_quota){ "burst", p, NULL };
	q[1] = (struct tk_http_quota){ "daily", p2, &d2 };
	d = decision(1, 100, 100, T0, 0);
	d2 = decision(1, 1000, 1000, T0, 0);
	headers(q, 2, &d, T0, TK_HTTP_IETF, &o);
	assert_field(&o, "RateLimit-Policy",
		     "\"burst\";q=100;w=60, \"daily\";q=1000;w=86400");
	{
		static struct sf_list a, b;

		assert_int_equal(sf_list(field(&o, "RateLimit-Policy"), &a), 0);
		assert_int_equal(
			sf_list("\"burst\";q=100;w=60,\"daily\";q=1000;w=86400",
				&b),
			0);
		assert_int_equal(a.n, b.n);
		assert_memory_equal(&a.m[0], &b.m[0], sizeof(a.m[0]));
		assert_memory_equal(&a.m[1], &b.m[1], sizeof(a.m[1]));
	}
	tk_policy_free(p);
	tk_policy_free(p2);
}

/* --- Every field, over generated policies and decisions ---------------- */

#define SF_MAX 999999999999999ull

/*
 * A simple policy, its decision limit and its RateLimit-Policy q and w:
 * q / w is the sustained rate (L / P, L / W, L / period), never the burst
 * over the time to earn it, which whole seconds would distort.
 */
static const struct simple {
	const char *text;
	uint64_t limit, q, w;
} simples[] = {
	{ "gcra:10/1s", 10, 10, 1 },
	{ "gcra:3/1s", 3, 3, 1 }, /* tau = 999999999 ns */
	{ "gcra:3/1s,burst=1", 1, 3, 1 },
	{ "gcra:10/1s,burst=15", 15, 10, 1 },
	{ "gcra:10/100ms", 10, 100, 1 },
	{ "gcra:1/1500ms", 1, 2, 3 },
	{ "gcra:1/1ms", 1, 1000, 1 },
	{ "gcra:100/1m,burst=20", 20, 100, 60 },
	{ "gcra:7/1h", 7, 7, 3600 },
	{ "gcra:1/1ns,burst=4611686018427387904", 1ull << 62, 1000000000, 1 },
	{ "token-bucket:capacity=50,refill=10/1s", 50, 10, 1 },
	{ "token-bucket:capacity=5,refill=3/2s", 5, 3, 2 },
	{ "fixed-window:100/1500ms", 100, 200, 3 },
	{ "fixed-window:4611686018427387904/1s", 1ull << 62, SF_MAX, 1 },
	{ "fixed-window:1/1ns", 1, 1000000000, 1 },
	/* Exact would need w > 15 digits: the period rounded up, and the
	 * whole units it grants (3 in 1000001 s, a little under the rate). */
	{ "fixed-window:3/1000000000000001ns", 3, 3, 1000001 },
	{ "sliding-window:100/1m", 100, 100, 60 },
	{ "sliding-window:281474976710656/1h,buckets=4", 1ull << 48, 1ull << 48,
	  3600 },
	{ "fixed-window:999999999999999/1s", SF_MAX, SF_MAX, 1 },
	{ "fixed-window:1000000000000000/1s", SF_MAX + 1, SF_MAX, 1 },
	{ "sliding-log:5/10s", 5, 5, 10 },
	{ "sliding-log:4/800ms", 4, 5, 1 },
	{ "quota:100/day", 100, 100, 86400 },
	{ "quota:100/week,week-start=sun", 100, 100, 604800 },
	{ "quota:100/month,offset=-05:00", 100, 100, 2678400 },
	{ "quota:100/90m", 100, 100, 5400 },
	{ "quota:7/1ms,anchor=5", 7, 7000, 1 },
	{ "leaky:10/1s,max-queue=2s", 21, 10, 1 },
	{ "leaky:10/1s", 1, 10, 1 },
	{ "leaky:1/1h,max-queue=5h", 6, 1, 3600 },
	{ "leaky:3/2s,max-queue=4s", 7, 3, 2 },
};

#define N_SIMPLES (sizeof(simples) / sizeof(simples[0]))

static uint64_t want_seconds(uint64_t ns)
{
	return (uint64_t)(((unsigned __int128)ns + 999999999) / 1000000000);
}

static uint64_t want_int(uint64_t v)
{
	return v > SF_MAX ? SF_MAX : v;
}

/* A time near @now, in the past, now, or ahead by a little or a lot. */
static uint64_t some_time(uint64_t *seed, uint64_t now)
{
	switch (rnd_range(seed, 0, 9)) {
	case 0:
		return 0;
	case 1:
		return now - rnd_range(seed, 0, now);
	case 2:
		return now;
	case 3:
		return now + 1;
	case 4:
		return now + SEC;
	case 5:
		return now + SEC + 1;
	case 6:
		return UINT64_MAX;
	case 7:
		return now + rnd_range(seed, 0, UINT64_MAX - now);
	default:
		return now + rnd_range(seed, 0, 1000 * SEC);
	}
}

static uint64_t some_count(uint64_t *seed, uint64_t limit)
{
	switch (rnd_range(seed, 0, 6)) {
	case 0:
		return 0;
	case 1:
		return limit;
	case 2:
		return UINT64_MAX;
	case 3:
		return SF_MAX + rnd_range(seed, 0, 1);
	default:
		return rnd_range(seed, 0, limit);
	}
}

static struct tk_decision some_decision(uint64_t *seed, uint64_t limit,
					uint64_t now)
{
	struct tk_decision d =
		decision((int)rnd_range(seed, 0, 1), limit,
			 some_count(seed, limit), some_time(seed, now), 0);

	if (!d.allowed)
		d.retry_after =
			rnd_range(seed, 0, 3) ? some_time(seed, now) - now : 0;
	return d;
}

/* A name of printable ASCII, structured-field specials included. */
static void some_name(uint64_t *seed, char *buf, size_t size)
{
	static const char alpha[] = "ab\"\\ ,;=()%.0~*Z";
	size_t i, n = rnd_range(seed, 1, size - 1);

	for (i = 0; i < n; i++)
		buf[i] = rnd_range(seed, 0, 3)
				 ? alpha[rnd_range(seed, 0, sizeof(alpha) - 2)]
				 : (char)rnd_range(seed, 0x20, 0x7e);
	buf[n] = '\0';
}

/* A legacy field: a plain non-negative decimal integer of <= 15 digits. */
static uint64_t plain_integer(const char *v)
{
	static struct sf_list l;

	if (!v || sf_list(v, &l) || l.n != 1 || l.m[0].v.type != 'i' ||
	    l.m[0].np || l.m[0].v.i < 0 || strchr(v, ' ') ||
	    (v[0] == '0' && v[1]))
		fail_msg("not a plain integer: \"%s\"", v ? v : "(none)");
	return (uint64_t)l.m[0].v.i;
}

struct gen_quota {
	char name[12];
	size_t n;
	size_t dim[4]; /* indices into simples[] */
	struct tk_decision dims[4];
};

/* Checks one List field against the quotas: member names in order, and
 * exactly the parameters @k0 and @k1 with the values the model gives. */
static void check_list(const char *v, const struct gen_quota *g, size_t nq,
		       uint64_t now, int policy)
{
	static struct sf_list l;
	char name[32];
	size_t k, i, m = 0;
	uint64_t a, b;

	if (!v || sf_list(v, &l))
		fail_msg("not a structured-field List: \"%s\"",
			 v ? v : "(none)");
	for (k = 0; k < nq; k++) {
		for (i = 0; i < g[k].n; i++, m++) {
			const struct sf_item *it = &l.m[m];
			const struct tk_decision *d = &g[k].dims[i];

			if (m >= l.n)
				fail_msg("too few members in \"%s\"", v);
			if (g[k].n > 1)
				snprintf(name, sizeof(name), "%s.%zu",
					 g[k].name, i);
			else
				snprintf(name, sizeof(name), "%s", g[k].name);
			a = policy ? simples[g[k].dim[i]].q
				   : want_int(d->remaining);
			b = policy ? simples[g[k].dim[i]].w
			    : d->reset_at > now
				    ? want_seconds(d->reset_at - now)
				    : 0;
			if (it->v.type != 's' || strcmp(it->v.s, name) ||
			    it->np != 2 ||
			    strcmp(it->key[0], policy ? "q" : "r") ||
			    strcmp(it->key[1], policy ? "w" : "t") ||
			    it->param[0].type != 'i' ||
			    it->param[1].type != 'i' ||
			    (uint64_t)it->param[0].i != a ||
			    (uint64_t)it->param[1].i != b || (policy && b == 0))
				fail_msg("member %zu of \"%s\": want \"%s\" "
					 "%llu %llu",
					 m, v, name, (unsigned long long)a,
					 (unsigned long long)b);
		}
	}
	if (m != l.n)
		fail_msg("too many members in \"%s\"", v);
}

static void test_fields_generated(void **state)
{
	static const unsigned flag_sets[] = { 0, TK_HTTP_IETF, TK_HTTP_LEGACY,
					      TK_HTTP_IETF | TK_HTTP_LEGACY };
	uint64_t seed = 0x5eed, now;
	struct tk_policy *pol[3];
	struct tk_http_quota q[3];
	struct gen_quota g[3];
	struct tk_decision d;
	struct out o;
	unsigned flags;
	size_t nq, k, i, need, bound;
	int round, want, f, nodims;
	char text[512];

	(void)state;
	for (round = 0; round < 3000; round++) {
		now = rnd_range(&seed, 0, (1ull << 63) - 1);
		nq = rnd_range(&seed, 0, 3);
		for (k = 0; k < nq; k++) {
			g[k].n = rnd_range(&seed, 0, 2)
					 ? 1
					 : rnd_range(&seed, 2, 4);
			some_name(&seed, g[k].name, sizeof(g[k].name));
			text[0] = '\0';
			if (g[k].n > 1)
				strcat(text, rnd_range(&seed, 0, 1) ? "all("
								    : "any(");
			for (i = 0; i < g[k].n; i++) {
				g[k].dim[i] =
					rnd_range(&seed, 0, N_SIMPLES - 1);
				g[k].dims[i] = some_decision(
					&seed, simples[g[k].dim[i]].limit, now);
				if (i)
					strcat(text, ",");
				strcat(text, simples[g[k].dim[i]].text);
			}
			if (g[k].n > 1)
				strcat(text, ")");
			pol[k] = policy(text);
			/* A simple first quota may take @d as its decision. */
			nodims =
				k == 0 && g[k].n == 1 && rnd_range(&seed, 0, 1);
			q[k] = (struct tk_http_quota){ g[k].name, pol[k],
						       nodims ? NULL
							      : g[k].dims };
		}
		/* The representative decision: a dimension's, or any. */
		if (nq && !q[0].dims)
			d = g[0].dims[0];
		else
			d = some_decision(&seed, rnd_range(&seed, 1, 1000),
					  now);
		d.degraded = rnd_range(&seed, 0, 9) == 0;
		flags = flag_sets[rnd_range(&seed, 0, 3)];

		want = 0;
		if (!d.degraded) {
			want += (flags & TK_HTTP_IETF) && nq ? 2 : 0;
			want += flags & TK_HTTP_LEGACY ? 3 : 0;
		}
		want += !d.allowed;
		assert_rc(headers(q, nq, &d, now, flags, &o), want);
		f = 0;
		if (!d.degraded && (flags & TK_HTTP_IETF) && nq) {
			assert_string_equal(o.f[f++].name, "RateLimit-Policy");
			check_list(o.f[f - 1].value, g, nq, now, 1);
			assert_string_equal(o.f[f++].name, "RateLimit");
			check_list(o.f[f - 1].value, g, nq, now, 0);
		}
		if (!d.degraded && (flags & TK_HTTP_LEGACY)) {
			assert_string_equal(o.f[f].name, "X-RateLimit-Limit");
			assert_true(plain_integer(o.f[f++].value) ==
				    want_int(d.limit));
			assert_string_equal(o.f[f].name,
					    "X-RateLimit-Remaining");
			assert_true(plain_integer(o.f[f++].value) ==
				    want_int(d.remaining));
			assert_string_equal(o.f[f].name, "X-RateLimit-Reset");
			assert_true(plain_integer(o.f[f++].value) ==
				    (d.reset_at > now
					     ? want_seconds(d.reset_at - now)
					     : 0));
		}
		if (!d.allowed) {
			assert_string_equal(o.f[f].name, "Retry-After");
			assert_true(plain_integer(o.f[f++].value) ==
				    max_u64(1, want_seconds(d.retry_after)));
		}
		/* Exactly the bytes of the values fit; one less does not;
		 * and the man page's bound holds. */
		for (need = 0, f = 0; f < o.n; f++)
			need += strlen(o.f[f].value) + 1;
		for (bound = 66, k = 0; k < nq; k++)
			bound += g[k].n * (84 + 4 * strlen(g[k].name));
		assert_true(need <= bound);
		{
			char *b = malloc(need ? need : 1);
			struct tk_http_field fl[TK_HTTP_FIELDS_MAX];

			assert_non_null(b);
			assert_rc(tk_http_headers(q, nq, &d, now, flags, fl,
						  TK_HTTP_FIELDS_MAX, b, need),
				  want);
			for (f = 0; f < want; f++)
				assert_string_equal(fl[f].value, o.f[f].value);
			if (need)
				assert_rc(tk_http_headers(q, nq, &d, now, flags,
							  fl,
							  TK_HTTP_FIELDS_MAX, b,
							  need - 1),
					  -ENOSPC);
			free(b);
		}
		for (k = 0; k < nq; k++)
			tk_policy_free(pol[k]);
	}
}

/* Real limiters of every algorithm: their decisions through the fields. */
static void test_fields_real_decisions(void **state)
{
	uint64_t seed = 42, now = T0, cost;
	struct gen_quota g;
	struct tk_http_quota q;
	struct out o;
	struct lim m;
	size_t s;
	int i;

	(void)state;
	for (s = 0; s < N_SIMPLES; s++) {
		lim_open(&m, simples[s].text, now);
		snprintf(g.name, sizeof(g.name), "p%zu", s);
		g.n = 1;
		g.dim[0] = s;
		q = (struct tk_http_quota){ g.name, m.p, NULL };
		for (i = 0; i < 50; i++) {
			now += rnd_range(&seed, 0, 3)
				       ? rnd_range(&seed, 0, SEC)
				       : rnd_range(&seed, 0, DAY);
			cost = rnd_range(&seed, 1,
					 min_u64(simples[s].limit, 30));
			lim_check(&m, now, cost, &g.dims[0]);
			assert_rc(headers(&q, 1, &g.dims[0], now,
					  TK_HTTP_IETF | TK_HTTP_LEGACY, &o),
				  5 + !g.dims[0].allowed);
			check_list(field(&o, "RateLimit-Policy"), &g, 1, now,
				   1);
			check_list(field(&o, "RateLimit"), &g, 1, now, 0);
		}
		lim_close(&m);
	}
}

static const char *retry_after(uint64_t ns, int allowed)
{
	static struct out o;
	struct tk_decision d = decision(allowed, 1, 0, T0 + ns, ns);

	assert_rc(headers(NULL, 0, &d, T0, 0, &o), !allowed);
	return field(&o, "Retry-After");
}

static void test_retry_after_rounding(void **state)
{
	(void)state;
	assert_string_equal(retry_after(1, 0), "1");
	assert_string_equal(retry_after(SEC - 1, 0), "1");
	assert_string_equal(retry_after(SEC, 0), "1");
	assert_string_equal(retry_after(SEC + 1, 0), "2");
	assert_string_equal(retry_after(2 * SEC, 0), "2");
	assert_string_equal(retry_after(59 * SEC + 1, 0), "60");
	/* Never 0 on a denial, even one that names no wait. */
	assert_string_equal(retry_after(0, 0), "1");
	assert_string_equal(retry_after(UINT64_MAX, 0), "18446744074");
	/* Allowed: no Retry-After, whatever the decision says. */
	assert_null(retry_after(0, 1));
	assert_null(retry_after(5 * SEC, 1));
	/* A shaper's delay is an admission, not a denial. */
	{
		struct tk_decision d;
		struct out o;
		struct lim m;

		lim_open(&m, "leaky:1/1s,max-queue=10s", T0);
		lim_check(&m, T0, 1, &d);
		lim_check(&m, T0, 1, &d);
		assert_true(d.allowed && d.delay == SEC);
		assert_rc(headers(NULL, 0, &d, T0, 0, &o), 0);
		lim_close(&m);
	}
}

/* A response with every field: two quotas, one a composite, a denial. */
struct rich {
	struct tk_policy *p1, *p2;
	struct tk_decision dims[3], d;
	struct tk_http_quota q[2];
};

static void rich_init(struct rich *r)
{
	r->p1 = policy("all(gcra:10/1s,quota:1000/day)");
	r->p2 = policy("sliding-log:5/10s");
	r->dims[0] = decision(0, 10, 0, T0 + 1500 * MS, 100 * MS);
	r->dims[1] = decision(1, 1000, 990, T0 + 3600 * SEC, 0);
	r->dims[2] = decision(1, 5, 4, T0 + 10 * SEC, 0);
	r->d = r->dims[0];
	r->q[0] = (struct tk_http_quota){ "a \"b\"\\c", r->p1, r->dims };
	r->q[1] = (struct tk_http_quota){ "log", r->p2, &r->dims[2] };
}

static void rich_free(struct rich *r)
{
	tk_policy_free(r->p1);
	tk_policy_free(r->p2);
}

static void test_rich_response(void **state)
{
	struct rich r;
	struct out o;

	(void)state;
	rich_init(&r);
	assert_rc(headers(r.q, 2, &r.d, T0, TK_HTTP_IETF | TK_HTTP_LEGACY, &o),
		  6);
	assert_string_equal(o.f[0].value,
			    "\"a \\\"b\\\"\\\\c.0\";q=10;w=1, "
			    "\"a \\\"b\\\"\\\\c.1\";q=1000;w=86400, "
			    "\"log\";q=5;w=10");
	assert_string_equal(o.f[1].value,
			    "\"a \\\"b\\\"\\\\c.0\";r=0;t=2, "
			    "\"a \\\"b\\\"\\\\c.1\";r=990;t=3600, "
			    "\"log\";r=4;t=10");
	assert_string_equal(o.f[2].name, "X-RateLimit-Limit");
	assert_string_equal(o.f[2].value, "10");
	assert_string_equal(o.f[3].name, "X-RateLimit-Remaining");
	assert_string_equal(o.f[3].value, "0");
	assert_string_equal(o.f[4].name, "X-RateLimit-Reset");
	assert_string_equal(o.f[4].value, "2");
	assert_string_equal(o.f[5].name, "Retry-After");
	assert_string_equal(o.f[5].value, "1");
	/* The example of tk_http_headers(3). */
	r.dims[0].reset_at = T0 + 900 * MS;
	r.d = r.dims[0];
	r.q[0].name = "api";
	assert_rc(headers(r.q, 1, &r.d, T0, TK_HTTP_IETF | TK_HTTP_LEGACY, &o),
		  6);
	assert_string_equal(o.f[0].value,
			    "\"api.0\";q=10;w=1, \"api.1\";q=1000;w=86400");
	assert_string_equal(o.f[1].value,
			    "\"api.0\";r=0;t=1, \"api.1\";r=990;t=3600");
	assert_string_equal(o.f[2].value, "10");
	assert_string_equal(o.f[3].value, "0");
	assert_string_equal(o.f[4].value, "1");
	assert_string_equal(o.f[5].value, "1");
	rich_free(&r);
}

/* Every buffer and field count short of the need fails whole. */
static void test_enospc_every_length(void **state)
{
	static const unsigned flag_sets[] = { 0, TK_HTTP_IETF, TK_HTTP_LEGACY,
					      TK_HTTP_IETF | TK_HTTP_LEGACY };
	struct tk_http_field fl[TK_HTTP_FIELDS_MAX + 1];
	char buf[1024];
	struct rich r;
	struct out o;
	size_t need, len, max, fs;
	int n, i;

	(void)state;
	rich_init(&r);
	for (fs = 0; fs < 4; fs++) {
		n = headers(r.q, 2, &r.d, T0, flag_sets[fs], &o);
		assert_true(n > 0);
		for (need = 0, i = 0; i < n; i++)
			need += strlen(o.f[i].value) + 1;
		for (len = 0; len <= need; len++) {
			memset(buf, '#', sizeof(buf));
			memset(fl, 0x5a, sizeof(fl));
			assert_rc(tk_http_headers(r.q, 2, &r.d, T0,
						  flag_sets[fs], fl,
						  TK_HTTP_FIELDS_MAX,
						  len ? buf : NULL, len),
				  len < need ? -ENOSPC : n);
			if (len < need) {
				/* Nothing a caller could take for a value. */
				if (len)
					assert_int_equal(buf[0], '\0');
				for (i = 0; i <= TK_HTTP_FIELDS_MAX; i++)
					assert_true(
						fl[i].name ==
						fl[TK_HTTP_FIELDS_MAX].name);
				continue;
			}
			for (i = 0; i < n; i++) {
				assert_string_equal(fl[i].name, o.f[i].name);
				assert_string_equal(fl[i].value, o.f[i].value);
			}
			/* Nothing written past the need. */
			assert_int_equal(buf[need], '#');
		}
		for (max = 0; max <= (size_t)n; max++) {
			memset(fl, 0x5a, sizeof(fl));
			assert_rc(tk_http_headers(r.q, 2, &r.d, T0,
						  flag_sets[fs],
						  max ? fl : NULL, max, buf,
						  sizeof(buf)),
				  max < (size_t)n ? -ENOSPC : n);
			assert_true(fl[max].name ==
				    fl[TK_HTTP_FIELDS_MAX].name);
			if (max < (size_t)n)
				assert_int_equal(buf[0], '\0');
		}
	}
	/* Nothing to write needs no room at all. */
	r.d.allowed = true;
	assert_rc(tk_http_headers(r.q, 2, &r.d, T0, 0, NULL, 0, NULL, 0), 0);
	rich_free(&r);
}

static void test_einval(void **state)
{
	static const char *const bad_names[] = { "",	 "a\x7f",    "tab\t",
						 "nl\n", "\xc3\xa9", "\x1f" };
	struct tk_http_field fl[TK_HTTP_FIELDS_MAX];
	char buf[512];
	struct rich r;
	struct tk_http_quota q;
	struct tk_decision d;
	size_t i;

	(void)state;
	rich_init(&r);
#define H(q_, nq_, d_, flags_)                                                 \
	tk_http_headers((q_), (nq_), (d_), T0, (flags_), fl,                   \
			TK_HTTP_FIELDS_MAX, buf, sizeof(buf))
	assert_rc(H(r.q, 2, &r.d, TK_HTTP_IETF), 3);
	assert_rc(H(r.q, 2, NULL, TK_HTTP_IETF), -EINVAL);
	assert_rc(H(NULL, 2, &r.d, TK_HTTP_IETF), -EINVAL);
	assert_rc(H(NULL, 0, &r.d, TK_HTTP_IETF), 1);
	assert_rc(H(r.q, 2, &r.d, 0x4), -EINVAL);
	assert_rc(H(r.q, 2, &r.d, 0x80000000u), -EINVAL);
	assert_rc(
		tk_http_headers(r.q, 2, &r.d, T0, 0, NULL, 1, buf, sizeof(buf)),
		-EINVAL);
	assert_rc(tk_http_headers(r.q, 2, &r.d, T0, 0, fl, 1, NULL, 1),
		  -EINVAL);
	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		q = r.q[1];
		q.name = bad_names[i];
		memset(buf, '#', sizeof(buf));
		assert_rc(H(&q, 1, &r.d, TK_HTTP_IETF), -EINVAL);
		assert_int_equal(buf[0], '\0');
		/* Also when the quotas are not written. */
		assert_rc(H(&q, 1, &r.d, TK_HTTP_LEGACY), -EINVAL);
	}
	q = r.q[1];
	q.name = NULL;
	assert_rc(H(&q, 1, &r.d, TK_HTTP_IETF), -EINVAL);
	q = r.q[1];
	q.policy = NULL;
	assert_rc(H(&q, 1, &r.d, TK_HTTP_IETF), -EINVAL);
	/* A composite without its decisions takes @d as that of the
	 * dimension it names: one of its own, with that one's limit. */
	q = r.q[0];
	q.dims = NULL;
	assert_rc(H(&q, 1, &r.d, TK_HTTP_IETF), 3); /* a denial */
	d = r.d;
	d.dimension = 2;
	assert_rc(H(&q, 1, &d, TK_HTTP_IETF), -EINVAL);
	d.dimension = 1; /* limit 10, not 1000 */
	assert_rc(H(&q, 1, &d, TK_HTTP_IETF), -EINVAL);
	d = r.dims[1];
	d.dimension = 1;
	assert_rc(H(&q, 1, &d, TK_HTTP_IETF), 2);
	/* Decisions of another policy, or in another order. */
	q = r.q[0];
	q.dims = &r.dims[1];
	assert_rc(H(&q, 1, &r.d, TK_HTTP_IETF), -EINVAL);
	q = r.q[1];
	q.dims = NULL; /* then @d is its decision: limit 10, not 5 */
	assert_rc(H(&q, 1, &r.d, TK_HTTP_IETF), -EINVAL);
	d = r.dims[2];
	assert_rc(H(&q, 1, &d, TK_HTTP_IETF), 2);
	/* Every printable byte is a valid name, escaped as needed. */
	{
		char name[96];
		static struct sf_list l;

		for (i = 0; i < 95; i++)
			name[i] = (char)(0x20 + i);
		name[95] = '\0';
		q = r.q[1];
		q.name = name;
		assert_rc(H(&q, 1, &d, TK_HTTP_IETF), 2);
		assert_int_equal(sf_list(fl[0].value, &l), 0);
		assert_string_equal(l.m[0].v.s, name);
	}
#undef H
	rich_free(&r);
}

/* The store failed: no made-up quota, Retry-After on a denial only. */
static void test_degraded(void **state)
{
	struct rich r;
	struct out o;

	(void)state;
	rich_init(&r);
	r.d = decision(0, 0, 0, 0, 0);
	r.d.degraded = true;
	assert_rc(headers(r.q, 2, &r.d, T0, TK_HTTP_IETF | TK_HTTP_LEGACY, &o),
		  1);
	assert_string_equal(o.f[0].name, "Retry-After");
	assert_string_equal(o.f[0].value, "1");
	r.d.retry_after = 30 * SEC;
	assert_rc(headers(r.q, 2, &r.d, T0, TK_HTTP_IETF, &o), 1);
	assert_string_equal(o.f[0].value, "30");
	r.d.allowed = true;
	r.d.retry_after = 0;
	assert_rc(headers(r.q, 2, &r.d, T0, TK_HTTP_IETF | TK_HTTP_LEGACY, &o),
		  0);
	rich_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_key_v6),
		cmocka_unit_test(test_client_key_v4),
		cmocka_unit_test(test_client_key_garbage),
		cmocka_unit_test(test_client_key_truncates),
		cmocka_unit_test(test_client_key_every_prefix),
		cmocka_unit_test(test_sf_parser),
		cmocka_unit_test(test_draft_examples),
		cmocka_unit_test(test_draft_examples_real),
		cmocka_unit_test(test_fields_generated),
		cmocka_unit_test(test_fields_real_decisions),
		cmocka_unit_test(test_retry_after_rounding),
		cmocka_unit_test(test_rich_response),
		cmocka_unit_test(test_enospc_every_length),
		cmocka_unit_test(test_einval),
		cmocka_unit_test(test_degraded),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
