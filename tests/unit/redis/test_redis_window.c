/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_window.c - the sliding window's binary state on a real
 * redis-server (lib/redis/check.lua, SWH, SWT and REC): decisions the
 * memory store's bit for bit through clocks that step back by more than
 * the window (the script's X 1 path) and long idle spans; the text
 * of earlier versions read exactly and written again in binary; corrupt
 * binary states refused with -EPROTO.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)
#define POLICY "sliding-window:5/1s,buckets=4"

static struct redis_kit kit;

static int stop_server(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

/* Every binary sliding window under "w:" rewritten as the text
 * "4:S:w:T0:N0:...:TS:NS" of earlier versions: how many. */
static long long to_text(void)
{
	static const char script[] =
		"local function d(h, l) return h == 0 and tostring(l) or "
		"string.format('%d%09d', h, l) end "
		"local n = 0 "
		"for _, k in ipairs(redis.call('KEYS', 'w:*')) do "
		"local v = redis.call('GET', k) "
		"if string.byte(v) == 132 then "
		"local t = { '4', tostring(string.byte(v, 2)), "
		"d(struct.unpack('>I5I4', v, 3)) } "
		"for i = 29, #v, 16 do "
		"local h, l, c = struct.unpack('>I5I4I7', v, i) "
		"t[#t + 1] = d(h, l) t[#t + 1] = string.format('%d', c) end "
		"redis.call('SET', k, table.concat(t, ':'), 'KEEPTTL') "
		"n = n + 1 end end return n";

	return redis_kit_cmd(&kit, NULL, 0, "EVAL %s 0", script);
}

/* @lua run on the value V of every key under "w:", which it may replace
 * (V = nil: the key is deleted); how many. */
static long long patch(const char *lua)
{
	char script[1024];

	snprintf(script, sizeof(script),
		 "local n = 0 "
		 "for _, k in ipairs(redis.call('KEYS', 'w:*')) do "
		 "local V = redis.call('GET', k) %s "
		 "redis.call('SET', k, V) n = n + 1 end return n",
		 lua);
	return redis_kit_cmd(&kit, NULL, 0, "EVAL %s 0", script);
}

static void open_pol(struct tk_limiter *l[2], struct tk_clock *c[2],
		     const char *policy)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char spec[192];
	int m;

	redis_kit_need(&kit);
	/* Each test's keys alone under "w:" (to_text(), patch()). */
	redis_kit_cmd(&kit, NULL, 0, "FLUSHALL");
	snprintf(spec, sizeof(spec), "%s?key_prefix=w:&server_time=0",
		 kit.spec);
	for (m = 0; m < 2; m++) {
		assert_rc(tk_clock_manual_new(&c[m], T0), 0);
		o.clock = c[m];
		o.fail = TK_FAIL_ERROR;
		o.flags = TK_OPT_NO_RECLAIMER;
		assert_rc(tk_limiter_open(&l[m], policy,
					  m ? redis_kit_slow(spec) : "memory",
					  &o),
			  0);
		assert_rc(tk_limiter_reset(l[m], "k", 1), 0);
	}
}

static void open_pair(struct tk_limiter *l[2], struct tk_clock *c[2])
{
	open_pol(l, c, POLICY);
}

static void close_pair(struct tk_limiter *l[2], struct tk_clock *c[2])
{
	int m;

	for (m = 0; m < 2; m++) {
		tk_limiter_close(l[m]);
		tk_clock_free(c[m]);
	}
}

/*
 * Steps of random size, now and then back by more than the window or
 * forward by many windows, costs 1 to 3; with @text every state is turned
 * into text before the next check.  Returns how many were admitted.
 */
static int race_memory(int text, unsigned int seed)
{
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
	struct tk_decision d[2];
	uint64_t now = T0, cost;
	int k, m, admitted = 0;

	open_pair(l, c);
	for (k = 0; k < 600; k++) {
		switch (rand_r(&seed) % 16) {
		case 0: /* back by one to three windows */
			now -= (1 + rand_r(&seed) % 3) * SEC;
			break;
		case 1: /* idle for many windows */
			now += (uint64_t)(2 + rand_r(&seed) % 50) * SEC;
			break;
		default:
			now += (uint64_t)(rand_r(&seed) % 300) * MS +
			       rand_r(&seed) % 1000;
		}
		cost = 1 + rand_r(&seed) % 3;
		for (m = 0; m < 2; m++) {
			tk_clock_set(c[m], now);
			assert_rc(tk_limiter_check(l[m], "k", 1, cost, &d[m]),
				  0);
		}
		assert_same_decision(d[1], d[0]);
		admitted += d[0].allowed;
		if (text)
			to_text();
	}
	close_pair(l, c);
	return admitted;
}

/* Binary states through every path of the script's step. */
static void test_window_differential(void **state)
{
	int a = race_memory(0, 7);

	(void)state;
	/* The race decided both ways. */
	assert_true(a > 50 && a < 600);
}

/* Text of earlier versions, read exactly, written again in binary. */
static void test_window_text(void **state)
{
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
	struct tk_decision d[2];
	int m;

	(void)state;
	assert_true(race_memory(1, 11) > 50);
	open_pair(l, c);
	for (m = 0; m < 2; m++)
		assert_rc(tk_limiter_check(l[m], "k", 1, 2, &d[m]), 0);
	assert_int_equal(to_text(), 1);
	assert_int_equal(to_text(), 0);
	for (m = 0; m < 2; m++) {
		tk_clock_set(c[m], T0 + 300 * MS);
		assert_rc(tk_limiter_check(l[m], "k", 1, 3, &d[m]), 0);
	}
	assert_same_decision(d[1], d[0]);
	assert_true(d[0].allowed);
	/* Written in binary again: one to turn into text. */
	assert_int_equal(to_text(), 1);
	close_pair(l, c);
}

/*
 * The estimate at the limit exactly: 2 units in tick 0, then 1 more in
 * tick 1 fits from half of it on (1 + 2 * (w - e) / w <= 2), in both
 * stores; and a window of 2^62 ns, whose products need the limbs.
 */
static void test_window_edge(void **state)
{
	static const char *const policies[] = {
		"sliding-window:2/1s,buckets=1",
		"sliding-window:2/4611686018427387904ns,buckets=1",
	};
	static const uint64_t w[] = { SEC, UINT64_C(1) << 62 };
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
	struct tk_decision d[2];
	uint64_t at[2];
	int i, k, m;

	(void)state;
	for (i = 0; i < 2; i++) {
		at[0] = w[i] + w[i] / 2 - 1;
		at[1] = w[i] + w[i] / 2;
		open_pol(l, c, policies[i]);
		for (k = -1; k < 2; k++)
			for (m = 0; m < 2; m++) {
				tk_clock_set(c[m], k < 0 ? 0 : at[k]);
				assert_rc(tk_limiter_check(l[m], "k", 1,
							   k < 0 ? 2 : 1,
							   &d[m]),
					  0);
				assert_int_equal(d[m].allowed, k != 0);
			}
		close_pair(l, c);
	}
}

/*
 * A binary state as a check wrote it, then @lua on it: -EPROTO for a
 * batch of one (check.lua, which reads the ring whole, and the client's
 * decoder); for a single check (fast.lua, which reads the head and two
 * buckets here) too if @fast_sees, else it is decided as written.  Each
 * on a state of its own: the script of a check the client refuses may
 * have written.
 */
static void refused(const char *lua, int fast_sees)
{
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
	struct tk_decision d;
	struct tk_request req = { 0 };
	int rc, batch;

	for (batch = 0; batch < 2; batch++) {
		open_pair(l, c);
		assert_rc(tk_limiter_check(l[1], "k", 1, 1, &d), 0);
		tk_clock_set(c[1], T0 + 260 * MS);
		assert_rc(tk_limiter_check(l[1], "k", 1, 1, &d), 0);
		assert_int_equal(patch(lua), 1);
		req.key = "k";
		req.key_len = 1;
		req.cost = 1;
		if (batch)
			tk_limiter_check_many(l[1], &req, 1, &d, &rc);
		else
			rc = tk_limiter_check(l[1], "k", 1, 1, &d);
		assert_rc(rc, batch || fast_sees ? -EPROTO : 0);
		close_pair(l, c);
	}
}

/* Corrupt binary states: the client checks what the script relies on. */
static void test_window_hostile(void **state)
{
	(void)state;
	/* Written as is: the client's decoder takes it. */
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
	struct tk_decision d;

	open_pair(l, c);
	assert_rc(tk_limiter_check(l[1], "k", 1, 1, &d), 0);
	assert_int_equal(patch(""), 1);
	assert_rc(tk_limiter_check(l[1], "k", 1, 1, &d), 0);
	close_pair(l, c);
	/* A total one above the counts', one below: fast.lua trusts it. */
	refused("V = string.sub(V, 1, 27) .. string.char(string.byte(V, 28) "
		"+ 1) .. string.sub(V, 29)",
		0);
	refused("V = string.sub(V, 1, 27) .. string.char(string.byte(V, 28) "
		"- 1) .. string.sub(V, 29)",
		0);
	/* A total of 2^48 or more. */
	refused("V = string.sub(V, 1, 21) .. string.char(1) .. "
		"string.sub(V, 23)",
		1);
	/* X 0 with the high tick more than S ticks past a count. */
	refused("V = string.sub(V, 1, 20) .. string.char(string.byte(V, 21) "
		"+ 5) .. string.sub(V, 22)",
		1);
	/* X 2; a byte short; a byte more; another S; another w. */
	refused("V = string.sub(V, 1, 11) .. string.char(2) .. "
		"string.sub(V, 13)",
		1);
	refused("V = string.sub(V, 1, #V - 1)", 1);
	refused("V = V .. string.char(0)", 1);
	refused("V = string.sub(V, 1, 1) .. string.char(5) .. "
		"string.sub(V, 3)",
		1);
	refused("V = string.sub(V, 1, 10) .. string.char(string.byte(V, 11) "
		"+ 1) .. string.sub(V, 12)",
		1);
	/* A count at another tick's slot (bucket 0, which fast.lua does
	 * not read at tick 1: buckets 1 and 2). */
	refused("V = string.sub(V, 1, 36) .. string.char(string.byte(V, 37) "
		"+ 1) .. string.sub(V, 38)",
		0);
	/* A bucket fast.lua reads with a tick's low half of 10^9 or more. */
	refused("V = string.sub(V, 1, 44 + 5) .. string.char(255, 255, 255, "
		"255) .. string.sub(V, 54)",
		1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_differential),
		cmocka_unit_test(test_window_text),
		cmocka_unit_test(test_window_edge),
		cmocka_unit_test(test_window_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, stop_server);
}
