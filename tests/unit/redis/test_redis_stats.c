/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_stats.c - tk_store_stats() of a Redis store on a real
 * redis-server (tests/kit/redis-kit.c): exact counts after a known
 * sequence of checks, a restart, an outage, a paused server and a full
 * one; and a cluster's slot map reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

static struct redis_kit kit, nodes[3];
static char cluster_spec[160];
static int cluster_up;

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void stats_of(struct tk_limiter *l, struct tk_stats *st)
{
	assert_int_equal(tk_limiter_stats(l, st, sizeof(*st)), 0);
}

/* What a stats snapshot should hold, field by field. */
struct want {
	uint64_t checks, denies, trips, connects, reconnects, open;
	uint64_t timeouts, conn_errors, redirects, error_replies;
};

static void assert_stats(struct tk_limiter *l, const struct want *w)
{
	struct tk_stats st;

	stats_of(l, &st);
	assert_int_equal(st.checks, w->checks);
	assert_int_equal(st.denies, w->denies);
	assert_int_equal(st.redis_round_trips, w->trips);
	assert_int_equal(st.redis_connects, w->connects);
	assert_int_equal(st.redis_reconnects, w->reconnects);
	assert_int_equal(st.redis_connections, w->open);
	assert_int_equal(st.redis_timeouts, w->timeouts);
	assert_int_equal(st.redis_conn_errors, w->conn_errors);
	assert_int_equal(st.redis_redirects, w->redirects);
	assert_int_equal(st.redis_error_replies, w->error_replies);
	assert_int_equal(st.redis_refreshes, 0);
}

static int check(struct tk_limiter *l, int *allowed)
{
	struct tk_decision d;
	int rc = tk_limiter_check(l, "k", 1, 1, &d);

	*allowed = rc == 0 && d.allowed;
	return rc;
}

/*
 * One server: every counter after each step of a known sequence.  The
 * first check is three round trips (FCALL, "Function not found",
 * FUNCTION LOAD, FCALL again); a restart closes the connection, which
 * the next check replaces (a reconnect, no error) and loads the script
 * again on; a stopped server refuses one connect; CLIENT PAUSE makes one
 * reply late (a timeout, the connection dropped); a full server answers
 * OOM (an error reply).
 */
static void test_counts(void **state)
{
	struct want w = { 0 };
	struct tk_limiter *l;
	char spec[256];
	int i, allowed;

	(void)state;
	kit.extra[0] = "--maxmemory-policy";
	kit.extra[1] = "noeviction";
	redis_kit_need(&kit);
	snprintf(spec, sizeof(spec), "%s?timeout=300ms&connect_timeout=5s",
		 kit.spec);
	assert_int_equal(tk_limiter_open(&l, "gcra:3/1h", spec, NULL), 0);
	assert_stats(l, &w); /* opening connects nothing */

	assert_int_equal(check(l, &allowed), 0);
	w.checks = 1, w.trips = 3, w.connects = 1, w.open = 1;
	assert_stats(l, &w);
	for (i = 0; i < 4; i++)
		assert_int_equal(check(l, &allowed), 0);
	w.checks = 5, w.denies = 2, w.trips = 7;
	assert_stats(l, &w);

	redis_kit_stop(&kit);
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	assert_int_equal(check(l, &allowed), 0);
	assert_true(allowed); /* the restart lost every state */
	w.checks = 6, w.trips = 10, w.connects = 2, w.reconnects = 1;
	assert_stats(l, &w);

	redis_kit_stop(&kit);
	assert_rc(check(l, &allowed), -ECONNREFUSED);
	w.conn_errors = 1, w.open = 0;
	assert_stats(l, &w);
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	pause_ms(1100); /* past the connect backoff's cap */
	assert_int_equal(check(l, &allowed), 0);
	w.checks = 7, w.trips = 13, w.connects = 3, w.reconnects = 2;
	w.open = 1;
	assert_stats(l, &w);

	assert_true(redis_kit_cmd(&kit, NULL, 0, "CLIENT PAUSE 1500 ALL") >= 0);
	assert_rc(check(l, &allowed), -ETIMEDOUT);
	w.trips = 14, w.timeouts = 1, w.open = 0;
	assert_stats(l, &w);
	pause_ms(1600);

	assert_true(redis_kit_cmd(&kit, NULL, 0, "CONFIG SET maxmemory 1") >=
		    0);
	assert_rc(check(l, &allowed), -ENOMEM);
	w.trips = 15, w.connects = 4, w.reconnects = 3, w.open = 1;
	w.error_replies = 1;
	assert_stats(l, &w);
	assert_true(redis_kit_cmd(&kit, NULL, 0, "CONFIG SET maxmemory 0") >=
		    0);
	tk_limiter_close(l);
}

/* A cluster reads its slot map on its first check, and counts no
 * redirect while the map is right. */
static void test_cluster_refreshes(void **state)
{
	struct tk_limiter *l;
	struct tk_stats st;
	char spec[256];
	int i, allowed;

	(void)state;
	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
	snprintf(spec, sizeof(spec), "%s?timeout=5s&connect_timeout=5s",
		 cluster_spec);
	assert_int_equal(tk_limiter_open(&l, "gcra:3/1h", spec, NULL), 0);
	stats_of(l, &st);
	assert_int_equal(st.redis_refreshes, 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(check(l, &allowed), 0);
	stats_of(l, &st);
	assert_int_equal(st.redis_refreshes, 1);
	assert_int_equal(st.redis_redirects, 0);
	assert_int_equal(st.checks, 5);
	assert_int_equal(st.denies, 2);
	assert_int_equal(st.redis_connections, st.redis_connects);
	tk_limiter_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_cluster_refreshes),
	};

	/* The kit stops its servers at exit. */
	return cmocka_run_group_tests_name("redis stats", tests, NULL, NULL);
}
