/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostile-kit.c - hostile states on a real redis-server: a value written
 * straight into the key the Redis store uses, then a check, a peek and a
 * batch that must fail with -EPROTO and leave it as it was
 * (hostile-kit.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <throttlekit.h>

#include "algo/algo.h"
#include "store/store-key.h"
#include "asserts.h"
#include "hostile-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)

static struct redis_kit *srv;

void hostile_kit_need(struct redis_kit *k)
{
	redis_kit_need(k);
	srv = k;
}

/*
 * The Redis key of "k" under @policy, dimension @dim (or -1), without the
 * key prefix, into @key (lib/redis/keys.c): its length.
 */
size_t state_key(const char *policy, int dim, char *key)
{
	const struct tk__policy *p;
	struct tk_policy *pol;
	size_t n = 0;

	assert_rc(tk__policy_parse(&pol, policy, NULL), 0);
	p = &pol->dim[dim < 0 ? 0 : dim];
	key[n++] = '{';
	key[n++] = (char)(dim < 0 && p->tag_len ? TK__STORE_KEY_TAG : 0);
	key[n++] = 0;
	if (dim >= 0) /* a dimension's index leaves the hash tag */
		key[1] = (char)TK__STORE_KEY_DIM;
	if (dim < 0) {
		memcpy(key + n, p->tag, p->tag_len);
		n += p->tag_len;
	}
	key[n++] = 'k';
	key[n++] = '}';
	if (dim >= 0) { /* and so does its tag, its length last */
		key[n++] = (char)dim;
		if (p->tag_len) {
			memcpy(key + n, p->tag + 1, p->tag_len - 1);
			n += p->tag_len - 1;
			key[n++] = (char)(0x80 | p->tag[0]);
		}
	}
	tk_policy_free(pol);
	return n;
}

/* Does "h:" @key still hold the @len bytes at @value? */
int unchanged(const char *key, size_t klen, const char *value, size_t len)
{
	return redis_kit_cmd(srv, NULL, 0, "EVAL %s 1 h:%b %b",
			     "return redis.call('GET', KEYS[1]) == "
			     "ARGV[1] and 1 or 0",
			     key, klen, value, len) == 1;
}

/*
 * @value (@vlen bytes) under the state of key "k" of @policy (dimension
 * @dim of a composite, or -1): a check answers @want (-EPROTO but where
 * the value's flaw lies where a single log's check never reads), and a
 * peek and a batch fail with -EPROTO; nothing is written.
 */
void hostile_with(const char *policy, int dim, const char *value, size_t vlen,
		  const char *opts, int want)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_request req[2];
	struct tk_decision d, ds[2];
	struct tk_limiter *l;
	struct tk_clock *c;
	char spec[192], key[64];
	size_t klen = state_key(policy, dim, key);
	int rc[2];

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.fail = TK_FAIL_ERROR;
	o.flags = TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec), "%s?key_prefix=h:%s", srv->spec, opts);
	assert_rc(tk_limiter_open(&l, policy, redis_kit_slow(spec), &o), 0);
	if (redis_kit_cmd(srv, NULL, 0, "SET h:%b %b", key, klen, value,
			  vlen) != 0)
		fail_msg("SET %s", value);
	rc[0] = tk_limiter_check(l, "k", 1, 1, &d);
	if (rc[0] != want || (want == 0 && d.allowed))
		fail_msg("%s, state \"%.60s\": check %s (%s), want %s", policy,
			 value, tk_strerrorname(rc[0]),
			 d.allowed ? "allowed" : "denied",
			 tk_strerrorname(want));
	/* Refused, and left as it was: nothing was consumed. */
	if (!unchanged(key, klen, value, vlen))
		fail_msg("%s, state \"%.60s\" (%zu bytes): written", policy,
			 value, vlen);
	rc[0] = tk_limiter_peek(l, "k", 1, &d);
	if (rc[0] != -EPROTO)
		fail_msg("%s, state \"%.60s\": peek %s, want EPROTO", policy,
			 value, tk_strerrorname(rc[0]));
	memset(req, 0, sizeof(req));
	req[0].key = "k";
	req[0].key_len = 1;
	req[0].cost = 1;
	req[1] = req[0];
	req[1].key = "z";
	tk_limiter_check_many(l, req, 2, ds, rc);
	if (rc[0] != -EPROTO || rc[1] != 0)
		fail_msg("%s, state \"%.60s\": batch %s and %s, want EPROTO "
			 "and success",
			 policy, value, tk_strerrorname(rc[0]),
			 tk_strerrorname(rc[1]));
	assert_rc(tk_limiter_reset(l, "k", 1), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_rc(tk_limiter_reset(l, "k", 1), 0);
	assert_rc(tk_limiter_reset(l, "z", 1), 0);
	tk_limiter_close(l);
	tk_clock_free(c);
}

void assert_hostile_bytes(const char *policy, int dim, const char *value,
			  size_t len)
{
	hostile_with(policy, dim, value, len, "", -EPROTO);
	hostile_with(policy, dim, value, len, "&server_time=1", -EPROTO);
}

void assert_hostile(const char *policy, int dim, const char *value)
{
	assert_hostile_bytes(policy, dim, value, strlen(value));
}

/* Each of @n values under @policy's key. */
void assert_each(const char *policy, const char *const *bad, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		assert_hostile(policy, -1, bad[i]);
}

/* @script run on the state of key "k" under @policy (prefix "t:"). */
long long eval_on(const char *policy, const char *script)
{
	char key[64];
	size_t klen = state_key(policy, -1, key);

	return redis_kit_cmd(srv, NULL, 0, "EVAL %s 1 t:%b", script, key, klen);
}

void twin_open(struct twin *t, const char *policy, const char *spec)
{
	struct tk_decision d;
	int m;

	for (m = 0; m < 2; m++) {
		redis_kit_limiter(&t->l[m], &t->c[m], policy, m ? spec : NULL,
				  T0);
		assert_rc(tk_limiter_reset(t->l[m], "k", 1), 0);
		assert_rc(tk_limiter_check(t->l[m], "k", 1, 2, &d), 0);
		assert_true(d.allowed);
	}
}

int twin_check(struct twin *t, uint64_t now)
{
	struct tk_decision d[2];
	int m;

	for (m = 0; m < 2; m++) {
		tk_clock_set(t->c[m], now);
		assert_rc(tk_limiter_check(t->l[m], "k", 1, 1, &d[m]), 0);
	}
	assert_same_decision(d[1], d[0]);
	return d[0].allowed;
}

void twin_close(struct twin *t)
{
	int m;

	for (m = 0; m < 2; m++) {
		tk_limiter_close(t->l[m]);
		tk_clock_free(t->c[m]);
	}
}

long long state_len(const char *policy, unsigned char *first)
{
	char key[64], b[8] = { 0 };
	size_t klen = state_key(policy, -1, key);

	redis_kit_cmd(srv, b, sizeof(b), "GETRANGE t:%b 0 0", key, klen);
	*first = (unsigned char)b[0];
	return redis_kit_cmd(srv, NULL, 0, "STRLEN t:%b", key, klen);
}
