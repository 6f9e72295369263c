/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_window_state.c - a window's state (fixed window, quota) on
 * a real redis-server as the check script writes it: 37 bytes, 0x80 +
 * the algorithm's id, then POLICY, START, END and COUNT, each as hi *
 * 10^9 + lo in 5 and 4 bytes, big-endian (lib/redis/check.lua, WIN).
 * Hostile values of that form fail with -EPROTO and are left as they
 * were; the text "ALG:POLICY:START:END:COUNT" of earlier versions is read
 * exactly (decisions bit for bit the memory store's) and written again
 * in 37 bytes.
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
#include "algo/policy.h"
#include "redis/scripts.h"
#include "asserts.h"
#include "hostile-kit.h"
#include "redis-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)
#define WIN_LEN 37

static struct redis_kit kit;

static int stop_server(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

/* @hi and @lo in 5 and 4 bytes at @b. */
static void put_halves(char *b, uint64_t hi, uint64_t lo)
{
	int k;

	for (k = 0; k < 5; k++)
		b[k] = (char)(hi >> (8 * (4 - k)));
	for (k = 0; k < 4; k++)
		b[5 + k] = (char)(lo >> (8 * (3 - k)));
}

/* @v as hi * 10^9 + lo at @b. */
static void put_pair(char *b, uint64_t v)
{
	put_halves(b, v / 1000000000, v % 1000000000);
}

/* A window's state of @mark, its four numbers @f, into @b (37 bytes). */
static const char *win(char *b, unsigned int mark, const uint64_t f[4])
{
	int i;

	b[0] = (char)mark;
	for (i = 0; i < 4; i++)
		put_pair(b + 1 + 9 * i, f[i]);
	return b;
}

/* The 37 bytes @policy's check at T0 writes, into @b. */
static void written(const char *policy, char *b)
{
	static const char hex[] =
		"local v = redis.call('GET', KEYS[1]) "
		"return (string.gsub(v, '.', function(c) "
		"return string.format('%02x', c:byte()) end))";
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_clock *c;
	char spec[192], key[64], out[2 * WIN_LEN + 1];
	size_t klen = state_key(policy, -1, key);
	unsigned int x;
	int i;

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	snprintf(spec, sizeof(spec), "%s?key_prefix=t:&server_time=0",
		 kit.spec);
	assert_rc(tk_limiter_open(&l, policy, redis_kit_slow(spec), &o), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(redis_kit_cmd(&kit, out, sizeof(out), "EVAL %s 1 t:%b",
				       hex, key, klen),
			 0);
	assert_int_equal(strlen(out), 2 * WIN_LEN);
	for (i = 0; i < WIN_LEN; i++) {
		assert_int_equal(sscanf(out + 2 * i, "%2x", &x), 1);
		b[i] = (char)x;
	}
	assert_rc(tk_limiter_reset(l, "k", 1), 0);
	tk_limiter_close(l);
	tk_clock_free(c);
}

static void test_window_binary(void **state)
{
	const char *fw = "fixed-window:5/10s";
	/* Well formed: now's window of fw, one unit counted. */
	const uint64_t ok[4] = { 10 * SEC, T0, T0 + 10 * SEC, 1 };
	const uint64_t bad[][4] = {
		{ 20 * SEC, T0, T0 + 20 * SEC, 1 }, /* another width */
		{ 10 * SEC, T0, T0 + 20 * SEC, 1 }, /* END - START */
		{ 10 * SEC, T0, T0, 1 },	    /* an empty window */
		{ 10 * SEC, UINT64_C(1) << 63,	    /* at 2^63 */
		  (UINT64_C(1) << 63) + 10 * SEC, 1 },
	};
	/* Past any count, in now's window: on the client's clock (a past
	 * window's count is not read, and the state is written anew). */
	const uint64_t many[4] = { 10 * SEC, T0, T0 + 10 * SEC,
				   (UINT64_C(1) << 62) + 1 };
	char v[WIN_LEN + 1];
	size_t i;
	int f;

	(void)state;
	hostile_kit_need(&kit);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_hostile_bytes(fw, -1, win(v, 0x83, bad[i]), WIN_LEN);
	hostile_with(fw, -1, win(v, 0x83, many), WIN_LEN, "&server_time=0",
		     -EPROTO);
	/* Another algorithm's mark: a quota's, a GCRA's, none. */
	assert_hostile_bytes(fw, -1, win(v, 0x86, ok), WIN_LEN);
	assert_hostile_bytes(fw, -1, win(v, 0x81, ok), WIN_LEN);
	assert_hostile_bytes(fw, -1, win(v, 0x80, ok), WIN_LEN);
	assert_hostile_bytes("quota:5/day", -1, win(v, 0x83, ok), WIN_LEN);
	/* A byte short, a byte over. */
	assert_hostile_bytes(fw, -1, win(v, 0x83, ok), WIN_LEN - 1);
	v[WIN_LEN] = 0;
	assert_hostile_bytes(fw, -1, win(v, 0x83, ok), WIN_LEN + 1);
	/* Each number's lo at 10^9 or more, and past 2^64. */
	for (f = 0; f < 4; f++) {
		win(v, 0x83, ok);
		memset(v + 6 + 9 * f, 0xff, 4);
		assert_hostile_bytes(fw, -1, v, WIN_LEN);
		win(v, 0x83, ok);
		memset(v + 1 + 9 * f, 0xff, 5);
		assert_hostile_bytes(fw, -1, v, WIN_LEN);
	}
	/* A quota's own state, its count past what its packed word holds. */
	written("quota:5/day", v);
	put_pair(v + 28, UINT64_C(1) << 24);
	hostile_with("quota:5/day", -1, v, WIN_LEN, "&server_time=0",
		     -EPROTO);
	/* A window under a one-word policy, and in a composite. */
	assert_hostile_bytes("gcra:5/s", -1, win(v, 0x83, ok), WIN_LEN);
	assert_hostile_bytes("all(gcra:5/s,fixed-window:5/10s)", 1,
			     win(v, 0x83, bad[0]), WIN_LEN);
	/* A one-word state under a window. */
	assert_hostile_bytes(fw, -1, "\x81\x00\x65\x53\xf1\x00\x00\x00\x00\x07",
			     10);
}

/* The state of key "k" under @policy, a binary window, rewritten as the
 * text "ALG:POLICY:START:END:COUNT" of earlier versions; the length of
 * the binary state (0: none). */
static long long window_to_text(const char *policy)
{
	static const char script[] =
		"local v = redis.call('GET', KEYS[1]) "
		"if not v or #v ~= 37 then return 0 end "
		"local f = { struct.unpack('>BI5I4I5I4I5I4I5I4', v) } "
		"local t = { tostring(f[1] - 128) } "
		"for i = 2, 8, 2 do t[#t + 1] = f[i] == 0 and tostring(f[i + "
		"1]) "
		"or string.format('%d%09d', f[i], f[i + 1]) end "
		"redis.call('SET', KEYS[1], table.concat(t, ':'), 'KEEPTTL') "
		"return #v";

	return eval_on(policy, script);
}

/*
 * A window an earlier version wrote as text is read exactly: checks
 * across its windows decide as the memory store's, the state turned back
 * into text after every write but the last, and the last check that
 * admits writes it in 37 bytes.
 */
static void test_window_text(void **state)
{
	static const char *const policies[] = { "fixed-window:3/1s",
						"quota:3/1h" };
	static const unsigned int marks[] = { 0x83, 0x86 };
	/* ns between checks: filled, refused, the next window, and back. */
	static const uint64_t steps[] = {
		1, 0, 0, 0, 400 * MS, 600 * MS, 0, 0, 3600 * SEC, 0, 1,
	};
	const size_t nsteps = sizeof(steps) / sizeof(steps[0]);
	struct twin t;
	char spec[192];
	unsigned char first;
	size_t i, k;
	uint64_t now;
	int admitted = 0;

	(void)state;
	hostile_kit_need(&kit);
	snprintf(spec, sizeof(spec), "%s?key_prefix=t:&server_time=0",
		 kit.spec);
	for (i = 0; i < 2; i++) {
		twin_open(&t, policies[i], spec);
		assert_int_equal(window_to_text(policies[i]), WIN_LEN);
		for (k = 0, now = T0; k < nsteps; k++) {
			now += steps[k];
			admitted = twin_check(&t, now);
			if (k + 1 < nsteps)
				window_to_text(policies[i]);
		}
		/* The last check admitted: written again in 37 bytes. */
		assert_true(admitted);
		assert_int_equal(state_len(policies[i], &first), WIN_LEN);
		assert_int_equal(first, marks[i]);
		twin_close(&t);
	}
}

/*
 * The client's decoder (lib/redis/scripts.c), alone: the 37 bytes decode
 * as the text of the same state, and a pair out of range, another mark
 * or another length do not (the script refuses them first on a server).
 */
static void test_decode(void **state)
{
	const uint64_t ok[4] = { 10 * SEC, T0, T0 + 10 * SEC, 3 };
	const char *text = "3:10000000000:1700000000000000000:"
			   "1700000010000000000:3";
	struct tk_policy *pol;
	const struct tk__policy *p;
	uint64_t w[2][TK__STATE_WORDS_MAX];
	char v[WIN_LEN + 1];
	int f;

	(void)state;
	assert_rc(tk__policy_parse(&pol, "fixed-window:5/10s", NULL), 0);
	p = &pol->dim[0];
	assert_rc(tk__redis_decode(p, text, strlen(text), w[0], p->state_words),
		  0);
	assert_rc(tk__redis_decode(p, win(v, 0x83, ok), WIN_LEN, w[1],
				   p->state_words),
		  0);
	assert_memory_equal(w[0], w[1], p->state_words * sizeof(w[0][0]));
	for (f = 0; f < 4; f++) {
		win(v, 0x83, ok);
		memset(v + 6 + 9 * f, 0xff, 4);
		assert_rc(tk__redis_decode(p, v, WIN_LEN, w[1], p->state_words),
			  -EPROTO);
		win(v, 0x83, ok);
		memset(v + 1 + 9 * f, 0xff, 5);
		assert_rc(tk__redis_decode(p, v, WIN_LEN, w[1], p->state_words),
			  -EPROTO);
	}
	/* T0 as (T0 / 10^9 - 1) * 10^9 + 10^9: the same number, not a pair. */
	win(v, 0x83, ok);
	put_halves(v + 10, T0 / SEC - 1, SEC);
	assert_rc(tk__redis_decode(p, v, WIN_LEN, w[1], p->state_words),
		  -EPROTO);
	assert_rc(tk__redis_decode(p, win(v, 0x86, ok), WIN_LEN, w[1],
				   p->state_words),
		  -EPROTO);
	assert_rc(tk__redis_decode(p, win(v, 0x83, ok), WIN_LEN - 1, w[1],
				   p->state_words),
		  -EPROTO);
	tk_policy_free(pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_window_binary),
		cmocka_unit_test(test_window_text),
	};

	return cmocka_run_group_tests(tests, NULL, stop_server);
}
