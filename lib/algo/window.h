/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * window.h - counting in a window [start, end): the steps fixed-window.c
 * defines and quota.c and the sliding algorithms share.
 */
#ifndef TK_WINDOW_H
#define TK_WINDOW_H

#include "config.h"

#include <stdint.h>

#include "algo/algo.h"

/*
 * fixed-window.c: counting in a window [start, end), shared by quota.c.
 * A state {start, count} packs into one word {ceil(end / 2^24), count}
 * when every window lasts at least 2^24 ns (16.8 ms) and the limit is
 * below 2^24: then a coarse end still names one window, and the word
 * expires by word | TK__WORD_SLACK.
 */
int tk__window_packs(uint64_t shortest, uint64_t limit);
/*
 * @state into @st = {start, count}.  Returns 0 if that is all, or, for a
 * packed state, its coarse end, of which the caller finds the window and
 * sets st[0] (or, if there is none, st[1] = 0).
 */
uint64_t tk__window_load(const struct tk__policy *p, const uint64_t *state,
			 uint64_t st[2]);
/* An algorithm's reading of its {start, count} state: 0, or -1 if no check
 * of @p writes @state. */
typedef int tk__window_unpack_fn(const struct tk__policy *p,
				 const uint64_t *state, uint64_t st[2]);
/* What tk__window_valid() checks before it asks @unpack. */
int tk__window_shape_valid(uint32_t words, const uint64_t *state);
/*
 * The valid() of a {start, count} algorithm.  What every such state in
 * @words words shares, packed (1) or not (2): a start below 2^63, a count
 * of at most 2^62, an end of at most 2^63 + 2^62, and a count only with an
 * end; and, with @p, @p's word count and a state @unpack reads.
 */
int tk__window_valid(const struct tk__policy *p, uint32_t words,
		     const uint64_t *state, tk__window_unpack_fn *unpack);
/* The packed word of @count units in a window ending at @end. */
uint64_t tk__window_pack(uint64_t end, uint64_t count);
/* Does window [.., @end) have coarse end @coarse? */
int tk__window_ends_at(uint64_t end, uint64_t coarse);
/* tk__window_check() from @st, into @next as @p keeps its state. */
int tk__window_step(const struct tk__policy *p, const uint64_t *st,
		    uint64_t start, uint64_t end, uint64_t now, uint64_t cost,
		    uint64_t *next, struct tk_decision *d);
int tk__window_check(uint64_t limit, const uint64_t *state, uint64_t start,
		     uint64_t end, uint64_t now, uint64_t cost, uint64_t *next,
		     struct tk_decision *d);
int tk__window_forecast(uint64_t limit, const uint64_t *state, uint64_t start,
			uint64_t end, uint64_t now, uint64_t cost,
			struct tk_decision *d);

/* quota.c: the period [start, end) that contains @t; -EOVERFLOW if none. */
int tk__quota_period(const struct tk__policy *p, uint64_t t, uint64_t *start,
		     uint64_t *end);

#endif /* TK_WINDOW_H */
