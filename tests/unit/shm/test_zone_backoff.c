/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_backoff.c - an update of a zone's key that keeps losing its
 * slot to rivals backs off for real time and does not give up because of
 * contention: it outlasts a storm of rival updates of 20 ms, and one of
 * more rounds than ROUNDS_MAX (128, shm/slots.c), which used to end in
 * -EIO; it gives up only when rivals win for longer than the documented
 * sleeps and TK__ZONE_GIVE_UP_NS (shm/zone.h) together; and it never
 * backs off after a step of its own, which would hand the step to the
 * rivals.
 *
 * White-box (statically linked): the rival is the transition itself,
 * which updates the key through a nested tk__zone_apply() while the
 * update computes, so that the update's compare-and-swap fails every
 * round, as it does when rivals on other CPUs commit first.  A backoff
 * that only yields passes its 128 rounds in well under a millisecond on
 * a CPU with nothing else to run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

#include "../../shm/zone.h"

#define T0 UINT64_C(1700000000000000000)
#define HOUR (UINT64_C(3600) * 1000000000)
#define MS UINT64_C(1000000)

static char dir[] = "/tmp/tk-zbackoff-XXXXXX";

static struct tk__zone *z;
static const struct tk__zone_key key = { 0x1234, UINT64_C(0x9e3779b97f4a7c15) };

/* The storm: rivals update the key until storm_end (ns, monotonic), in
 * the victim's first storm_calls calls, or until the victim has been
 * away storm_until_away ns (it slept) once. */
static uint64_t storm_end;
static int storm_calls;
static uint64_t storm_until_away;
static int calls;	/* of victim_fn */
static uint64_t rivals; /* rival updates committed */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* A word state is its own expiry time: the rival's are below T0 + 2h. */
static int rival_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires)
{
	(void)ctx;
	(void)old;
	next[0] = T0 + HOUR + ++rivals;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

/*
 * The victim's transition: while the storm lasts, a rival commits first.
 * After it, with @evict_when_away, rivals that had the CPU while the
 * victim was away (200 us or more since its last call returned: a sleep,
 * a yield, a preemption) evicted the key meanwhile, as a flood of new
 * keys evicts a key committed with no state yet first.
 */
static int evict_when_away;
static uint64_t returned; /* when victim_fn last returned, ns */
static int evictions;

static int victim_fn(void *ctx, const uint64_t *old, uint64_t *next,
		     uint64_t *expires)
{
	uint64_t now = mono_ns();

	(void)ctx;
	(void)old;
	calls++;
	if (storm_until_away && returned && now - returned >= storm_until_away)
		storm_until_away = 0;
	if (now < storm_end || calls <= storm_calls || storm_until_away) {
		assert_int_equal(tk__zone_apply(z, &key, T0, 1, rival_fn, NULL),
				 TK__ZONE_PERSIST);
	} else if (evict_when_away && now - returned >= 200000) {
		assert_int_equal(tk__zone_reset(z, &key), 0);
		evictions++;
	}
	next[0] = T0 + 2 * HOUR;
	*expires = next[0];
	returned = mono_ns();
	return TK__ZONE_PERSIST;
}

static int setup(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;

	(void)state;
	o.zone_capacity = 1024;
	if (tk_zone_create("backoff", &o) != 0 ||
	    tk__zone_attach(&z, "backoff", NULL, 0) != 0)
		return -1;
	calls = 0;
	storm_end = 0;
	storm_calls = 0;
	storm_until_away = 0;
	rivals = 0;
	evict_when_away = 0;
	evictions = 0;
	returned = 0;
	/* The key exists: every round of the victim is an update. */
	return tk__zone_apply(z, &key, T0, 1, rival_fn, NULL) ==
			       TK__ZONE_PERSIST
		       ? 0
		       : -1;
}

static int teardown(void **state)
{
	(void)state;
	tk__zone_detach(z);
	return tk_zone_destroy("backoff") == 0 ? 0 : -1;
}

/* The key's state as its slot holds it. */
static uint64_t state_of_key(void)
{
	uint64_t idx, w0, w1;

	assert_int_equal(tk__zone_locate(z, &key, T0, 0, &idx, &w0, &w1), 0);
	return w1;
}

/* Rivals commit first for 20 ms: the update waits them out. */
static void test_update_outlasts_a_storm(void **state)
{
	uint64_t before = rivals;

	(void)state;
	storm_end = mono_ns() + 20 * MS;
	assert_int_equal(tk__zone_apply(z, &key, T0, 1, victim_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_true(mono_ns() >= storm_end);
	assert_int_equal(state_of_key(), T0 + 2 * HOUR);
	/* It lost every round of the storm, and fewer than 128 (how many
	 * depends on how long its yields took). */
	assert_int_equal(rivals - before, (uint64_t)calls - 1);
	assert_true(calls < 128);
}

/*
 * Rivals commit first in 200 rounds, more than the 128 after which an
 * update used to give up (-EIO) however little time they took: the
 * update waits them out and commits.
 */
static void test_update_outlasts_many_rounds(void **state)
{
	(void)state;
	storm_end = 0;
	storm_calls = 200;
	assert_int_equal(tk__zone_apply(z, &key, T0, 1, victim_fn, NULL),
			 TK__ZONE_PERSIST);
	/* It lost the 200 rounds: a rival committed in each. */
	assert_true(calls > 200);
	assert_true(rivals >= 1 + 200);
	assert_int_equal(state_of_key(), T0 + 2 * HOUR);
}

/* A storm without end: -EIO, having slept what the bound says
 * (nanosleep() sleeps at least that) and gone on for
 * TK__ZONE_GIVE_UP_NS after it, and within ten times that. */
static void test_gives_up_after_the_bound(void **state)
{
	uint64_t start = mono_ns(), took;

	(void)state;
	storm_end = UINT64_MAX;
	assert_int_equal(tk__zone_apply(z, &key, T0, 1, victim_fn, NULL), -EIO);
	took = mono_ns() - start;
	fprintf(stderr, "# -EIO after %d rounds, %.1f ms\n", calls,
		(double)took / 1e6);
	assert_true(calls > 128);
	assert_true(took >= TK__ZONE_SLEEP_MAX_NS + TK__ZONE_GIVE_UP_NS);
	assert_true(took < 10 * (TK__ZONE_SLEEP_MAX_NS + TK__ZONE_GIVE_UP_NS));
	/* The rivals' last update stands. */
	assert_int_equal(state_of_key(), T0 + HOUR + rivals);
}

/*
 * After a storm that lasts until the update has slept 1 ms for a lost
 * round (not for a time, which a slow build can end before the update
 * first sleeps), rivals evict the key whenever the update is away.
 * Once the key is gone, the update inserts it and updates it at once:
 * a step of its own (a commit, a slot freed) is followed by no backoff,
 * which would hand the fresh key to the rivals every round until -EIO.
 */
static void test_step_not_handed_over(void **state)
{
	(void)state;
	storm_until_away = MS;
	evict_when_away = 1;
	assert_int_equal(tk__zone_apply(z, &key, T0, 1, victim_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_int_equal(state_of_key(), T0 + 2 * HOUR);
	assert_true(evictions >= 1);
	assert_true(calls < 128);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_update_outlasts_a_storm,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_update_outlasts_many_rounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gives_up_after_the_bound,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_not_handed_over,
						setup, teardown),
	};

	if (kit_zone_dir(dir) != 0)
		return 99;
	return cmocka_run_group_tests_name("zone_backoff", tests, NULL,
					   kit_zone_dir_remove);
}
