/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.h - the clock as the library reads it: once per check, inline
 * for the clock_gettime(2) clocks, or late, when a store asks for it
 * (struct tk__when).
 */
#ifndef TK_CLOCK_H
#define TK_CLOCK_H

#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include <throttlekit.h>

#include "clock-tsc.h"

/* Clock readings are below this (tk__clock_read); states may not be. */
#define TK__NOW_LIMIT (UINT64_C(1) << 63)

/*
 * The TSC clock's id where tk__clock_id() gives one: not a clockid_t of
 * clock_gettime(2) (the kernel's fixed ids are below 16, dynamic ones
 * negative), so that the limiter's inline read covers it too.
 */
#define TK__CLOCK_ID_TSC (1 << 16)

/* clock.c */
int tk__clock_read(struct tk_clock *c, uint64_t *ns);
/* The clock that @c reads inline: a clock_gettime(2) clock id (the
 * system and the coarse clock), TK__CLOCK_ID_TSC, or -1 for a manual or
 * custom clock. */
int tk__clock_id(const struct tk_clock *c);
/* clock-tsc.c: whether the TSC clock serves (calibrates it once). */
int tk__tsc_usable(void);

/* A reading of clock @id (tk__clock_id()) as tk__clock_read() gives it:
 * inline, so that a check on the system clock makes one call for it,
 * and one on the TSC clock none. */
static inline __attribute__((always_inline)) int tk__clock_gettime(clockid_t id,
								   uint64_t *ns)
{
	struct timespec ts;

	if (TK__HAVE_TSC && __builtin_expect(id == TK__CLOCK_ID_TSC, 0)) {
		*ns = tk__tsc_now();
		return *ns < TK__NOW_LIMIT ? 0 : -EOVERFLOW;
	}
	if (clock_gettime(id, &ts) != 0 || ts.tv_sec < 0)
		return -EIO;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return *ns < TK__NOW_LIMIT ? 0 : -EOVERFLOW;
}

/*
 * The time a check decides at, read when the store asks (tk__when_read):
 * a store whose key's slot may be out of the cache hashes the key and
 * prefetches the slot first, so that the miss overlaps the clock read.
 * @clock NULL: @ns is read already (a batch's one reading).
 */
struct tk__when {
	struct tk_clock *clock;
	int clock_id; /* tk__clock_id(clock) */
	uint64_t ns;
};

/* Read @w's clock unless read already: 0 or the clock's error. */
static inline __attribute__((always_inline)) int
tk__when_read(struct tk__when *w)
{
	int rc;

	if (!w->clock)
		return 0;
	rc = w->clock_id >= 0 ? tk__clock_gettime(w->clock_id, &w->ns)
			      : tk__clock_read(w->clock, &w->ns);
	if (rc == 0)
		w->clock = NULL;
	return rc;
}

#endif /* TK_CLOCK_H */
