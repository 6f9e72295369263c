/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_server_time.c - server_time=1 on the Redis store: one round
 * trip per check, also for the policies whose script arguments need the
 * time (fixed windows, quotas, sliding windows, composites of them) and
 * for peeks, and decisions exactly those at the server's TIME.
 *
 * Against a real redis-server (tests/kit/redis-kit.c) behind a relay that
 * counts round trips (tests/kit/turn-proxy.c).  The server runs on this
 * host, so its TIME is this host's CLOCK_REALTIME (to the microsecond),
 * which the tests read around each check.
 *
 * What it proves: once the store has seen the server's clock, a check of
 * each of those policies and a peek cost one round trip; across many
 * window edges every decision lies in the window of a time the server
 * could have read, and each window admits exactly its limit; a limiter
 * clock far off the server's (a wrong estimate) costs a second round
 * trip and still decides in the server's window.  Skipped without
 * redis-server.
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
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "strategy-kit.h"
#include "turn-proxy.h"

#define HOUR (3600 * SEC)
#define CHECKS_MAX 32768

static struct redis_kit kit;
static struct turn_proxy *proxy;
static struct redis_kit nodes[3];
static char cluster_spec[256];
static int cluster_up;

static int group_setup(void **state)
{
	(void)state;
	if (strategy_kit_register() != 0)
		return -1;
	if (!redis_kit_available())
		return 0;
	if (turn_proxy_redis(&kit, NULL, &proxy) != 0)
		return -1;
	if (redis_cluster_available() &&
	    redis_cluster_start(nodes, cluster_spec, sizeof(cluster_spec)) == 0)
		cluster_up = 1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (proxy)
		turn_proxy_stop(proxy);
	redis_kit_destroy(&kit);
	for (int i = 0; cluster_up && i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return 0;
}

static void need_server(void)
{
	if (!kit.pid)
		skip();
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* Out of the last and first 3 s of an hour (every span below starts on
 * an hour), so that a test of one round trip meets no window's edge. */
static void away_from_hour_edges(void)
{
	uint64_t in = realtime_ns() % HOUR;

	if (in < 3 * SEC)
		usleep((useconds_t)((3 * SEC - in) / 1000 + 1000));
	else if (in > HOUR - 3 * SEC)
		usleep((useconds_t)((HOUR - in) / 1000 + 3000000));
}

/* A limiter on the relay, its keys under @prefix; @c: a manual clock
 * (*c set), or NULL for the system clock. */
static struct tk_limiter *open_limiter(const char *policy, const char *prefix,
				       struct tk_clock **c, uint64_t start)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	char spec[256];

	if (c) {
		assert_rc(tk_clock_manual_new(c, start), 0);
		o.clock = *c;
	}
	o.flags = TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec),
		 "redis://127.0.0.1:%d?key_prefix=%s&server_time=1&timeout=5s",
		 turn_proxy_port(proxy), prefix);
	assert_rc(tk_limiter_open(&l, policy, spec, &o), 0);
	return l;
}

static const char *const one_trip[] = {
	"fixed-window:5/1h",
	"sliding-window:5/1d,buckets=2",
	"quota:5/day",
	"quota:5/1h,anchor=3600000000000",
	"all(gcra:5/1h,fixed-window:5/1h,quota:5/day)",
	"any(fixed-window:5/1h,sliding-window:5/2h,buckets=2)",
};

/*
 * (a) Each policy whose arguments need the time: after a first check
 * (which reads TIME first: the store knows no clock yet), a check is one
 * round trip, and so is a peek; the counts go on as the limit says.
 */
static void test_one_round_trip(void **state)
{
	struct tk_decision d;
	struct tk_limiter *l;
	char prefix[16];
	size_t i;
	int k;

	(void)state;
	need_server();
	for (i = 0; i < sizeof(one_trip) / sizeof(one_trip[0]); i++) {
		snprintf(prefix, sizeof(prefix), "a%zu:", i);
		l = open_limiter(one_trip[i], prefix, NULL, 0);
		away_from_hour_edges();
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		for (k = 2; k <= 6; k++) {
			turn_proxy_reset(proxy);
			assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
			if (turn_proxy_turns(proxy) != 1)
				fail_msg("%s: check %d took %lu round trips",
					 one_trip[i], k,
					 turn_proxy_turns(proxy));
			assert_int_equal(d.allowed, k <= 5);
		}
		turn_proxy_reset(proxy);
		assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
		assert_int_equal(turn_proxy_turns(proxy), 1);
		assert_false(d.allowed);
		assert_true(d.reset_at > realtime_ns());
		tk_limiter_close(l);
	}
}

/*
 * (b) Many checks over many edges of a 200 ms window: each decision lies
 * in the window of a time between the clock readings around it (the
 * server's TIME is one of them), windows follow one another in order,
 * every window admits exactly its first L checks, and only edges cost a
 * second round trip.
 */
static void window_edges(const char *policy, const char *prefix, uint64_t w,
			 uint64_t limit)
{
	static uint64_t before[CHECKS_MAX], after[CHECKS_MAX];
	static struct tk_decision d[CHECKS_MAX];
	struct tk_limiter *l;
	uint64_t start, admitted, end, seen;
	size_t n = 0, i, windows = 0;

	l = open_limiter(policy, prefix, NULL, 0);
	assert_rc(tk_limiter_check(l, "warm", 4, 1, &d[0]), 0);
	turn_proxy_reset(proxy);
	start = realtime_ns();
	while (n < CHECKS_MAX && realtime_ns() - start < 6 * w) {
		before[n] = realtime_ns() / 1000 * 1000;
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d[n]), 0);
		after[n] = realtime_ns();
		n++;
	}
	assert_true(n > 20);
	for (i = 0; i < n; i++) {
		/* The window [reset_at - w, reset_at) holds a time read. */
		if (d[i].reset_at <= before[i] || d[i].reset_at - w > after[i])
			fail_msg("check %zu at [%llu, %llu] decided in the "
				 "window ending %llu",
				 i, (unsigned long long)before[i],
				 (unsigned long long)after[i],
				 (unsigned long long)d[i].reset_at);
		if (i)
			assert_true(d[i].reset_at >= d[i - 1].reset_at);
	}
	for (i = 0; i < n; windows++) {
		end = d[i].reset_at;
		for (seen = 0, admitted = 0; i < n && d[i].reset_at == end;
		     i++, seen++)
			admitted += d[i].allowed;
		/* Each window counts from 0 ("k" is new): its first L. */
		assert_int_equal(admitted, seen < limit ? seen : limit);
	}
	assert_true(windows >= 3);
	/* One round trip a check, two where a check met an edge. */
	if (turn_proxy_turns(proxy) < n ||
	    turn_proxy_turns(proxy) > n + 2 * windows)
		fail_msg("%zu checks over %zu windows: %lu round trips", n,
			 windows, turn_proxy_turns(proxy));
	tk_limiter_close(l);
}

static void test_window_edges(void **state)
{
	(void)state;
	need_server();
	window_edges("fixed-window:4/200ms", "b1:", 200 * 1000000, 4);
	window_edges("quota:4/200ms,anchor=50000000", "b2:", 200 * 1000000, 4);
}

/* A sliding window's ticks of 50 ms: every decision is the script's and
 * the algorithm's at the same time (or the check fails -EPROTO). */
static void test_sliding_ticks(void **state)
{
	struct tk_decision d;
	struct tk_limiter *l;
	uint64_t start;
	unsigned long n = 0, admitted = 0;

	(void)state;
	need_server();
	l = open_limiter("sliding-window:20/200ms,buckets=4", "s:", NULL, 0);
	assert_rc(tk_limiter_check(l, "warm", 4, 1, &d), 0);
	turn_proxy_reset(proxy);
	start = realtime_ns();
	while (realtime_ns() - start < 1200 * 1000000) {
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		admitted += d.allowed;
		n++;
	}
	/* 1.2 s of a 20/200ms limit: never more than 140; the first 20. */
	assert_true(admitted >= (n < 20 ? n : 20) && admitted <= 140);
	assert_true(turn_proxy_turns(proxy) <= n + 2 * (1200 / 50 + 2));
	tk_limiter_close(l);
}

/*
 * (c) The limiter's clock jumps after the store learned the server's:
 * the arguments computed at the estimate are another window's, so the
 * script answers its TIME and the check goes again at it: two round
 * trips, the server's window counted; the next check is one again.
 */
static void test_wrong_estimate(void **state)
{
	static const char *const policy[] = {
		"fixed-window:3/1h",
		"quota:3/day",
		"sliding-window:3/1d,buckets=2",
		"all(gcra:9/1h,fixed-window:3/1h)",
	};
	/* Each at least a day: out of every window and tick above. */
	static const int64_t jumps[] = { 2 * 86400, -3 * 86400, 86400, -86400 };
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_clock *c;
	uint64_t t0 = UINT64_C(1000000000) * SEC, end;
	char prefix[16];
	size_t i, k;

	(void)state;
	need_server();
	for (i = 0; i < sizeof(policy) / sizeof(policy[0]); i++) {
		snprintf(prefix, sizeof(prefix), "c%zu:", i);
		l = open_limiter(policy[i], prefix, &c, t0);
		away_from_hour_edges();
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		turn_proxy_reset(proxy);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_int_equal(turn_proxy_turns(proxy), 1);
		assert_true(d.allowed);
		for (k = 0; k < sizeof(jumps) / sizeof(jumps[0]); k++) {
			assert_rc(
				tk_clock_set(c, t0 + (uint64_t)(jumps[k] *
								(int64_t)SEC)),
				0);
			turn_proxy_reset(proxy);
			assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
			if (turn_proxy_turns(proxy) != 2)
				fail_msg(
					"%s, a jump of %lld s: %lu round trips",
					policy[i], (long long)jumps[k],
					turn_proxy_turns(proxy));
			/* The server's window: its third unit, then none. */
			assert_int_equal(d.allowed, k == 0);
			if (i == 0) {
				end = (realtime_ns() / HOUR + 1) * HOUR;
				assert_true(d.reset_at == end);
			}
			turn_proxy_reset(proxy);
			assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
			assert_int_equal(turn_proxy_turns(proxy), 1);
			assert_false(d.allowed);
			/* A peek reads TIME with the states, whatever the
			 * estimate: one round trip, the server's window. */
			t0 += (uint64_t)(jumps[k] * (int64_t)SEC) +
			      7 * 86400 * SEC;
			assert_rc(tk_clock_set(c, t0), 0);
			turn_proxy_reset(proxy);
			assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
			assert_int_equal(turn_proxy_turns(proxy), 1);
			assert_false(d.allowed);
			if (i == 0)
				assert_true(d.reset_at == end);
		}
		tk_limiter_close(l);
		tk_clock_free(c);
		t0 = UINT64_C(1000000000) * SEC;
	}
}

/*
 * A user strategy runs as a transaction (occ.c), which reads the server's
 * TIME first on its connection and decides at it, however far the
 * limiter's clock is (2001 here): kit-win's window opens at that TIME, so
 * its end is TIME + STRATEGY_KIT_WIN; beside a sliding window (whose
 * state the transaction writes) no dimension decides at the limiter's
 * clock either.
 */
static void test_strategy(void **state)
{
	static const char *const policy[] = {
		"kit-win:2",
		"all(kit-win:2,sliding-window:9/1d,buckets=2)",
	};
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_clock *c;
	uint64_t before, after;
	char prefix[16];
	size_t i;

	(void)state;
	need_server();
	for (i = 0; i < sizeof(policy) / sizeof(policy[0]); i++) {
		snprintf(prefix, sizeof(prefix), "u%zu:", i);
		l = open_limiter(policy[i], prefix, &c,
				 UINT64_C(1000000000) * SEC);
		before = realtime_ns();
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		after = realtime_ns();
		assert_true(d.allowed);
		if (d.reset_at < before ||
		    (i == 0 && (d.reset_at < before + STRATEGY_KIT_WIN ||
				d.reset_at > after + STRATEGY_KIT_WIN)))
			fail_msg("%s: reset at %llu, checked in [%llu, %llu]",
				 policy[i], (unsigned long long)d.reset_at,
				 (unsigned long long)before,
				 (unsigned long long)after);
		tk_limiter_close(l);
		tk_clock_free(c);
	}
}

/*
 * A sliding window decides at the server's TIME to the nanosecond also
 * when the estimate lies elsewhere in the same tick: the script takes
 * the offset in the tick from TIME, not from the arguments.  The state
 * holds 2 units in the bucket of tick c - 2 (w = 1 h, L = 2), which
 * counts for (w - e) / w of them: one more unit passes iff e >= w / 2.
 * The estimate is put on the other side of w / 2 than TIME.  One
 * round trip: fast.lua reads TIME and the ring.
 */
static void test_sliding_offset(void **state)
{
	const uint64_t w = HOUR, t0 = UINT64_C(1000000000) * SEC;
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_clock *c;
	uint64_t now, e, tick, there;
	char value[28 + 16 * 3];
	size_t at;
	int i;

	(void)state;
	need_server();
	for (;;) {
		now = realtime_ns();
		e = now % w;
		/* 5 s from an edge of the tick or its middle, at least. */
		if (e > 5 * SEC && e < w - 5 * SEC &&
		    (e > w / 2 + 5 * SEC || e < w / 2 - 5 * SEC))
			break;
		sleep(6);
	}
	tick = now / w;
	there = e >= w / 2 ? w / 4 : 3 * w / 4;
	l = open_limiter("sliding-window:2/2h,buckets=2", "o:", &c, t0);
	/* The store learns the server's clock against t0. */
	assert_rc(tk_limiter_check(l, "warm", 4, 1, &d), 0);
	/* As check.lua writes it: {132, S 2, w 3600 s}, {X 0, H c - 2, T
	 * 2}, then bucket (c - 2) mod 3 {c - 2, 2}; ticks below 10^9. */
	memset(value, 0, sizeof(value));
	value[0] = (char)132;
	value[1] = 2;
	value[5] = 3600 >> 8;
	value[6] = 3600 & 0xff;
	for (i = 0; i < 4; i++)
		value[20 - i] = (char)((tick - 2) >> (8 * i));
	value[27] = 2;
	at = 28 + 16 * (size_t)((tick - 2) % 3);
	memcpy(value + at, value + 12, 9);
	value[at + 15] = 2;
	/* The key: the prefix, then "{", the limiter's key (its prefix's
	 * length in two bytes with the tag's flag, no prefix, the tag:
	 * length, algorithm 4, 2 buckets of 1 h, then "k"), "}". */
	assert_true(redis_kit_cmd(&kit, NULL, 0, "SET %b %b",
				  "o:{\x40\0\x0a\x04\x02"
				  "\0\0\x03\x46\x30\xb8\xa0\0k}",
				  (size_t)18, value,
				  (size_t)(28 + 16 * 3)) >= 0);
	/* The estimate: in TIME's tick, on the other side of its middle. */
	assert_rc(tk_clock_set(c, t0 + (realtime_ns() - now) + there - e), 0);
	turn_proxy_reset(proxy);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(turn_proxy_turns(proxy), 1);
	assert_int_equal(d.allowed, e >= w / 2);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/*
 * (d) A batch (tk_limiter_check_many()) of keys that differ: one round
 * trip once the estimate is known; after the limiter's clock jumped, the
 * requests go again at the server's TIME in a second pipeline (two), and
 * count in the server's window.
 */
static void test_batch(void **state)
{
	static const char *const keys[6] = { "a", "b", "c", "d", "e", "f" };
	const uint64_t t0 = UINT64_C(1000000000) * SEC;
	struct tk_request r[6];
	struct tk_decision d[6];
	struct tk_limiter *l;
	struct tk_clock *c;
	int rcs[6], i, round;
	uint64_t end;

	(void)state;
	need_server();
	for (i = 0; i < 6; i++)
		r[i] = (struct tk_request){ keys[i], 1, 1 };
	l = open_limiter("fixed-window:2/1h", "m:", &c, t0);
	away_from_hour_edges();
	assert_rc(tk_limiter_check(l, "warm", 4, 1, d), 0);
	for (round = 0; round < 3; round++) {
		if (round == 2)
			assert_rc(tk_clock_set(c, t0 + 86400 * SEC), 0);
		turn_proxy_reset(proxy);
		assert_rc(tk_limiter_check_many(l, r, 6, d, rcs), 0);
		if (turn_proxy_turns(proxy) != (round == 2 ? 2u : 1u))
			fail_msg("batch %d: %lu round trips", round,
				 turn_proxy_turns(proxy));
		end = (realtime_ns() / HOUR + 1) * HOUR;
		for (i = 0; i < 6; i++) {
			assert_rc(rcs[i], 0);
			assert_int_equal(d[i].allowed, round < 2);
			assert_true(d[i].reset_at == end);
		}
	}
	tk_limiter_close(l);
	tk_clock_free(c);
}

/*
 * (d) A group over keys of two slots of a cluster (one script per slot):
 * the first slot's script decides at its TIME from arguments computed at
 * the estimate, the second at the time the first decided at; after the
 * limiter's clock jumped, still in the server's window.
 */
static void test_cluster_group(void **state)
{
	const uint64_t t0 = UINT64_C(1000000000) * SEC;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l[2];
	struct tk_store *st;
	struct tk_clock *c;
	struct tk_decision d;
	struct tk_key keys[2] = { { "a", 1 }, { "b", 1 } };
	char spec[320];
	int i, k;

	(void)state;
	if (!cluster_up)
		skip();
	snprintf(spec, sizeof(spec),
		 "%s?key_prefix=g%ld:&server_time=1&timeout=5s", cluster_spec,
		 (long)getpid());
	assert_rc(tk_clock_manual_new(&c, t0), 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_store_open(&st, spec, &o), 0);
	o.store = st;
	assert_rc(tk_limiter_open(&l[0], "fixed-window:9/1h", NULL, &o), 0);
	assert_rc(tk_limiter_open(&l[1], "quota:3/day", NULL, &o), 0);
	away_from_hour_edges();
	for (k = 0; k < 5; k++) {
		/* Checks 2 and 4 at a clock a day off the estimate. */
		if (k == 2 || k == 4)
			assert_rc(tk_clock_advance(c, 86400 * SEC), 0);
		assert_rc(tk_limiter_check_group(l, keys, 2, 1, &d, NULL, 0),
			  0);
		assert_int_equal(d.allowed, k < 3);
	}
	for (i = 0; i < 2; i++)
		tk_limiter_close(l[i]);
	tk_store_close(st);
	tk_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_round_trip),
		cmocka_unit_test(test_window_edges),
		cmocka_unit_test(test_sliding_ticks),
		cmocka_unit_test(test_wrong_estimate),
		cmocka_unit_test(test_sliding_offset),
		cmocka_unit_test(test_strategy),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_cluster_group),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
