/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock-tsc.c - the TSC clock: CLOCK_REALTIME read through the x86-64
 * time-stamp counter, for callers who want a reading cheaper than the
 * vDSO's clock_gettime() and accept a bounded error.
 *
 * - Usable only where the TSC ticks at one rate on every CPU in every
 *   power state: CPUID 0x80000007 EDX bit 8 (invariant TSC).  Under a
 *   hypervisor (CPUID 1 ECX bit 31) the kernel must also report
 *   constant_tsc and nonstop_tsc in /proc/cpuinfo; and where the kernel
 *   lists its clock sources, "tsc" must be among them (the kernel drops
 *   it when it finds two CPUs' counters out of step).  Elsewhere
 *   tk_clock_tsc() gives the system clock.
 * - A line maps ticks to ns (clock-tsc.h): a 64x64->128-bit product
 *   and a shift, valid for `period` ticks past its base.  Two lines and
 *   a generation: the writer fills the line not in use, then bumps gen,
 *   so readers never wait for a writer.
 * - Calibration, once, at the first tk_clock_tsc(): two (TSC,
 *   CLOCK_REALTIME) pairs 20 ms apart, each the tightest of several
 *   clock_gettime() calls bracketed by fenced TSC reads.
 * - Re-anchoring: the first read past a line's period takes a fresh pair
 *   and publishes a new line.  Its rate is CLOCK_REALTIME's ns per tick
 *   since the last pair (so the clock follows NTP's frequency
 *   corrections); the period doubles from 50 ms to 1 s.  If
 *   CLOCK_REALTIME is ahead of the old line, the new line starts at it
 *   (a step forward); if behind, it starts where the old line is and
 *   runs slower by up to 1/16 until it meets CLOCK_REALTIME at the end
 *   of its period: the clock never steps back.
 * - Past its period a line runs at 7/8 of the calibrated rate (the rate
 *   of readers who find another thread re-anchoring).  A new line starts
 *   at or above the old one where it is published and runs faster than
 *   7/8, so no reading of the old line is above a later reading of the
 *   new one, however long the writer takes to publish.
 * - The bound, 50 us (tk_clock_tsc(3)): a pair is off by at most half
 *   its bracket (below WIDE_TICKS: 5 us at 3 GHz; about 20 ns when
 *   not preempted).  A line drifts by its rate's error times its
 *   period; the rate comes from two pairs at least half a period apart,
 *   so that is at most 4 pairs' errors (20 us), plus what CLOCK_REALTIME's
 *   own rate changed (10 ppm over 1 s: 10 us).  A step of CLOCK_REALTIME
 *   is outside it: forward at the next re-anchoring, back as above.
 * - After fork() the child keeps the calibration (the TSC is the
 *   machine's); a writer's lock held across fork() carries the parent's
 *   fork generation, and the child takes it over.
 */
#include "clock.h"
#include "fork.h"
#include "test-hooks.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if TK__HAVE_TSC
#include <cpuid.h>
#endif

#define NS_PER_S UINT64_C(1000000000)
#define FIRST_PERIOD_NS (50 * UINT64_C(1000000))
#define CALIBRATE_NS (20 * UINT64_C(1000000))
/* A bracket wider than this (about 10 us at 3 GHz) is retried. */
#define WIDE_TICKS (UINT64_C(1) << 15)

struct tk__tsc tk__tsc;
tk_atomic_u64 tk__tsc_anchors;

#if TK_TEST_HOOKS
int tk__tsc_no_tsc;
uint64_t tk__tsc_period_cap_ns;
int64_t tk__tsc_realtime_shift_ns;
const char *tk__tsc_root = "";
#endif

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec +
	       (uint64_t)tk__tsc_realtime_shift_ns;
}

#if TK__HAVE_TSC

/* A CLOCK_REALTIME reading and the TSC at its middle. */
struct pair {
	uint64_t tsc;
	uint64_t ns;
};

/* The writer's own state: changed only under `lock`. */
static struct {
	tk_atomic_u64 lock; /* 0, or (fork generation << 1) | 1 */
	struct pair ref;    /* the last pair taken */
	uint64_t cal_mult;  /* ns per tick << TK__TSC_SHIFT, calibrated */
	uint64_t mult;	    /* the same, since the last pair */
	uint64_t period_ns;
} w;

/* A line as read (tk__tsc_line's fields, copied). */
struct line {
	uint64_t base_tsc, base_ns, mult, period;
};

static pthread_once_t calibrate_once = PTHREAD_ONCE_INIT;
static int usable;

static uint64_t mul_shift(uint64_t d, uint64_t m)
{
	return (uint64_t)(((unsigned __int128)d * m) >> TK__TSC_SHIFT);
}

/* lfence on both sides: the TSC read neither before the instructions
 * above it nor after those below (the pairs bracket clock_gettime(),
 * and the slow path orders its read against the line's generation). */
static uint64_t tsc_ordered(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

/* Whether /proc/cpuinfo's flags, or the kernel's clock sources, name
 * @word; -1 if the file cannot be read. */
static int file_has_word(const char *path, const char *prefix, const char *word)
{
	char line[4096];
	size_t n = strlen(word);
	char full[256];
	const char *s;
	FILE *f;
	int found = 0;

	if (snprintf(full, sizeof(full), "%s%s", tk__tsc_root, path) >=
	    (int)sizeof(full))
		return -1;
	f = fopen(full, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, prefix, strlen(prefix)) != 0)
			continue;
		for (s = strstr(line, word); s && !found;
		     s = strstr(s + 1, word))
			found = (s == line || s[-1] == ' ' || s[-1] == '\t') &&
				(s[n] == ' ' || s[n] == '\n' || s[n] == '\0');
		break;
	}
	fclose(f);
	return found;
}

static int tsc_invariant(void)
{
	unsigned int a, b, c, d;
	int hypervisor;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return 0;
	hypervisor = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31));
	if (hypervisor &&
	    (file_has_word("/proc/cpuinfo", "flags", "constant_tsc") != 1 ||
	     file_has_word("/proc/cpuinfo", "flags", "nonstop_tsc") != 1))
		return 0;
	return file_has_word("/sys/devices/system/clocksource/clocksource0/"
			     "available_clocksource",
			     "", "tsc") != 0;
}

/* The tightest of several TSC-bracketed CLOCK_REALTIME reads: 8, or up
 * to 64 while the best bracket is wider than WIDE_TICKS (preempted): the
 * pair is off by at most half its bracket, which the bound counts. */
static void sample(struct pair *p)
{
	uint64_t a, b, ns, best = UINT64_MAX;
	int i;

	for (i = 0; i < 64 && (i < 8 || best > WIDE_TICKS); i++) {
		a = tsc_ordered();
		ns = realtime_ns();
		b = tsc_ordered();
		if (b - a < best) {
			best = b - a;
			p->tsc = a + (b - a) / 2;
			p->ns = ns;
		}
	}
}

/* Line @l's reading at tick @t: before its base, the base; past its
 * period, 7/8 of the calibrated rate. */
static uint64_t line_at(const struct line *l, uint64_t t)
{
	uint64_t bt = l->base_tsc, bn = l->base_ns, p = l->period;

	if (t <= bt)
		return bn;
	if (t - bt <= p)
		return bn + mul_shift(t - bt, l->mult);
	return bn + mul_shift(p, l->mult) +
	       mul_shift(t - bt - p, w.cal_mult - (w.cal_mult >> 3));
}

/* The current line, copied, and the TSC read while it was current. */
static uint64_t load_line(struct line *out)
{
	const struct tk__tsc_line *l;
	uint64_t g, t;

	do {
		g = tk_atomic_load_u64(&tk__tsc.gen, TK_MO_ACQUIRE);
		l = &tk__tsc.lines[g & 1];
		/* acquire: as in tk__tsc_now() */
		out->base_tsc = tk_atomic_load_u64(&l->base_tsc, TK_MO_ACQUIRE);
		out->base_ns = tk_atomic_load_u64(&l->base_ns, TK_MO_ACQUIRE);
		out->mult = tk_atomic_load_u64(&l->mult, TK_MO_ACQUIRE);
		out->period = tk_atomic_load_u64(&l->period, TK_MO_ACQUIRE);
		t = tsc_ordered();
	} while (tk_atomic_load_u64(&tk__tsc.gen, TK_MO_RELAXED) != g);
	return t;
}

/* Under the lock: fill the line not in use, then make it current. */
static void publish(const struct line *n)
{
	uint64_t g = tk_atomic_load_u64(&tk__tsc.gen, TK_MO_RELAXED);
	struct tk__tsc_line *l = &tk__tsc.lines[(g + 1) & 1];

	/* Readers still on generation g - 1 read this line.  release,
	 * each (plain stores on x86-64): gen = g is stored before, so a
	 * reader whose acquire load sees any store below then sees gen >= g
	 * and retries.  No fence: the sanitizers see these orders. */
	tk_atomic_store_u64(&l->base_tsc, n->base_tsc, TK_MO_RELEASE);
	tk_atomic_store_u64(&l->base_ns, n->base_ns, TK_MO_RELEASE);
	tk_atomic_store_u64(&l->mult, n->mult, TK_MO_RELEASE);
	tk_atomic_store_u64(&l->period, n->period, TK_MO_RELEASE);
	/* release: the line before gen; pairs with the readers' acquire */
	tk_atomic_store_u64(&tk__tsc.gen, g + 1, TK_MO_RELEASE);
	tk_atomic_add_u64(&tk__tsc_anchors, 1, TK_MO_RELAXED);
}

static uint64_t period_cap_ns(void)
{
	return tk__tsc_period_cap_ns ? tk__tsc_period_cap_ns : NS_PER_S;
}

/* The writer's period in ticks at its rate. */
static uint64_t period_ticks(void)
{
	return (uint64_t)(((unsigned __int128)w.period_ns << TK__TSC_SHIFT) /
			  w.mult);
}

/* The rate since the last pair, if CLOCK_REALTIME was not stepped
 * meanwhile (within 1/32 of the calibrated rate). */
static void track_rate(const struct pair *p)
{
	uint64_t m;

	if (p->ns > w.ref.ns && p->tsc > w.ref.tsc) {
		m = (uint64_t)(((unsigned __int128)(p->ns - w.ref.ns)
				<< TK__TSC_SHIFT) /
			       (p->tsc - w.ref.tsc));
		if (m >= w.cal_mult - (w.cal_mult >> 5) &&
		    m <= w.cal_mult + (w.cal_mult >> 5))
			w.mult = m;
	}
	w.ref = *p;
}

/*
 * Under the lock, with @old current and the TSC past its period: a new
 * line from a fresh pair, starting at tick t_pub (read after the pair)
 * at max(CLOCK_REALTIME then, @old there).
 */
static void reanchor(const struct line *old)
{
	struct pair p;
	struct line n;
	uint64_t r, v, e;

	sample(&p);
	track_rate(&p);
	w.period_ns = w.period_ns * 2 < period_cap_ns() ? w.period_ns * 2
							: period_cap_ns();
	n.base_tsc = tsc_ordered();
	r = p.ns + mul_shift(n.base_tsc - p.tsc, w.mult);
	v = line_at(old, n.base_tsc);
	n.mult = w.mult;
	n.base_ns = r;
	if (r < v) { /* CLOCK_REALTIME is behind: meet it, slowly */
		e = v - r < w.period_ns >> 4 ? v - r : w.period_ns >> 4;
		n.base_ns = v;
		n.mult -=
			(uint64_t)((unsigned __int128)w.mult * e / w.period_ns);
	}
	n.period = period_ticks();
	publish(&n);
}

/* The writer's lock: a holder of an earlier fork generation is a thread
 * of the parent, gone in this child. */
static int trylock(void)
{
	uint64_t mine = tk__fork_generation() << 1 | 1;
	uint64_t cur = tk_atomic_load_u64(&w.lock, TK_MO_RELAXED);

	if (cur == mine)
		return 0;
	/* acquire: the writer state the last holder left */
	return tk_atomic_cas_u64(&w.lock, &cur, mine, TK_MO_ACQUIRE);
}

static void unlock(void)
{
	/* release: pairs with the acquire in trylock() */
	tk_atomic_store_u64(&w.lock, 0, TK_MO_RELEASE);
}

#if TK_TEST_HOOKS
int tk__tsc_hold_writer(int hold)
{
	if (!hold) {
		unlock();
		return 0;
	}
	return trylock() ? 0 : -EBUSY;
}
#endif

uint64_t tk__tsc_slow(void)
{
	struct line l;
	uint64_t t;

	if (trylock()) {
		t = load_line(&l);
		if (t - l.base_tsc > l.period && t > l.base_tsc)
			reanchor(&l);
		unlock();
	}
	t = load_line(&l);
	return line_at(&l, t);
}

static void calibrate(void)
{
	struct pair p0, p1;
	struct timespec pause = { 0, (long)CALIBRATE_NS };
	struct line n;

	if (!tsc_invariant())
		return;
	tk__rcu_setup(); /* the fork generation trylock() goes by */
	sample(&p0);
	while (nanosleep(&pause, &pause) == -1 && errno == EINTR)
		;
	sample(&p1);
	/* A TSC between 100 MHz and 10 GHz, and CLOCK_REALTIME not stepped
	 * back meanwhile: otherwise the system clock serves. */
	if (p1.ns <= p0.ns || p1.tsc <= p0.tsc ||
	    p1.tsc - p0.tsc < (p1.ns - p0.ns) / 10 ||
	    p1.tsc - p0.tsc > (p1.ns - p0.ns) * 10)
		return;
	w.cal_mult = (uint64_t)(((unsigned __int128)(p1.ns - p0.ns)
				 << TK__TSC_SHIFT) /
				(p1.tsc - p0.tsc));
	w.mult = w.cal_mult;
	w.ref = p1;
	w.period_ns = FIRST_PERIOD_NS < period_cap_ns() ? FIRST_PERIOD_NS
							: period_cap_ns();
	n.base_tsc = p1.tsc;
	n.base_ns = p1.ns;
	n.mult = w.mult;
	n.period = period_ticks();
	publish(&n);
	usable = 1;
}

int tk__tsc_usable(void)
{
	pthread_once(&calibrate_once, calibrate);
	return usable && !tk__tsc_no_tsc;
}
#else /* no TSC: tk_clock_tsc() is the system clock */
uint64_t tk__tsc_slow(void)
{
	return realtime_ns();
}

int tk__tsc_usable(void)
{
	return 0;
}

#if TK_TEST_HOOKS
int tk__tsc_hold_writer(int hold)
{
	(void)hold;
	return -ENOTSUP;
}
#endif
#endif
