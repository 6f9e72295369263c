/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * leaky.c - the leaky-bucket shaper: it delays instead of denying.
 *
 * Requests leave at a steady rate, one unit every T = floor(P / R) ns.
 * State: the departure time of the next request (ns; 0 for a key never
 * seen).  A request's departure is max(state, now); it waits delay =
 * departure - now and is accepted iff delay <= Q (max-queue), then the
 * next departure moves T * cost later.  A rejected request changes
 * nothing and is told to retry after delay - Q.
 *
 * Decision fields: allowed = accepted, .delay = the wait, limit = the
 * requests of one unit an idle key accepts at once (floor(Q / T) + 1),
 * remaining = how many more of those it would accept now, reset_at = when
 * the queue will be empty.
 *
 * Overflow: an accepted departure is at most now + Q < 2^63 + 2^62, and
 * T * cost is at most 2^62, so a new state is below 2^64; a state read
 * back may lie anywhere after now (the clock stepped back), and only its
 * difference to now is ever formed.
 */
#include "algo/algo.h"
#include "clock.h"
#include "parse.h"

#include <errno.h>

#define SPAN_MAX (UINT64_C(1) << 62)

static int leaky_parse(struct tk__policy *p, struct tk__parser *ps)
{
	uint64_t rate, period, queue = 0;
	size_t start = ps->pos, at;
	int seen = 0, rc;
	const char *name;
	size_t len;

	rc = tk__parse_rate(ps, &rate, &period);
	if (rc)
		return rc;
	while ((rc = tk__parse_option(ps, 0, &name, &len)) == 1) {
		at = ps->pos - len - 1;
		if (!tk__option_is(name, len, "max-queue") || seen++)
			return tk__parse_fail(ps, at,
					      "one option max-queue=DURATION");
		rc = tk__parse_duration(ps, &queue);
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	if (rate == 0 || period / rate < 1 || period / rate > SPAN_MAX ||
	    queue > SPAN_MAX)
		return tk__parse_fail(ps, start,
				      "one unit per 1 ns to 2^62 ns and a "
				      "queue of at most 2^62 ns");
	p->state_words = 1;
	p->word_is_expiry = 1;
	p->u.leaky.rate = rate;
	p->u.leaky.period = period;
	p->u.leaky.t = period / rate;
	p->u.leaky.max_queue = queue;
	p->limit = queue / p->u.leaky.t + 1;
	return 0;
}

static void leaky_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "leaky:%llu/", (unsigned long long)p->u.leaky.rate);
	tk__fmt_duration(f, p->u.leaky.period);
	if (p->u.leaky.max_queue) {
		tk__fmt(f, ",max-queue=");
		tk__fmt_duration(f, p->u.leaky.max_queue);
	}
}

/* Units of one that a queue ending @wait ns from now still accepts. */
static uint64_t room(const struct tk__policy *p, uint64_t wait)
{
	if (wait > p->u.leaky.max_queue)
		return 0;
	return (p->u.leaky.max_queue - wait) / p->u.leaky.t + 1;
}

static int leaky_forecast(const struct tk__policy *p, const uint64_t *state,
			  uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t departure = state[0] > now ? state[0] : now;
	uint64_t delay = departure - now;

	if (cost > SPAN_MAX / p->u.leaky.t)
		return -ERANGE;
	d->limit = p->limit;
	d->allowed = delay <= p->u.leaky.max_queue;
	d->delay = d->allowed ? delay : 0;
	d->retry_after = d->allowed ? 0 : delay - p->u.leaky.max_queue;
	d->remaining = room(p, delay);
	d->reset_at = departure;
	return TK__KEEP;
}

static int leaky_check(const struct tk__policy *p, const uint64_t *state,
		       uint64_t now, uint64_t cost, uint64_t *next,
		       struct tk_decision *d)
{
	int rc = leaky_forecast(p, state, now, cost, d);

	if (rc < 0 || !d->allowed)
		return rc;
	next[0] = now + d->delay + p->u.leaky.t * cost;
	d->remaining = room(p, next[0] - now);
	d->reset_at = next[0];
	return TK__PERSIST;
}

static uint64_t leaky_expires(const struct tk__policy *p, const uint64_t *state)
{
	(void)p;
	return state[0];
}

/* A departure is written only while the queue holds at most Q, and one
 * request adds at most T * floor(2^62 / T) ns (leaky_forecast). */
static int leaky_valid(const struct tk__policy *p, uint32_t words,
		       const uint64_t *state)
{
	uint64_t t, span;

	if (words != 1)
		return 0;
	if (!p)
		return 1; /* (2^63 - 1) + 2^62 + 2^62: any word */
	t = p->u.leaky.t;
	span = p->u.leaky.max_queue + SPAN_MAX / t * t;
	return state[0] < TK__NOW_LIMIT || state[0] - TK__NOW_LIMIT < span;
}

const struct tk__algorithm tk__leaky = {
	.name = "leaky",
	.id = TK__ALG_LEAKY,
	.parse = leaky_parse,
	.format = leaky_format,
	.check = leaky_check,
	.forecast = leaky_forecast,
	.expires = leaky_expires,
	.valid = leaky_valid,
};
