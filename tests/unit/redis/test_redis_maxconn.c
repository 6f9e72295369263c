/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_maxconn.c - max_connections=N on a real redis-server
 * (tests/kit/redis-kit.c):
 *
 * - N=1 and 8 threads: every check passes, over one connection: the
 *   store made one, and the server never lists more than one client
 *   besides the one asking;
 * - N=1 and a server that answers late (CLIENT PAUSE): the thread that
 *   holds the connection times out on its reply, the others while
 *   waiting for it, all with -ETIMEDOUT, and the waiters send nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

#define THREADS 8
#define CHECKS 200

static struct redis_kit kit;

struct worker {
	struct tk_limiter *l;
	pthread_barrier_t *go;
	int n;	    /* checks to make */
	int failed; /* of them, not 0 */
	int rc;	    /* the last one's */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct tk_decision d;
	char key[16];
	int i;

	snprintf(key, sizeof(key), "k%p", (void *)w);
	pthread_barrier_wait(w->go);
	for (i = 0; i < w->n; i++) {
		w->rc = tk_limiter_check(w->l, key, strlen(key), 1, &d);
		w->failed += w->rc != 0;
	}
	return NULL;
}

/* Clients the server lists, less the one asking. */
static int clients(void)
{
	char list[8192], *at;
	int n = 0;

	assert_true(redis_kit_cmd(&kit, list, sizeof(list), "CLIENT LIST") >=
		    0);
	for (at = list; (at = strstr(at, "id=")); at += 3)
		n++;
	return n - 1;
}

static struct tk_limiter *open_capped(const char *opts)
{
	struct tk_limiter *l;
	char spec[256];

	redis_kit_need(&kit);
	snprintf(spec, sizeof(spec), "%s?max_connections=1&%s", kit.spec, opts);
	assert_int_equal(tk_limiter_open(&l, "gcra:1000000/1s", spec, NULL), 0);
	return l;
}

static void run(struct worker *w, int n, struct tk_limiter *l, int checks,
		int (*watch)(void))
{
	pthread_barrier_t go;
	pthread_t t[THREADS];
	int i, most = 0, seen;

	pthread_barrier_init(&go, NULL, (unsigned int)n + 1);
	for (i = 0; i < n; i++) {
		w[i] = (struct worker){ .l = l, .go = &go, .n = checks };
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	pthread_barrier_wait(&go);
	for (i = 0; watch && i < 20; i++) {
		seen = watch();
		most = seen > most ? seen : most;
	}
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	if (watch)
		assert_true(most <= 1);
}

static void test_one_connection(void **state)
{
	struct worker w[THREADS];
	struct tk_limiter *l;
	struct tk_stats st;
	int i;

	(void)state;
	l = open_capped("timeout=5s&connect_timeout=5s");
	run(w, THREADS, l, CHECKS, clients);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(w[i].failed, 0);
	assert_int_equal(tk_limiter_stats(l, &st, sizeof(st)), 0);
	assert_int_equal(st.checks, THREADS * CHECKS);
	assert_int_equal(st.redis_connects, 1);
	assert_true(clients() <= 1);
	tk_limiter_close(l);
}

static void test_wait_times_out(void **state)
{
	struct tk_limiter *l =
		open_capped("timeout=200ms&connect_timeout=50ms");
	struct worker w[THREADS];
	struct tk_stats st;
	int i;

	(void)state;
	run(w, 1, l, 1, NULL); /* connected, the script loaded */
	assert_int_equal(w[0].failed, 0);
	assert_true(redis_kit_cmd(&kit, NULL, 0, "CLIENT PAUSE 3000 ALL") >= 0);
	run(w, THREADS, l, 1, NULL);
	for (i = 0; i < THREADS; i++)
		assert_rc(w[i].rc, -ETIMEDOUT);
	/* Those that waited sent nothing: fewer replies timed out than
	 * checks did. */
	assert_int_equal(tk_limiter_stats(l, &st, sizeof(st)), 0);
	assert_true(st.redis_timeouts >= 1);
	assert_true(st.redis_timeouts < THREADS);
	tk_limiter_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_connection),
		cmocka_unit_test(test_wait_times_out),
	};

	/* The kit stops its server at exit. */
	return cmocka_run_group_tests_name("redis max_connections", tests, NULL,
					   NULL);
}
