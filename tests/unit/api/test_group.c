/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_group.c - tk_limiter_check_group(): several limiters on one store
 * decided as one all(): nothing consumed unless every limiter admits, the
 * per-dimension decisions, one count per limiter whatever the group, and
 * exact counts with threads and with processes on a zone, where group
 * and single checks of a key share its one state (tests/kit/group-kit.c
 * checks that on every store).
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
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "workers.h"

#define T0 (UINT64_C(1700000000) * SEC)

static const char *const specs[] = { "memory", "shm:group" };

struct fx {
	struct tk_clock *clock;
	struct tk_store *store;
	struct tk_limiter *l[4];
	size_t n;
};

static void fx_open(struct fx *f, const char *spec, const char *const *pols,
		    size_t n)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char prefix[8];
	size_t i;

	memset(f, 0, sizeof(*f));
	assert_rc(tk_clock_manual_new(&f->clock, T0), 0);
	o.clock = f->clock;
	tk_zone_destroy("group");
	assert_rc(tk_store_open(&f->store, spec, &o), 0);
	o.store = f->store;
	for (i = 0; i < n; i++) {
		snprintf(prefix, sizeof(prefix), "r%zu", i);
		o.prefix = prefix;
		assert_rc(tk_limiter_open(&f->l[i], pols[i], NULL, &o), 0);
	}
	f->n = n;
}

static void fx_close(struct fx *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		tk_limiter_close(f->l[i]);
	tk_store_close(f->store);
	tk_clock_free(f->clock);
}

static bool check2(struct fx *f, size_t a, const char *ka, size_t b,
		   const char *kb, struct tk_decision *dims, size_t ndims)
{
	struct tk_limiter *ls[2] = { f->l[a], f->l[b] };
	struct tk_key k[2] = { { ka, strlen(ka) }, { kb, strlen(kb) } };
	struct tk_decision d;

	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, dims, ndims), 0);
	return d.allowed;
}

static bool check1(struct fx *f, size_t a, const char *ka)
{
	struct tk_key k = { ka, strlen(ka) };
	struct tk_decision d;

	assert_rc(tk_limiter_check_group(&f->l[a], &k, 1, 1, &d, NULL, 0), 0);
	return d.allowed;
}

/*
 * Rule 0 allows 5 per IP, rule 1 allows 3 per user: when the user's
 * rule denies, the IP's rule must not pay for the try.
 */
static void test_denial_consumes_nothing(void **state)
{
	static const char *const pols[] = { "gcra:5/1h", "fixed-window:3/1h" };
	size_t s;
	int i;

	(void)state;
	for (s = 0; s < 2; s++) {
		struct fx f;

		fx_open(&f, specs[s], pols, 2);
		for (i = 0; i < 3; i++)
			assert_true(check2(&f, 0, "ip", 1, "alice", NULL, 0));
		for (i = 0; i < 10; i++)
			assert_false(check2(&f, 0, "ip", 1, "alice", NULL, 0));
		/* The IP paid three: two left, and only two. */
		assert_true(check2(&f, 0, "ip", 1, "bob", NULL, 0));
		assert_true(check1(&f, 0, "ip"));
		assert_false(check1(&f, 0, "ip"));
		assert_false(check2(&f, 0, "ip", 1, "carol", NULL, 0));
		/* carol's rule did not pay for the IP's denial. */
		for (i = 0; i < 3; i++)
			assert_true(check1(&f, 1, "carol"));
		assert_false(check1(&f, 1, "carol"));
		fx_close(&f);
	}
}

static void test_dimension_decisions(void **state)
{
	static const char *const pols[] = { "all(gcra:5/1h,fixed-window:4/1m)",
					    "fixed-window:3/1h" };
	struct tk_key k[2] = { { "ip", 2 }, { "alice", 5 } };
	struct tk_decision d, dims[4];
	size_t s;

	(void)state;
	for (s = 0; s < 2; s++) {
		struct fx f;

		fx_open(&f, specs[s], pols, 2);
		memset(dims, 0xa5, sizeof(dims));
		assert_rc(tk_limiter_check_group(f.l, k, 2, 1, &d, dims, 3), 0);
		assert_true(d.allowed);
		assert_int_equal(dims[0].limit, 5);
		assert_int_equal(dims[0].remaining, 4);
		assert_int_equal(dims[1].limit, 4);
		assert_int_equal(dims[1].remaining, 3);
		assert_int_equal(dims[2].limit, 3);
		assert_int_equal(dims[2].remaining, 2);
		/* Only @ndims of them are written. */
		assert_int_equal(dims[3].limit, UINT64_C(0xa5a5a5a5a5a5a5a5));
		/* The representative: the tightest admitting dimension. */
		assert_int_equal(d.limit, 3);
		assert_int_equal(d.remaining, 2);

		/* Refused: the admitting dimensions say what is left, as
		 * nothing was consumed; the denying one says why. */
		{
			struct tk_limiter *r1 = f.l[1];
			struct tk_key k1 = { "alice", 5 };

			assert_rc(tk_limiter_check_group(&r1, &k1, 1, 2, &d,
							 NULL, 0),
				  0);
			assert_true(d.allowed);
		}
		memset(dims, 0xa5, sizeof(dims));
		assert_rc(tk_limiter_check_group(f.l, k, 2, 1, &d, dims, 3), 0);
		assert_false(d.allowed);
		assert_true(dims[0].allowed);
		assert_int_equal(dims[0].remaining, 4);
		assert_int_equal(dims[1].remaining, 3);
		assert_false(dims[2].allowed);
		assert_int_equal(dims[2].remaining, 0);
		assert_int_equal(d.retry_after, dims[2].retry_after);

		/* An all() limiter's group states are its own. */
		assert_rc(tk_limiter_check(f.l[0], "ip", 2, 1, &d), 0);
		assert_int_equal(d.remaining, 2);
		fx_close(&f);
	}
}

static void test_bad_groups(void **state)
{
	static const char *const pols[] = { "gcra:5/1h",
					    "any(gcra:1/1s,gcra:2/1s)",
					    "all(gcra:1/1s,gcra:1/1s,gcra:1/1s,"
					    "gcra:1/1s,gcra:1/1s,gcra:1/1s,"
					    "gcra:1/1s)",
					    "gcra:2/1h" };
	struct tk_key k[3] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	struct tk_limiter *other, *ls[3];
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "memory", pols, 4);
	assert_rc(tk_limiter_check_group(f.l, k, 0, 1, &d, NULL, 0), -EINVAL);
	assert_rc(tk_limiter_check_group(f.l, k, 1, 0, &d, NULL, 0), -EINVAL);
	assert_rc(tk_limiter_check_group(NULL, k, 1, 1, &d, NULL, 0), -EINVAL);
	assert_rc(tk_limiter_check_group(f.l, NULL, 1, 1, &d, NULL, 0),
		  -EINVAL);
	assert_rc(tk_limiter_check_group(f.l, k, 1, 1, NULL, NULL, 0), -EINVAL);
	/* any() cannot be part of an all(). */
	assert_rc(tk_limiter_check_group(f.l, k, 2, 1, &d, NULL, 0), -EINVAL);
	/* 1 + 7 dimensions fit, 1 + 7 + 1 do not. */
	ls[0] = f.l[0];
	ls[1] = f.l[2];
	ls[2] = f.l[3];
	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, NULL, 0), 0);
	assert_rc(tk_limiter_check_group(ls, k, 3, 1, &d, NULL, 0), -EINVAL);
	/* Another store: a "memory" open is a store of its own. */
	assert_rc(tk_limiter_open(&other, "gcra:1/1s", "memory", NULL), 0);
	ls[1] = other;
	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, NULL, 0), -EXDEV);
	/* A NULL member. */
	ls[1] = NULL;
	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, NULL, 0), -EINVAL);
	tk_limiter_close(other);
	/* A cost no member can ever admit. */
	assert_rc(tk_limiter_check_group(f.l, k, 1, 6, &d, NULL, 0), -ERANGE);
	/* A bad key. */
	k[0].key_len = 0;
	assert_rc(tk_limiter_check_group(f.l, k, 1, 1, &d, NULL, 0), -EINVAL);
	fx_close(&f);
}

/* One any() limiter alone: its own decision, with its dimensions'. */
static void test_lone_any(void **state)
{
	static const char *const pols[] = {
		"any(fixed-window:2/1h,fixed-window:5/1h)"
	};
	struct tk_key k = { "ip", 2 };
	struct tk_decision d, dims[2];
	size_t s;
	int i;

	(void)state;
	for (s = 0; s < 2; s++) {
		struct fx f;

		fx_open(&f, specs[s], pols, 1);
		for (i = 0; i < 2; i++)
			assert_rc(tk_limiter_check_group(f.l, &k, 1, 1, &d,
							 dims, 2),
				  0);
		assert_rc(tk_limiter_check_group(f.l, &k, 1, 1, &d, dims, 2),
			  0);
		assert_true(d.allowed);
		assert_false(dims[0].allowed);
		assert_true(dims[1].allowed);
		assert_int_equal(dims[1].remaining, 2);
		/* The states are the limiter's own: one more, then none. */
		assert_rc(tk_limiter_check(f.l[0], "ip", 2, 1, &d), 0);
		assert_int_equal(d.remaining, 1);
		fx_close(&f);
	}
}

static int broken_clock;

static int flaky_now(void *ctx, uint64_t *ns)
{
	(void)ctx;
	*ns = T0;
	return broken_clock;
}

/* The strictest fail policy of the members decides a failure. */
static void test_strictest_fail_policy(void **state)
{
	static const struct {
		unsigned int a, b;
		int rc;
		bool allowed;
	} cases[] = {
		{ TK_FAIL_OPEN, TK_FAIL_OPEN, 0, true },
		{ TK_FAIL_OPEN, TK_FAIL_CLOSED, 0, false },
		{ TK_FAIL_CLOSED, TK_FAIL_ERROR, 0, false },
		{ TK_FAIL_OPEN, TK_FAIL_ERROR, -EIO, false },
		{ TK_FAIL_ERROR, TK_FAIL_OPEN, -EIO, false },
	};
	struct tk_key k[2] = { { "a", 1 }, { "b", 1 } };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *ls[2];
	struct tk_clock *c;
	struct tk_store *s;
	struct tk_decision d;
	size_t i;

	(void)state;
	assert_rc(tk_clock_custom_new(&c, flaky_now, NULL), 0);
	assert_rc(tk_store_open(&s, "memory", NULL), 0);
	o.clock = c;
	o.store = s;
	broken_clock = 1;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o.fail = cases[i].a;
		assert_rc(tk_limiter_open(&ls[0], "gcra:1/1s", NULL, &o), 0);
		o.fail = cases[i].b;
		assert_rc(tk_limiter_open(&ls[1], "gcra:2/1s", NULL, &o), 0);
		memset(&d, 0, sizeof(d));
		assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, NULL, 0),
			  cases[i].rc);
		if (cases[i].rc == 0) {
			assert_true(d.degraded);
			assert_int_equal(d.allowed, cases[i].allowed);
		}
		tk_limiter_close(ls[0]);
		tk_limiter_close(ls[1]);
	}
	broken_clock = 0;
	tk_store_close(s);
	tk_clock_free(c);
}

static void test_policy_accessor(void **state)
{
	struct tk_limiter *l;
	char buf[128];

	(void)state;
	assert_null(tk_limiter_policy(NULL));
	assert_rc(tk_limiter_open(&l, "all(gcra:5/1s,fixed-window:9/1m)",
				  "memory", NULL),
		  0);
	assert_int_equal(tk_policy_dimensions(tk_limiter_policy(l)), 2);
	assert_true(tk_policy_format(tk_limiter_policy(l), buf, sizeof(buf)) >
		    0);
	assert_non_null(strstr(buf, "fixed-window:9/"));
	tk_limiter_close(l);
}

/*
 * Exact under contention: threads race groups (ip, user_i) where the IP
 * allows 40 and each of 4 users 15: every admission is counted in both,
 * so exactly 40 pass, and no user passes more than 15.
 */
#define THREADS 4
#define TRIES 200

struct racer {
	struct fx *f;
	int id;
	int admitted;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char user[8];
	int i;

	snprintf(user, sizeof(user), "u%d", r->id);
	for (i = 0; i < TRIES; i++)
		if (check2(r->f, 0, "ip", 1, user, NULL, 0))
			r->admitted++;
	return NULL;
}

static void test_threads_count_exactly(void **state)
{
	static const char *const pols[] = { "gcra:40/1h",
					    "sliding-window:15/1h" };
	struct racer r[THREADS];
	pthread_t t[THREADS];
	int i, total;
	size_t s;

	(void)state;
	for (s = 0; s < 2; s++) {
		struct fx f;

		fx_open(&f, specs[s], pols, 2);
		for (i = 0; i < THREADS; i++) {
			r[i] = (struct racer){ &f, i, 0 };
			assert_int_equal(
				pthread_create(&t[i], NULL, race, &r[i]), 0);
		}
		total = 0;
		for (i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			assert_true(r[i].admitted <= 15);
			total += r[i].admitted;
		}
		assert_int_equal(total, 40);
		fx_close(&f);
	}
}

/* The same with processes sharing a zone (the preforked server's case). */
static struct fx *proc_fx;

static void proc_worker(int id)
{
	struct kit_shared *sh = kit_shared();
	char user[8];
	int i;

	snprintf(user, sizeof(user), "u%d", id);
	for (i = 0; i < TRIES; i++)
		if (check2(proc_fx, 0, "ip", 1, user, NULL, 0))
			sh->allowed++;
}

static void test_processes_count_exactly(void **state)
{
	static const char *const pols[] = { "gcra:40/1h",
					    "fixed-window:15/1h" };
	struct fx f;

	(void)state;
	fx_open(&f, "shm:group", pols, 2);
	proc_fx = &f;
	assert_non_null(kit_shared());
	kit_shared_reset(T0);
	kit_run_workers(THREADS, proc_worker);
	assert_int_equal(kit_shared()->allowed, 40);
	fx_close(&f);
}

/* One unit of @ka through limiter @a alone: admitted? */
static bool check_alone(struct fx *f, size_t a, const char *ka)
{
	struct tk_decision d;

	assert_rc(tk_limiter_check(f->l[a], ka, strlen(ka), 1, &d), 0);
	return d.allowed;
}

/* Processes mixing groups of one and single checks of one key admit
 * its limit (the zone keeps both in one state: shm/mcas.c).  No cmocka
 * assertion in a child: errors are counted. */
static void mixed_worker(int id)
{
	struct tk_key k = { "hot", 3 };
	struct tk_decision d;
	int i, rc;

	for (i = 0; i < TRIES; i++) {
		rc = (i + id) % 2
			     ? tk_limiter_check_group(proc_fx->l, &k, 1, 1, &d,
						      NULL, 0)
			     : tk_limiter_check(proc_fx->l[0], "hot", 3, 1, &d);
		if (rc)
			kit_shared()->errors++;
		else if (d.allowed)
			kit_shared()->allowed++;
	}
}

static void assert_zone_sound(uint64_t keys, uint64_t blocks)
{
	struct tk_zone_info info;

	assert_rc(tk_zone_verify("group", &info, sizeof(info)), 0);
	assert_int_equal(info.violations, 0);
	assert_int_equal(info.corrupt, 0);
	assert_int_equal(info.keys, keys);
	assert_int_equal(info.blocks, blocks);
}

/* @policy's limit, less the one admission before the race: @admits. */
static void processes_mixed(const char *policy, uint64_t admits)
{
	const char *const pols[] = { policy };
	struct fx f;

	fx_open(&f, "shm:group", pols, 1);
	/* The key starts as single checks keep it: in its slot. */
	assert_true(check_alone(&f, 0, "hot"));
	proc_fx = &f;
	assert_non_null(kit_shared());
	kit_shared_reset(T0);
	kit_run_workers(THREADS, mixed_worker);
	assert_int_equal(kit_shared()->errors, 0);
	assert_int_equal(kit_shared()->allowed, admits);
	assert_zone_sound(1, 1);
	fx_close(&f);
}

static void test_processes_mixed(void **state)
{
	(void)state;
	processes_mixed("gcra:41/1h", 40);
}

/* A sliding window's single checks change its hot word in place while
 * group checks replace its block (docs/shm-protocol.md, "In-place
 * updates"): a group freezes that word, with the value it read, before
 * it stages its new state.  A limit of most of the checks keeps them
 * racing to the end. */
static void test_processes_mixed_window(void **state)
{
	(void)state;
	processes_mixed("sliding-window:601/1h", 600);
}

/*
 * Single checks keep gcra:3/1h's TAT in its key's slot; a group check
 * moves it to a block, and the single checks go on there: one count of
 * three, verify finds nothing wrong, and once expired for the grace a
 * sweep frees the slot and the block.
 */
static void test_zone_word_to_block(void **state)
{
	static const char *const pols[] = { "gcra:3/1h" };
	struct fx f;

	(void)state;
	fx_open(&f, "shm:group", pols, 1);
	assert_true(check_alone(&f, 0, "k"));
	assert_zone_sound(1, 0); /* a word key: no block */
	assert_true(check1(&f, 0, "k"));
	assert_zone_sound(1, 1);
	assert_true(check_alone(&f, 0, "k"));
	assert_false(check_alone(&f, 0, "k"));
	assert_false(check1(&f, 0, "k"));
	assert_zone_sound(1, 1);
	/* Three admitted: the TAT is an hour ahead, the block's expiry
	 * with it.  A sweep before then keeps the key, one after it and
	 * the default grace frees the slot and the block. */
	assert_rc(tk_zone_sweep("group", T0 + 1800 * SEC), 0);
	assert_zone_sound(1, 1);
	assert_rc(tk_zone_sweep("group", T0 + 3720 * SEC), 0);
	assert_zone_sound(0, 0);
	fx_close(&f);
}

static int setup(void **state)
{
	static char dir[] = "/tmp/tk-group-XXXXXX";

	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_denial_consumes_nothing),
		cmocka_unit_test(test_dimension_decisions),
		cmocka_unit_test(test_bad_groups),
		cmocka_unit_test(test_lone_any),
		cmocka_unit_test(test_strictest_fail_policy),
		cmocka_unit_test(test_policy_accessor),
		cmocka_unit_test(test_threads_count_exactly),
		cmocka_unit_test(test_processes_count_exactly),
		cmocka_unit_test(test_processes_mixed),
		cmocka_unit_test(test_processes_mixed_window),
		cmocka_unit_test(test_zone_word_to_block),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
