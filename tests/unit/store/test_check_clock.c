/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_check_clock.c - when a check reads its clock (lib/store/slot-store.h):
 * in a table that fits a core's cache ("near"), before the key is hashed;
 * in a larger one ("far"), after the key is hashed and its slot
 * prefetched.  Either way a check reads the clock exactly once, and a
 * clock that fails consumes nothing; a far zone truncated under its
 * users still answers -EPROTO and nothing crashes.  A thread whose hot
 * key another thread writes too checks in the far order until it finds
 * its own write again, or is denied.
 *
 * White-box: linked statically for tk__slot_near_test, which makes every
 * table near or far whatever the machine's cache.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "store/store-ops.h"
#include "test-hooks.h"

#include "asserts.h"
#include "workers.h"

#define T0 UINT64_C(1700000000000000000)
#define NEAR 0 /* tk__slot_near_test: ask the machine (64 slots are near) */
#define FAR 1  /* no table is near */

static char dir[] = "/tmp/tk-clock-XXXXXX";

/* A clock that counts its readings, and fails while told to. */
struct counted {
	atomic_ulong reads;
	atomic_int failing;
};

static int counted_now(void *ctx, uint64_t *ns)
{
	struct counted *c = ctx;
	unsigned long n = atomic_fetch_add(&c->reads, 1);

	if (atomic_load(&c->failing))
		return -1;
	*ns = T0 + n * 1000; /* 1 us a reading */
	return 0;
}

/*
 * The system clock, counted and failed the same way: this binary's own
 * clock_gettime(), which the library's inline reading of the system clock
 * (tk__clock_gettime()) calls, for CLOCK_REALTIME on a thread that armed
 * it.  The readings themselves are the kernel's.
 */
static struct counted sys_cnt;
static __thread int sys_armed;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id == CLOCK_REALTIME && sys_armed) {
		atomic_fetch_add(&sys_cnt.reads, 1);
		if (atomic_load(&sys_cnt.failing)) {
			errno = EINVAL;
			return -1;
		}
	}
	return (int)syscall(SYS_clock_gettime, id, ts);
}

/* The clock a test runs on, and its counts: a custom clock, or (@c NULL)
 * the system clock through clock_gettime() above. */
static struct counted *clock_under_test(int sys, struct counted *own,
					struct tk_clock **c)
{
	if (sys) {
		*c = NULL;
		sys_cnt = (struct counted){ 0, 0 };
		sys_armed = 1;
		return &sys_cnt;
	}
	*own = (struct counted){ 0, 0 };
	assert_rc(tk_clock_custom_new(c, counted_now, own), 0);
	return own;
}

static void clock_done(struct tk_clock *c)
{
	sys_armed = 0;
	tk_clock_free(c);
}

static const char *const specs[] = { "shm:clk", "memory" };

static struct tk_limiter *open_on(struct tk_store *s, const char *policy,
				  struct tk_clock *c, unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	o.clock = c;
	o.fail = fail;
	o.store = s;
	assert_rc(tk_limiter_open(&l, policy, NULL, &o), 0);
	return l;
}

/* Forget what this thread last wrote (struct tk__last_write): a slot of
 * an earlier test's store may be at the same address as one of this
 * test's, and its word would make a rival of it. */
static void forget_last_write(void)
{
	tk__last_write = (struct tk__last_write){ NULL, 0, 0 };
}

/* One reading for a check: of a new key (the direct path hands it to
 * apply()), of a known one, a peek, a batch; none for a bad key.  On a
 * custom clock, or (@sys) on the system clock, which a check reads inline
 * (tk_limiter_check()'s lean entry); there the real time between two
 * checks leaves the remaining counts unasserted but for new keys. */
static void one_reading(const char *spec, uint64_t mode, int sys)
{
	struct counted own, *cnt;
	struct tk_request reqs[3] = { { "a", 1, 1 },
				      { "b", 1, 1 },
				      { "c", 1, 1 } };
	struct tk_decision d, out[3];
	struct tk_clock *c;
	struct tk_store *s;
	struct tk_limiter *l;
	char key[16], big[TK_KEY_MAX];
	int rcs[3], i;

	tk__slot_near_test = mode;
	forget_last_write();
	tk_zone_destroy("clk");
	cnt = clock_under_test(sys, &own, &c);
	s = kit_store_on(spec, c);
	l = open_on(s, "gcra:100/1s,burst=10", c, TK_FAIL_ERROR);
	atomic_store(&cnt->reads, 0);
	assert_rc(tk_limiter_check(l, "new", 3, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(atomic_load(&cnt->reads), 1);
	assert_rc(tk_limiter_check(l, "new", 3, 1, &d), 0);
	assert_true(d.allowed && (sys || d.remaining == 8));
	assert_int_equal(atomic_load(&cnt->reads), 2);
	/* A bad key: the one reading on a near store, none on a far one,
	 * which judges the key before the store reads its clock. */
	assert_rc(tk_limiter_check(l, "", 0, 1, &d), -EINVAL);
	assert_int_equal(atomic_load(&cnt->reads), mode == FAR ? 2 : 3);
	atomic_store(&cnt->reads, 2);
	assert_rc(tk_limiter_peek(l, "new", 3, &d), 0);
	assert_int_equal(atomic_load(&cnt->reads), 3);
	assert_rc(tk_limiter_check_many(l, reqs, 3, out, rcs), 0);
	assert_int_equal(atomic_load(&cnt->reads), 4);
	assert_rc(tk_limiter_check_many(l, reqs, 3, out, rcs), 0);
	assert_true(out[2].allowed && (sys || out[2].remaining == 8));
	assert_int_equal(atomic_load(&cnt->reads), 5);
	/* The longest key, and a cost above the limit (an error the store
	 * answers): one reading each. */
	memset(big, 'k', sizeof(big));
	assert_rc(tk_limiter_check(l, big, sizeof(big), 1, &d), 0);
	assert_int_equal(atomic_load(&cnt->reads), 6);
	assert_rc(tk_limiter_check(l, "new", 3, 11, &d), -ERANGE);
	assert_int_equal(atomic_load(&cnt->reads), 7);
	/* New keys, enough to grow a memory store's table several times:
	 * checks while its keys move go by apply(), at their one reading. */
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
		assert_true(d.allowed && d.remaining == 9);
		assert_int_equal(atomic_load(&cnt->reads), 8 + (unsigned)i);
	}
	tk_limiter_close(l);
	tk_store_close(s);
	clock_done(c);
	tk_zone_destroy("clk");
	tk__slot_near_test = 0;
}

static void test_one_reading_per_check(void **state)
{
	size_t i;
	int sys;

	(void)state;
	for (sys = 0; sys < 2; sys++) {
		for (i = 0; i < 2; i++) {
			one_reading(specs[i], NEAR, sys);
			one_reading(specs[i], FAR, sys);
		}
	}
}

/* A memory store's table grows past the cache: its checks turn far. */
static void test_memory_store_turns_far(void **state)
{
	struct counted cnt = { 0, 0 };
	struct tk_decision d;
	struct tk_clock *c;
	struct tk_store *s;
	struct tk_limiter *l;
	unsigned long before;
	char key[16];
	int i;

	(void)state;
	tk__slot_near_test = 1024 + 1; /* the first table (1024) is near */
	forget_last_write();
	assert_rc(tk_clock_custom_new(&c, counted_now, &cnt), 0);
	s = kit_store_on("memory", c);
	l = open_on(s, "gcra:100/1s", c, TK_FAIL_ERROR);
	before = atomic_load(&cnt.reads);
	assert_rc(tk_limiter_check(l, "", 0, 1, &d), -EINVAL);
	assert_int_equal(atomic_load(&cnt.reads), before + 1); /* near */
	for (i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
	}
	before = atomic_load(&cnt.reads);
	assert_rc(tk_limiter_check(l, "", 0, 1, &d), -EINVAL);
	assert_int_equal(atomic_load(&cnt.reads), before); /* far */
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(c);
	tk__slot_near_test = 0;
}

/* A check of @key by another thread: a rival writer of its slot. */
struct rival {
	struct tk_limiter *l;
	const char *key;
	int rc, allowed;
};

static void *rival_check(void *arg)
{
	struct rival *r = arg;
	struct tk_decision d;

	r->rc = tk_limiter_check(r->l, r->key, strlen(r->key), 1, &d);
	r->allowed = d.allowed;
	return NULL;
}

static void rival_child(void *arg)
{
	struct rival *r = arg;

	rival_check(r);
	KIT_CHILD_CHECK(1, r->rc == 0 && r->allowed);
}

/* A thread writes @key's slot; on a zone, another process does. */
static void rival_writes(struct tk_limiter *l, const char *key, int process)
{
	struct rival r = { l, key, -1, 0 };
	pthread_t t;

	if (process) {
		kit_in_child(rival_child, &r);
		return;
	}
	assert_int_equal(pthread_create(&t, NULL, rival_check, &r), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_rc(r.rc, 0);
	assert_true(r.allowed);
}

/* Does @l check in the far order now?  A bad key tells: a near check
 * reads the clock before it judges the key, a far one after. */
static int far_now(struct tk_limiter *l, struct counted *cnt)
{
	unsigned long before = atomic_load(&cnt->reads);
	struct tk_decision d;

	assert_rc(tk_limiter_check(l, "", 0, 1, &d), -EINVAL);
	return atomic_load(&cnt->reads) == before;
}

static void check_allowed(struct tk_limiter *l, const char *key, int allowed)
{
	struct tk_decision d;

	assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
	assert_int_equal(d.allowed, allowed);
}

/*
 * On a near store: a thread that finds another thread's (or, in a zone,
 * process's) write in the slot it wrote last turns far for its next check;
 * finding its own write again, or a denial, turns it near.  Decisions are the
 * same either way (test_direct_path); only the order of clock and hash changes.
 */
static void rival_turns_far(const char *spec, int process)
{
	struct counted cnt = { 0, 0 };
	struct tk_decision d;
	struct tk_clock *c;
	struct tk_store *s;
	struct tk_limiter *l;

	tk__slot_near_test = NEAR;
	forget_last_write();
	tk_zone_destroy("clk");
	assert_rc(tk_clock_custom_new(&c, counted_now, &cnt), 0);
	s = kit_store_on(spec, c);
	/* 1 us a reading: nothing refills during the test. */
	l = open_on(s, "gcra:100/1s,burst=100", c, TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "full", 4, 100, &d), 0); /* new */
	assert_true(d.allowed);
	check_allowed(l, "k", 1); /* new: by apply() */
	check_allowed(l, "k", 1); /* in place: this thread's write */
	assert_false(far_now(l, &cnt));
	check_allowed(l, "k", 1);
	assert_false(far_now(l, &cnt));
	rival_writes(l, "k", process);
	check_allowed(l, "k", 1); /* finds the rival's write */
	assert_true(far_now(l, &cnt));
	assert_true(far_now(l, &cnt)); /* a bad key changes nothing */
	check_allowed(l, "k", 1);      /* finds its own again */
	assert_false(far_now(l, &cnt));
	rival_writes(l, "k", process);
	check_allowed(l, "k", 1);
	assert_true(far_now(l, &cnt));
	check_allowed(l, "full", 0); /* a denial */
	assert_false(far_now(l, &cnt));
	/* Another key's slot is no rival's. */
	check_allowed(l, "k", 1);
	check_allowed(l, "other", 1);
	check_allowed(l, "other", 1);
	check_allowed(l, "k", 1);
	assert_false(far_now(l, &cnt));
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(c);
	tk_zone_destroy("clk");
	tk__slot_near_test = 0;
}

static void test_rival_writer_turns_far(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++)
		rival_turns_far(specs[i], 0);
	rival_turns_far("shm:clk", 1);
}

/*
 * A clock that fails: the fail policy answers (degraded), or the error
 * does; nothing is consumed, so the whole burst is there once the clock
 * is back.  In a far table the key is hashed before the failing read.
 */
static void failing_clock(const char *spec, uint64_t mode, int sys)
{
	struct counted own, *cnt;
	struct tk_decision d;
	struct tk_clock *c;
	struct tk_store *s;
	struct tk_limiter *open, *closed, *error;
	unsigned long reads;
	int i, admitted = 0;

	tk__slot_near_test = mode;
	forget_last_write();
	tk_zone_destroy("clk");
	cnt = clock_under_test(sys, &own, &c);
	s = kit_store_on(spec, c);
	open = open_on(s, "gcra:5/1h", c, TK_FAIL_OPEN);
	closed = open_on(s, "gcra:5/1h", c, TK_FAIL_CLOSED);
	error = open_on(s, "gcra:5/1h", c, TK_FAIL_ERROR);
	/* Known keys too: the direct path decides those in place. */
	assert_rc(tk_limiter_check(open, "old", 3, 1, &d), 0);
	assert_true(d.allowed && !d.degraded && d.remaining == 4);
	atomic_store(&cnt->failing, 1);
	for (i = 0; i < 20; i++) {
		const char *key = i % 2 ? "old" : "new";

		reads = atomic_load(&cnt->reads);
		memset(&d, 0x55, sizeof(d));
		assert_rc(tk_limiter_check(open, key, 3, 1, &d), 0);
		assert_true(d.allowed && d.degraded);
		assert_rc(tk_limiter_check(closed, key, 3, 1, &d), 0);
		assert_true(!d.allowed && d.degraded);
		assert_rc(tk_limiter_check(error, key, 3, 1, &d), -EIO);
		/* One failed reading a check, not one more by a retry. */
		assert_int_equal(atomic_load(&cnt->reads), reads + 3);
	}
	atomic_store(&cnt->failing, 0);
	for (i = 0; i < 10; i++) {
		assert_rc(tk_limiter_check(error, "new", 3, 1, &d), 0);
		assert_false(d.degraded);
		admitted += d.allowed;
	}
	assert_int_equal(admitted, 5);
	assert_rc(tk_limiter_check(error, "old", 3, 1, &d), 0);
	assert_true(d.allowed && d.remaining == 3);
	tk_limiter_close(open);
	tk_limiter_close(closed);
	tk_limiter_close(error);
	tk_store_close(s);
	clock_done(c);
	tk_zone_destroy("clk");
	tk__slot_near_test = 0;
}

/* On a custom clock, and on the system clock, which a check reads inline
 * (tk_limiter_check()'s lean entry). */
static void test_failing_clock_consumes_nothing(void **state)
{
	size_t i;
	int sys;

	(void)state;
	for (sys = 0; sys < 2; sys++) {
		for (i = 0; i < 2; i++) {
			failing_clock(specs[i], NEAR, sys);
			failing_clock(specs[i], FAR, sys);
		}
	}
}

/*
 * A far zone's file cut to nothing under its users: the prefetch before
 * the guard must not fault, the checks after it answer -EPROTO.  In a
 * child, which installs the library's SIGBUS handler at its attach.
 */
static void truncated_child(void *arg)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	char path[512], key[16];
	int i;

	(void)arg;
	tk__slot_near_test = FAR;
	tk_zone_destroy("cut");
	o.zone_capacity = 1024;
	KIT_CHILD_CHECK(1,
			tk_limiter_open(&l, "gcra:5/1s", "shm:cut", &o) == 0);
	KIT_CHILD_CHECK(2,
			tk_limiter_check(l, "k", 1, 1, &d) == 0 && d.allowed);
	kit_zone_path(path, sizeof(path), "cut");
	KIT_CHILD_CHECK(3, truncate(path, 0) == 0);
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		KIT_CHILD_CHECK(4, tk_limiter_check(l, key, strlen(key), 1,
						    &d) == -EPROTO);
	}
	tk_limiter_close(l);
	KIT_CHILD_CHECK(5, tk_zone_destroy("cut") == 0);
}

static void test_far_zone_truncated(void **state)
{
	(void)state;
	kit_in_child(truncated_child, NULL);
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_reading_per_check),
		cmocka_unit_test(test_memory_store_turns_far),
		cmocka_unit_test(test_rival_writer_turns_far),
		cmocka_unit_test(test_failing_clock_consumes_nothing),
		cmocka_unit_test(test_far_zone_truncated),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
