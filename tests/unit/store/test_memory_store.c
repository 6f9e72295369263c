/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_memory_store.c - the in-process store under threads, floods,
 * expiry and fork().
 *
 * The store is the zone's slot table in private memory (shm/grow.c):
 * max_keys bounds it to the smallest power of two of slots that holds
 * that many live keys without an eviction (2.5 slots a key at least),
 * and a full table evicts its coldest keys.
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
#include <time.h>
#include <unistd.h>

#include "store/store-ops.h"
#include "memory-kit.h"

/* Poll (not time) a condition driven by the reclaimer thread. */
static int wait_for(struct fixture *f, uint64_t expirations)
{
	int i;

	for (i = 0; i < 2000; i++) {
		if (stats_of(f).expirations >= expirations)
			return 1;
		usleep(5000);
	}
	return 0;
}

struct hammer {
	struct tk_limiter *lim;
	const char *key;
	unsigned int n;
	unsigned int allowed;
	int errors;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	struct tk_decision d;
	unsigned int i;

	for (i = 0; i < h->n; i++) {
		if (tk_limiter_check(h->lim, h->key, strlen(h->key), 1, &d))
			h->errors++;
		else if (d.allowed)
			h->allowed++;
	}
	return NULL;
}

static unsigned int hammer(struct tk_limiter *lim, const char *key,
			   unsigned int threads, unsigned int per_thread)
{
	pthread_t th[16];
	struct hammer h[16];
	unsigned int i, total = 0;

	for (i = 0; i < threads; i++) {
		h[i] = (struct hammer){ lim, key, per_thread, 0, 0 };
		assert_int_equal(
			pthread_create(&th[i], NULL, hammer_main, &h[i]), 0);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(h[i].errors, 0);
		total += h[i].allowed;
	}
	return total;
}

/* N threads x M checks on one key at limit L admit exactly L. */
static void test_threads_admit_exactly_limit(void **state)
{
	struct fixture f;

	(void)state;
	open_fixture(&f, "gcra:20000/1h", 0, 0, 0);
	assert_int_equal(hammer(f.lim, "hot", 4, 10000), 20000);
	/* And the next instant still admits nothing more. */
	assert_false(check(&f, "hot", 1));
	/* After exactly one emission interval, exactly one more. */
	assert_int_equal(tk_clock_advance(f.clock, 3600 * SEC / 20000), 0);
	assert_int_equal(hammer(f.lim, "hot", 4, 100), 1);
	close_fixture(&f);
}

/* Same on the system clock: the count can only be exact if the burst
 * is far larger than what time can refill during the test. */
static void test_threads_system_clock(void **state)
{
	struct tk_limiter *lim;

	(void)state;
	assert_int_equal(tk_limiter_open(&lim, "gcra:5000/1d", "memory", NULL),
			 0);
	assert_int_equal(hammer(lim, "k", 4, 4000), 5000);
	tk_limiter_close(lim);
}

/* States of several words (a block per update) are exact too. */
static void test_multiword_states_under_threads(void **state)
{
	static const struct {
		const char *policy;
		unsigned int per_thread, limit;
	} cases[] = {
		{ "fixed-window:20000/1h", 10000, 20000 },
		{ "sliding-window:20000/1h,buckets=12", 10000, 20000 },
		{ "sliding-log:500/1h", 300, 500 },
		{ "quota:3000/day", 1000, 3000 },
	};
	struct fixture f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		open_fixture(&f, cases[i].policy, 0, 0, 0);
		assert_int_equal(hammer(f.lim, "hot", 4, cases[i].per_thread),
				 cases[i].limit);
		assert_false(check(&f, "hot", 1));
		close_fixture(&f);
	}
}

static void test_flood_stays_bounded(void **state)
{
	struct fixture f;
	struct tk_stats st;
	char key[32];
	unsigned int i, hot_allowed = 0;

	(void)state;
	open_fixture(&f, "gcra:100/1h", 400, TK_OPT_NO_RECLAIMER, 0);
	for (i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "flood-%u", i);
		assert_true(check(&f, key, 1));
		/* A key in constant use is never the coldest. */
		if (i % 2 == 0 && check(&f, "hot", 1))
			hot_allowed++;
		assert_true(stats_of(&f).keys <= 1024);
	}
	st = stats_of(&f);
	/* 2.5 slots a key, rounded up to a power of two. */
	assert_int_equal(st.capacity, 1024);
	assert_true(st.keys <= 1024);
	assert_true(st.evictions >= 100000 - 1024);
	assert_int_equal(st.inserts, st.evictions + st.expirations + st.keys);
	/* Never evicted: it admitted exactly its burst, then nothing. */
	assert_int_equal(hot_allowed, 100);
	close_fixture(&f);
}

/*
 * max_keys means live keys: that many distinct keys, each holding a
 * state for an hour, all fit (none evicted, each found again: a second
 * check is denied), for a power of two and for a count between two; the
 * table has 2.5 slots a key at least, a power of two.  Then a flood of
 * keys beyond the table's slots evicts.
 */
static void test_max_keys_are_live_keys(void **state)
{
	static const uint64_t bound[] = { 3000, 4096 };
	struct fixture f;
	struct tk_stats st;
	char key[32];
	unsigned int b, i;

	(void)state;
	for (b = 0; b < 2; b++) {
		open_fixture(&f, "gcra:1/1h", bound[b], TK_OPT_NO_RECLAIMER, 0);
		for (i = 0; i < bound[b]; i++) {
			snprintf(key, sizeof(key), "live-%u", i);
			assert_true(check(&f, key, 1));
		}
		st = stats_of(&f);
		assert_int_equal(st.evictions, 0);
		assert_int_equal(st.keys, bound[b]);
		assert_int_equal(st.capacity, b == 0 ? 8192 : 16384);
		for (i = 0; i < bound[b]; i++) {
			snprintf(key, sizeof(key), "live-%u", i);
			assert_false(check(&f, key, 1));
		}
		for (i = 0; i < st.capacity; i++) {
			snprintf(key, sizeof(key), "flood-%u", i);
			(void)check(&f, key, 1);
		}
		st = stats_of(&f);
		assert_true(st.evictions > 0);
		assert_true(st.keys <= st.capacity);
		close_fixture(&f);
	}
}

/*
 * The memory a flood holds follows max_keys, not the flood's rate: an
 * evicted key's slot is taken over at once, nothing waits for a sweep or
 * a grace period (the backlog stays 0), with the reclaimer thread and
 * without it.
 */
static void test_flood_backlog_bounded(void **state)
{
	static const unsigned int mode[] = { TK_OPT_NO_RECLAIMER, 0 };
	struct fixture f;
	struct tk_stats st;
	char key[32];
	unsigned int m, i, hot_allowed;

	(void)state;
	for (m = 0; m < 2; m++) {
		open_fixture(&f, "gcra:100/1h", 400, mode[m], 3600 * SEC);
		hot_allowed = 0;
		for (i = 0; i < 60000; i++) {
			snprintf(key, sizeof(key), "flood-%u", i);
			assert_true(check(&f, key, 1));
			if (i % 16 == 0 && check(&f, "hot", 1))
				hot_allowed++;
			if (i % 1000 == 0)
				assert_int_equal(stats_of(&f).backlog, 0);
		}
		st = stats_of(&f);
		assert_int_equal(st.backlog, 0);
		assert_int_equal(st.capacity, 1024);
		assert_true(st.evictions >= 60000 - 1024);
		assert_true(st.keys <= 1024);
		assert_int_equal(hot_allowed, 100);
		close_fixture(&f);
	}
}

/*
 * @n checks, @step ns apart, of TRIGGERS keys in turn: each may sweep a
 * chunk of its key's shard, once one is due.  So many keys that every
 * shard has some (2^-63 that one of two has none).
 */
#define TRIGGERS 64

static void trigger(struct fixture *f, unsigned int n, uint64_t step)
{
	char key[32];
	unsigned int i;

	for (i = 0; i < n; i++) {
		assert_int_equal(tk_clock_advance(f->clock, step), 0);
		snprintf(key, sizeof(key), "trigger-%u", i % TRIGGERS);
		check(f, key, 1);
	}
}

/*
 * Without the thread, checks sweep: a chunk of 64 slots of a shard each
 * time one is due, so that a whole pass takes about one grace period
 * (1 s here) of checks that touch every shard.  Expired keys go,
 * long-lived ones stay.
 */
static void test_incremental_expiry(void **state)
{
	struct fixture f;
	struct tk_stats st;
	char key[32];
	unsigned int i;

	(void)state;
	open_fixture(&f, "gcra:10/1s", 0, TK_OPT_NO_RECLAIMER, 0);
	for (i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "short-%u", i);
		assert_true(check(&f, key, 1));
	}
	assert_int_equal(stats_of(&f).keys, 300);
	assert_int_equal(tk_clock_advance(f.clock, 2 * SEC + GRACE), 0);
	/* One check sweeps one chunk, not the table. */
	trigger(&f, 1, 0);
	assert_true(stats_of(&f).expirations < 300);
	trigger(&f, 1000, 5 * 1000000);
	st = stats_of(&f);
	assert_int_equal(st.expirations, 300);
	assert_int_equal(st.keys, TRIGGERS);
	close_fixture(&f);

	/* 5000 keys that live an hour, 200 that live 100 ms. */
	open_fixture(&f, "gcra:1/1h", 0, TK_OPT_NO_RECLAIMER, 0);
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "long-%u", i);
		check(&f, key, 1);
	}
	tk_limiter_close(f.lim);
	{
		struct tk_options o = TK_OPTIONS_INIT;

		o.store = f.store;
		o.clock = f.clock;
		assert_int_equal(
			tk_limiter_open(&f.lim, "gcra:10/1s", NULL, &o), 0);
	}
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "short-%u", i);
		check(&f, key, 1);
	}
	assert_int_equal(tk_clock_advance(f.clock, 2 * SEC + GRACE), 0);
	/* Only checks of a shard sweep it.  A shard of 4096 slots takes 64
	 * chunks, and one whose trigger keys all come within one interval
	 * of each other gets one chunk per round of TRIGGERS checks: so
	 * 64 rounds, whatever the hash does with the trigger keys. */
	trigger(&f, 64 * TRIGGERS + 1000, 5 * 1000000);
	st = stats_of(&f);
	assert_int_equal(st.expirations, 200);
	assert_int_equal(st.keys, 5000 + TRIGGERS);
	close_fixture(&f);
}

/*
 * Keys whose states live in blocks (a sliding window's buckets): the
 * table's arena grows with its slots, from its smallest size up, so every
 * key gets its state and keeps it.
 */
static void test_block_states_grow(void **state)
{
	struct fixture f;
	char key[32];
	unsigned int i;

	(void)state;
	open_fixture(&f, "sliding-window:2/1h", 0, TK_OPT_NO_RECLAIMER, 0);
	for (i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "w-%u", i);
		assert_true(check(&f, key, 1));
	}
	for (i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "w-%u", i);
		assert_true(check(&f, key, 1));
		assert_false(check(&f, key, 1));
	}
	assert_int_equal(stats_of(&f).keys, 20000);
	close_fixture(&f);
}

/*
 * The key count while a growth moves keys: those not moved yet still
 * count, and a moved one counts once (6000 keys grow the first table,
 * of 1024 slots, three times).
 */
static void test_keys_counted_while_growing(void **state)
{
	struct fixture f;
	struct tk_stats st;
	char key[32];
	unsigned int i;

	(void)state;
	open_fixture(&f, "gcra:1/1h", 0, TK_OPT_NO_RECLAIMER, 0);
	for (i = 0; i < 6000; i++) {
		snprintf(key, sizeof(key), "k-%u", i);
		assert_true(check(&f, key, 1));
		assert_int_equal(stats_of(&f).keys, i + 1);
	}
	st = stats_of(&f);
	assert_int_equal(st.inserts, 6000);
	close_fixture(&f);
}

static void test_reclaimer_thread(void **state)
{
	struct fixture f;
	char key[32];
	unsigned int i;

	(void)state;
	open_fixture(&f, "gcra:10/1s", 0, 0, 5 * 1000000);
	for (i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "k-%u", i);
		assert_true(check(&f, key, 1));
	}
	assert_int_equal(tk_clock_advance(f.clock, 2 * SEC + GRACE), 0);
	assert_true(wait_for(&f, 500));
	assert_int_equal(stats_of(&f).keys, 0);
	/* Reclaimed keys are as good as new. */
	assert_true(check(&f, "k-1", 10));
	close_fixture(&f);
}

static void test_reset_counts(void **state)
{
	struct fixture f;
	unsigned int i;

	(void)state;
	open_fixture(&f, "gcra:3/1h", 0, 0, 0);
	for (i = 0; i < 3; i++)
		assert_true(check(&f, "k", 1));
	assert_false(check(&f, "k", 1));
	assert_int_equal(tk_limiter_reset(f.lim, "k", 1), 0);
	assert_int_equal(stats_of(&f).resets, 1);
	assert_int_equal(stats_of(&f).keys, 0);
	for (i = 0; i < 3; i++)
		assert_true(check(&f, "k", 1));
	assert_false(check(&f, "k", 1));
	close_fixture(&f);
}

/* Threads that check, reset and flood at once; counts stay consistent. */
struct churn {
	struct fixture *f;
	unsigned int id;
};

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	struct tk_decision d;
	char key[32];
	unsigned int i;

	for (i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "c-%u", (i * 7 + c->id) % 300);
		tk_limiter_check(c->f->lim, key, strlen(key), 1, &d);
		if (i % 97 == 0)
			tk_limiter_reset(c->f->lim, key, strlen(key));
		if (i % 1000 == 0)
			tk_clock_advance(c->f->clock, SEC / 10);
	}
	return NULL;
}

static void test_churn_with_eviction(void **state)
{
	struct fixture f;
	struct churn c[4];
	pthread_t th[4];
	struct tk_stats st;
	unsigned int i;

	(void)state;
	open_fixture(&f, "gcra:5/1s", 50, 0, 1000000);
	for (i = 0; i < 4; i++) {
		c[i] = (struct churn){ &f, i };
		assert_int_equal(
			pthread_create(&th[i], NULL, churn_main, &c[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	st = stats_of(&f);
	assert_int_equal(st.capacity, 128); /* max_keys 50: 125, rounded up */
	assert_true(st.keys <= 128);
	assert_int_equal(st.inserts,
			 st.keys + st.evictions + st.expirations + st.resets);
	close_fixture(&f);
}

/* A preforked child uses what its parent opened, reclaimer included. */
static void test_fork_child_uses_limiter(void **state)
{
	struct fixture f;
	int status;
	pid_t pid;

	(void)state;
#ifdef __SANITIZE_THREAD__
	/* TSan cannot follow threads started in the child of a threaded
	 * process ("dup thread"); the plain and ASan builds run this. */
	skip();
#endif
	open_fixture(&f, "gcra:2/1h", 0, 0, 5 * 1000000);
	assert_true(check(&f, "k", 1));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ok = !check(&f, "k", 2) && check(&f, "k", 1) &&
			 !check(&f, "k", 1);
		/* The child's own reclaimer thread expires the child's keys. */
		ok = ok && tk_clock_advance(f.clock, 7200 * SEC) == 0 &&
		     wait_for(&f, 1) && stats_of(&f).keys == 0 &&
		     check(&f, "k", 2);
		close_fixture(&f);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's copy is its own. */
	assert_true(check(&f, "k", 1));
	assert_false(check(&f, "k", 1));
	close_fixture(&f);
}

/*
 * Checks and denials counted per thread: exact after N threads made M
 * checks each on a few keys (one hot enough to be denied), through the
 * direct path (GCRA), the apply path (fixed window) and a composite's
 * multi-key path; more threads than shards count in the shared one.  A
 * fork() child keeps its parent's counts, as it keeps its table.
 */
#define COUNTED 1001 /* checks per thread */

struct counting {
	struct tk_limiter *lim;
	pthread_mutex_t lock;
	uint64_t denied;
	int errors;
};

static void *counting_main(void *arg)
{
	struct counting *c = arg;
	struct tk_decision d;
	uint64_t denied = 0;
	char key[16];
	int i, errors = 0;

	for (i = 0; i < COUNTED; i++) {
		int n = snprintf(key, sizeof(key), "k%d", i % 5);

		if (tk_limiter_check(c->lim, key, (size_t)n, 1, &d) != 0)
			errors++;
		else
			denied += !d.allowed;
	}
	pthread_mutex_lock(&c->lock);
	c->denied += denied;
	c->errors += errors;
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void counted_exactly(const char *policy, int threads)
{
	struct counting c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct fixture f;
	struct tk_stats st;
	pthread_t th[24];
	int i;

	open_fixture(&f, policy, 0, 0, 0);
	c.lim = f.lim;
	for (i = 0; i < threads; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, counting_main, &c), 0);
	for (i = 0; i < threads; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(c.errors, 0);
	assert_true(c.denied > 0);
	st = stats_of(&f);
	assert_int_equal(st.checks, (uint64_t)threads * COUNTED);
	assert_int_equal(st.denies, c.denied);
	close_fixture(&f);
}

static void test_checks_and_denies_counted(void **state)
{
	(void)state;
	counted_exactly("gcra:300/1h", 4);
	counted_exactly("fixed-window:300/1h", 4);
	counted_exactly("all(fixed-window:300/1h,sliding-window:900/1h)", 4);
	/* More than lib/store/tally.h's 16 shards. */
	counted_exactly("gcra:300/1h", 24);
}

static void test_fork_child_keeps_counts(void **state)
{
	struct counting c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct fixture f;
	struct tk_stats st;
	int status;
	pid_t pid;

	(void)state;
	open_fixture(&f, "gcra:300/1h", 0, TK_OPT_NO_RECLAIMER, 0);
	c.lim = f.lim;
	counting_main(&c);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		counting_main(&c);
		st = stats_of(&f);
		_exit(c.errors == 0 && st.checks == 2 * COUNTED &&
				      st.denies == c.denied
			      ? 0
			      : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	st = stats_of(&f);
	assert_int_equal(st.checks, COUNTED);
	assert_int_equal(st.denies, c.denied);
	close_fixture(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_admit_exactly_limit),
		cmocka_unit_test(test_threads_system_clock),
		cmocka_unit_test(test_multiword_states_under_threads),
		cmocka_unit_test(test_flood_stays_bounded),
		cmocka_unit_test(test_flood_backlog_bounded),
		cmocka_unit_test(test_max_keys_are_live_keys),
		cmocka_unit_test(test_incremental_expiry),
		cmocka_unit_test(test_block_states_grow),
		cmocka_unit_test(test_keys_counted_while_growing),
		cmocka_unit_test(test_reclaimer_thread),
		cmocka_unit_test(test_reset_counts),
		cmocka_unit_test(test_churn_with_eviction),
		cmocka_unit_test(test_fork_child_uses_limiter),
		cmocka_unit_test(test_checks_and_denies_counted),
		cmocka_unit_test(test_fork_child_keeps_counts),
	};

	return cmocka_run_group_tests_name("memory store", tests, NULL, NULL);
}
