/*
 * gcra.c - the Generic Cell Rate Algorithm (the default policy).
 *
 * One word of state: the theoretical arrival time (TAT), in ns since the
 * epoch.  A unit costs T = floor(P / L) ns of "emission interval"; a burst
 * of B units is the tolerance tau = T * B.  A request of @cost units is
 * admitted iff now >= max(TAT, now) + T * cost - tau (allow on equality),
 * and then the TAT moves to that new value.  Taking max(TAT, now) is what
 * makes a backward clock step harmless: a TAT stamped in the future still
 * counts in full, so the key never admits more than if the clock had
 * stood still.  A denial writes nothing.
 *
 * Overflow: parsing bounds tau by TK__GCRA_TAU_MAX (2^62 ns) and cost by
 * the burst, and clock readings are below 2^63, so every sum below fits
 * in 64 bits; differences that can go negative are taken in int64_t.
 *
 * References: ITU-T I.371 (the virtual scheduling algorithm); Brandur
 * Leach, "Rate limiting, cells, and GCRA".  The exact rounding is our
 * contract, not theirs (see throttlekit(7)).
 */
#include "internal.h"

#include <errno.h>

#define TK__GCRA_TAU_MAX (UINT64_C(1) << 62)

int tk__gcra_init(struct tk__policy *p, uint64_t limit, uint64_t period,
		  uint64_t burst)
{
	uint64_t t;

	if (limit == 0 || period == 0 || burst == 0)
		return -EINVAL;
	t = period / limit;
	if (t < 1 || burst > TK__GCRA_TAU_MAX / t)
		return -EINVAL;
	p->alg = &tk__gcra;
	p->state_words = 1;
	p->limit = burst;
	p->u.gcra.t = t;
	p->u.gcra.tau = t * burst;
	return 0;
}

/* Whole units left when the TAT stands @ahead ns after now; never < 0. */
static uint64_t units_left(const struct tk__policy *p, int64_t ahead)
{
	int64_t slack = (int64_t)p->u.gcra.tau - ahead;

	return slack > 0 ? (uint64_t)slack / p->u.gcra.t : 0;
}

static uint64_t current_tat(const uint64_t *state, uint64_t now)
{
	return state && state[0] > now ? state[0] : now;
}

static int gcra_check(const struct tk__policy *p, const uint64_t *state,
		      uint64_t now, uint64_t cost, uint64_t *next,
		      uint64_t *expires_at, struct tk_decision *d)
{
	uint64_t tat, tat_new;

	if (cost > p->limit)
		return -ERANGE;
	tat = current_tat(state, now);
	tat_new = tat + p->u.gcra.t * cost;
	d->limit = p->limit;
	if (now + p->u.gcra.tau >= tat_new) {
		d->allowed = true;
		d->remaining = units_left(p, (int64_t)(tat_new - now));
		d->reset_at = tat_new;
		d->retry_after = 0;
		next[0] = tat_new;
		/* From tat_new on the key is as good as never seen. */
		*expires_at = tat_new;
		return TK__PERSIST;
	}
	d->allowed = false;
	d->remaining = units_left(p, (int64_t)(tat - now));
	d->reset_at = tat;
	d->retry_after = tat_new - p->u.gcra.tau - now;
	return TK__KEEP;
}

static int gcra_forecast(const struct tk__policy *p, const uint64_t *state,
			 uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t tat, need, allow_at;

	if (cost > p->limit)
		return -ERANGE;
	tat = current_tat(state, now);
	/* A peek (cost 0) asks when one unit is available. */
	need = cost ? cost : 1;
	allow_at = tat + p->u.gcra.t * need;
	allow_at = allow_at > p->u.gcra.tau ? allow_at - p->u.gcra.tau : 0;
	d->limit = p->limit;
	d->remaining = units_left(p, (int64_t)(tat - now));
	d->reset_at = tat;
	d->retry_after = allow_at > now ? allow_at - now : 0;
	d->allowed = d->retry_after == 0;
	return TK__KEEP;
}

const struct tk__algorithm tk__gcra = {
	.name = "gcra",
	.check = gcra_check,
	.forecast = gcra_forecast,
};
