/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fixed-window.c - epoch-aligned fixed windows, and the window counting
 * that calendar quotas share.
 *
 * State: {start of the window the count belongs to (ns), count}.  At now
 * the window is ws = floor(now / W) * W, but a state stamped with a later
 * window (the clock stepped back) keeps counting in that later window:
 * start' = max(ws, state.start), so a backward step never opens a fresh
 * window early.  Allow on equality (count + cost == L).
 *
 * Windows of 2^24 ns or more with limits below 2^24 keep the state packed
 * in one word (see window.h), which a zone holds in the key's slot.
 *
 * Overflow: a start a check writes is a window's start at a clock reading,
 * below 2^63, and W is at most 2^62, so start + W never wraps; valid()
 * holds every state read to that and to a count of at most L.
 */
#include "algo/algo.h"
#include "algo/window.h"
#include "clock.h"
#include "parse.h"

#include <errno.h>
#include <string.h>

/* count + cost stays below 2^63: no wrap. */
#define LIMIT_MAX (UINT64_C(1) << 62)
#define PACK_BITS 24
#define PACK_UNIT (UINT64_C(1) << PACK_BITS)

int tk__window_packs(uint64_t shortest, uint64_t limit)
{
	return shortest >= PACK_UNIT && limit < PACK_UNIT;
}

uint64_t tk__window_pack(uint64_t end, uint64_t count)
{
	uint64_t coarse = (end >> PACK_BITS) + !!(end & (PACK_UNIT - 1));

	return coarse << PACK_BITS | count;
}

int tk__window_ends_at(uint64_t end, uint64_t coarse)
{
	return tk__window_pack(end, 0) == coarse << PACK_BITS;
}

uint64_t tk__window_load(const struct tk__policy *p, const uint64_t *state,
			 uint64_t st[2])
{
	if (!p->word_is_expiry) {
		st[0] = state[0];
		st[1] = state[1];
		return 0;
	}
	st[0] = 0;
	st[1] = state[0] & (PACK_UNIT - 1);
	return state[0] >> PACK_BITS;
}

/* Windows and quota periods last at most 2^62 ns and start below 2^63. */
#define WINDOW_MAX (UINT64_C(1) << 62)
#define COARSE_MAX ((TK__NOW_LIMIT + WINDOW_MAX) >> PACK_BITS)

int tk__window_shape_valid(uint32_t words, const uint64_t *state)
{
	uint64_t coarse = state[0] >> PACK_BITS;

	if (words == 1)
		return coarse <= COARSE_MAX &&
		       (coarse > 0 || (state[0] & (PACK_UNIT - 1)) == 0);
	return words == 2 && state[0] < TK__NOW_LIMIT && state[1] <= LIMIT_MAX;
}

int tk__window_valid(const struct tk__policy *p, uint32_t words,
		     const uint64_t *state, tk__window_unpack_fn *unpack)
{
	uint64_t st[2];

	if (!tk__window_shape_valid(words, state))
		return 0;
	if (!p)
		return 1;
	return words == p->state_words && unpack(p, state, st) == 0;
}

int tk__window_step(const struct tk__policy *p, const uint64_t *st,
		    uint64_t start, uint64_t end, uint64_t now, uint64_t cost,
		    uint64_t *next, struct tk_decision *d)
{
	uint64_t nx[2];
	int rc = tk__window_check(p->limit, st, start, end, now, cost, nx, d);

	if (rc == TK__PERSIST && p->word_is_expiry)
		next[0] = tk__window_pack(end, nx[1]);
	else if (rc == TK__PERSIST)
		memcpy(next, nx, sizeof(nx));
	return rc;
}

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
	/* A count above the limit: a policy of a higher limit wrote it. */
	d->remaining = count < limit ? limit - count : 0;
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
	d->remaining = count < limit ? limit - count : 0;
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
	p->word_is_expiry = tk__window_packs(window, limit);
	p->state_words = p->word_is_expiry ? 1 : 2;
	p->limit = limit;
	p->u.window.window = window;
	return 0;
}

static void fw_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "fixed-window:%llu/", (unsigned long long)p->limit);
	tk__fmt_duration(f, p->u.window.window);
}

/*
 * @state as {start, count}, packed or not.  Returns 0, or -1 for a state
 * no check of @p writes (then st[1] = 0 for a packed one).
 */
static int unpack(const struct tk__policy *p, const uint64_t *state,
		  uint64_t st[2])
{
	uint64_t w = p->u.window.window, coarse = tk__window_load(p, state, st);
	uint64_t n = (coarse << PACK_BITS) / w;

	if (!p->word_is_expiry)
		return st[0] % w == 0 && st[0] < TK__NOW_LIMIT ? 0 : -1;
	/* The one window whose end rounds up to the coarse end, as windows
	 * are at least as long as a coarse unit. */
	if (coarse == 0 && st[1] == 0)
		return 0; /* no state */
	if (coarse == 0 || n == 0 || !tk__window_ends_at(n * w, coarse) ||
	    (n - 1) * w >= TK__NOW_LIMIT) {
		st[1] = 0;
		return -1;
	}
	st[0] = (n - 1) * w;
	return 0;
}

static uint64_t window_start(const struct tk__policy *p, const uint64_t *st,
			     uint64_t now)
{
	uint64_t ws = now - now % p->u.window.window;

	return st[0] > ws ? st[0] : ws;
}

/* check() of the state unpack() made @st. */
static int check_unpacked(const struct tk__policy *p, const uint64_t *st,
			  uint64_t now, uint64_t cost, uint64_t *next,
			  struct tk_decision *d)
{
	uint64_t start = window_start(p, st, now);

	return tk__window_step(p, st, start, start + p->u.window.window, now,
			       cost, next, d);
}

static int fw_check(const struct tk__policy *p, const uint64_t *state,
		    uint64_t now, uint64_t cost, uint64_t *next,
		    struct tk_decision *d)
{
	uint64_t st[2];

	unpack(p, state, st);
	return check_unpacked(p, st, now, cost, next, d);
}

static int fw_check_unvalidated(const struct tk__policy *p,
				const uint64_t *state, uint64_t now,
				uint64_t cost, uint64_t *next,
				struct tk_decision *d)
{
	uint64_t st[2];

	/* fw_valid(), keeping what unpack() found for the check. */
	if (!tk__window_shape_valid(p->state_words, state) ||
	    unpack(p, state, st) != 0)
		return TK__INVALID;
	return check_unpacked(p, st, now, cost, next, d);
}

/*
 * check() where it changes the count alone (algo.h): a two-word state of
 * the window at @now, an admission; and a denial of any state check()
 * takes.  The count, word 1, is the hot word whatever the answer (a
 * packed state is a word key's, changed in its slot: none).
 */
static int fw_check_hot(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, uint32_t *word,
			uint64_t *value, struct tk_decision *d)
{
	uint64_t st[2], nx[2], start;
	int rc;

	if (p->word_is_expiry)
		return TK__NOT_HOT;
	*word = 1;
	if (!state || !tk__window_shape_valid(p->state_words, state) ||
	    unpack(p, state, st) != 0)
		return TK__NOT_HOT;
	start = window_start(p, st, now);
	rc = tk__window_check(p->limit, st, start, start + p->u.window.window,
			      now, cost, nx, d);
	if (rc != TK__PERSIST)
		return rc;
	if (st[0] != start)
		return TK__NOT_HOT; /* a new window: its start too */
	*value = nx[1];
	return rc;
}

static int fw_forecast(const struct tk__policy *p, const uint64_t *state,
		       uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t st[2], start;

	unpack(p, state, st);
	start = window_start(p, st, now);
	return tk__window_forecast(p->limit, st, start,
				   start + p->u.window.window, now, cost, d);
}

static uint64_t fw_expires(const struct tk__policy *p, const uint64_t *state)
{
	uint64_t st[2];

	unpack(p, state, st);
	return st[1] ? st[0] + p->u.window.window : 0;
}

/*
 * A start a check writes is a window's, below 2^63.  A count above L is
 * valid: a policy of a higher limit wrote it, and lowering a live key's
 * limit must leave it over the new one, not reset it.
 */
static int fw_valid(const struct tk__policy *p, uint32_t words,
		    const uint64_t *state)
{
	return tk__window_valid(p, words, state, unpack);
}

/* Packed or not, and the windows' width: a count and where it ends. */
static size_t fw_layout(const struct tk__policy *p, unsigned char *buf)
{
	buf[0] = (unsigned char)p->state_words;
	tk__layout_u64(buf + 1, p->u.window.window);
	return 9;
}

const struct tk__algorithm tk__fixed_window = {
	.name = "fixed-window",
	.id = TK__ALG_FIXED_WINDOW,
	.parse = fw_parse,
	.format = fw_format,
	.check = fw_check,
	.forecast = fw_forecast,
	.expires = fw_expires,
	.valid = fw_valid,
	.layout = fw_layout,
	/* end = start + W: what expires() finds in {start, count >= 1}. */
	.expires_at_reset = 1,
	.check_unvalidated = fw_check_unvalidated,
	.check_hot = fw_check_hot,
};
