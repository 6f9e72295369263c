/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * group-kit.c - see group-kit.h.
 *
 * Every test runs on a manual clock, so that decisions are exact: a
 * timeline of checks made alone and in groups is compared field for
 * field with the same timeline of plain checks on a memory store of its
 * own ("the twin").  The policies are those whose state is one word,
 * which a zone or the memory store keeps inline for a single check and
 * in a block for a group's multi-key step.
 */
#include "group-kit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "asserts.h"

/* Each with what it admits at once: a shaper with no queue spaces its
 * admissions, and one with a queue delays where a limiter denies. */
static const struct {
	const char *policy;
	size_t admits;
} policies[] = {
	{ "gcra:2/1h", 2 },
	{ "token-bucket:capacity=2,refill=2/1h", 2 },
	{ "fixed-window:2/1h", 2 },
	{ "quota:2/day", 2 },
	{ "leaky:2/1h", 1 },
	{ "leaky:2/1h,max-queue=1h", 0 },
};
#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

struct fixture {
	struct tk_clock *clock;
	struct tk_store *store;
	struct tk_limiter *l;	  /* the policy under test */
	struct tk_limiter *other; /* a generous second member of groups */
};

static void open_fixture(struct fixture *fx, const char *policy, int twin)
{
	struct tk_options o = TK_OPTIONS_INIT;

	capi_kit_open(&fx->clock, &fx->store, twin);
	o.clock = fx->clock;
	o.store = fx->store;
	o.prefix = "gk:";
	assert_rc(tk_limiter_open(&fx->l, policy, NULL, &o), 0);
	o.prefix = "gk-other:";
	assert_rc(tk_limiter_open(&fx->other, "gcra:1000/1h", NULL, &o), 0);
}

static void close_fixture(struct fixture *fx)
{
	tk_limiter_close(fx->l);
	tk_limiter_close(fx->other);
	tk_store_close(fx->store);
	tk_clock_free(fx->clock);
}

/*
 * One unit of @key through @fx's limiter: alone (@how 's'), in a group
 * of one ('1'), or in a group with the other limiter ('2').
 */
static struct tk_decision check(struct fixture *fx, const char *key, char how)
{
	struct tk_limiter *ls[2] = { fx->l, fx->other };
	struct tk_key k[2] = { { key, strlen(key) }, { "o", 1 } };
	struct tk_decision d, dims[2];

	if (how == 's')
		assert_rc(tk_limiter_check(fx->l, key, strlen(key), 1, &d), 0);
	else if (how == '1')
		assert_rc(tk_limiter_check_group(ls, k, 1, 1, &d, NULL, 0), 0);
	else {
		assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, dims, 2), 0);
		/* The policy's own decision: the other one admits. */
		d = dims[0];
	}
	return d;
}

static void assert_same(const struct tk_decision *a,
			const struct tk_decision *b, const char *policy,
			const char *steps, size_t i)
{
	char what[128];

	snprintf(what, sizeof(what), "%s on %s, %s step %zu", policy,
		 capi_kit_target->name, steps, i);
	capi_kit_assert_same(a, b, what);
}

/*
 * The case: gcra:2/1h checked twice in groups, then alone, is
 * denied the third; and the reverse.  Every one-word policy the same
 * way, with groups of one and of two limiters.
 */
void group_kit_group_then_single(void **state)
{
	static const char *const orders[] = { "11s", "22s", "ss1",
					      "ss2", "1s2", "s2s" };
	struct fixture fx;
	struct tk_decision d;
	size_t p, o, i;

	(void)state;
	for (p = 0; p < N_POLICIES; p++) {
		if (!policies[p].admits)
			continue; /* a queue: the timeline test has it */
		for (o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
			open_fixture(&fx, policies[p].policy, 0);
			for (i = 0; i < 3; i++) {
				d = check(&fx, "k", orders[o][i]);
				if (d.allowed != (i < policies[p].admits))
					fail_msg("%s on %s, %s: check %zu %s",
						 policies[p].policy,
						 capi_kit_target->name,
						 orders[o], i + 1,
						 d.allowed ? "admitted"
							   : "denied");
			}
			assert_int_equal(d.remaining, 0);
			close_fixture(&fx);
		}
	}
}

/*
 * A timeline of checks alone and in groups, the clock moving between
 * some, decides exactly as the same checks made alone on the twin; and
 * a peek at the end reads the same state.
 */
void group_kit_mixed_like_single(void **state)
{
	/* '+': the clock moves a fifth of the hour. */
	static const char steps[] = "s1+2s1+ss2+12+s1s+2";
	struct fixture fx, twin;
	struct tk_decision a, b;
	size_t p, i;

	(void)state;
	for (p = 0; p < N_POLICIES; p++) {
		open_fixture(&fx, policies[p].policy, 0);
		open_fixture(&twin, policies[p].policy, 1);
		for (i = 0; steps[i]; i++) {
			if (steps[i] == '+') {
				assert_rc(tk_clock_advance(fx.clock, 720 * SEC),
					  0);
				assert_rc(
					tk_clock_advance(twin.clock, 720 * SEC),
					0);
				continue;
			}
			a = check(&fx, "k", steps[i]);
			b = check(&twin, "k", 's');
			assert_same(&a, &b, policies[p].policy, steps, i);
		}
		assert_rc(tk_limiter_peek(fx.l, "k", 1, &a), 0);
		assert_rc(tk_limiter_peek(twin.l, "k", 1, &b), 0);
		assert_same(&a, &b, policies[p].policy, "peek", 0);
		close_fixture(&twin);
		close_fixture(&fx);
	}
}

#define THREADS 4
#define TRIES 60
#define LIMIT 50

struct racer {
	struct fixture *fx;
	int id;
	atomic_int *admitted;
	int rc;
};

/* Checks of one key, alone and in groups by turns (each thread starts
 * with another kind, so that both kinds meet). */
static void *race(void *arg)
{
	struct racer *r = arg;
	struct tk_limiter *ls[2] = { r->fx->l, r->fx->other };
	struct tk_key k[2] = { { "hot", 3 }, { "o", 1 } };
	struct tk_decision d;
	int i;

	for (i = 0; i < TRIES && r->rc == 0; i++) {
		switch ((i + r->id) % 3) {
		case 0:
			r->rc = tk_limiter_check(r->fx->l, "hot", 3, 1, &d);
			break;
		case 1:
			r->rc = tk_limiter_check_group(ls, k, 1, 1, &d, NULL,
						       0);
			break;
		default:
			r->rc = tk_limiter_check_group(ls, k, 2, 1, &d, NULL,
						       0);
			break;
		}
		if (r->rc == 0 && d.allowed)
			atomic_fetch_add(r->admitted, 1);
	}
	return NULL;
}

/* Threads mixing both kinds of check on one key at limit 50 admit
 * exactly 50. */
void group_kit_threads_mixed(void **state)
{
	static const char *const racing[] = { "gcra:50/1h",
					      "fixed-window:50/1h" };
	struct racer r[THREADS];
	pthread_t t[THREADS];
	struct fixture fx;
	atomic_int admitted;
	size_t p;
	int i;

	(void)state;
	for (p = 0; p < sizeof(racing) / sizeof(racing[0]); p++) {
		open_fixture(&fx, racing[p], 0);
		atomic_init(&admitted, 0);
		for (i = 0; i < THREADS; i++) {
			r[i] = (struct racer){ &fx, i, &admitted, 0 };
			assert_int_equal(
				pthread_create(&t[i], NULL, race, &r[i]), 0);
		}
		for (i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			assert_rc(r[i].rc, 0);
		}
		if (atomic_load(&admitted) != LIMIT)
			fail_msg("%s on %s: %d admitted, want %d", racing[p],
				 capi_kit_target->name, atomic_load(&admitted),
				 LIMIT);
		close_fixture(&fx);
	}
}
