/*
 * test_zone_counters.c - a zone's checks and denies stay exact while each
 * thread batches its own (lib/tally.h): after N threads made M checks
 * each, tk_zone_info() and tk_store_stats() in the process that counted
 * report N * M checks and every denial, with the store still open; more
 * threads than shards still count exactly; a second process's counts
 * reach the zone when it closes its store, and a fork() child does not
 * add its parent's batch again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "workers.h"

#define T0 UINT64_C(1700000000000000000)
#define M 1001 /* checks per thread: no multiple of the batch size */

static char dir[] = "/tmp/tk-counters-XXXXXX";

struct run {
	struct tk_limiter *l;
	atomic_ulong denied;
	atomic_int errors;
};

static void *worker(void *arg)
{
	struct run *r = arg;
	struct tk_decision d;
	char key[16];
	int i;

	for (i = 0; i < M; i++) {
		/* A few keys, one of them hot enough to be denied. */
		int n = snprintf(key, sizeof(key), "k%d", i % 5);

		if (tk_limiter_check(r->l, key, (size_t)n, 1, &d) != 0)
			atomic_fetch_add(&r->errors, 1);
		else if (!d.allowed)
			atomic_fetch_add(&r->denied, 1);
	}
	return NULL;
}

static struct tk_limiter *open_zone(const char *name, struct tk_clock *c)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[64];

	o.clock = c;
	o.zone_capacity = 1024;
	snprintf(spec, sizeof(spec), "shm:%s", name);
	assert_rc(tk_limiter_open(&l, "gcra:300/1h", spec, &o), 0);
	return l;
}

static void exact_with(int threads)
{
	struct run r = { .l = NULL };
	struct tk_zone_info info;
	struct tk_stats st;
	struct tk_clock *c;
	pthread_t th[40];
	int i;

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	r.l = open_zone("counters", c);
	for (i = 0; i < threads; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker, &r), 0);
	for (i = 0; i < threads; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(atomic_load(&r.errors), 0);
	assert_true(atomic_load(&r.denied) > 0);
	/* The store is still open: info folds this process's batches. */
	assert_rc(tk_zone_info("counters", &info, sizeof(info)), 0);
	assert_int_equal(info.checks, (uint64_t)threads * M);
	assert_int_equal(info.denies, atomic_load(&r.denied));
	assert_rc(tk_limiter_stats(r.l, &st, sizeof(st)), 0);
	assert_int_equal(st.checks, (uint64_t)threads * M);
	assert_int_equal(st.denies, atomic_load(&r.denied));
	tk_limiter_close(r.l);
	assert_rc(tk_zone_info("counters", &info, sizeof(info)), 0);
	assert_int_equal(info.checks, (uint64_t)threads * M);
	assert_rc(tk_zone_destroy("counters"), 0);
	tk_clock_free(c);
}

static void test_threads_exact(void **state)
{
	(void)state;
	exact_with(4);
}

/* More threads than a process has shards: some share one. */
static void test_more_threads_than_shards_exact(void **state)
{
	(void)state;
	exact_with(40);
}

/*
 * A child forked with an unflushed batch adds only its own checks; its
 * store's close adds them to the zone, where the parent's info sees them.
 */
static void test_fork_child_counts_its_own(void **state)
{
	struct run r = { .l = NULL };
	struct tk_zone_info info;
	struct tk_clock *c;
	pid_t pid;

	(void)state;
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	r.l = open_zone("forked", c);
	worker(&r); /* M checks, mostly in this thread's batch */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		worker(&r);
		tk_limiter_close(r.l);
		_exit(atomic_load(&r.errors) ? 1 : 0);
	}
	kit_wait_exit(pid, 0);
	assert_rc(tk_zone_info("forked", &info, sizeof(info)), 0);
	assert_int_equal(info.checks, 2 * M);
	tk_limiter_close(r.l);
	assert_rc(tk_zone_info("forked", &info, sizeof(info)), 0);
	assert_int_equal(info.checks, 2 * M);
	assert_rc(tk_zone_destroy("forked"), 0);
	tk_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_exact),
		cmocka_unit_test(test_more_threads_than_shards_exact),
		cmocka_unit_test(test_fork_child_counts_its_own),
	};
	int rc;

	if (kit_zone_dir(dir) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("zone counters", tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
