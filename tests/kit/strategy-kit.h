/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * strategy-kit.h - two deterministic user strategies
 * (tk_strategy_register(3)) for the differential tests, which compare a
 * store's decisions with the memory store's on generated timelines:
 *
 * - "kit-win:L": a window of STRATEGY_KIT_WIN opened by the first unit
 *   counted after the last one closed, admitting up to L units in it; its
 *   state (start, count: 16 bytes) lives until the window's end, so a TTL
 *   that is off by any amount changes decisions.
 * - "kit-set:L": up to min(L, 4) distinct costs (the items) in 32 bytes,
 *   the largest state a strategy may have; a cost already in the set is
 *   admitted again and refreshes it for STRATEGY_KIT_SET_TTL.
 *
 * Both fill every field of the decision, so a store that reads or writes
 * a state wrongly shows in them; both refuse a cost above L (-ERANGE).
 */
#ifndef TK_TESTS_KIT_STRATEGY_KIT_H
#define TK_TESTS_KIT_STRATEGY_KIT_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <throttlekit.h>

#define STRATEGY_KIT_WIN UINT64_C(700000000)	  /* ns */
#define STRATEGY_KIT_SET_TTL UINT64_C(2000000000) /* ns */

static inline int strategy_kit_win(void *ctx, unsigned char *state,
				   uint64_t now, uint64_t cost, uint64_t arg,
				   struct tk_decision *d, uint64_t *ttl)
{
	uint64_t w[2]; /* the window's start, the units counted in it */

	(void)ctx;
	memcpy(w, state, sizeof(w));
	if ((w[0] == 0 && w[1] == 0) || now >= w[0] + STRATEGY_KIT_WIN) {
		w[0] = now;
		w[1] = 0;
	}
	d->limit = arg;
	d->reset_at = w[0] + STRATEGY_KIT_WIN;
	d->remaining = w[1] < arg ? arg - w[1] : 0;
	if (cost > arg)
		return -ERANGE;
	if (cost == 0 || w[1] + cost > arg) {
		d->allowed = cost == 0 && w[1] < arg;
		d->retry_after = d->allowed ? 0 : d->reset_at - now;
		return TK_STRATEGY_KEEP;
	}
	w[1] += cost;
	d->allowed = true;
	d->remaining = arg - w[1];
	memcpy(state, w, sizeof(w));
	*ttl = d->reset_at - now;
	return TK_STRATEGY_WRITE;
}

static inline int strategy_kit_set(void *ctx, unsigned char *state,
				   uint64_t now, uint64_t cost, uint64_t arg,
				   struct tk_decision *d, uint64_t *ttl)
{
	uint64_t w[4], cap = arg < 4 ? arg : 4, n = 0;
	int seen = 0;
	size_t i;

	(void)ctx;
	memcpy(w, state, sizeof(w));
	for (i = 0; i < 4; i++) {
		n += w[i] != 0;
		seen |= cost != 0 && w[i] == cost;
	}
	d->limit = cap;
	d->remaining = n < cap ? cap - n : 0;
	d->reset_at = now + STRATEGY_KIT_SET_TTL;
	if (arg == 0 && cost)
		return -ERANGE;
	if (cost == 0 || (!seen && n >= cap)) {
		d->allowed = cost == 0 ? n < cap : false;
		d->retry_after = d->allowed ? 0 : STRATEGY_KIT_SET_TTL;
		return TK_STRATEGY_KEEP;
	}
	if (!seen)
		w[n++] = cost;
	d->allowed = true;
	d->remaining = cap - n;
	memcpy(state, w, sizeof(w));
	*ttl = STRATEGY_KIT_SET_TTL;
	return TK_STRATEGY_WRITE;
}

/* Registers both (again: a no-op), once per process or more. */
static inline int strategy_kit_register(void)
{
	struct tk_strategy s = TK_STRATEGY_INIT;
	int rc;

	s.name = "kit-win";
	s.state_size = 16;
	s.check = strategy_kit_win;
	rc = tk_strategy_register(&s);
	if (rc && rc != -EEXIST)
		return rc;
	s.name = "kit-set";
	s.state_size = 32;
	s.check = strategy_kit_set;
	rc = tk_strategy_register(&s);
	return rc == -EEXIST ? 0 : rc;
}

#endif
