/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock-tsc.h - the TSC clock's read, inline: the line that maps the
 * x86-64 time-stamp counter to ns since the epoch (clock-tsc.c calibrates
 * it and moves it along CLOCK_REALTIME).
 */
#ifndef TK_CLOCK_TSC_H
#define TK_CLOCK_TSC_H

#include "config.h"

#include <stdint.h>

#include "atomic.h"

#if defined(__x86_64__)
#define TK__HAVE_TSC 1
#include <x86intrin.h>
#else
#define TK__HAVE_TSC 0
#endif

/* The fixed point of tk__tsc_line.mult. */
#define TK__TSC_SHIFT 32

/*
 * One line: ns = base_ns + ((t - base_tsc) * mult >> TK__TSC_SHIFT) for
 * ticks t in [base_tsc, base_tsc + period]; anything else is read by
 * tk__tsc_slow().
 */
struct tk__tsc_line {
	tk_atomic_u64 base_tsc; /* ticks */
	tk_atomic_u64 base_ns;	/* ns since the epoch */
	tk_atomic_u64 mult;	/* ns per tick << TK__TSC_SHIFT */
	tk_atomic_u64 period;	/* ticks */
};

/* Readers never wait: the writer fills the line not in use, then bumps
 * gen (clock-tsc.c, publish()). */
struct tk__tsc {
	tk_atomic_u64 gen; /* lines[gen & 1] is current */
	struct tk__tsc_line lines[2];
} __attribute__((aligned(64)));

extern struct tk__tsc tk__tsc;
/* How many lines were published (calibration and re-anchorings). */
extern tk_atomic_u64 tk__tsc_anchors;

/* clock-tsc.c: a reading past the current line's period (re-anchors the
 * line if no other thread is doing it), or before its start. */
uint64_t tk__tsc_slow(void);

#if TK__HAVE_TSC
/*
 * The TSC clock's reading: a few loads, one rdtsc, a 128-bit product.
 * A plain rdtsc, neither rdtscp nor fenced: a reading within the line's
 * period is below where the next line starts however the CPU orders
 * it (the writer re-anchors only past the period), and one taken out of
 * order before the line was published lies before its base and goes to
 * the slow path, which orders its own reads.
 */
static inline __attribute__((always_inline)) uint64_t tk__tsc_now(void)
{
	const struct tk__tsc_line *l;
	uint64_t g, t, d, bt, bn, m, p;

	do {
		/* acquire: pairs with the release of gen in publish() */
		g = tk_atomic_load_u64(&tk__tsc.gen, TK_MO_ACQUIRE);
		l = &tk__tsc.lines[g & 1];
		/* acquire, each (plain loads on x86-64): pairs with the
		 * release stores of publish(); a field it rewrote is seen
		 * only with the gen that came before, so the second read of
		 * gen differs and the loop retries */
		bt = tk_atomic_load_u64(&l->base_tsc, TK_MO_ACQUIRE);
		bn = tk_atomic_load_u64(&l->base_ns, TK_MO_ACQUIRE);
		m = tk_atomic_load_u64(&l->mult, TK_MO_ACQUIRE);
		p = tk_atomic_load_u64(&l->period, TK_MO_ACQUIRE);
		t = __rdtsc();
	} while (tk_atomic_load_u64(&tk__tsc.gen, TK_MO_RELAXED) != g);
	d = t - bt; /* before base_tsc: wraps, so the slow path too */
	if (__builtin_expect(d > p, 0))
		return tk__tsc_slow();
	return bn + (uint64_t)(((unsigned __int128)d * m) >> TK__TSC_SHIFT);
}
#else
static inline uint64_t tk__tsc_now(void)
{
	return tk__tsc_slow();
}
#endif

#endif /* TK_CLOCK_TSC_H */
