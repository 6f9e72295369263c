/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_fork.c - a fork() during a pass of tk__table_reclaim()
 * (shm/grow.c): the child has no thread running the pass, and its own
 * first pass frees what its parent's pass had unlinked, so that its
 * tables hold the bytes of the tables in use and nothing more:
 *
 * - forked at the pass's first grace period (the tables it took are not
 *   unlinked yet) and at its second (they are unlinked, not freed), many
 *   times over, the table growing between passes;
 * - the same child closed without a pass (tk__table_free()) frees them;
 * - a memory store's child, forked wherever its reclaimer thread is.
 *
 * White-box (statically linked): the table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "../../shm/word.h"
#include "store/store-ops.h"
#include "test-hooks.h"
#include "fork.h"
#include "rcu.h"
#include "table-kit.h"

#define T0 KIT_T0
#define PASSES 24
#define GROWTHS 6

static const uint64_t seed[2] = { 13, 14 };

/* Insert keys from *@i on until @g growths have happened and the last
 * has completed. */
static void grow_to(struct tk__table *t, uint64_t *i, uint64_t g)
{
	struct tk__zone_key k;

	while (tk__table_growths(t) < g ||
	       tk__zone_old(tk__table_zone(t)) != NULL) {
		k = kit_word_key((*i)++);
		assert_int_equal(
			tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL),
			TK__ZONE_PERSIST);
	}
}

/* A pass run by its own thread that stops at its @at-th grace period
 * until the main thread has forked. */
static struct {
	struct tk__table *t;
	int at, syncs, forked, waiting;
	pthread_mutex_t lock;
	pthread_cond_t cond;
} pass = { .lock = PTHREAD_MUTEX_INITIALIZER,
	   .cond = PTHREAD_COND_INITIALIZER };

static void forking_sync(void)
{
	if (++pass.syncs == pass.at) {
		pthread_mutex_lock(&pass.lock);
		pass.waiting = 1;
		pthread_cond_broadcast(&pass.cond);
		while (!pass.forked)
			pthread_cond_wait(&pass.cond, &pass.lock);
		pthread_mutex_unlock(&pass.lock);
	}
	tk__rcu_synchronize();
}

static void *pass_main(void *arg)
{
	(void)arg;
	tk__table_reclaim(pass.t, forking_sync);
	return NULL;
}

/* In the child: 0 if every table but those in use is freed, by a pass
 * (@reclaim) or by tk__table_free() alone. */
static int child_check(struct tk__table *t, int reclaim)
{
	int bad = 0;

	if (!reclaim) {
		tk__table_free(t);
		return 0; /* the leak check of a sanitizer build says more */
	}
	tk__table_reclaim(t, tk__rcu_synchronize);
	tk__rcu_read_lock();
	bad |= tk__table_retired(t) != 0;
	bad |= tk__table_reserved(t) != tk__table_live(t);
	tk__rcu_read_unlock();
	tk__table_free(t);
	return bad;
}

/* Run a pass, fork at its @at-th grace period; the child's status. */
static int fork_during_pass(struct tk__table *t, int at, int reclaim)
{
	pthread_t th;
	pid_t pid;
	int status;

	pass.t = t;
	pass.at = at;
	pass.syncs = pass.forked = pass.waiting = 0;
	assert_int_equal(pthread_create(&th, NULL, pass_main, NULL), 0);
	pthread_mutex_lock(&pass.lock);
	while (!pass.waiting)
		pthread_cond_wait(&pass.cond, &pass.lock);
	pthread_mutex_unlock(&pass.lock);
	pid = fork();
	if (pid == 0)
		_exit(child_check(t, reclaim));
	assert_true(pid > 0);
	pthread_mutex_lock(&pass.lock);
	pass.forked = 1;
	pthread_cond_broadcast(&pass.cond);
	pthread_mutex_unlock(&pass.lock);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* @state: whether the child runs a pass (or only closes the table). */
static void test_forks_during_passes(void **state)
{
	int reclaim = *(int *)*state;
	struct tk__table *t = NULL;
	uint64_t i = 0;
	int n;

	tk__rcu_setup();
	for (n = 0; n < PASSES; n++) {
		/* A fresh table every GROWTHS passes: 64 slots to 4096. */
		if (n % GROWTHS == 0) {
			tk__table_free(t);
			t = kit_table(64, UINT64_C(1) << 20, seed, T0);
			i = 0;
		}
		grow_to(t, &i, tk__table_growths(t) + 1);
		assert_int_equal(fork_during_pass(t, 1 + n % 2, reclaim), 0);
		/* The parent's pass went on, and freed them. */
		tk__rcu_read_lock();
		assert_int_equal(tk__table_retired(t), 0);
		assert_int_equal(tk__table_reserved(t), tk__table_live(t));
		tk__rcu_read_unlock();
		assert_int_equal(tk__table_freed(t), tk__table_growths(t));
	}
	tk__table_free(t);
}

static int child_reclaims = 1, child_closes;

/*
 * The store as an application sees it: a memory store whose reclaimer
 * thread frees the retired tables every millisecond, and a child forked
 * after each growth, wherever that thread is.  The child runs a pass
 * itself (its own thread would start with its first check) and then
 * holds no byte that is not in use.
 */
#define STORE_FORKS 40

static int store_child(struct tk_store *st)
{
	struct tk_stats s;

	tk__table_reclaim(tk__memory_table(st), tk__rcu_synchronize);
	if (tk_store_stats(st, &s, sizeof(s)) != 0)
		return 2;
	return s.reserved == s.live && s.live > 0 ? 0 : 1;
}

static void test_store_forks_during_reclaim(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *lim = NULL;
	struct tk_store *st = NULL;
	struct tk_decision d;
	uint64_t g = 0, k = 0;
	char key[32];
	int n, status, bad = 0;
	pid_t pid;

	(void)state;
	o.reclaim_interval = UINT64_C(1000000); /* 1 ms */
	for (n = 0; n < STORE_FORKS; n++) {
		/* A fresh store every GROWTHS forks: 1024 slots to 64k. */
		if (n % GROWTHS == 0) {
			tk_limiter_close(lim);
			tk_store_close(st);
			assert_int_equal(tk_store_open(&st, "memory", &o), 0);
			o.store = st;
			assert_int_equal(
				tk_limiter_open(&lim, "gcra:100/1h", NULL, &o),
				0);
			o.store = NULL;
			g = tk__table_growths(tk__memory_table(st));
		}
		while (tk__table_growths(tk__memory_table(st)) == g) {
			snprintf(key, sizeof(key), "k%llu",
				 (unsigned long long)k++);
			assert_int_equal(
				tk_limiter_check(lim, key, strlen(key), 1, &d),
				0);
		}
		g = tk__table_growths(tk__memory_table(st));
		pid = fork();
		if (pid == 0)
			_exit(store_child(st));
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		bad += WEXITSTATUS(status) != 0;
	}
	assert_int_equal(bad, 0);
	tk_limiter_close(lim);
	tk_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_forks_during_passes,
					  &child_reclaims),
		cmocka_unit_test_prestate(test_forks_during_passes,
					  &child_closes),
		cmocka_unit_test(test_store_forks_during_reclaim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
