/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_key_paths.c - a single policy's check composes its store key
 * without the generic step (lib/limiter.c, check_single()), while peek,
 * forecast and reset still go through compose_key(): both must name the
 * same state for every key length and prefix, and keys that differ in any
 * one byte must never share one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <throttlekit.h>

#include "asserts.h"

#define T0 UINT64_C(1700000000000000000)
#define LEN_MAX 40

static struct tk_limiter *open_with(const char *prefix, struct tk_clock *c)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;

	o.prefix = prefix;
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(&l, "gcra:1/1h,burst=1", "memory", &o), 0);
	return l;
}

/* @key with its byte @i changed (i == len: unchanged). */
static void variant(char *out, const char *key, size_t len, size_t i)
{
	memcpy(out, key, len);
	if (i < len)
		out[i] = (char)(out[i] ^ 0x5a);
}

static void one_prefix(const char *prefix)
{
	struct tk_request reqs[LEN_MAX];
	struct tk_decision d, many[LEN_MAX];
	char key[LEN_MAX], keys[LEN_MAX][LEN_MAX];
	struct tk_limiter *l;
	struct tk_clock *c;
	int rcs[LEN_MAX];
	size_t len, i;

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	l = open_with(prefix, c);
	for (len = 1; len <= LEN_MAX; len++) {
		for (i = 0; i < len; i++)
			key[i] = (char)('a' + (len + i) % 26);
		assert_rc(tk_limiter_check(l, key, len, 1, &d), 0);
		assert_true(d.allowed);
		/* Every one-byte change is another key, with its own state. */
		for (i = 0; i < len; i++) {
			variant(keys[i], key, len, i);
			assert_rc(tk_limiter_check(l, keys[i], len, 1, &d), 0);
			assert_true(d.allowed);
			reqs[i].key = keys[i];
			reqs[i].key_len = len;
			reqs[i].cost = 1;
		}
		/* The generic path sees what the check consumed. */
		assert_rc(tk_limiter_peek(l, key, len, &d), 0);
		assert_int_equal(d.remaining, 0);
		assert_rc(tk_limiter_forecast(l, key, len, 1, &d), 0);
		assert_false(d.allowed);
		assert_rc(tk_limiter_check(l, key, len, 1, &d), 0);
		assert_false(d.allowed);
		/* A batch names the same states. */
		assert_rc(tk_limiter_check_many(l, reqs, len, many, rcs), 0);
		for (i = 0; i < len; i++) {
			assert_int_equal(rcs[i], 0);
			assert_false(many[i].allowed);
		}
		/* And so does a reset. */
		assert_rc(tk_limiter_reset(l, key, len), 0);
		assert_rc(tk_limiter_check(l, key, len, 1, &d), 0);
		assert_true(d.allowed);
		assert_rc(tk_limiter_check(l, keys[0], len, 1, &d), 0);
		assert_false(d.allowed);
	}
	tk_limiter_close(l);
	tk_clock_free(c);
}

static void test_no_prefix(void **state)
{
	(void)state;
	one_prefix(NULL);
}

static void test_short_prefix(void **state)
{
	(void)state;
	one_prefix("p:");
}

static void test_longest_prefix(void **state)
{
	char prefix[TK_PREFIX_MAX + 1];

	(void)state;
	memset(prefix, 'q', TK_PREFIX_MAX);
	prefix[TK_PREFIX_MAX] = '\0';
	one_prefix(prefix);
}

/* The prefix is part of the key: a prefixed "ab" is not "p:" + "ab"'s
 * neighbour "p:ab" without a prefix, in either path. */
static void test_prefix_is_not_key_bytes(void **state)
{
	struct tk_limiter *a, *b;
	struct tk_clock *c;
	struct tk_decision d;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s;

	(void)state;
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_store_open(&s, "memory", &o), 0);
	o.store = s;
	o.flags = 0;
	assert_rc(tk_limiter_open(&a, "gcra:1/1h,burst=1", NULL, &o), 0);
	o.prefix = "p:";
	assert_rc(tk_limiter_open(&b, "gcra:1/1h,burst=1", NULL, &o), 0);
	assert_rc(tk_limiter_check(b, "ab", 2, 1, &d), 0);
	assert_true(d.allowed);
	assert_rc(tk_limiter_check(a, "p:ab", 4, 1, &d), 0);
	assert_true(d.allowed);
	assert_rc(tk_limiter_peek(b, "ab", 2, &d), 0);
	assert_int_equal(d.remaining, 0);
	tk_limiter_close(a);
	tk_limiter_close(b);
	tk_store_close(s);
	tk_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_prefix),
		cmocka_unit_test(test_short_prefix),
		cmocka_unit_test(test_longest_prefix),
		cmocka_unit_test(test_prefix_is_not_key_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
