/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * algo-kit.h - what the per-algorithm tests share: a limiter on a private
 * memory store with a manual clock, decision helpers, and the reference
 * models of fixed window, sliding window, sliding log and quota that the
 * property tests compare the library with.
 *
 * paper; the property tests compare every field of thousands of random
 * decisions with small reference models in window-model.c from the same
 * document (exact integer arithmetic, 128-bit where products can
 * overflow; calendar boundaries from the C library's timegm()/gmtime_r()).
 *
 * Details semantics.md leaves open are decided as follows (the project's
 * decisions, tested here):
 *   - fixed window and quota peek: remaining = L - count, retry_after =
 *     0 if remaining >= 1, else start' + W - now (quota: next boundary -
 *     now); reset_at = start' + W (the next boundary).
 *   - sliding window peek: remaining = max(0, floor(L - est)); retry_after
 *     = the deny formula for cost 1 (0 if est + 1 <= L); reset_at = (c + 1)
 *     * w + W, except that after a backward jump, if a bucket with a count
 *     has a tick above c, (the highest such tick + 1) * w + W.  Since
 *     semantics.md gives peek the reset_at of a check ("as above"), checks
 *     report the same: the time the key is really fully replenished.
 *   - sliding window allowed: remaining = max(0, floor(L - est - cost)).
 *   - sliding log peek on a key without live stamps: remaining = L,
 *     reset_at = now, retry_after 0; stamps later than now (after a
 *     backward jump) are live.
 *   - a key reset with tk_limiter_reset() behaves as never seen; a cost
 *     above L is -ERANGE and changes nothing.
 *
 * Backward jumps and several keys: a store may drop a key's state once it
 * has expired (is equivalent to no state) at a time the store has seen,
 * and a sliding algorithm may forget buckets or stamps that were dead at
 * the latest time the key has seen.  After a backward jump such forgotten
 * state could count again, and whether it does is not specified.  So
 * before each backward jump the property tests reset (in the library and
 * in the model alike) every key whose outcome could depend on that
 * freedom; all other keys keep their state across the jump and must
 * match the model exactly, including "a later window still counts".
 *
 * All timelines use manual clocks and fixed-seed generators, so every run
 * is deterministic and every failure message says how to reproduce it.
 */
#ifndef TK_TEST_ALGO_KIT_H
#define TK_TEST_ALGO_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <throttlekit.h>

#include "asserts.h"
#include "parse-kit.h"
#include "rnd.h"

#define MINUTE (60ull * SEC)
#define HOUR (3600ull * SEC)
#define DAY (86400ull * SEC)

/* 2023-11-14T22:13:20Z: a multiple of 1 s (and of 100 ms, 250 ms...). */
#define B0 (1700000000ull * SEC)

/* Seconds since the epoch to ns. */
#define AT(s) ((uint64_t)(s)*SEC)

typedef unsigned __int128 u128;
typedef __int128 i128;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

bool same_decision(const struct tk_decision *a, const struct tk_decision *b);

/* A limiter on a private memory store and a manual clock. */
struct fx {
	struct tk_clock *clk;
	struct tk_limiter *l;
};

int open_on(struct tk_limiter **l, const char *policy, struct tk_clock *clk);
void fx_open(struct fx *f, const char *policy, uint64_t start);
void fx_close(struct fx *f);
void fx_at(struct fx *f, uint64_t ns);
/* tk_limiter_open()'s return code for @policy (closing it on success). */
int open_rc(const char *policy);
/* Poisons the output first, so a field the library forgets shows up. */
void poison(struct tk_decision *d);
int check_rc(struct tk_limiter *l, const char *key, uint64_t cost,
	     struct tk_decision *d);
int peek_rc(struct tk_limiter *l, const char *key, struct tk_decision *d);
struct tk_decision chk(struct fx *f, const char *key, uint64_t cost);
struct tk_decision peek(struct fx *f, const char *key);

/* Reference models (window-model.c). */
enum model_kind { M_FIXED, M_SLIDING, M_LOG, M_QUOTA };
enum cadence { CAD_ANCHORED, CAD_DAY, CAD_WEEK, CAD_MONTH };

#define NKEYS 4
#define SW_SMAX 32
#define SW_MAXB (2 * SW_SMAX + 8)

extern const char *const key_names[NKEYS];

struct sw_bucket {
	uint64_t tick, count;
};

struct mkey {
	/* fixed window, quota: the window state */
	bool has;
	uint64_t start, end, count;
	/* latest op time since the state was last written (FW, SW, quota) */
	uint64_t seen;
	/* sliding window: buckets with a count, by tick */
	struct sw_bucket b[SW_MAXB];
	size_t nb;
	uint64_t h; /* highest tick written since the key was reset */
	/* sliding log: stamps, ascending, all live at the latest op time */
	uint64_t *st;
	size_t n, cap;
	/* latest t + W of a stamp the library may have forgotten */
	uint64_t dead_max;
};

struct model {
	enum model_kind kind;
	uint64_t L, W;
	uint64_t S, w;	  /* sliding window */
	enum cadence cad; /* quota */
	int64_t off_ns;
	int wstart; /* tm_wday of a week's first day (0 = Sunday) */
	uint64_t anchor;
	struct mkey k[NKEYS];
};

void model_init(struct model *m, enum model_kind kind, uint64_t L, uint64_t W);
void model_free(struct model *m);

struct prop_stats {
	uint64_t checks, denied, peeks, forecasts, eranges, jumps, live_jumps,
		jump_resets;
};

/*
 * Runs @nops random operations on @policy against @m.  Time moves by
 * @gran-sized steps (inside a bucket or window), by multiples of @scale,
 * lands exactly on (or next to) boundaries, idles, and jumps back (never
 * below @floor).  Every return code and decision field must match.
 */
void run_property(struct model *m, const char *policy, uint64_t start,
		  uint64_t floor, uint64_t gran, uint64_t scale, int nops,
		  uint64_t seed, struct prop_stats *ps);
void assert_coverage(const char *name, const struct prop_stats *ps);
int fmt_duration(char *buf, size_t len, uint64_t ns);
/*
 * A window length for seed number @s: whole milliseconds in [1, @ms_max],
 * whole seconds in [1, @sec_max], or any nanosecond count in [@ns_lo,
 * @ns_hi], in turn.
 */
uint64_t draw_window(uint64_t *seed, int s, uint64_t ms_max, uint64_t sec_max,
		     uint64_t ns_lo, uint64_t ns_hi);
/* One property run of "@algo:@L/@W" (fixed window or sliding log). */
void run_window_seed(enum model_kind kind, const char *algo, uint64_t L,
		     uint64_t W, uint64_t seed, int nops,
		     struct prop_stats *ps);

#endif
