/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_conformance.c - the store conformance kit through the public
 * API (tests/kit/store-api-kit.c) on every store: the memory store, a
 * zone, a real redis-server and a real 3-master Redis Cluster, both
 * started by the test (tests/kit/redis-kit.c).  Without redis-server the
 * Redis runs are skipped (failed with TK_REQUIRE_REDIS=1).
 */
#define _GNU_SOURCE /* asprintf */
#include "store-api-kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asserts.h"
#include "redis-kit.h"
#include "workers.h"

static struct redis_kit kit, nodes[3];
static char cluster_spec[160];
/* Generous timeouts: a loaded machine is no store failure here; the
 * kit's manual clock, not the server's. */
#define SLOW "?timeout=5s&connect_timeout=5s&server_time=0"
static int cluster_up;
static char zone_dir[] = "/tmp/tk-api-kit-XXXXXX";
static char zone_name[32];

static uint64_t stats_keys(struct tk_store *s)
{
	struct tk_stats st;

	assert_int_equal(tk_store_stats(s, &st, sizeof(st)), 0);
	return st.keys;
}

static int open_memory(struct tk_store **out, const struct tk_options *o)
{
	return tk_store_open(out, "memory", o);
}

/* A fresh zone per test: the kit expects an empty store. */
static int open_zone(struct tk_store **out, const struct tk_options *o)
{
	return kit_fresh_zone(out, o, "api-kit", zone_name, sizeof(zone_name));
}

static void sweep_zone(struct tk_store *s, uint64_t now)
{
	(void)s;
	assert_true(tk_zone_sweep(zone_name, now) >= 0);
}

static uint64_t dbsize(struct redis_kit *k, int n)
{
	long long sum = 0, one;
	int i;

	for (i = 0; i < n; i++) {
		one = redis_kit_cmd(&k[i], NULL, 0, "DBSIZE");
		assert_true(one >= 0);
		sum += one;
	}
	return (uint64_t)sum;
}

static void flush(struct redis_kit *k, int n)
{
	int i;

	for (i = 0; i < n; i++)
		assert_int_equal(redis_kit_cmd(&k[i], NULL, 0, "FLUSHALL"), 0);
}

static int open_redis(struct tk_store **out, const struct tk_options *o)
{
	char spec[256];

	if (!kit.pid) {
		if (!redis_kit_available())
			skip();
		assert_int_equal(redis_kit_start(&kit, NULL), 0);
	}
	flush(&kit, 1);
	snprintf(spec, sizeof(spec), "%s" SLOW, kit.spec);
	return tk_store_open(out, spec, o);
}

static uint64_t redis_keys(struct tk_store *s)
{
	(void)s;
	return dbsize(&kit, 1);
}

static int open_cluster(struct tk_store **out, const struct tk_options *o)
{
	char spec[256];

	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
	flush(nodes, 3);
	snprintf(spec, sizeof(spec), "%s" SLOW, cluster_spec);
	return tk_store_open(out, spec, o);
}

static uint64_t cluster_keys(struct tk_store *s)
{
	(void)s;
	return dbsize(nodes, 3);
}

/* A Redis store: its TTLs run in real time, all processes share it. */
#define REDIS_TARGET(n, o, k)                                                  \
	{                                                                      \
		.name = n, .open = o, .keys = k, .real_ttl = 1, .shared = 1,   \
		.threads = 4, .per_thread = 250, .processes = 4,               \
		.per_process = 250,                                            \
	}

static const struct store_api_kit_target targets[] = {
	{
		.name = "memory",
		.open = open_memory,
		.keys = stats_keys,
		.threads = 4,
		.per_thread = 5000,
	},
	{
		.name = "zone",
		.open = open_zone,
		.keys = stats_keys,
		.settle = sweep_zone,
		.shared = 1,
		.threads = 4,
		.per_thread = 2000,
		.processes = 4,
		.per_process = 2000,
	},
	REDIS_TARGET("redis", open_redis, redis_keys),
	REDIS_TARGET("cluster", open_cluster, cluster_keys),
};

#define TARGETS (sizeof(targets) / sizeof(targets[0]))

static int use_target(void **state)
{
	store_api_kit_target = *state;
	return 0;
}

static int teardown(void **state)
{
	int i;

	redis_kit_destroy(&kit);
	for (i = 0; i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	if (zone_name[0])
		tk_zone_destroy(zone_name);
	return kit_zone_dir_remove(state);
}

int main(void)
{
	const struct CMUnitTest kit_tests[] = { STORE_API_KIT_TESTS };
	const size_t n = sizeof(kit_tests) / sizeof(kit_tests[0]);
	struct CMUnitTest
		tests[TARGETS * sizeof(kit_tests) / sizeof(kit_tests[0])];
	size_t i, t, count = 0;
	char *name;
	int rc;

	if (kit_zone_dir(zone_dir) != 0)
		return 1;
	/* Every kit test on each store, in one plan. */
	for (t = 0; t < TARGETS; t++)
		for (i = 0; i < n; i++) {
			/* Forked processes share no memory store. */
			if (!targets[t].shared &&
			    (kit_tests[i].test_func ==
				     store_api_kit_concurrent_processes_land ||
			     kit_tests[i].test_func ==
				     store_api_kit_strategy_processes_land))
				continue;
			tests[count] = kit_tests[i];
			tests[count].setup_func = use_target;
			tests[count].initial_state = (void *)&targets[t];
			if (asprintf(&name, "%s: %s", targets[t].name,
				     kit_tests[i].name) < 0)
				return 1;
			tests[count++].name = name;
		}
	rc = _cmocka_run_group_tests("store conformance (API)", tests, count,
				     NULL, teardown);
	for (i = 0; i < count; i++)
		free((char *)tests[i].name);
	return rc;
}
