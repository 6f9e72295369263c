/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c - injected time.
 *
 * The system clock is the only place the library reads time
 * (CLOCK_REALTIME, so that reset_at is a wall-clock instant); the coarse
 * clock reads CLOCK_REALTIME_COARSE, the kernel's last tick, for callers
 * who trade resolution for the cost of a read; the TSC clock
 * (clock-tsc.c) reads CLOCK_REALTIME through the time-stamp counter,
 * where that is invariant, and is the system clock elsewhere.  A manual
 * clock is one atomic word that tests move; a custom clock calls back.
 * Readings must stay below 2^63 ns (year 2262) so that differences of two
 * times always fit in an int64_t.
 */
#include "clock.h"
#include "error.h"
#include "atomic.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

enum clock_kind {
	CLOCK_KIND_SYSTEM = TK_CLOCK_SYSTEM,
	CLOCK_KIND_COARSE = TK_CLOCK_COARSE,
	CLOCK_KIND_TSC = TK_CLOCK_TSC,
	CLOCK_KIND_MANUAL = TK_CLOCK_MANUAL,
	CLOCK_KIND_CUSTOM = TK_CLOCK_CUSTOM
};

struct tk_clock {
	enum clock_kind kind;
	tk_atomic_u64 manual_ns; /* ns since the epoch */
	int (*now_fn)(void *ctx, uint64_t *ns);
	void *ctx;
};

static struct tk_clock system_clock = { .kind = CLOCK_KIND_SYSTEM };
static struct tk_clock coarse_clock = { .kind = CLOCK_KIND_COARSE };
static struct tk_clock tsc_clock = { .kind = CLOCK_KIND_TSC };

TK_API struct tk_clock *tk_clock_system(void)
{
	return &system_clock;
}

TK_API struct tk_clock *tk_clock_coarse(void)
{
	return &coarse_clock;
}

TK_API struct tk_clock *tk_clock_tsc(void)
{
	return tk__tsc_usable() ? &tsc_clock : &system_clock;
}

TK_API int tk_clock_kind(const struct tk_clock *c)
{
	return c ? (int)c->kind : -EINVAL;
}

TK_API int tk_clock_manual_new(struct tk_clock **out, uint64_t start_ns)
{
	struct tk_clock *c;

	if (!out || start_ns >= TK__NOW_LIMIT)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->kind = CLOCK_KIND_MANUAL;
	tk_atomic_store_u64(&c->manual_ns, start_ns, TK_MO_RELAXED);
	*out = c;
	return 0;
}

TK_API int tk_clock_custom_new(struct tk_clock **out,
			       int (*now_fn)(void *ctx, uint64_t *ns),
			       void *ctx)
{
	struct tk_clock *c;

	if (!out || !now_fn)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->kind = CLOCK_KIND_CUSTOM;
	c->now_fn = now_fn;
	c->ctx = ctx;
	*out = c;
	return 0;
}

TK_API int tk_clock_set(struct tk_clock *c, uint64_t ns)
{
	if (!c || c->kind != CLOCK_KIND_MANUAL)
		return -EINVAL;
	if (ns >= TK__NOW_LIMIT)
		return -ERANGE;
	/* Relaxed: the clock orders nothing; readers only need the value. */
	tk_atomic_store_u64(&c->manual_ns, ns, TK_MO_RELAXED);
	return 0;
}

TK_API int tk_clock_advance(struct tk_clock *c, uint64_t delta_ns)
{
	uint64_t cur;

	if (!c || c->kind != CLOCK_KIND_MANUAL)
		return -EINVAL;
	cur = tk_atomic_load_u64(&c->manual_ns, TK_MO_RELAXED);
	do {
		if (delta_ns >= TK__NOW_LIMIT - cur)
			return -ERANGE;
	} while (!tk_atomic_cas_u64(&c->manual_ns, &cur, cur + delta_ns,
				    TK_MO_RELAXED));
	return 0;
}

int tk__clock_id(const struct tk_clock *c)
{
	return c->kind == CLOCK_KIND_SYSTEM   ? CLOCK_REALTIME
	       : c->kind == CLOCK_KIND_COARSE ? CLOCK_REALTIME_COARSE
	       : c->kind == CLOCK_KIND_TSC    ? TK__CLOCK_ID_TSC
					      : -1;
}

int tk__clock_read(struct tk_clock *c, uint64_t *ns)
{
	int id = tk__clock_id(c);

	if (id >= 0)
		return tk__clock_gettime(id, ns);
	if (c->kind == CLOCK_KIND_MANUAL)
		*ns = tk_atomic_load_u64(&c->manual_ns, TK_MO_RELAXED);
	else if (c->now_fn(c->ctx, ns))
		return -EIO;
	return *ns < TK__NOW_LIMIT ? 0 : -EOVERFLOW;
}

TK_API int tk_clock_now(struct tk_clock *c, uint64_t *out)
{
	if (!c || !out)
		return -EINVAL;
	return tk__rc(tk__clock_read(c, out));
}

TK_API void tk_clock_free(struct tk_clock *c)
{
	if (c && c != &system_clock && c != &coarse_clock && c != &tsc_clock)
		free(c);
}
