/*
 * fixed-window.c - epoch-aligned fixed windows, and the window counting
 * that calendar quotas share.
 *
 * State: {start of the window the count belongs to (ns), count}.  At now
 * the window is ws = floor(now / W) * W, but a state stamped with a later
 * window (the clock stepped back) keeps counting in that later window:
 * start' = max(ws, state.start), so a backward step never opens a fresh
 * window early.  Allow on equality (count + cost == L).
 */
#include "internal.h"
#include "parse.h"

#include <errno.h>

/* count + cost stays below 2^63: no wrap. */
#define LIMIT_MAX (UINT64_C(1) << 62)

/* Units counted in [start, end) from @state. */
static uint64_t counted(const uint64_t *state, uint64_t start)
{
	return state[0] == start ? state[1] : 0;
}

int tk__window_check(uint64_t limit, const uint64_t *state, uint64_t start,
		     uint64_t end, uint64_t now, uint64_t cost, uint64_t *next,
		     struct tk_decision *d)
{
	uint64_t count = counted(state, start);

	if (cost > limit)
		return -ERANGE;
	d->limit = limit;
	d->reset_at = end;
	if (count + cost <= limit) {
		d->allowed = true;
		d->remaining = limit - count - cost;
		d->retry_after = 0;
		next[0] = start;
		next[1] = count + cost;
		return TK__PERSIST;
	}
	d->allowed = false;
	d->remaining = limit - count;
	d->retry_after = end - now;
	return TK__KEEP;
}

int tk__window_forecast(uint64_t limit, const uint64_t *state, uint64_t start,
			uint64_t end, uint64_t now, uint64_t cost,
			struct tk_decision *d)
{
	uint64_t count = counted(state, start);

	if (cost > limit)
		return -ERANGE;
	d->limit = limit;
	d->reset_at = end;
	d->remaining = limit - count;
	d->allowed = count + (cost ? cost : 1) <= limit;
	d->retry_after = d->allowed ? 0 : end - now;
	return TK__KEEP;
}

static int fw_parse(struct tk__policy *p, struct tk__parser *ps)
{
	uint64_t limit, window;
	int rc;

	rc = tk__parse_window(ps, LIMIT_MAX,
			      "a limit of 1 to 2^62 and a window of 1 ns to "
			      "2^62 ns",
			      &limit, &window);
	if (rc)
		return rc;
	p->state_words = 2;
	p->limit = limit;
	p->u.window.window = window;
	return 0;
}

static void fw_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "fixed-window:%llu/", (unsigned long long)p->limit);
	tk__fmt_duration(f, p->u.window.window);
}

static uint64_t window_start(const struct tk__policy *p, const uint64_t *state,
			     uint64_t now)
{
	uint64_t ws = now - now % p->u.window.window;

	return state[0] > ws ? state[0] : ws;
}

static int fw_check(const struct tk__policy *p, const uint64_t *state,
		    uint64_t now, uint64_t cost, uint64_t *next,
		    struct tk_decision *d)
{
	uint64_t start = window_start(p, state, now);

	return tk__window_check(p->limit, state, start,
				start + p->u.window.window, now, cost, next, d);
}

static int fw_forecast(const struct tk__policy *p, const uint64_t *state,
		       uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t start = window_start(p, state, now);

	return tk__window_forecast(p->limit, state, start,
				   start + p->u.window.window, now, cost, d);
}

static uint64_t fw_expires(const struct tk__policy *p, const uint64_t *state)
{
	return state[1] ? state[0] + p->u.window.window : 0;
}

const struct tk__algorithm tk__fixed_window = {
	.name = "fixed-window",
	.parse = fw_parse,
	.format = fw_format,
	.check = fw_check,
	.forecast = fw_forecast,
	.expires = fw_expires,
};
