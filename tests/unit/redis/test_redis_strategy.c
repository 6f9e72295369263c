/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_strategy.c - a user strategy beside a sliding window or a
 * sliding log on the Redis store: the check runs as a transaction
 * (occ.c), which writes the sliding state as the script spells it, and
 * reads what the script wrote.
 *
 * Two limiters share the sliding dimension's key: A, with a strategy
 * (the transaction), and B, with only built-in algorithms (the script).
 * Either shares it as a composite's dimension of the same index and
 * policy, or as a group's rule checked alone too (a group keeps a rule's
 * state under its plain key).  A generated timeline of checks, peeks and
 * forecasts through A and B, in any order, on Redis and on the memory
 * store: the same decisions, field for field, with many a state written
 * by one read by the other, both ways.  On a cluster too (composites:
 * the keys of one check share a hash tag).
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

#include "asserts.h"
#include "diff-kit.h"
#include "redis-kit.h"
#include "rnd.h"
#include "strategy-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)
#define STEPS 400

static const struct {
	const char *a, *b; /* the transaction's, the script's */
	int group;	   /* a group {A, B} (else composites) */
} cases[] = {
	{ "all(sliding-window:6/1s,buckets=4,kit-win:4)",
	  "all(sliding-window:6/1s,buckets=4,gcra:100/1s)", 0 },
	{ "all(sliding-log:5/1s,kit-set:3)",
	  "all(sliding-log:5/1s,fixed-window:100/1h)", 0 },
	{ "any(sliding-log:40/2s,kit-win:3)",
	  "any(sliding-log:40/2s,leaky:1/1h,max-queue=1ms)", 0 },
	{ "all(sliding-window:50/2s,buckets=100,kit-win:30)",
	  "all(sliding-window:50/2s,buckets=100,quota:1000/day)", 0 },
	{ "kit-win:5", "sliding-window:7/1s,buckets=4", 1 },
	{ "kit-set:2", "sliding-log:6/800ms", 1 },
};

static struct redis_kit kit, nodes[3];
static char cluster_spec[160];
static int cluster_up;

static int setup(void **state)
{
	(void)state;
	return strategy_kit_register();
}

static int teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	for (int i = 0; cluster_up && i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return 0;
}

/* A store, and A and B on it. */
struct side {
	struct tk_store *s;
	struct tk_limiter *l[2];
};

static void side_open(struct side *x, const char *spec, struct tk_clock *c,
		      size_t i)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_store_open(&x->s, spec, &o), 0);
	o.store = x->s;
	assert_rc(tk_limiter_open(&x->l[0], cases[i].a, NULL, &o), 0);
	assert_rc(tk_limiter_open(&x->l[1], cases[i].b, NULL, &o), 0);
}

static void side_close(struct side *x)
{
	tk_limiter_close(x->l[0]);
	tk_limiter_close(x->l[1]);
	tk_store_close(x->s);
}

/* Operation @op through limiter @who of @x (A of a group case: the
 * group). */
static int step(const struct side *x, int group, int who, unsigned int op,
		const char *key, uint64_t cost, struct tk_decision *d)
{
	struct tk_limiter *l = x->l[who];
	struct tk_key keys[2] = { { key, strlen(key) }, { key, strlen(key) } };

	memset(d, 0, sizeof(*d));
	if (op == 0)
		return tk_limiter_peek(l, key, strlen(key), d);
	if (op == 1 && !(group && who == 0))
		return tk_limiter_forecast(l, key, strlen(key), cost, d);
	if (group && who == 0)
		return tk_limiter_check_group(x->l, keys, 2, cost, d, NULL, 0);
	return tk_limiter_check(l, key, strlen(key), cost, d);
}

/* Admissions by each limiter after the other's on a key, per case. */
static unsigned int crossed[2];

static void timeline(const char *base, size_t i, uint64_t seed0)
{
	struct side mem, red;
	struct tk_clock *c;
	struct tk_decision dm, dr;
	uint64_t seed = seed0, now = T0 + rnd_range(&seed, 0, SEC), cost;
	char spec[256], key[8], what[256];
	int k, who, rm, rr, last[2] = { -1, -1 };
	unsigned int op, n;

	assert_rc(tk_clock_manual_new(&c, now), 0);
	snprintf(spec, sizeof(spec),
		 "%s&key_prefix=s%zu.%llu:", redis_kit_manual(base), i,
		 (unsigned long long)seed0);
	side_open(&mem, "memory", c, i);
	side_open(&red, spec, c, i);
	for (k = 0; k < STEPS; k++) {
		switch (rnd_range(&seed, 0, 7)) {
		case 0: /* back, well within the grace */
			now -= rnd_range(&seed, 1, 2 * SEC);
			break;
		case 1:
			now += rnd_range(&seed, 1, 3 * SEC);
			break;
		default:
			now += rnd_range(&seed, 0, 150 * MS);
			break;
		}
		assert_rc(tk_clock_set(c, now), 0);
		who = (int)rnd_range(&seed, 0, 1);
		op = (unsigned int)rnd_range(&seed, 0, 7);
		cost = rnd_range(&seed, 1, 3);
		n = (unsigned int)rnd_range(&seed, 0, 1);
		snprintf(key, sizeof(key), "k%u", n);
		rm = step(&mem, cases[i].group, who, op, key, cost, &dm);
		rr = step(&red, cases[i].group, who, op, key, cost, &dr);
		snprintf(what, sizeof(what),
			 "%s / %s, seed %llu step %d: %s op %u cost %llu at "
			 "%llu",
			 cases[i].a, cases[i].b, (unsigned long long)seed0, k,
			 who ? "B" : "A", op, (unsigned long long)cost,
			 (unsigned long long)now);
		diff_kit_same(what, "memory", rm, &dm, "redis", rr, &dr);
		if (rm == 0 && op > 1 && dm.allowed) {
			crossed[who] += last[n] == !who;
			last[n] = who;
		}
	}
	side_close(&mem);
	side_close(&red);
	tk_clock_free(c);
}

static void run(const char *base, int groups, uint64_t seeds)
{
	uint64_t seed;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].group && !groups)
			continue;
		crossed[0] = crossed[1] = 0;
		for (seed = 1; seed <= seeds; seed++)
			timeline(base, i, seed);
		/* Each way, many times: or the comparison proves little. */
		if (crossed[0] < 20 || crossed[1] < 20)
			fail_msg("%s / %s: crossed %u and %u times", cases[i].a,
				 cases[i].b, crossed[0], crossed[1]);
		print_message("# %s / %s: %u admissions after the other's "
			      "write, %u the other way\n",
			      cases[i].a, cases[i].b, crossed[0], crossed[1]);
	}
}

static void test_server(void **state)
{
	(void)state;
	redis_kit_need(&kit);
	run(kit.spec, 1, 4);
}

/* A group of rules of several slots is -ENOTSUP for a strategy (one
 * transaction runs on one node): composites only. */
static void test_cluster(void **state)
{
	(void)state;
	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
	run(cluster_spec, 0, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_cluster),
	};

	return cmocka_run_group_tests_name("redis: strategies beside sliding "
					   "states",
					   tests, setup, teardown);
}
