/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_counters.c - a zone's checks and denies stay exact while each
 * thread batches its own (lib/store/tally.h): after N threads made M checks
 * each, tk_zone_info() and tk_store_stats() in the process that counted
 * report N * M checks and every denial, with the store still open; more
 * threads than shards still count exactly, and so do threads whose
 * shards are added to the zone by others meanwhile; a thread that exits
 * gives its shard back (and counts in the shared one if it checks again
 * from a later destructor), also in a fork() child for the threads it
 * does not have; a second process's counts reach the zone when it closes its
 * store, and a fork() child does not add its parent's batch again;
 * children that exit without closing their store leave exactly their
 * checks in the zone: by their threads' exits (also of threads in the
 * shared shard), and by exit() for the main thread's.
 *
 * White-box (statically linked) for the shards' owners (lib/store/tally.h).
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
#include "../../lib/store/tally.h"

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

/* Threads count while two others add their shards to the zone, again
 * and again: no count is added twice or lost. */
struct racing {
	struct run r;
	atomic_int left;
};

static void *racing_worker(void *arg)
{
	struct racing *x = arg;
	int i;

	for (i = 0; i < 100; i++)
		worker(&x->r);
	atomic_fetch_sub(&x->left, 1);
	return NULL;
}

static void *poll_info(void *arg)
{
	struct racing *x = arg;
	struct tk_zone_info info;

	while (atomic_load(&x->left) > 0)
		if (tk_zone_info("racing", &info, sizeof(info)) != 0)
			atomic_fetch_add(&x->r.errors, 1);
	return NULL;
}

static void test_flushes_race_counts(void **state)
{
	struct racing x = { .r = { .l = NULL } };
	struct tk_zone_info info;
	struct tk_clock *c;
	pthread_t th[3], poller;
	int i;

	(void)state;
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	x.r.l = open_zone("racing", c);
	atomic_store(&x.left, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, racing_worker, &x), 0);
	assert_int_equal(pthread_create(&poller, NULL, poll_info, &x), 0);
	poll_info(&x);
	assert_int_equal(pthread_join(poller, NULL), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(atomic_load(&x.r.errors), 0);
	assert_rc(tk_zone_info("racing", &info, sizeof(info)), 0);
	assert_int_equal(info.checks, 3 * 100 * M);
	assert_int_equal(info.denies, atomic_load(&x.r.denied));
	tk_limiter_close(x.r.l);
	assert_rc(tk_zone_destroy("racing"), 0);
	tk_clock_free(c);
}

/* Threads that take a shard and hold it until told to go. */
struct holders {
	pthread_t th[TK__TALLY_SHARDS + 1];
	unsigned int slot[TK__TALLY_SHARDS + 1];
	pthread_barrier_t taken, go;
};

struct holder {
	struct holders *h;
	int i;
};

static void *hold(void *arg)
{
	struct holder *me = arg;

	me->h->slot[me->i] = tk__tally_take_slot();
	pthread_barrier_wait(&me->h->taken);
	pthread_barrier_wait(&me->h->go);
	return NULL;
}

static void *take_one(void *arg)
{
	*(unsigned int *)arg = tk__tally_take_slot();
	return NULL;
}

/* The shard a new thread takes. */
static unsigned int new_thread_slot(void)
{
	unsigned int slot = 0;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, take_one, &slot), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	return slot;
}

/* @n threads that hold their shards once this returns. */
static void hold_shards(struct holders *h, struct holder *me, int n)
{
	int i;

	assert_int_equal(pthread_barrier_init(&h->taken, NULL, n + 1), 0);
	assert_int_equal(pthread_barrier_init(&h->go, NULL, n + 1), 0);
	for (i = 0; i < n; i++) {
		me[i].h = h;
		me[i].i = i;
		assert_int_equal(pthread_create(&h->th[i], NULL, hold, &me[i]),
				 0);
	}
	pthread_barrier_wait(&h->taken);
}

static void release_shards(struct holders *h, int n)
{
	int i;

	pthread_barrier_wait(&h->go);
	for (i = 0; i < n; i++)
		assert_int_equal(pthread_join(h->th[i], NULL), 0);
	pthread_barrier_destroy(&h->taken);
	pthread_barrier_destroy(&h->go);
}

/*
 * While every shard has an owner, a thread counts in the shared one; once
 * the owners have exited, a new thread owns one again.  The threads of
 * the earlier tests have exited: their shards are free.
 */
static void test_shards_given_back(void **state)
{
	struct holder me[TK__TALLY_SHARDS + 1];
	struct holders h;
	unsigned int seen = 0, shared = 0;
	int i, n = TK__TALLY_SHARDS + 1;

	(void)state;
	hold_shards(&h, me, n);
	for (i = 0; i < n; i++) {
		if (h.slot[i] == TK__TALLY_SHARDS + 1) {
			shared++;
			continue;
		}
		assert_true(h.slot[i] >= 1 && h.slot[i] <= TK__TALLY_SHARDS);
		assert_false(seen & 1u << (h.slot[i] - 1)); /* one owner */
		seen |= 1u << (h.slot[i] - 1);
	}
	/* This thread may own one from the tests before. */
	assert_true(shared >= 1);
	assert_int_equal(new_thread_slot(), TK__TALLY_SHARDS + 1);
	release_shards(&h, n);
	assert_true(new_thread_slot() <= TK__TALLY_SHARDS);
}

/*
 * A thread-specific data destructor that runs after the library's (keys
 * are destroyed in the order they were created) and checks again: it
 * must count in the shared shard, not in the one just given back, which
 * a new thread may own already.
 */
static pthread_key_t late_key;
static unsigned int late_slot;

static void late_destructor(void *v)
{
	(void)v;
	late_slot = tk__tally_slot;
}

static void *late_checker(void *arg)
{
	*(unsigned int *)arg = tk__tally_take_slot();
	pthread_setspecific(late_key, &late_slot);
	return NULL;
}

static void test_exited_thread_counts_shared(void **state)
{
	unsigned int taken = 0;
	pthread_t t;

	(void)state;
	(void)new_thread_slot(); /* the library's key exists first */
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	assert_int_equal(pthread_create(&t, NULL, late_checker, &taken), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(taken >= 1 && taken <= TK__TALLY_SHARDS); /* owned */
	assert_int_equal(late_slot, TK__TALLY_SHARDS + 1);
	pthread_key_delete(late_key);
}

/* A fork() child owns no shard of the threads it does not have. */
static void test_fork_child_shards_free(void **state)
{
	struct holder me[TK__TALLY_SHARDS + 1];
	struct holders h;
	int n = TK__TALLY_SHARDS + 1;
	pid_t pid;

	(void)state;
#ifdef __SANITIZE_THREAD__
	/* TSan cannot start threads in the child of a threaded process;
	 * the plain and ASan builds run this. */
	skip();
#endif
	hold_shards(&h, me, n);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(new_thread_slot() <= TK__TALLY_SHARDS ? 0 : 1);
	kit_wait_exit(pid, 0);
	release_shards(&h, n);
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

/*
 * Workers that exit without closing their store, as a server's children
 * do when they are told to stop: N children of T threads of C checks
 * each (C below TK__TALLY_FLUSH, so no count reached the zone on the
 * way) leave exactly N * T * C checks in the zone.
 */
#define N_CHILDREN 2
#define T_THREADS 4
#define C_CHECKS 200

_Static_assert(C_CHECKS < TK__TALLY_FLUSH, "no flush on the way");

struct unclosed {
	struct run r;
	pthread_barrier_t all_counted;
};

static void *check_c(void *arg)
{
	struct unclosed *u = arg;
	struct tk_decision d;
	int i;

	for (i = 0; i < C_CHECKS; i++)
		if (tk_limiter_check(u->r.l, "k", 1, 1, &d) != 0)
			atomic_fetch_add(&u->r.errors, 1);
	return NULL;
}

/* Every thread holds its shard until all have counted: with more
 * threads than shards, some count in the shared one. */
static void *check_c_together(void *arg)
{
	struct unclosed *u = arg;

	check_c(u);
	pthread_barrier_wait(&u->all_counted);
	return NULL;
}

/* A child: @threads threads of C checks, and C more in its main thread
 * if @main_checks; its store is left open. */
static int unclosed_child(const char *name, struct tk_clock *c, int threads,
			  int main_checks)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct unclosed u = { .r = { .l = NULL } };
	pthread_t th[TK__TALLY_SHARDS + T_THREADS];
	char spec[64];
	int i;

	/* No cmocka assertion in a child: it would go on with the tests. */
	o.clock = c;
	o.zone_capacity = 1024;
	snprintf(spec, sizeof(spec), "shm:%s", name);
	if (tk_limiter_open(&u.r.l, "gcra:300/1h", spec, &o) != 0)
		return 1;
	if (pthread_barrier_init(&u.all_counted, NULL, (unsigned)threads))
		return 1;
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, check_c_together, &u) != 0)
			return 1;
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	if (main_checks)
		check_c(&u);
	return atomic_load(&u.r.errors) ? 1 : 0;
}

static void children_unclosed(const char *name, int threads, int main_checks)
{
	struct tk_zone_info info;
	struct tk_clock *c;
	pid_t pid[N_CHILDREN];
	int i, rc;

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	for (i = 0; i < N_CHILDREN; i++) {
		pid[i] = kit_fork();
		assert_true(pid[i] >= 0);
		if (pid[i] != 0)
			continue;
		rc = unclosed_child(name, c, threads, main_checks);
		/* _exit() runs no atexit() handler: only the threads' exits
		 * can have added their counts. */
		if (main_checks)
			exit(rc);
		_exit(rc);
	}
	for (i = 0; i < N_CHILDREN; i++)
		kit_wait_exit(pid[i], 0);
	assert_rc(tk_zone_info(name, &info, sizeof(info)), 0);
	assert_int_equal(info.checks,
			 (uint64_t)N_CHILDREN *
				 (uint64_t)(threads + !!main_checks) *
				 C_CHECKS);
	assert_rc(tk_zone_destroy(name), 0);
	tk_clock_free(c);
}

/* Each thread's exit adds its shard to the zone. */
static void test_threads_exit_unclosed_exact(void **state)
{
	(void)state;
	children_unclosed("unclosed-t", T_THREADS, 0);
}

/* Also the exits of threads that counted in the shared shard. */
static void test_shared_shard_exit_unclosed_exact(void **state)
{
	(void)state;
	children_unclosed("unclosed-s", TK__TALLY_SHARDS + T_THREADS, 0);
}

/* exit() adds what is left, the main thread's shard among it. */
static void test_process_exit_unclosed_exact(void **state)
{
	(void)state;
	children_unclosed("unclosed-p", T_THREADS, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_exact),
		cmocka_unit_test(test_more_threads_than_shards_exact),
		cmocka_unit_test(test_fork_child_counts_its_own),
		cmocka_unit_test(test_flushes_race_counts),
		cmocka_unit_test(test_shards_given_back),
		cmocka_unit_test(test_exited_thread_counts_shared),
		cmocka_unit_test(test_fork_child_shards_free),
		cmocka_unit_test(test_threads_exit_unclosed_exact),
		cmocka_unit_test(test_shared_shard_exit_unclosed_exact),
		cmocka_unit_test(test_process_exit_unclosed_exact),
	};
	int rc;

	if (kit_zone_dir(dir) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("zone counters", tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
