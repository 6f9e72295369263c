/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_ttl.c - every state the Redis store writes carries a TTL:
 * its expiry plus the grace, so Redis memory stays bounded by the live
 * keys.  For a policy of every algorithm (gcra, token-bucket, leaky,
 * fixed-window, sliding-window, sliding-log, calendar and anchored quotas),
 * user strategies and composites, checked on keys until they deny, every
 * key on the server (SCAN; on a 3-master cluster, SCAN of each master) has
 * a PTTL with
 *
 *	grace - slack < PTTL <= longest expiry + grace (ms, rounded up),
 *
 * the longest expiry (from now) being what the policy allows: B × T for
 * gcra, C × T for a token bucket, max-queue + T for leaky, the window
 * for fixed windows and logs, the window and one bucket for sliding
 * windows, the longest calendar period for quotas, the TTL a user
 * strategy gives (strategy-kit.h).  The slack covers the real time
 * between the check and the PTTL.  The limiter runs on a manual
 * clock: the script decides at the limiter's time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "strategy-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)
#define GRACE (10 * SEC)
/* Real time a check and its PTTL may be apart on a loaded machine. */
#define SLACK_MS 5000
#define KEYS 24
#define DAY (86400 * SEC)
/* Generous timeouts: a loaded machine is no store failure here.  The
 * limiter's manual clock decides (server_time=0): on the server's clock a
 * loaded machine could refill a short policy between its checks. */
#define SLOW "?timeout=5s&connect_timeout=5s&server_time=0"

static const struct {
	const char *policy;
	uint64_t longest; /* ns: the latest expiry a state may have, from now */
	unsigned int checks; /* per key: enough to be denied */
} cases[] = {
	{ "gcra:10/s,burst=5", 5 * 100 * MS, 6 },
	{ "token-bucket:capacity=4,refill=2/s", 4 * 500 * MS, 5 },
	{ "leaky:10/s,max-queue=1s", 1 * SEC + 100 * MS, 12 },
	{ "fixed-window:5/10s", 10 * SEC, 6 },
	{ "sliding-window:10/10s,buckets=5", 10 * SEC + 2 * SEC, 11 },
	{ "sliding-log:5/3s", 3 * SEC, 6 },
	{ "quota:3/day,offset=+09:00", DAY, 4 },
	{ "quota:3/week,week-start=sun", 7 * DAY, 4 },
	{ "quota:3/month", 31 * DAY, 4 },
	{ "quota:4/10s,anchor=1699999999000000000", 10 * SEC, 5 },
	{ "all(gcra:5/s,sliding-log:3/2s)", 2 * SEC, 4 },
	{ "any(quota:2/week,fixed-window:3/1h)", 7 * DAY, 6 },
	/* User strategies (strategy-kit.h): a transaction's writes, and
	 * the sliding states it writes beside them as the script would. */
	{ "kit-win:3", STRATEGY_KIT_WIN, 4 },
	{ "all(kit-set:2,sliding-log:3/2s)", 2 * SEC, 4 },
	{ "all(kit-win:9,sliding-window:3/2s,buckets=2)", 2 * SEC + SEC, 4 },
};

static struct redis_kit kit, nodes[3];
static char cluster_spec[160];
static int cluster_up;

static int teardown(void **state)
{
	int i;

	(void)state;
	redis_kit_destroy(&kit);
	for (i = 0; i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return 0;
}

/*
 * Every key on the server @k: a PTTL within the bounds (ms); the number
 * of keys.
 */
static unsigned int scan_node(const struct redis_kit *k, long long lo,
			      long long hi, const char *policy)
{
	struct timeval tv = { 2, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", k->port, tv);
	redisReply *r, *p;
	char cursor[32] = "0";
	unsigned int n = 0;
	size_t i;

	assert_true(c && !c->err);
	do {
		r = redisCommand(c, "SCAN %s COUNT 1000", cursor);
		assert_true(r && r->type == REDIS_REPLY_ARRAY &&
			    r->elements == 2);
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		for (i = 0; i < r->element[1]->elements; i++) {
			p = redisCommand(c, "PTTL %b",
					 r->element[1]->element[i]->str,
					 r->element[1]->element[i]->len);
			assert_true(p && p->type == REDIS_REPLY_INTEGER);
			if (p->integer <= lo || p->integer > hi)
				fail_msg("%s: key %s on :%d has PTTL %lld, "
					 "want (%lld, %lld]",
					 policy, r->element[1]->element[i]->str,
					 k->port, p->integer, lo, hi);
			freeReplyObject(p);
			n++;
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	redisFree(c);
	return n;
}

/* Every case on the store @spec, whose servers are @servers[0..n). */
static void run_cases(const char *spec, struct redis_kit *servers, int n)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_clock *c;
	unsigned int i, k, j, keys, holding;
	char key[16];
	long long lo, hi;
	int s;

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.reclaim_grace = GRACE;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (s = 0; s < n; s++)
			assert_int_equal(
				redis_kit_cmd(&servers[s], NULL, 0, "FLUSHALL"),
				0);
		assert_rc(tk_limiter_open(&l, cases[i].policy, spec, &o), 0);
		for (k = 0; k < KEYS; k++) {
			snprintf(key, sizeof(key), "k%u", k);
			for (j = 0; j < cases[i].checks; j++)
				assert_rc(tk_limiter_check(l, key, strlen(key),
							   1, &d),
					  0);
			/* Enough checks to reach the limit. */
			assert_false(d.allowed);
		}
		tk_limiter_close(l);
		lo = (long long)(GRACE / MS) - SLACK_MS;
		hi = (long long)((cases[i].longest + GRACE) / MS) + 1;
		keys = 0;
		holding = 0;
		for (s = 0; s < n; s++) {
			j = scan_node(&servers[s], lo, hi, cases[i].policy);
			keys += j;
			holding += j > 0;
		}
		/* One state per key and dimension. */
		assert_true(keys >= KEYS);
		if (n > 1 && holding < 2)
			fail_msg("%s: keys on %u master(s) only",
				 cases[i].policy, holding);
	}
	tk_clock_free(c);
}

static void test_server(void **state)
{
	char spec[256];

	(void)state;
	if (!redis_kit_available())
		skip();
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	snprintf(spec, sizeof(spec), "%s" SLOW, kit.spec);
	run_cases(spec, &kit, 1);
}

static void test_cluster(void **state)
{
	char spec[256];

	(void)state;
	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
	snprintf(spec, sizeof(spec), "%s" SLOW, cluster_spec);
	run_cases(spec, nodes, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_cluster),
	};

	if (strategy_kit_register() != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, teardown);
}
