/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_slots_inserts.c - inserts of one key that race leave nothing
 * behind (shm/slots.c).  An inserter whose rival's earlier INS was
 * committed meanwhile finds that MEM first and never sees its own INS
 * again; it must collide it itself, or the slot stays taken until two
 * sweeps age it out.  The race staged step by step (the insert hook), and
 * threads that insert, update and reset a few keys at once, over and
 * over, ending with one MEM slot per key and no INS or COL.
 *
 * White-box (statically linked): the slot table has no public interface.
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
#include <string.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define T0 UINT64_C(1700000000000000000)
#define HOUR (UINT64_C(3600) * 1000000000)
#define THREADS 4
#define KEYS 24
#define OPS 40000

static const uint64_t seed[2] = { 3, 4 };

#define key kit_word_key

/* Count up from T0 + HOUR, never past a limit the test does not reach. */
static int bump_fn(void *ctx, const uint64_t *old, uint64_t *next,
		   uint64_t *expires)
{
	(void)ctx;
	next[0] = old ? old[0] + 1 : T0 + HOUR;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

struct racer {
	struct tk__zone *z;
	int id;
	_Atomic int errors;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct tk__zone_key k;
	uint64_t op;
	int rc;

	for (op = 0; op < OPS; op++) {
		/* All threads on the same key at about the same time. */
		k = key((op / 16) % KEYS);
		if ((op + (uint64_t)r->id) % 7 == 0)
			rc = tk__zone_reset(r->z, &k);
		else
			rc = tk__zone_apply(r->z, &k, T0, 1, bump_fn, NULL);
		if (rc != 0 && rc != TK__ZONE_PERSIST)
			atomic_fetch_add(&r->errors, 1);
	}
	return NULL;
}

static void test_racing_inserts_leave_nothing(void **state)
{
	struct tk__zone_config cfg;
	struct tk__zone_census c;
	struct racer r[THREADS];
	pthread_t th[THREADS];
	struct tk__zone *z;
	uint64_t i;
	int n;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = 64;
	cfg.now = T0;
	assert_int_equal(tk__zone_private(&z, &cfg, seed), 0);
	for (n = 0; n < THREADS; n++) {
		r[n].z = z;
		r[n].id = n;
		atomic_store(&r[n].errors, 0);
		assert_int_equal(pthread_create(&th[n], NULL, race, &r[n]), 0);
	}
	for (n = 0; n < THREADS; n++) {
		pthread_join(th[n], NULL);
		assert_int_equal(atomic_load(&r[n].errors), 0);
	}
	/* Every key once more, so that each has a slot. */
	for (i = 0; i < KEYS; i++) {
		struct tk__zone_key k = key(i);

		assert_int_equal(tk__zone_apply(z, &k, T0, 1, bump_fn, NULL),
				 TK__ZONE_PERSIST);
	}
	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(z, &c), 0);
	if (c.ins + c.col)
		fprintf(stderr, "left behind: %llu INS, %llu COL\n",
			(unsigned long long)c.ins, (unsigned long long)c.col);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.ins + c.col, 0);
	assert_int_equal(c.mem, KEYS);
	tk__zone_detach(z);
}

/*
 * The race itself, staged through the insert hook: a rival's INS of the
 * key appears before our claimed one while we settle (so ours is not the
 * earliest), and is committed right after (so our next look finds its
 * MEM first).  Our INS must not outlive the operation.
 */
static struct tkz_cand staged;
static uint64_t staged_fp;

static void rival(struct tk__zone *z, const struct tk__zone_key *k, int at,
		  int settled)
{
	struct tkz_slot *e = &tk__zone_slots(z)[tkz_at(&staged, 0)];

	(void)k;
	assert_int_equal(at, 1); /* candidate 0 was taken when we looked */
	if (!settled) {		 /* another key left it; the rival claimed it */
		e->w[0] = tkz_w0(TKZ_INS, 1, staged_fp);
		e->w[1] = 999999;
	} else { /* and committed it */
		e->w[0] = tkz_w0(TKZ_MEM, 0, staged_fp);
		e->w[1] = 0;
	}
}

static void staged_insert(int by_locate)
{
	struct tk__zone_config cfg;
	struct tk__zone_census c;
	struct tk__zone_key k = key(1);
	struct tkz_slot *e;
	struct tk__zone *z;
	uint64_t idx, w0, w1;

	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = 64;
	cfg.now = T0;
	assert_int_equal(tk__zone_private(&z, &cfg, seed), 0);
	tkz_candidates(z, &k, &staged);
	staged_fp = k.fp;
	/* Candidate 0 holds another key as we look. */
	e = &tk__zone_slots(z)[tkz_at(&staged, 0)];
	e->w[0] = tkz_w0(TKZ_MEM, 1, key(2).fp);
	e->w[1] = T0 + HOUR;
	tk__zone_insert_hook = rival;
	if (by_locate) {
		assert_int_equal(tk__zone_locate(z, &k, T0, 1, &idx, &w0, &w1),
				 0);
		assert_int_equal(idx, tkz_at(&staged, 0));
	} else {
		assert_int_equal(tk__zone_apply(z, &k, T0, 1, bump_fn, NULL),
				 TK__ZONE_PERSIST);
		assert_int_equal(e->w[1], T0 + HOUR); /* the rival's slot */
	}
	tk__zone_insert_hook = NULL;
	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(z, &c), 0);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.ins + c.col, 0);
	assert_int_equal(c.mem, 1);
	tk__zone_detach(z);
}

static void test_own_insert_collided(void **state)
{
	(void)state;
	staged_insert(0);
	staged_insert(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_insert_collided),
		cmocka_unit_test(test_racing_inserts_leave_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
