/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_threads.c - no store starts a thread in the process that
 * opens it, counted in /proc/self/task: a Redis server (redis://) and a
 * 3-master Redis Cluster (redis+cluster://) started by the test, a zone
 * and the memory store, after tk_store_open() and after first checks.
 * The one exception is by design: the memory store starts its reclaimer
 * on its first apply (never at open), and never with TK_OPT_NO_RECLAIMER.
 * Without redis-server the Redis tests are skipped (failed with
 * TK_REQUIRE_REDIS=1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "workers.h"

/* Generous timeouts: a loaded machine is no store failure here. */
#define SLOW "?timeout=5s&connect_timeout=5s"

static struct redis_kit kit, nodes[3];
static char cluster_spec[128];
static int cluster_up;
static char zone_dir[] = "/tmp/tk-threads-XXXXXX";

/* The threads of this process. */
static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

#define assert_threads(n)                                                      \
	do {                                                                   \
		int t_ = threads();                                            \
		if (t_ != (n))                                                 \
			fail_msg("line %d: %d threads, want %d", __LINE__, t_, \
				 (n));                                         \
	} while (0)

/*
 * Open @spec with @flags; one thread before and after; then checks of
 * a composite and a one-word policy on two keys each, and the threads
 * after them must be @after.  The store stays open for the caller.
 */
static struct tk_store *open_and_check(const char *spec, unsigned int flags,
				       int after)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l[2];
	struct tk_store *s;
	struct tk_decision d;
	char full[256];
	int i;

	assert_threads(1);
	o.flags = flags;
	o.zone_capacity = 1024;
	snprintf(full, sizeof(full), "%s%s", spec,
		 strncmp(spec, "redis", 5) == 0 ? SLOW : "");
	assert_rc(tk_store_open(&s, full, &o), 0);
	assert_threads(1);
	o.store = s;
	o.prefix = "a";
	assert_rc(tk_limiter_open(&l[0], "all(gcra:5/s,fixed-window:9/1m)",
				  NULL, &o),
		  0);
	o.prefix = "b";
	assert_rc(tk_limiter_open(&l[1], "sliding-log:3/1s", NULL, &o), 0);
	assert_threads(1);
	for (i = 0; i < 4; i++)
		assert_rc(
			tk_limiter_check(l[i & 1], i < 2 ? "x" : "y", 1, 1, &d),
			0);
	assert_threads(after);
	tk_limiter_close(l[0]);
	tk_limiter_close(l[1]);
	return s;
}

static void test_redis(void **state)
{
	(void)state;
	if (!redis_kit_available())
		skip();
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	tk_store_close(open_and_check(kit.spec, 0, 1));
	assert_threads(1);
}

static void test_cluster(void **state)
{
	(void)state;
	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
	tk_store_close(open_and_check(cluster_spec, 0, 1));
	assert_threads(1);
}

static void test_zone(void **state)
{
	(void)state;
	tk_store_close(open_and_check("shm:threads", 0, 1));
	assert_threads(1);
}

static void test_memory_no_reclaimer(void **state)
{
	(void)state;
	tk_store_close(open_and_check("memory", TK_OPT_NO_RECLAIMER, 1));
	assert_threads(1);
}

/*
 * ThreadSanitizer's runtime starts a thread of its own with the
 * process's first pthread_create(), and keeps it.
 */
#if defined(__SANITIZE_THREAD__)
#define TSAN_THREAD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_THREAD 1
#endif
#endif
#ifndef TSAN_THREAD
#define TSAN_THREAD 0
#endif

/* The reclaimer starts with the first apply and is joined at close. */
static void test_memory_reclaimer_on_first_apply(void **state)
{
	(void)state;
	tk_store_close(open_and_check("memory", 0, 2 + TSAN_THREAD));
	assert_threads(1 + TSAN_THREAD);
}

static int teardown(void **state)
{
	int i;

	redis_kit_destroy(&kit);
	for (i = 0; i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return kit_zone_dir_remove(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redis),
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_zone),
		cmocka_unit_test(test_memory_no_reclaimer),
		cmocka_unit_test(test_memory_reclaimer_on_first_apply),
	};

	if (kit_zone_dir(zone_dir) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, teardown);
}
