/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gcra.c - the Generic Cell Rate Algorithm (the default policy), and the
 * token bucket, which is the same algorithm spelled differently.
 *
 * One word of state: the theoretical arrival time (TAT), in ns since the
 * epoch; 0 for a key never seen.  A unit costs T = floor(P / L) ns of
 * "emission interval"; a burst of B units is the tolerance tau = T * B.
 * A request of @cost units is admitted iff now >= max(TAT, now) + T * cost
 * - tau (allow on equality), and then the TAT moves to that new value.
 * Taking max(TAT, now) makes a backward clock step harmless: a TAT
 * stamped in the future still counts in full, so the key never admits
 * more than if the clock had stood still.  A denial writes nothing.
 *
 * A token bucket of capacity C refilled with R tokens per P starts full
 * and refills one token every floor(P / R) ns: decision for decision it is
 * gcra:R/P,burst=C, so it stores its state as a TAT too.
 *
 * Overflow: parsing bounds tau by 2^62 ns and cost by the burst, and
 * clock readings are below 2^63, so a TAT this policy writes is below
 * 2^63 + tau (valid() holds every state it reads to that) and every sum
 * below stays under 2^64.  A TAT may stand more than 2^63 ns after now
 * (written near 2^63, read after a step back to 0), so differences are
 * compared before they are subtracted, never taken as signed.
 *
 * References: ITU-T I.371 (the virtual scheduling algorithm).
 */
#include "algo/algo.h"
#include "algo/gcra.h"
#include "parse.h"

#include <errno.h>

#define TAU_MAX TK__GCRA_TAU_MAX

int tk__gcra_init(struct tk__policy *p, uint64_t limit, uint64_t period,
		  uint64_t burst)
{
	uint64_t t;

	if (limit == 0 || period == 0 || burst == 0)
		return -EINVAL;
	t = period / limit;
	if (t < 1 || burst > TAU_MAX / t)
		return -EINVAL;
	p->state_words = 1;
	p->word_is_expiry = 1;
	p->limit = burst;
	p->u.gcra.rate = limit;
	p->u.gcra.period = period;
	p->u.gcra.t = t;
	p->u.gcra.tau = t * burst;
	tk__udiv_init(&p->u.gcra.per_t, t);
	return 0;
}

static int gcra_parse(struct tk__policy *p, struct tk__parser *ps)
{
	uint64_t limit, period, burst = 0;
	size_t start = ps->pos, at;
	const char *name;
	size_t len;
	int rc;

	rc = tk__parse_rate(ps, &limit, &period);
	if (rc)
		return rc;
	while ((rc = tk__parse_option(ps, 0, &name, &len)) == 1) {
		at = ps->pos - len - 1;
		if (!tk__option_is(name, len, "burst") || burst)
			return tk__parse_fail(ps, at, "one option burst=B");
		rc = tk__parse_uint(ps, &burst);
		if (rc)
			return rc;
		if (burst == 0)
			return tk__parse_fail(ps, at + len + 1,
					      "a burst of at least 1");
	}
	if (rc)
		return rc;
	if (tk__gcra_init(p, limit, period, burst ? burst : limit))
		return tk__parse_fail(ps, start,
				      "a positive rate of at most 1 per ns, "
				      "burst tolerance below 2^62 ns");
	return 0;
}

static void gcra_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "gcra:%llu/", (unsigned long long)p->u.gcra.rate);
	tk__fmt_duration(f, p->u.gcra.period);
	if (p->limit != p->u.gcra.rate)
		tk__fmt(f, ",burst=%llu", (unsigned long long)p->limit);
}

/* token-bucket:capacity=C,refill=R/P, options in any order, both needed. */
static int bucket_parse(struct tk__policy *p, struct tk__parser *ps)
{
	uint64_t capacity = 0, rate = 0, period = 0;
	size_t start = ps->pos, at;
	const char *name;
	size_t len;
	int rc;

	while ((rc = tk__parse_option(ps, ps->pos == start, &name, &len)) ==
	       1) {
		at = ps->pos - len - 1;
		if (tk__option_is(name, len, "capacity") && !capacity) {
			rc = tk__parse_uint(ps, &capacity);
			if (!rc && capacity == 0)
				return tk__parse_fail(
					ps, at, "a capacity of at least 1");
		} else if (tk__option_is(name, len, "refill") && !rate) {
			rc = tk__parse_rate(ps, &rate, &period);
			if (!rc && rate == 0)
				return tk__parse_fail(ps, at,
						      "a refill of at least 1");
		} else {
			return tk__parse_fail(
				ps, at, "one each of capacity= and refill=");
		}
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	if (!capacity || !rate)
		return tk__parse_fail(ps, start, "capacity=C,refill=R/P");
	if (tk__gcra_init(p, rate, period, capacity))
		return tk__parse_fail(ps, start,
				      "a refill of at most 1 per ns, "
				      "capacity below 2^62 ns of refill");
	return 0;
}

static void bucket_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "token-bucket:capacity=%llu,refill=%llu/",
		(unsigned long long)p->limit,
		(unsigned long long)p->u.gcra.rate);
	tk__fmt_duration(f, p->u.gcra.period);
}

static int gcra_check(const struct tk__policy *p, const uint64_t *state,
		      uint64_t now, uint64_t cost, uint64_t *next,
		      struct tk_decision *d)
{
	return tk__gcra_check(p, state, now, cost, next, d);
}

static int gcra_forecast(const struct tk__policy *p, const uint64_t *state,
			 uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t tat, allow_at;

	if (cost > p->limit)
		return -ERANGE;
	tat = tk__gcra_current_tat(state, now);
	allow_at = tat + p->u.gcra.t * (cost ? cost : 1);
	allow_at = allow_at > p->u.gcra.tau ? allow_at - p->u.gcra.tau : 0;
	d->limit = p->limit;
	d->remaining = tk__gcra_units_left(p, tat, now);
	d->reset_at = tat;
	d->retry_after = allow_at > now ? allow_at - now : 0;
	d->allowed = d->retry_after == 0;
	return TK__KEEP;
}

/* From the TAT on, the key is as good as never seen. */
static uint64_t gcra_expires(const struct tk__policy *p, const uint64_t *state)
{
	(void)p;
	return tk__gcra_expires(state);
}

static int gcra_valid(const struct tk__policy *p, uint32_t words,
		      const uint64_t *state)
{
	return tk__gcra_valid(p, words, state);
}

const struct tk__algorithm tk__gcra = {
	.name = "gcra",
	.id = TK__ALG_GCRA,
	.parse = gcra_parse,
	.format = gcra_format,
	.check = gcra_check,
	.forecast = gcra_forecast,
	.expires = gcra_expires,
	.valid = gcra_valid,
};

const struct tk__algorithm tk__token_bucket = {
	.name = "token-bucket",
	.id = TK__ALG_TOKEN_BUCKET,
	.parse = bucket_parse,
	.format = bucket_format,
	.check = gcra_check,
	.forecast = gcra_forecast,
	.expires = gcra_expires,
	.valid = gcra_valid,
};
