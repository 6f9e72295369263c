/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sliding-log.c - the exact sliding window: one timestamp per admitted
 * unit.  A unit stamped t counts while now < t + W.
 *
 * State: word 0 holds n, the number of stamps; words 1..n the stamps in
 * ascending order.  The state is as large as the limit, so the limit is
 * bounded (LIMIT_MAX units, 4 KiB of state); larger limits want the
 * sliding window.  Stamps later than now (the clock stepped back) stay
 * live, and new stamps are inserted in order, so nothing counted is
 * forgotten early.  A write keeps only the stamps live at now: those
 * that count nothing any more are gone for good.
 *
 * Overflow: stamps are clock readings, below 2^63, and W is at most
 * 2^62, so t + W never wraps; valid() holds every state read to that.
 */
#include "algo/algo.h"
#include "clock.h"
#include "parse.h"

#include <errno.h>

#define LIMIT_MAX 512

/* Index of the oldest live stamp: earlier ones have left the window. */
static uint64_t first_live(const struct tk__policy *p, const uint64_t *state,
			   uint64_t now)
{
	uint64_t n = state[0], i;

	for (i = 0; i < n; i++)
		if (state[1 + i] + p->u.window.window > now)
			break;
	return i;
}

/* ns until the oldest @k live stamps have left; at least 1. */
static uint64_t wait_for(const struct tk__policy *p, const uint64_t *state,
			 uint64_t live, uint64_t k, uint64_t now)
{
	uint64_t leaves = state[1 + live + k - 1] + p->u.window.window;

	return leaves > now + 1 ? leaves - now : 1;
}

static int sl_check(const struct tk__policy *p, const uint64_t *state,
		    uint64_t now, uint64_t cost, uint64_t *next,
		    struct tk_decision *d)
{
	uint64_t n = state[0], live, count, i, j;

	if (cost > p->limit)
		return -ERANGE;
	live = first_live(p, state, now);
	count = n - live;
	d->limit = p->limit;
	if (count + cost > p->limit) {
		d->allowed = false;
		d->remaining = p->limit - count;
		d->retry_after =
			wait_for(p, state, live, count + cost - p->limit, now);
		d->reset_at = state[1 + live] + p->u.window.window;
		return TK__KEEP;
	}
	/* Copy the live stamps, inserting cost stamps of now in order. */
	for (i = live, j = 1; i < n && state[1 + i] <= now; i++)
		next[j++] = state[1 + i];
	for (; j < 1 + (i - live) + cost; j++)
		next[j] = now;
	for (; i < n; i++)
		next[j++] = state[1 + i];
	next[0] = count + cost;
	d->allowed = true;
	d->remaining = p->limit - count - cost;
	d->retry_after = 0;
	d->reset_at = next[1] + p->u.window.window;
	return TK__PERSIST;
}

static int sl_forecast(const struct tk__policy *p, const uint64_t *state,
		       uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t n = state[0], live, count, need = cost ? cost : 1;

	if (cost > p->limit)
		return -ERANGE;
	live = first_live(p, state, now);
	count = n - live;
	d->limit = p->limit;
	d->remaining = p->limit - count;
	d->allowed = count + need <= p->limit;
	d->retry_after = d->allowed ? 0
				    : wait_for(p, state, live,
					       count + need - p->limit, now);
	d->reset_at = count ? state[1 + live] + p->u.window.window : now;
	return TK__KEEP;
}

static uint64_t sl_expires(const struct tk__policy *p, const uint64_t *state)
{
	return state[0] ? state[state[0]] + p->u.window.window : 0;
}

/* At most L stamps in words 1..n, ascending, each a clock reading. */
static int sl_valid(const struct tk__policy *p, uint32_t words,
		    const uint64_t *state)
{
	uint64_t n = state[0], i;

	if (words < 2 || words > 1 + LIMIT_MAX ||
	    (p && words != p->state_words) || n > words - 1)
		return 0;
	for (i = 1; i <= n; i++)
		if (state[i] >= TK__NOW_LIMIT ||
		    (i > 1 && state[i] < state[i - 1]))
			return 0;
	return 1;
}

static int sl_parse(struct tk__policy *p, struct tk__parser *ps)
{
	uint64_t limit, window;
	int rc;

	rc = tk__parse_window(ps, LIMIT_MAX,
			      "a limit of 1 to 512 and a window of 1 ns to "
			      "2^62 ns",
			      &limit, &window);
	if (rc)
		return rc;
	p->state_words = 1 + (uint32_t)limit;
	p->limit = limit;
	p->u.window.window = window;
	return 0;
}

static void sl_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "sliding-log:%llu/", (unsigned long long)p->limit);
	tk__fmt_duration(f, p->u.window.window);
}

/*
 * The log's length, L: its stamps are absolute, so a log of another
 * window reads them as its own (each counts while now < t + W).
 */
static size_t sl_layout(const struct tk__policy *p, unsigned char *buf)
{
	buf[0] = (unsigned char)(p->limit >> 8);
	buf[1] = (unsigned char)p->limit;
	return 2;
}

const struct tk__algorithm tk__sliding_log = {
	.name = "sliding-log",
	.id = TK__ALG_SLIDING_LOG,
	.parse = sl_parse,
	.format = sl_format,
	.check = sl_check,
	.forecast = sl_forecast,
	.expires = sl_expires,
	.valid = sl_valid,
	.layout = sl_layout,
};
