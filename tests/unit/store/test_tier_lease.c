/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tier_lease.c - the two-tier lease's transitions
 * (lib/store/tier-lease.c) as pure functions, run here on a word and a
 * block as the zone would: one claim per host, and a lease granted to a
 * claim that timed out and was taken over adds no credit; cached denials
 * by cost; the credit word's expiry, rounded down, and its reset_at,
 * rounded up; leases too short-lived to take; a cold lease's size halved;
 * what is left of a lease joins the next only if both end together;
 * an expired lease's credit taken off once, to give back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "algo/policy.h"
#include "store/tier.h"

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)
#define MS UINT64_C(1000000)

/* One host's lease of one key: its word (0: none) and its block. */
struct host {
	uint64_t word;
	uint64_t block[TK__LEASE_WORDS];
	int has_block;
	struct tk__tier_cfg cfg;
	struct tk_policy *pol;
};

static void host_init(struct host *h, const char *policy, uint64_t lease_max)
{
	memset(h, 0, sizeof(*h));
	h->cfg.lease_max = lease_max;
	assert_int_equal(tk__policy_parse(&h->pol, policy, NULL), 0);
}

static void host_free(struct host *h)
{
	tk_policy_free(h->pol);
	h->pol = NULL;
}

/* @fn on the word (@word) or the block, as the zone's apply() runs it. */
static int run(struct host *h, int word, struct tk__lease_call *c)
{
	uint64_t next[TK__LEASE_WORDS], exp = 0;
	int rc;

	c->p = &h->pol->dim[0];
	c->cfg = &h->cfg;
	if (word) {
		rc = tk__credit_fn(c, h->word ? &h->word : NULL, next, &exp);
		if (rc == TK__PERSIST)
			h->word = next[0];
	} else {
		rc = tk__lease_fn(c, h->has_block ? h->block : NULL, next,
				  &exp);
		if (rc == TK__PERSIST) {
			memcpy(h->block, next, sizeof(h->block));
			h->has_block = 1;
		}
	}
	if (rc == TK__PERSIST)
		assert_true(exp >= c->now);
	return rc;
}

/* A check's TAKE: the word, then the block where the word says no. */
static enum tk__lease_way take(struct host *h, uint64_t now, uint64_t cost,
			       uint64_t token, struct tk__lease_call *c)
{
	*c = (struct tk__lease_call){
		.op = TK__LEASE_TAKE, .now = now, .cost = cost, .token = token
	};
	run(h, 1, c);
	if (c->way != TK__LEASE_ALLOW)
		run(h, 0, c);
	return c->way;
}

/* Redis's answer for @k units, to the block then the word. */
static void done(struct host *h, uint64_t now, uint64_t cost, uint64_t k,
		 uint64_t token, int allowed, uint64_t remaining,
		 uint64_t reset_at, uint64_t retry_after)
{
	struct tk__lease_call c = { .op = TK__LEASE_DONE,
				    .now = now,
				    .cost = cost,
				    .token = token,
				    .k = k,
				    .at = now };

	c.got.allowed = allowed;
	c.got.remaining = remaining;
	c.got.reset_at = reset_at;
	c.got.retry_after = retry_after;
	c.expiry = tk__lease_expiry(&h->pol->dim[0], now, &c.got);
	run(h, 0, &c);
	run(h, 1, &c);
	if (c.grant) {
		c.op = TK__LEASE_RELEASE;
		run(h, 0, &c);
	}
}

/* The units a host's credit admits at @now, checked one by one (on the
 * word alone: no claim when it is spent). */
static uint64_t drain(struct host *h, uint64_t now)
{
	struct tk__lease_call c = { .op = TK__LEASE_TAKE,
				    .now = now,
				    .cost = 1 };
	uint64_t n = 0;

	while (run(h, 1, &c) == TK__PERSIST && c.way == TK__LEASE_ALLOW)
		n++;
	return n;
}

static void test_one_claim(void **state)
{
	const uint64_t end = T0 + 10 * SEC; /* the window's */
	struct tk__lease_call a, b;
	struct host h;

	(void)state;
	host_init(&h, "fixed-window:1000/10s", 64);
	/* An exact check taught the block the remaining: 990. */
	assert_int_equal(take(&h, T0, 1, 7, &a), TK__LEASE_EXACT);
	done(&h, T0, 1, 1, 0, 1, 990, end, 0);
	assert_int_equal(take(&h, T0, 1, 0xa, &a), TK__LEASE_CLAIM);
	assert_int_equal(a.k, 2);
	/* While A holds the claim, B goes to Redis for its own cost. */
	assert_int_equal(take(&h, T0 + 1, 1, 0xb, &b), TK__LEASE_EXACT);
	/* A's claim timed out: B claims; then A's lease arrives late. */
	assert_int_equal(take(&h, T0 + SEC + 1, 1, 0xb, &b), TK__LEASE_CLAIM);
	done(&h, T0 + SEC + 2, 1, a.k, 0xa, 1, 980, end, 0);
	assert_int_equal(drain(&h, T0 + SEC + 3), 0);
	done(&h, T0 + SEC + 4, 1, b.k, 0xb, 1, 978, end, 0);
	assert_int_equal(drain(&h, T0 + SEC + 5), b.k - 1);
	host_free(&h);
}

/*
 * A granted lease keeps its claim until its credit is on the word and
 * the claimant releases it: a check between finds the word empty and
 * the claim held, and goes to Redis for its own cost (it would claim a
 * second lease, whose credit the cap would drop); a RELEASE of
 * another token changes nothing; Redis failing releases at once.
 */
static void test_landing_holds_the_claim(void **state)
{
	const uint64_t end = T0 + 10 * SEC;
	struct tk__lease_call a, b, got = { .op = TK__LEASE_DONE };
	struct host h;

	(void)state;
	host_init(&h, "fixed-window:1000/10s", 64);
	h.cfg.lease = 16;
	assert_int_equal(take(&h, T0, 1, 0xa, &a), TK__LEASE_CLAIM);
	got = (struct tk__lease_call){ .op = TK__LEASE_DONE,
				       .now = T0,
				       .cost = 1,
				       .token = 0xa,
				       .k = 16,
				       .at = T0 };
	got.got.allowed = 1;
	got.got.remaining = 984;
	got.got.reset_at = end;
	got.expiry = end;
	run(&h, 0, &got);
	assert_true(got.grant);
	assert_int_equal(take(&h, T0 + 1, 1, 0xb, &b), TK__LEASE_EXACT);
	run(&h, 1, &got);
	got.op = TK__LEASE_RELEASE;
	got.token = 0xb;
	run(&h, 0, &got);
	assert_int_equal(drain(&h, T0 + 2), 15);
	assert_int_equal(take(&h, T0 + 3, 1, 0xb, &b), TK__LEASE_EXACT);
	got.token = 0xa;
	run(&h, 0, &got);
	assert_int_equal(take(&h, T0 + 4, 1, 0xb, &b), TK__LEASE_CLAIM);
	/* Redis failed: released at once. */
	b.op = TK__LEASE_FAIL;
	run(&h, 0, &b);
	assert_int_equal(take(&h, T0 + 5, 1, 0xc, &b), TK__LEASE_CLAIM);
	host_free(&h);
}

static void test_denial_by_cost(void **state)
{
	struct tk__lease_call c;
	struct host h;

	(void)state;
	host_init(&h, "fixed-window:10/10s", 0);
	take(&h, T0, 5, 0, &c);
	done(&h, T0, 5, 5, 0, 0, 2, T0 + 10 * SEC, 10 * SEC);
	assert_int_equal(take(&h, T0 + SEC, 5, 0, &c), TK__LEASE_DENY);
	assert_int_equal(c.d.retry_after, 9 * SEC);
	assert_int_equal(c.d.remaining, 2);
	assert_int_equal(take(&h, T0 + SEC, 6, 0, &c), TK__LEASE_DENY);
	assert_int_equal(take(&h, T0 + SEC, 4, 0, &c), TK__LEASE_EXACT);
	assert_int_equal(take(&h, T0 + 10 * SEC, 5, 0, &c), TK__LEASE_EXACT);
	host_free(&h);
}

/* A window's lease: valid to its end rounded down to 2^24 ns, and the
 * decisions' reset_at that end rounded up. */
static void test_word_expiry(void **state)
{
	const uint64_t end = T0 + 10 * SEC + 12345, slack = TK__WORD_SLACK;
	struct tk__lease_call c;
	struct host h;

	(void)state;
	host_init(&h, "fixed-window:1000/10s", 64);
	done(&h, T0, 1, 1, 0, 1, 999, end, 0);
	assert_int_equal(take(&h, T0, 1, 0xa, &c), TK__LEASE_CLAIM);
	done(&h, T0, 1, c.k, 0xa, 1, 997, end, 0);
	assert_int_equal(take(&h, (end & ~slack) - 1, 1, 0, &c),
			 TK__LEASE_ALLOW);
	assert_int_equal(c.d.reset_at, end | slack);
	assert_true(c.d.remaining <= 997 && c.d.remaining * 2 > 997);
	assert_int_not_equal(take(&h, end & ~slack, 1, 0, &c), TK__LEASE_ALLOW);
	host_free(&h);
}

/* A GCRA of a 10 ms period: a lease would die at once; none is taken. */
static void test_short_lived(void **state)
{
	struct tk__lease_call c;
	struct host h;

	(void)state;
	host_init(&h, "gcra:1000/10ms", 64);
	done(&h, T0, 1, 1, 0, 1, 999, T0, 0);
	assert_int_equal(take(&h, T0, 1, 0xa, &c), TK__LEASE_EXACT);
	host_free(&h);
	host_init(&h, "gcra:1000/100ms", 64);
	done(&h, T0, 1, 1, 0, 1, 999, T0, 0);
	assert_int_equal(take(&h, T0, 1, 0xa, &c), TK__LEASE_CLAIM);
	host_free(&h);
	/* A window's last 33 ms: no lease either. */
	host_init(&h, "fixed-window:1000/10s", 64);
	done(&h, T0, 1, 1, 0, 1, 999, T0 + 10 * SEC, 0);
	assert_int_equal(take(&h, T0 + 10 * SEC - 20 * MS, 1, 0xa, &c),
			 TK__LEASE_EXACT);
	assert_int_equal(take(&h, T0 + 10 * SEC - 40 * MS, 1, 0xa, &c),
			 TK__LEASE_CLAIM);
	host_free(&h);
}

/* Hot leases double; one that expired mostly unused halves the next. */
static void test_sizes(void **state)
{
	struct tk__lease_call c;
	struct host h;
	uint64_t now = T0, k = 0;
	int i;

	(void)state;
	host_init(&h, "gcra:100000/s", 64);
	done(&h, now, 1, 1, 0, 1, 99999, now, 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(take(&h, now, 1, 0xa, &c), TK__LEASE_CLAIM);
		k = c.k;
		done(&h, now, 1, k, 0xa, 1, 90000, now, 0);
		assert_int_equal(drain(&h, now), k - 1);
	}
	assert_int_equal(k, 64);
	/* The last lease of 64, one unit used, then expired. */
	assert_int_equal(take(&h, now, 1, 0xa, &c), TK__LEASE_CLAIM);
	done(&h, now, 1, 64, 0xa, 1, 90000, now, 0);
	assert_int_equal(take(&h, now + 2 * SEC, 1, 0xa, &c), TK__LEASE_CLAIM);
	assert_int_equal(c.k, 32);
	/* Near the limit: at most an eighth of the remaining. */
	done(&h, now + 2 * SEC, 1, 32, 0xa, 1, 80, now, 0);
	drain(&h, now + 2 * SEC);
	assert_int_equal(take(&h, now + 2 * SEC, 1, 0xa, &c), TK__LEASE_CLAIM);
	assert_int_equal(c.k, 10);
	host_free(&h);
}

/*
 * A refill's lease joins what is left only of a lease that ends at the
 * same time (a window's); a GCRA's next lease ends later, and what was
 * left of the last one (less than the check's cost) is dropped.
 */
static void test_join(void **state)
{
	struct tk__lease_call c;
	struct host h;

	(void)state;
	host_init(&h, "gcra:100000/s", 0);
	h.cfg.lease = 4;
	done(&h, T0, 1, 1, 0, 1, 99999, T0, 0);
	assert_int_equal(take(&h, T0, 1, 0xa, &c), TK__LEASE_CLAIM);
	done(&h, T0, 1, 4, 0xa, 1, 99995, T0, 0);
	assert_int_equal(take(&h, T0, 2, 0, &c), TK__LEASE_ALLOW);
	/* 20 ms on: the next lease ends in another 2^24 ns. */
	assert_int_equal(take(&h, T0 + 20 * MS, 2, 0xb, &c), TK__LEASE_CLAIM);
	done(&h, T0 + 20 * MS, 2, 4, 0xb, 1, 99991, T0, 0);
	assert_int_equal(drain(&h, T0 + 20 * MS), 2);
	host_free(&h);
	host_init(&h, "fixed-window:1000/10s", 0);
	h.cfg.lease = 4;
	done(&h, T0, 1, 1, 0, 1, 999, T0 + 10 * SEC, 0);
	assert_int_equal(take(&h, T0, 1, 0xa, &c), TK__LEASE_CLAIM);
	done(&h, T0, 1, 4, 0xa, 1, 995, T0 + 10 * SEC, 0);
	assert_int_equal(take(&h, T0, 2, 0, &c), TK__LEASE_ALLOW);
	assert_int_equal(take(&h, T0 + MS, 2, 0xb, &c), TK__LEASE_CLAIM);
	done(&h, T0 + MS, 2, 4, 0xb, 1, 991, T0 + 10 * SEC, 0);
	/* Another claim while credit is there (its process read the word
	 * before this lease landed): never more than one lease's credit. */
	c = (struct tk__lease_call){
		.op = TK__LEASE_TAKE, .now = T0 + MS, .cost = 1, .token = 0xc
	};
	run(&h, 0, &c);
	assert_int_equal(c.way, TK__LEASE_CLAIM);
	done(&h, T0 + MS, 1, 4, 0xc, 1, 987, T0 + 10 * SEC, 0);
	assert_int_equal(drain(&h, T0 + MS), 4);
	host_free(&h);
}

/* @policy's host, a lease of 10 granted at @at to claim 0xa, 3 used. */
static void leased(struct host *h, const char *policy, uint64_t at)
{
	struct tk__lease_call c;

	host_init(h, policy, 0);
	h->cfg.lease = 10;
	done(h, at, 1, 1, 0, 1, 999, at + 10 * SEC, 0);
	assert_int_equal(take(h, at, 1, 0xa, &c), TK__LEASE_CLAIM);
	done(h, at, 1, 10, 0xa, 1, 989, at + 10 * SEC, 0);
	assert_int_equal(take(h, at, 1, 0, &c), TK__LEASE_ALLOW);
	assert_int_equal(take(h, at, 1, 0, &c), TK__LEASE_ALLOW);
}

/*
 * An expired lease's unused credit: a sliding log's or window's taken
 * off the word by one TAKE, with the time Redis decided its lease at;
 * the next finds none.  A GCRA's and a fixed window's are left (dropped).
 * Two leases that end alike leave no time to give back by.
 */
static void test_return(void **state)
{
	const char *policies[] = { "sliding-log:500/10s",
				   "sliding-window:1000/10s", "gcra:1000/s",
				   "fixed-window:1000/1s" };
	/* A time whose lease of a second ends on a multiple of 2^24 ns. */
	const uint64_t t = ((T0 + SEC) | 0xffffff) + 1 - SEC;
	struct tk__lease_call c;
	struct host h;
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++) {
		leased(&h, policies[i], t);
		take(&h, t + SEC, 1, 0, &c);
		assert_int_equal(c.ret, i < 2 ? 7 : 0);
		assert_int_equal(c.ret_at, i < 2 ? t : 0);
		take(&h, t + SEC, 1, 0, &c);
		assert_int_equal(c.ret, 0);
		host_free(&h);
	}
	leased(&h, "sliding-log:500/10s", t);
	assert_int_equal(drain(&h, t + MS), 7);
	assert_int_equal(take(&h, t + MS, 1, 0xb, &c), TK__LEASE_CLAIM);
	done(&h, t + MS, 1, 10, 0xb, 1, 979, t + 10 * SEC, 0);
	take(&h, t + SEC + 2 * MS, 1, 0, &c);
	assert_true(c.ret == 9 && c.ret_at == 0);
	host_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_claim),
		cmocka_unit_test(test_landing_holds_the_claim),
		cmocka_unit_test(test_denial_by_cost),
		cmocka_unit_test(test_word_expiry),
		cmocka_unit_test(test_short_lived),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_return),
	};

	return cmocka_run_group_tests_name("two-tier lease", tests, NULL, NULL);
}
