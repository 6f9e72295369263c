/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * capi-kit.c - see capi-kit.h.
 *
 * Every test runs on a manual clock, so that what a wait or a
 * reservation decides is exact: a waiter sleeps real time but is
 * admitted only once the test has moved the clock, and its decision is
 * compared field for field with the same timeline run by plain checks
 * on a memory store of its own ("the twin").  Real time only ever
 * bounds how long the test waits for something to happen; the
 * assertions are about what happened (counts, decisions, states).
 */
#include "capi-kit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "asserts.h"

const struct capi_kit_target *capi_kit_target;

/* 2023-11-14 23:00:00 UTC: every window of the tests starts here. */
#define T0 (UINT64_C(1700002800) * SEC)

struct fixture {
	struct tk_clock *clock;
	struct tk_store *store;
};

static void open_fixture(struct fixture *fx, int twin)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_rc(tk_clock_manual_new(&fx->clock, T0), 0);
	o.clock = fx->clock;
	if (twin)
		assert_rc(tk_store_open(&fx->store, "memory", &o), 0);
	else
		assert_rc(capi_kit_target->open(&fx->store, &o), 0);
}

static void close_fixture(struct fixture *fx)
{
	tk_store_close(fx->store);
	tk_clock_free(fx->clock);
}

static struct tk_limiter *lim(const struct fixture *fx, const char *policy,
			      const char *prefix)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	o.clock = fx->clock;
	o.store = fx->store;
	o.prefix = prefix;
	assert_rc(tk_limiter_open(&l, policy, NULL, &o), 0);
	return l;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void assert_same(const struct tk_decision *a,
			const struct tk_decision *b, const char *what)
{
	if (a->allowed != b->allowed || a->limit != b->limit ||
	    a->remaining != b->remaining || a->reset_at != b->reset_at ||
	    a->retry_after != b->retry_after || a->delay != b->delay)
		fail_msg("%s: {%d %llu %llu %llu %llu %llu}, twin {%d %llu "
			 "%llu %llu %llu %llu}",
			 what, a->allowed, (unsigned long long)a->limit,
			 (unsigned long long)a->remaining,
			 (unsigned long long)a->reset_at,
			 (unsigned long long)a->retry_after,
			 (unsigned long long)a->delay, b->allowed,
			 (unsigned long long)b->limit,
			 (unsigned long long)b->remaining,
			 (unsigned long long)b->reset_at,
			 (unsigned long long)b->retry_after,
			 (unsigned long long)b->delay);
}

struct waiter {
	struct tk_limiter *l;
	const char *key;
	unsigned int waits;
	_Atomic unsigned int *admitted; /* shared by the waiters of a key */
	struct tk_decision *got;	/* one per admission, in order */
	_Atomic int done;
	int rc;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct tk_decision d;
	unsigned int i, at;

	for (i = 0; i < w->waits; i++) {
		w->rc = tk_limiter_wait(w->l, w->key, strlen(w->key), 1, NULL,
					NULL, &d);
		if (w->rc || !d.allowed)
			break;
		at = atomic_fetch_add(w->admitted, 1);
		w->got[at] = d;
	}
	atomic_store(&w->done, 1);
	return NULL;
}

/* Wait (real time, at most 20 s) until @n admissions were counted. */
static void await_count(_Atomic unsigned int *admitted, unsigned int n)
{
	unsigned int ms;

	for (ms = 0; atomic_load(admitted) < n && ms < 20000; ms += 5)
		sleep_ms(5);
	assert_int_equal(atomic_load(admitted), n);
}

/*
 * Each policy's key is exhausted by one check of @fill units; a waiter
 * must then block (consuming nothing: the key's peek does not move)
 * until the clock reaches the time forecast says, and be admitted by the
 * check the twin makes at that time.
 */
static const struct {
	const char *policy;
	uint64_t fill;
} policies[] = {
	{ "gcra:10/s", 10 },
	{ "token-bucket:capacity=3,refill=10/s", 3 },
	{ "fixed-window:3/200ms", 3 },
	{ "sliding-window:3/200ms", 3 },
	{ "sliding-log:3/200ms", 3 },
	{ "quota:3/200ms", 3 },
	{ "all(gcra:10/s,fixed-window:20/1s)", 10 },
	{ "any(fixed-window:3/200ms,sliding-log:3/200ms)", 3 },
	{ "all(gcra:10/s,burst=1,leaky:100/s)", 1 },
};

static void wait_one_policy(struct fixture *fx, struct fixture *tw,
			    const char *policy, uint64_t fill, int i)
{
	struct tk_decision d, t, before, after;
	_Atomic unsigned int admitted = 0;
	struct tk_limiter *l, *twin;
	struct waiter w = { 0 };
	char prefix[16];
	pthread_t th;

	snprintf(prefix, sizeof(prefix), "w%d:", i);
	l = lim(fx, policy, prefix);
	twin = lim(tw, policy, prefix);
	assert_rc(tk_limiter_check(l, "k", 1, fill, &d), 0);
	assert_rc(tk_limiter_check(twin, "k", 1, fill, &t), 0);
	assert_true(d.allowed);
	assert_rc(tk_limiter_peek(l, "k", 1, &before), 0);
	assert_rc(tk_limiter_forecast(l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_true(d.retry_after > 0);

	w = (struct waiter){
		.l = l, .key = "k", .waits = 1, .admitted = &admitted, .got = &t
	};
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	/* Blocked, and consuming nothing, while the clock stands still. */
	sleep_ms(250);
	if (atomic_load(&w.done))
		fail_msg("%s: the wait returned before the clock moved",
			 policy);
	assert_rc(tk_limiter_peek(l, "k", 1, &after), 0);
	assert_same(&after, &before, policy);
	/* A retry_after may be a lower bound (a sliding window's next
	 * bucket): step by it until the key admits.  The twin forecasts:
	 * the waiter may check at a step before this thread's forecast of
	 * @l, which would then see the unit taken and step once more. */
	while (!d.allowed) {
		assert_rc(tk_clock_advance(fx->clock, d.retry_after), 0);
		assert_rc(tk_clock_advance(tw->clock, d.retry_after), 0);
		assert_rc(tk_limiter_forecast(twin, "k", 1, 1, &d), 0);
	}
	pthread_join(th, NULL);
	assert_rc(w.rc, 0);
	assert_int_equal(admitted, 1);
	/* The waiter's admission is the twin's check at that time. */
	d = t;
	assert_rc(tk_limiter_check(twin, "k", 1, 1, &t), 0);
	assert_true(t.allowed);
	assert_same(&d, &t, policy);
	assert_rc(tk_limiter_peek(l, "k", 1, &after), 0);
	assert_rc(tk_limiter_peek(twin, "k", 1, &t), 0);
	assert_same(&after, &t, policy);
	tk_limiter_close(l);
	tk_limiter_close(twin);
}

void capi_kit_wait_every_policy(void **state)
{
	struct fixture fx, tw;
	size_t i;

	(void)state;
	open_fixture(&fx, 0);
	open_fixture(&tw, 1);
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		wait_one_policy(&fx, &tw, policies[i].policy, policies[i].fill,
				(int)i);
	close_fixture(&tw);
	close_fixture(&fx);
}

#define WAITERS 3
#define WAITS 2

/* The manual clock @ctx, read slowly: a waiter that looked before it
 * checked would leave the others time to look too. */
static int slow_read(void *ctx, uint64_t *ns)
{
	sleep_ms(20);
	return tk_clock_now(ctx, ns);
}

/*
 * Three threads wait for two units each of one key of gcra:10/s,burst=1
 * (one unit every 100 ms): exactly one is admitted each time the clock
 * moves by 100 ms, and none while it stands still, however often the
 * others wake; the admissions are the GCRA's, 100 ms apart.  The clock
 * is slow to read, so that waiters overlap: a wait that looked (a peek)
 * before its check would admit two at once.
 */
void capi_kit_wait_contention(void **state)
{
	struct tk_decision got[WAITERS * WAITS], d;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_clock *slow;
	struct waiter w[WAITERS];
	_Atomic unsigned int admitted = 0;
	pthread_t th[WAITERS];
	struct tk_limiter *l;
	struct fixture fx;
	unsigned int i, k;

	(void)state;
	open_fixture(&fx, 0);
	assert_rc(tk_clock_custom_new(&slow, slow_read, fx.clock), 0);
	o.clock = slow;
	o.store = fx.store;
	o.prefix = "c:";
	assert_rc(tk_limiter_open(&l, "gcra:10/s,burst=1", NULL, &o), 0);
	for (i = 0; i < WAITERS; i++) {
		w[i] = (struct waiter){ .l = l,
					.key = "hot",
					.waits = WAITS,
					.admitted = &admitted,
					.got = got };
		assert_int_equal(
			pthread_create(&th[i], NULL, wait_thread, &w[i]), 0);
	}
	for (k = 1; k <= WAITERS * WAITS; k++) {
		if (k > 1)
			assert_rc(tk_clock_advance(fx.clock, 100 * MS), 0);
		await_count(&admitted, k);
		/* Every waiter re-checks within 100 ms: over-admission at
		 * this instant would show by now. */
		sleep_ms(250);
		assert_int_equal(atomic_load(&admitted), k);
	}
	for (i = 0; i < WAITERS; i++) {
		pthread_join(th[i], NULL);
		assert_rc(w[i].rc, 0);
	}
	for (k = 0; k < WAITERS * WAITS; k++) {
		assert_true(got[k].allowed);
		assert_int_equal(got[k].reset_at, T0 + (k + 1) * 100 * MS);
	}
	/* Nothing consumed beyond the admissions. */
	assert_rc(tk_limiter_peek(l, "hot", 3, &d), 0);
	assert_int_equal(d.reset_at, T0 + WAITERS * WAITS * 100 * MS);
	tk_limiter_close(l);
	tk_clock_free(slow);
	close_fixture(&fx);
}

/*
 * A policy set at runtime keeps a key's counts exactly as a limiter
 * opened on it would (store-api-kit.c's policy_change, the reload rule):
 * @used units taken under @from, then 20 checks under @to admit @admits.
 */
static const struct {
	const char *from, *to;
	unsigned int used, admits;
} changes[] = {
	{ "gcra:5/1h", "gcra:5/1h,burst=10", 5, 5 },
	{ "fixed-window:5/1h", "fixed-window:10/1h", 5, 5 },
	{ "sliding-window:5/1h", "sliding-window:10/1h", 5, 5 },
	{ "sliding-log:5/1h", "sliding-log:10/1h", 5, 10 },
	{ "token-bucket:capacity=5,refill=5/1h", "gcra:5/1h", 5, 5 },
	{ "all(gcra:5/1h,quota:5/day)", "all(gcra:5/1h,fixed-window:5/1h)", 3,
	  2 },
	{ "gcra:5/1h", "all(gcra:5/1h,gcra:5/1h)", 5, 5 },
};

static unsigned int admitted_of(struct tk_limiter *l, unsigned int n)
{
	struct tk_decision d;
	unsigned int admitted = 0;

	while (n--) {
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		admitted += d.allowed;
	}
	return admitted;
}

void capi_kit_set_policy(void **state)
{
	struct tk_limiter *l;
	struct fixture fx;
	char prefix[16], text[128];
	size_t i;

	(void)state;
	open_fixture(&fx, 0);
	for (i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		snprintf(prefix, sizeof(prefix), "s%zu:", i);
		l = lim(&fx, changes[i].from, prefix);
		assert_int_equal(admitted_of(l, changes[i].used),
				 changes[i].used);
		assert_rc(tk_limiter_set_policy(l, changes[i].to), 0);
		assert_true(tk_policy_format(tk_limiter_policy(l), text,
					     sizeof(text)) > 0);
		assert_string_equal(text, changes[i].to);
		if (admitted_of(l, 20) != changes[i].admits)
			fail_msg("%s -> %s: not %u admitted", changes[i].from,
				 changes[i].to, changes[i].admits);
		/* Back: the first policy's states, where it left them. */
		assert_rc(tk_limiter_set_policy(l, changes[i].from), 0);
		assert_int_equal(admitted_of(l, 1), 0);
		/* A policy that does not parse changes nothing. */
		assert_rc(tk_limiter_set_policy(l, "gcra:0/s"), -EINVAL);
		assert_rc(tk_limiter_set_policy(l, NULL), -EINVAL);
		assert_true(tk_policy_format(tk_limiter_policy(l), text,
					     sizeof(text)) > 0);
		assert_string_equal(text, changes[i].from);
		tk_limiter_close(l);
	}
	close_fixture(&fx);
}

/* A group sees each limiter's policy as set last. */
void capi_kit_set_policy_group(void **state)
{
	const struct tk_key keys[2] = { { "k", 1 }, { "k", 1 } };
	struct tk_limiter *ls[2];
	struct tk_decision d;
	struct fixture fx;

	(void)state;
	open_fixture(&fx, 0);
	ls[0] = lim(&fx, "fixed-window:1/1h", "g1:");
	ls[1] = lim(&fx, "fixed-window:5/1h", "g2:");
	assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0), 0);
	assert_true(d.allowed);
	assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0), 0);
	assert_false(d.allowed);
	/* The first limiter's one unit used stays counted, of three now. */
	assert_rc(tk_limiter_set_policy(ls[0], "fixed-window:3/1h"), 0);
	assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_int_equal(d.limit, 3);
	tk_limiter_close(ls[0]);
	tk_limiter_close(ls[1]);
	close_fixture(&fx);
}

struct checker {
	struct tk_limiter *l;
	_Atomic int *stop;
	unsigned int checks, odd;
	int rc;
};

static void *check_thread(void *arg)
{
	struct checker *c = arg;
	struct tk_decision d;
	const char *key;
	int rc;

	while (!atomic_load(c->stop)) {
		key = c->checks % 2 ? "a" : "b";
		rc = tk_limiter_check(c->l, key, 1, 1, &d);
		if (rc && !c->rc)
			c->rc = rc;
		/* One policy or the other, each decision whole. */
		if (rc == 0 && d.limit != 1000000 && d.limit != 2000000)
			c->odd++;
		c->checks++;
	}
	return NULL;
}

/*
 * Checks of two keys on four threads while the policy flips between a
 * GCRA and a fixed window: every check succeeds under one policy or the
 * other (a torn one would read a state under another algorithm's key,
 * or a freed policy: -EPROTO, a wrong limit, or the sanitizers' report).
 */
void capi_kit_set_policy_concurrent(void **state)
{
	static const char *const flip[2] = { "gcra:1000000/1h",
					     "fixed-window:2000000/1h" };
	struct checker c[4];
	pthread_t th[4];
	_Atomic int stop = 0;
	struct tk_limiter *l;
	struct fixture fx;
	unsigned int i, n;

	(void)state;
	open_fixture(&fx, 0);
	l = lim(&fx, flip[0], "f:");
	for (i = 0; i < 4; i++) {
		c[i] = (struct checker){ .l = l, .stop = &stop };
		assert_int_equal(
			pthread_create(&th[i], NULL, check_thread, &c[i]), 0);
	}
	for (n = 0; n < 100; n++) {
		assert_rc(tk_limiter_set_policy(l, flip[(n + 1) % 2]), 0);
		sleep_ms(2);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_rc(c[i].rc, 0);
		assert_int_equal(c[i].odd, 0);
		assert_true(c[i].checks > 0);
	}
	tk_limiter_close(l);
	close_fixture(&fx);
}

/*
 * Reservations: @back is how many dimensions a cancel gives units back
 * in after another check of the key followed the reservation (counts
 * that commute: windows, quotas, logs, sliding windows; a TAT does not).
 */
static const struct {
	const char *policy;
	int back;
} reserves[] = {
	{ "gcra:5/1h", 0 },
	{ "token-bucket:capacity=5,refill=5/1h", 0 },
	{ "leaky:5/1h,max-queue=1h", 0 },
	{ "fixed-window:5/1h", 1 },
	{ "quota:5/day", 1 },
	{ "sliding-window:5/1h", 1 },
	{ "sliding-log:5/1h", 1 },
	{ "all(gcra:5/1h,fixed-window:5/1h)", 1 },
	{ "any(fixed-window:5/1h,sliding-log:5/1h)", 2 },
};

/* A reservation of one unit of "k" on @l, admitted. */
static struct tk_reservation *reserve(struct tk_limiter *l)
{
	struct tk_reservation *r = NULL;
	struct tk_decision d;

	assert_rc(tk_limiter_reserve(l, "k", 1, 1, &r, &d), 0);
	assert_true(d.allowed);
	assert_non_null(r);
	return r;
}

static void peek(struct tk_limiter *l, struct tk_decision *d)
{
	assert_rc(tk_limiter_peek(l, "k", 1, d), 0);
}

/* Reserve then cancel, on a new key and on one used before: the key is
 * exactly as before (its peek), and a second cancel changes nothing. */
static void reserve_restores(struct fixture *fx, const char *policy, int i)
{
	struct tk_decision before, during, after;
	struct tk_reservation *r;
	struct tk_limiter *l;
	char prefix[16];
	int warm, dims;

	for (warm = 0; warm < 2; warm++) {
		snprintf(prefix, sizeof(prefix), "r%d.%d:", i, warm);
		l = lim(fx, policy, prefix);
		dims = (int)tk_policy_dimensions(tk_limiter_policy(l));
		if (warm)
			assert_rc(tk_limiter_check(l, "k", 1, 1, &before), 0);
		peek(l, &before);
		r = reserve(l);
		peek(l, &during);
		assert_true(during.remaining < before.remaining ||
			    during.reset_at != before.reset_at);
		assert_rc(tk_reservation_cancel(r), dims);
		peek(l, &after);
		assert_same(&after, &before, policy);
		assert_rc(tk_reservation_cancel(r), -EALREADY);
		peek(l, &after);
		assert_same(&after, &before, policy);
		tk_reservation_free(r);
		tk_limiter_close(l);
	}
}

/* Reserve, another check, cancel: the key as if only the other check
 * had been (the twin's), or, where the units stay, as after both. */
static void reserve_then_check(struct fixture *fx, struct fixture *tw,
			       const char *policy, int back, int i)
{
	struct tk_decision d, t;
	struct tk_reservation *r;
	struct tk_limiter *l, *twin;
	char prefix[16];

	snprintf(prefix, sizeof(prefix), "o%d:", i);
	l = lim(fx, policy, prefix);
	twin = lim(tw, policy, prefix);
	r = reserve(l);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_rc(tk_reservation_cancel(r), back);
	/* The twin: the other check, and the reservation where it stays
	 * (all(): the gcra's, whose remaining is the least). */
	if (!back || strncmp(policy, "all(", 4) == 0)
		assert_rc(tk_limiter_check(twin, "k", 1, 1, &t), 0);
	assert_rc(tk_limiter_check(twin, "k", 1, 1, &t), 0);
	peek(l, &d);
	peek(twin, &t);
	assert_same(&d, &t, policy);
	tk_reservation_free(r);
	tk_limiter_close(l);
	tk_limiter_close(twin);
}

void capi_kit_reserve_cancel(void **state)
{
	struct tk_reservation *r = (void *)1;
	struct fixture fx, tw;
	struct tk_limiter *l;
	struct tk_decision d;
	size_t i;

	(void)state;
	open_fixture(&fx, 0);
	open_fixture(&tw, 1);
	for (i = 0; i < sizeof(reserves) / sizeof(reserves[0]); i++)
		reserve_restores(&fx, reserves[i].policy, (int)i);
	for (i = 0; i < sizeof(reserves) / sizeof(reserves[0]); i++)
		reserve_then_check(&fx, &tw, reserves[i].policy,
				   reserves[i].back, (int)i);
	/* Denied: nothing reserved. */
	l = lim(&fx, "fixed-window:1/1h", "d:");
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_rc(tk_limiter_reserve(l, "k", 1, 1, &r, &d), 0);
	assert_false(d.allowed);
	assert_null(r);
	assert_rc(tk_limiter_reserve(l, "k", 1, 2, &r, &d), -ERANGE);
	assert_rc(tk_reservation_cancel(NULL), -EINVAL);
	tk_limiter_close(l);
	close_fixture(&tw);
	close_fixture(&fx);
}

/*
 * Policies from numbers (tk_policy_build()): each of the built ones, as
 * tk_policy_format() writes it, opens a limiter on the store that decides
 * exactly as the same policy written by hand on the twin, over a timeline
 * that crosses windows and denies.
 */
static const struct {
	unsigned int kind, alg[2];
	uint64_t limit[2], period[2], burst, buckets, max_queue;
	unsigned int cadence[2];
	const char *text;
} built[] = {
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_GCRA },
	  { 3 },
	  { SEC },
	  5,
	  0,
	  0,
	  { 0 },
	  "gcra:3/1s,burst=5" },
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_TOKEN_BUCKET },
	  { 2 },
	  { SEC },
	  4,
	  0,
	  0,
	  { 0 },
	  "token-bucket:capacity=4,refill=2/1s" },
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_FIXED_WINDOW },
	  { 3 },
	  { SEC },
	  0,
	  0,
	  0,
	  { 0 },
	  "fixed-window:3/1s" },
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_SLIDING_WINDOW },
	  { 3 },
	  { SEC },
	  0,
	  4,
	  0,
	  { 0 },
	  "sliding-window:3/1s,buckets=4" },
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_SLIDING_LOG },
	  { 3 },
	  { SEC },
	  0,
	  0,
	  0,
	  { 0 },
	  "sliding-log:3/1s" },
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_QUOTA },
	  { 3 },
	  { 2 * SEC },
	  0,
	  0,
	  0,
	  { TK_CADENCE_PERIOD },
	  "quota:3/2s" },
	{ TK_POLICY_SIMPLE,
	  { TK_ALG_LEAKY },
	  { 4 },
	  { SEC },
	  0,
	  0,
	  SEC,
	  { 0 },
	  "leaky:4/1s,max-queue=1s" },
	{ TK_POLICY_ALL,
	  { TK_ALG_GCRA, TK_ALG_QUOTA },
	  { 3, 7 },
	  { SEC, 0 },
	  0,
	  0,
	  0,
	  { 0, TK_CADENCE_DAY },
	  "all(gcra:3/1s,quota:7/day)" },
	{ TK_POLICY_ANY,
	  { TK_ALG_FIXED_WINDOW, TK_ALG_SLIDING_LOG },
	  { 2, 3 },
	  { SEC, 2 * SEC },
	  0,
	  0,
	  0,
	  { 0, 0 },
	  "any(fixed-window:2/1s,sliding-log:3/2s)" },
};

/* The text tk_policy_format() writes of built[@i]'s policy, into @text. */
static void build_text(size_t i, char *text, size_t len)
{
	struct tk_policy_params p[2] = { TK_POLICY_PARAMS_INIT,
					 TK_POLICY_PARAMS_INIT };
	size_t d, n = built[i].kind == TK_POLICY_SIMPLE ? 1 : 2;
	struct tk_policy *pol;

	for (d = 0; d < n; d++) {
		p[d].algorithm = built[i].alg[d];
		p[d].limit = built[i].limit[d];
		p[d].period = built[i].period[d];
		p[d].cadence = built[i].cadence[d];
	}
	p[0].burst = built[i].burst;
	p[0].buckets = built[i].buckets;
	p[0].max_queue = built[i].max_queue;
	assert_rc(tk_policy_build(&pol, built[i].kind, p, n, NULL), 0);
	assert_true(tk_policy_format(pol, text, len) > 0);
	tk_policy_free(pol);
}

void capi_kit_built_policy(void **state)
{
	struct tk_limiter *l, *twin;
	struct tk_decision d, t;
	struct fixture fx, tw;
	char text[128], prefix[16], what[160];
	int step, k;
	size_t i;

	(void)state;
	open_fixture(&fx, 0);
	open_fixture(&tw, 1);
	for (i = 0; i < sizeof(built) / sizeof(built[0]); i++) {
		build_text(i, text, sizeof(text));
		snprintf(prefix, sizeof(prefix), "b%zu:", i);
		l = lim(&fx, text, prefix);
		twin = lim(&tw, built[i].text, prefix);
		/* Two checks, then a quarter of a second, eight times. */
		for (step = 0; step < 8; step++) {
			for (k = 0; k < 2; k++) {
				assert_rc(tk_limiter_check(l, "k", 1, 1, &d),
					  0);
				assert_rc(tk_limiter_check(twin, "k", 1, 1, &t),
					  0);
				snprintf(what, sizeof(what), "%s, step %d.%d",
					 built[i].text, step, k);
				assert_same(&d, &t, what);
			}
			assert_rc(tk_clock_advance(fx.clock, SEC / 4), 0);
			assert_rc(tk_clock_advance(tw.clock, SEC / 4), 0);
		}
		tk_limiter_close(l);
		tk_limiter_close(twin);
	}
	close_fixture(&tw);
	close_fixture(&fx);
}

void capi_kit_assert_same(const struct tk_decision *a,
			  const struct tk_decision *b, const char *what)
{
	assert_same(a, b, what);
}

void capi_kit_open(struct tk_clock **clock, struct tk_store **store, int twin)
{
	struct fixture fx;

	open_fixture(&fx, twin);
	*clock = fx.clock;
	*store = fx.store;
}
