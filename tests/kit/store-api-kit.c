/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-api-kit.c - the store conformance kit through the public API (see
 * store-api-kit.h).
 *
 * Every test opens a fresh store on a manual clock at T0, the start of
 * an hour, so that a fixed window of an hour spans the whole test.
 * Counts are exact: fixed-window:L/1h admits exactly L units in it, so a
 * lost or doubled update under concurrency shows as a wrong count.
 */
#include "store-api-kit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "asserts.h"
#include "workers.h"

const struct store_api_kit_target *store_api_kit_target;

/* 2023-11-14 23:00:00 UTC: a whole hour. */
#define T0 (UINT64_C(1700002800) * SEC)
#define GRACE (300 * MS)

struct fixture {
	struct tk_clock *clock;
	struct tk_store *store;
};

static struct fixture fx;

static void open_fixture(void)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_rc(tk_clock_manual_new(&fx.clock, T0), 0);
	o.clock = fx.clock;
	o.reclaim_grace = GRACE;
	o.reclaim_interval = 10 * MS;
	assert_rc(store_api_kit_target->open(&fx.store, &o), 0);
	assert_non_null(fx.store);
}

static void close_fixture(void)
{
	tk_store_close(fx.store);
	tk_clock_free(fx.clock);
	memset(&fx, 0, sizeof(fx));
}

static struct tk_limiter *lim(const char *policy, const char *prefix)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	o.clock = fx.clock;
	o.store = fx.store;
	o.prefix = prefix;
	assert_rc(tk_limiter_open(&l, policy, NULL, &o), 0);
	return l;
}

/* @n units of @key (@len bytes), one check each: the last remaining. */
static uint64_t take(struct tk_limiter *l, const char *key, size_t len,
		     unsigned int n)
{
	struct tk_decision d = { 0 };

	while (n--) {
		assert_rc(tk_limiter_check(l, key, len, 1, &d), 0);
		assert_true(d.allowed);
	}
	return d.remaining;
}

static uint64_t left(struct tk_limiter *l, const char *key, size_t len)
{
	struct tk_decision d;

	assert_rc(tk_limiter_peek(l, key, len, &d), 0);
	return d.remaining;
}

static uint64_t keys(void)
{
	return store_api_kit_target->keys(fx.store);
}

#define S(str) (str), strlen(str)

/* 3 units of 5 by a limiter of @policy opened by @opener, then closed:
 * another limiter of the policy, which finds 2 left. */
static struct tk_limiter *
persist_three(struct tk_limiter *(*opener)(const char *, const char *),
	      const char *policy)
{
	struct tk_limiter *l;

	open_fixture();
	l = opener(policy, "p");
	assert_int_equal(left(l, S("k")), 5);
	assert_int_equal(take(l, S("k"), 3), 2);
	tk_limiter_close(l);
	/* The state lives in the store, not in the limiter. */
	l = opener(policy, "p");
	assert_int_equal(left(l, S("k")), 2);
	return l;
}

void store_api_kit_persists(void **state)
{
	struct tk_limiter *l;

	(void)state;
	l = persist_three(lim, "fixed-window:5/1h");
	assert_rc(tk_clock_advance(fx.clock, SEC), 0);
	assert_int_equal(left(l, S("k")), 2);
	assert_int_equal(take(l, S("k"), 1), 1);
	assert_int_equal(keys(), 1);
	tk_limiter_close(l);
	close_fixture();
}

void store_api_kit_isolates_keys(void **state)
{
	struct tk_limiter *l, *q;

	(void)state;
	open_fixture();
	l = lim("fixed-window:5/1h", "p");
	take(l, S("a"), 2);
	take(l, S("b"), 1);
	take(l, "a\0b", 3, 3);
	assert_int_equal(left(l, S("a")), 3);
	assert_int_equal(left(l, S("b")), 4);
	/* Keys are bytes: a prefix of a key, or one with a NUL, is another
	 * key. */
	assert_int_equal(left(l, S("ab")), 5);
	assert_int_equal(left(l, "a\0b", 3), 2);
	assert_int_equal(left(l, "a\0", 2), 5);
	/* So is the same key under another prefix. */
	q = lim("fixed-window:5/1h", "q");
	assert_int_equal(left(q, S("a")), 5);
	assert_int_equal(keys(), 3);
	tk_limiter_close(q);
	tk_limiter_close(l);
	close_fixture();
}

/* @l, of a limit of 5, on an empty store: a reset clears one key. */
static void reset_one(struct tk_limiter *l)
{
	take(l, S("k"), 2);
	take(l, S("other"), 1);
	assert_int_equal(keys(), 2);
	assert_rc(tk_limiter_reset(l, S("k")), 0);
	assert_int_equal(keys(), 1);
	assert_int_equal(left(l, S("k")), 5);
	assert_int_equal(left(l, S("other")), 4);
	/* Resetting an absent key is not an error. */
	assert_rc(tk_limiter_reset(l, S("zz")), 0);
	assert_int_equal(take(l, S("k"), 1), 4);
	tk_limiter_close(l);
	close_fixture();
}

void store_api_kit_reset_clears(void **state)
{
	(void)state;
	open_fixture();
	reset_one(lim("fixed-window:5/1h", "p"));
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Settle at @now until no key is left: 0, or -1 after 5 s. */
static int wait_gone(uint64_t now)
{
	unsigned long long t0 = (unsigned long long)time(NULL);

	while (keys() > 0) {
		if ((unsigned long long)time(NULL) > t0 + 5)
			return -1;
		if (store_api_kit_target->settle)
			store_api_kit_target->settle(fx.store, now);
		pause_ms(20);
	}
	return 0;
}

/*
 * gcra:10/s: one unit leaves a state that expires 100 ms later; the
 * store keeps it for the grace (300 ms) more, then lets it go, within
 * LATE: the memory store reclaims on ticks of its timer wheel (2^27 ns).
 */
#define LATE (UINT64_C(1) << 27)

void store_api_kit_expires_after_ttl(void **state)
{
	const uint64_t gone = T0 + 100 * MS + GRACE + LATE;
	struct tk_limiter *l;

	(void)state;
	open_fixture();
	l = lim("gcra:10/s", "p");
	assert_int_equal(take(l, S("k"), 1), 9);
	assert_int_equal(keys(), 1);
	if (!store_api_kit_target->real_ttl) {
		/* Kept through the grace: a clock stepped back stays exact. */
		assert_rc(tk_clock_set(fx.clock, gone - LATE - 1), 0);
		if (store_api_kit_target->settle)
			store_api_kit_target->settle(fx.store, gone - LATE - 1);
		pause_ms(50); /* a reclaimer's sweep */
		assert_int_equal(keys(), 1);
	}
	assert_rc(tk_clock_set(fx.clock, gone), 0);
	if (wait_gone(gone) != 0)
		fail_msg("%s: the state outlived its expiry and grace",
			 store_api_kit_target->name);
	assert_int_equal(take(l, S("k"), 1), 9);
	tk_limiter_close(l);
	close_fixture();
}

void store_api_kit_keep_writes_nothing(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d, before, after;

	(void)state;
	open_fixture();
	l = lim("gcra:2/1h", "p");
	/* Peeks and forecasts of an absent key create nothing. */
	assert_int_equal(left(l, S("absent")), 2);
	assert_rc(tk_limiter_forecast(l, S("absent"), 2, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(keys(), 0);
	/* Denials change nothing. */
	assert_int_equal(take(l, S("k"), 2), 0);
	assert_rc(tk_limiter_peek(l, S("k"), &before), 0);
	assert_rc(tk_clock_advance(fx.clock, SEC), 0);
	assert_rc(tk_limiter_check(l, S("k"), 1, &d), 0);
	assert_false(d.allowed);
	assert_rc(tk_limiter_check(l, S("k"), 2, &d), 0);
	assert_false(d.allowed);
	assert_rc(tk_clock_set(fx.clock, T0), 0);
	assert_rc(tk_limiter_peek(l, S("k"), &after), 0);
	assert_same_decision(after, before);
	assert_int_equal(keys(), 1);
	tk_limiter_close(l);
	close_fixture();
}

void store_api_kit_errors_pass_through(void **state)
{
	struct tk_limiter *l, *other;
	struct tk_decision d;

	(void)state;
	open_fixture();
	l = lim("fixed-window:5/1h", "p");
	take(l, S("k"), 1);
	/* More than the limit: -ERANGE, and no state changes. */
	assert_rc(tk_limiter_check(l, S("k"), 6, &d), -ERANGE);
	assert_rc(tk_limiter_check(l, S("new"), 6, &d), -ERANGE);
	assert_int_equal(left(l, S("k")), 4);
	assert_int_equal(left(l, S("new")), 5);
	assert_int_equal(keys(), 1);
	/* A policy of another algorithm: a key of its own, and the
	 * state it did not write stays. */
	other = lim("gcra:1/s", "p");
	assert_rc(tk_limiter_check(other, S("k"), 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(left(l, S("k")), 4);
	tk_limiter_close(other);
	tk_limiter_close(l);
	close_fixture();
}

/*
 * A policy that replaced another on the same keys (a reload), as
 * tk_limiter_open(3) says: @used units taken under @from, then @admits
 * of 20 more at the same instant under @to, never an error; and @from,
 * back again, finds its own state as it left it (no second fresh budget
 * by changing back).
 */
static const struct change {
	const char *from, *to;
	unsigned int used, admits;
} changes[] = {
	/* The pairs: a log's length, a composite's dimension. */
	{ "sliding-log:5/1h", "sliding-log:10/1h", 5, 10 },
	{ "all(gcra:5/1h,quota:5/day)", "all(gcra:5/1h,fixed-window:5/1h)", 3,
	  2 },
	/* Counts kept: a rate's TAT, a window's or a quota's count, a
	 * sliding window's buckets, a log's stamps. */
	{ "gcra:5/1h", "gcra:10/1h", 5, 0 },
	{ "gcra:5/1h", "gcra:5/1h,burst=10", 5, 5 },
	{ "token-bucket:capacity=5,refill=5/1h",
	  "token-bucket:capacity=8,refill=5/1h", 5, 3 },
	{ "fixed-window:5/1h", "fixed-window:10/1h", 5, 5 },
	{ "quota:5/day", "quota:10/day", 5, 5 },
	{ "sliding-window:5/1h", "sliding-window:10/1h", 5, 5 },
	{ "sliding-log:5/1h", "sliding-log:5/2h", 5, 0 },
	/* Afresh: another algorithm, another window or layout. */
	{ "token-bucket:capacity=5,refill=5/1h", "gcra:5/1h", 5, 5 },
	{ "fixed-window:5/1h", "fixed-window:5/2h", 5, 5 },
	{ "fixed-window:5/1h", "fixed-window:16777216/1h", 5, 20 },
	{ "sliding-window:5/1h", "sliding-window:5/1h,buckets=4", 5, 5 },
	{ "quota:5/day", "quota:5/week", 5, 5 },
	{ "quota:5/week", "quota:5/week,week-start=sun", 5, 5 },
	{ "gcra:5/1h", "all(gcra:5/1h,gcra:5/1h)", 5, 5 },
};

void store_api_kit_policy_change(void **state)
{
	struct tk_limiter *from, *to;
	struct tk_decision d;
	unsigned int i, n, admitted;

	(void)state;
	open_fixture();
	for (i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		from = lim(changes[i].from, "p");
		to = lim(changes[i].to, "p");
		take(from, S("k"), changes[i].used);
		for (n = admitted = 0; n < 20; n++) {
			assert_rc(tk_limiter_check(to, S("k"), 1, &d), 0);
			admitted += d.allowed;
		}
		if (admitted != changes[i].admits)
			fail_msg("%s -> %s: %u admitted, not %u",
				 changes[i].from, changes[i].to, admitted,
				 changes[i].admits);
		/* Back to the first policy: what its state says now. */
		assert_rc(tk_limiter_check(from, S("k"), 1, &d), 0);
		assert_false(d.allowed);
		assert_rc(tk_limiter_reset(from, S("k")), 0);
		assert_rc(tk_limiter_reset(to, S("k")), 0);
		tk_limiter_close(from);
		tk_limiter_close(to);
	}
	close_fixture();
}

struct worker {
	struct tk_limiter *l;
	unsigned int n;
	unsigned int allowed, errors;
	int error; /* the first */
};

static void *check_many(void *arg)
{
	struct worker *w = arg;
	struct tk_decision d;
	unsigned int i;
	int rc;

	for (i = 0; i < w->n; i++) {
		rc = tk_limiter_check(w->l, S("hot"), 1, &d);
		if (rc != 0 && !w->errors++)
			w->error = rc;
		else if (rc == 0)
			w->allowed += d.allowed;
	}
	return NULL;
}

/* nt threads x m checks of "hot" under fixed-window:@limit/1h: admitted. */
static unsigned int run_threads(unsigned int limit, const char *prefix)
{
	unsigned int nt = store_api_kit_target->threads, i, allowed = 0;
	pthread_t th[64];
	struct worker w[64];
	char policy[64];

	assert_true(nt >= 2 && nt <= 64);
	snprintf(policy, sizeof(policy), "fixed-window:%u/1h", limit);
	for (i = 0; i < nt; i++) {
		w[i] = (struct worker){ lim(policy, prefix),
					store_api_kit_target->per_thread, 0, 0,
					0 };
		assert_int_equal(
			pthread_create(&th[i], NULL, check_many, &w[i]), 0);
	}
	for (i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		if (w[i].errors)
			fail_msg("%u errors, the first %s", w[i].errors,
				 tk_strerrorname(w[i].error));
		allowed += w[i].allowed;
	}
	assert_int_equal(left(w[0].l, S("hot")), limit - allowed);
	for (i = 0; i < nt; i++)
		tk_limiter_close(w[i].l);
	return allowed;
}

void store_api_kit_concurrent_checks_land(void **state)
{
	unsigned int total = store_api_kit_target->threads *
			     store_api_kit_target->per_thread;

	(void)state;
	open_fixture();
	/* Room for all: every check lands. */
	assert_int_equal(run_threads(2 * total, "all"), total);
	/* Room for half: exactly half are admitted. */
	assert_int_equal(run_threads(total / 2, "half"), total / 2);
	close_fixture();
}

static struct tk_limiter *shared_limiter;

static void process_checks(int i)
{
	struct kit_shared *sh = kit_shared();
	struct tk_decision d;
	unsigned int j;

	(void)i;
	for (j = 0; j < store_api_kit_target->per_process; j++) {
		if (tk_limiter_check(shared_limiter, S("hot"), 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
}

/* Forked processes on the limiter opened before the fork. */
static unsigned int run_processes(unsigned int limit, const char *prefix)
{
	struct kit_shared *sh = kit_shared();
	char policy[64];

	assert_non_null(sh);
	kit_shared_reset(T0);
	snprintf(policy, sizeof(policy), "fixed-window:%u/1h", limit);
	shared_limiter = lim(policy, prefix);
	/* A first check in the parent: its connection is not the children's. */
	assert_int_equal(left(shared_limiter, S("hot")), limit);
	kit_run_workers((int)store_api_kit_target->processes, process_checks);
	assert_int_equal(atomic_load(&sh->errors), 0);
	assert_int_equal(left(shared_limiter, S("hot")),
			 limit - atomic_load(&sh->allowed));
	tk_limiter_close(shared_limiter);
	return (unsigned int)atomic_load(&sh->allowed);
}

void store_api_kit_concurrent_processes_land(void **state)
{
	unsigned int total = store_api_kit_target->processes *
			     store_api_kit_target->per_process;

	(void)state;
	if (!store_api_kit_target->shared)
		skip(); /* each process has its own memory store */
	open_fixture();
	assert_int_equal(run_processes(2 * total, "all"), total);
	assert_int_equal(run_processes(total / 2, "half"), total / 2);
	close_fixture();
}

/*
 * A user strategy (tk_strategy_register(3)) on the store: "kit-count:L"
 * counts the units of a key in 8 bytes, admits while the count stays at
 * most L, reports L less the count as remaining, and keeps its state for
 * 10 s from each admission; "kit-other:L" is the same code under another
 * name, whose states must never be read as kit-count's.
 */
#define KIT_TTL (10 * SEC)

static int kit_count(void *ctx, unsigned char *state, uint64_t now,
		     uint64_t cost, uint64_t arg, struct tk_decision *d,
		     uint64_t *ttl)
{
	uint64_t n;

	(void)ctx;
	memcpy(&n, state, sizeof(n));
	d->limit = arg;
	d->reset_at = now + KIT_TTL;
	d->allowed = n + cost <= arg;
	d->remaining = arg - n;
	if (!d->allowed || cost == 0) {
		d->allowed = d->allowed && n < arg;
		d->retry_after = d->allowed ? 0 : KIT_TTL;
		return TK_STRATEGY_KEEP;
	}
	n += cost;
	memcpy(state, &n, sizeof(n));
	d->remaining = arg - n;
	*ttl = KIT_TTL;
	return TK_STRATEGY_WRITE;
}

static void kit_register(void)
{
	static const char *const names[] = { "kit-count", "kit-other" };
	struct tk_strategy s = TK_STRATEGY_INIT;
	int rc;
	size_t i;

	for (i = 0; i < 2; i++) {
		s.name = names[i];
		s.state_size = sizeof(uint64_t);
		s.check = kit_count;
		rc = tk_strategy_register(&s);
		assert_true(rc == 0 || rc == -EEXIST);
	}
}

/* A limiter of @policy, or a skip where the store cannot run it yet. */
static struct tk_limiter *strategy_lim(const char *policy, const char *prefix)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	int rc;

	kit_register();
	o.clock = fx.clock;
	o.store = fx.store;
	o.prefix = prefix;
	rc = tk_limiter_open(&l, policy, NULL, &o);
	if (rc == -ENOTSUP) {
		close_fixture();
		skip();
	}
	assert_rc(rc, 0);
	return l;
}

void store_api_kit_strategy_persists(void **state)
{
	struct tk_limiter *l;

	(void)state;
	l = persist_three(strategy_lim, "kit-count:5");
	assert_int_equal(take(l, S("k"), 2), 0);
	assert_admits(l, "k", 1, false);
	assert_int_equal(left(l, S("k")), 0);
	assert_int_equal(keys(), 1);
	tk_limiter_close(l);
	close_fixture();
}

void store_api_kit_strategy_isolates(void **state)
{
	struct tk_limiter *l, *q, *o, *g;

	(void)state;
	open_fixture();
	l = strategy_lim("kit-count:5", "p");
	take(l, S("a"), 2);
	take(l, S("b"), 1);
	assert_int_equal(left(l, S("a")), 3);
	assert_int_equal(left(l, S("b")), 4);
	q = strategy_lim("kit-count:5", "q");
	assert_int_equal(left(q, S("a")), 5);
	/* Another strategy, or an algorithm, on the same prefix and key
	 * starts afresh, and leaves kit-count's state as it was. */
	o = strategy_lim("kit-other:5", "p");
	assert_int_equal(take(o, S("a"), 1), 4);
	g = strategy_lim("fixed-window:5/1h", "p");
	assert_int_equal(take(g, S("a"), 1), 4);
	assert_int_equal(left(l, S("a")), 3);
	/* A new argument reads the same states. */
	tk_limiter_close(q);
	q = strategy_lim("kit-count:7", "p");
	assert_int_equal(left(q, S("a")), 5);
	tk_limiter_close(g);
	tk_limiter_close(o);
	tk_limiter_close(q);
	tk_limiter_close(l);
	close_fixture();
}

void store_api_kit_strategy_reset(void **state)
{
	(void)state;
	open_fixture();
	reset_one(strategy_lim("kit-count:5", "p"));
}

/* The state's TTL is exact on every store: its expiry travels with it,
 * by the limiter's clock, whatever the store's own clock. */
void store_api_kit_strategy_expires(void **state)
{
	struct tk_limiter *l;

	(void)state;
	open_fixture();
	l = strategy_lim("kit-count:5", "p");
	take(l, S("k"), 2);
	assert_rc(tk_clock_advance(fx.clock, 4 * SEC), 0);
	assert_int_equal(take(l, S("k"), 1), 2); /* from here, 10 s */
	assert_rc(tk_clock_advance(fx.clock, KIT_TTL - 1), 0);
	assert_int_equal(left(l, S("k")), 2);
	assert_rc(tk_clock_advance(fx.clock, 1), 0);
	assert_int_equal(left(l, S("k")), 5);
	assert_int_equal(take(l, S("k"), 1), 4);
	tk_limiter_close(l);
	close_fixture();
}

/* A check of "k" by @l that dimension @dim denies: its decision. */
static struct tk_decision denied_by(struct tk_limiter *l, uint32_t dim)
{
	struct tk_decision d;

	assert_rc(tk_limiter_check(l, S("k"), 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(d.dimension, dim);
	return d;
}

/* A strategy next to GCRA and a fixed window, whose states a policy of
 * theirs then reads (on Redis, the script, from what a transaction
 * wrote). */
static void beside_builtins(void)
{
	struct tk_limiter *l;
	struct tk_decision d;

	l = strategy_lim("all(gcra:3/1h,kit-count:2)", "c");
	assert_admits(l, "k", 1, true);
	assert_admits(l, "k", 1, true);
	/* kit-count denies: neither dimension consumes. */
	assert_int_equal(denied_by(l, 1).retry_after, KIT_TTL);
	tk_limiter_close(l);
	/* GCRA consumed nothing: one of its 3 left. */
	l = strategy_lim("all(gcra:3/1h,kit-count:3)", "c");
	assert_admits(l, "k", 1, true);
	tk_limiter_close(l);
	l = lim("all(gcra:3/1h,fixed-window:5/1h)", "c");
	denied_by(l, 0);
	tk_limiter_close(l);
	/* 2 of the window's 3 taken, then 1 more by the script's policy. */
	l = strategy_lim("all(fixed-window:3/1h,kit-count:2)", "w");
	assert_admits(l, "k", 1, true);
	assert_admits(l, "k", 1, true);
	assert_admits(l, "k", 1, false);
	tk_limiter_close(l);
	l = lim("all(fixed-window:3/1h,gcra:100/s)", "w");
	assert_rc(tk_limiter_check(l, S("k"), 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	denied_by(l, 0);
	tk_limiter_close(l);
	/* A quota: 1 of its 2 taken, then 1 more by the script's policy. */
	l = strategy_lim("any(quota:2/day,kit-count:0)", "q");
	assert_admits(l, "k", 1, true);
	tk_limiter_close(l);
	l = lim("all(quota:2/day,gcra:100/s)", "q");
	assert_admits(l, "k", 1, true);
	denied_by(l, 0);
	tk_limiter_close(l);
}

/*
 * all() and any() of strategies, and of a strategy next to GCRA and a
 * fixed window, whose states a policy of theirs then reads; a batch; a
 * reservation given back.
 */
void store_api_kit_strategy_composite(void **state)
{
	static const struct tk_request reqs[] = { { "k", 1, 1 },
						  { "j", 1, 1 },
						  { "k", 1, 1 } };
	struct tk_decision out[3];
	struct tk_reservation *res;
	struct tk_limiter *l;
	struct tk_decision d;

	(void)state;
	open_fixture();
	l = strategy_lim("any(kit-count:1,kit-other:2)", "y");
	assert_admits(l, "k", 1, true);
	assert_admits(l, "k", 1, true); /* kit-other alone */
	assert_admits(l, "k", 1, false);
	tk_limiter_close(l);
	l = strategy_lim("kit-count:5", "r");
	take(l, S("k"), 1);
	assert_rc(tk_limiter_reserve(l, S("k"), 2, &res, &d), 0);
	assert_int_equal(d.remaining, 2);
	assert_int_equal(tk_reservation_cancel(res), 1);
	tk_reservation_free(res);
	assert_int_equal(left(l, S("k")), 4);
	/* A batch (on Redis, each request alone, by its transaction). */
	assert_rc(tk_limiter_check_many(l, reqs, 3, out, NULL), 0);
	assert_int_equal(out[0].remaining, 3);
	assert_int_equal(out[1].remaining, 4);
	assert_int_equal(out[2].remaining, 2);
	tk_limiter_close(l);
	beside_builtins();
	close_fixture();
}

#define BIG (UINT64_C(1) << 40)

/* N threads x M checks of one key: the count is exactly N x M. */
void store_api_kit_strategy_threads_land(void **state)
{
	unsigned int nt = store_api_kit_target->threads, i;
	uint64_t total = (uint64_t)nt * store_api_kit_target->per_thread;
	pthread_t th[64];
	struct worker w[64];

	(void)state;
	open_fixture();
	assert_true(nt >= 2 && nt <= 64);
	for (i = 0; i < nt; i++) {
		w[i] = (struct worker){
			strategy_lim("kit-count:1099511627776", "t"),
			store_api_kit_target->per_thread, 0, 0, 0
		};
		assert_int_equal(
			pthread_create(&th[i], NULL, check_many, &w[i]), 0);
	}
	for (i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		if (w[i].errors)
			fail_msg("%u errors, the first %s", w[i].errors,
				 tk_strerrorname(w[i].error));
		assert_int_equal(w[i].allowed,
				 store_api_kit_target->per_thread);
	}
	assert_int_equal(left(w[0].l, S("hot")), BIG - total);
	for (i = 0; i < nt; i++)
		tk_limiter_close(w[i].l);
	close_fixture();
}

/* N processes x M checks of one key: the count is exactly N x M. */
void store_api_kit_strategy_processes_land(void **state)
{
	uint64_t total = (uint64_t)store_api_kit_target->processes *
			 store_api_kit_target->per_process;
	struct kit_shared *sh = kit_shared();

	(void)state;
	if (!store_api_kit_target->shared)
		skip();
	open_fixture();
	assert_non_null(sh);
	kit_shared_reset(T0);
	shared_limiter = strategy_lim("kit-count:1099511627776", "n");
	assert_int_equal(left(shared_limiter, S("hot")), BIG);
	kit_run_workers((int)store_api_kit_target->processes, process_checks);
	assert_int_equal(atomic_load(&sh->errors), 0);
	assert_int_equal(atomic_load(&sh->allowed), total);
	assert_int_equal(left(shared_limiter, S("hot")), BIG - total);
	tk_limiter_close(shared_limiter);
	close_fixture();
}
