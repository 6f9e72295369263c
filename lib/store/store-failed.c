/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-failed.c - a store that could not be opened (TK_OPT_RETRY_OPEN).
 *
 * - It keeps the error its open met, the spec and the options, and
 *   answers every step with that error, which the limiter's fail policy
 *   turns into a degraded decision (fail-policy.c).  tk_store_stats() and
 *   tk_store_ping() return it through failed().
 * - A step at @now tries the open again once @now reaches next_try, or
 *   at once if the clock stepped back to more than a second before the
 *   last try; the one caller that moves next_try a second on (CAS)
 *   opens, so a failing store costs one open a second, not one per
 *   check.
 * - The store opened is published once (CAS from NULL, release) and then
 *   serves every step until the failed store is closed.  An opener that
 *   loses that CAS (an open slower than a second) closes its own.
 * - The limiter binds no fast path to this store (it has no try_check()),
 *   so a recovered store runs every check through apply(): the same
 *   decisions by the same algorithms, a little slower.
 */
#include "algo/policy.h"
#include "store/store-ops.h"
#include "clock.h"
#include "atomic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_NS UINT64_C(1000000000)

struct failed_store {
	struct tk_store base;
	tk_atomic_ptr inner;	/* struct tk_store *: NULL until it opens */
	tk_atomic_u64 next_try; /* ns on the checks' clocks */
	tk_atomic_u32 err;	/* the last open's error, as a positive errno */
	struct tk_options o;	/* as given, without TK_OPT_RETRY_OPEN */
	char spec[];
};

static struct failed_store *failed_of(struct tk_store *s)
{
	return (struct failed_store *)s;
}

static int error_of(struct failed_store *f)
{
	return -(int)tk_atomic_load_u32(&f->err, TK_MO_RELAXED);
}

/* The store, if it is open by now; tries to open it if it is time. */
static struct tk_store *inner_at(struct failed_store *f, uint64_t now)
{
	/* acquire: the opened store's fields; pairs with the CAS below. */
	struct tk_store *in = tk_atomic_load_ptr(&f->inner, TK_MO_ACQUIRE);
	uint64_t due;
	void *none = NULL;
	int rc;

	if (in)
		return in;
	due = tk_atomic_load_u64(&f->next_try, TK_MO_RELAXED);
	/* Not yet, unless the clock stepped back to more than a second
	 * before the last try (due - RETRY_NS): a store must not stay
	 * failed until the clock comes back. */
	if (now < due && due - now <= 2 * RETRY_NS)
		return NULL;
	/* relaxed: it only elects one opener per second. */
	if (!tk_atomic_cas_u64(&f->next_try, &due, now + RETRY_NS,
			       TK_MO_RELAXED))
		return NULL;
	rc = tk_store_open(&in, f->spec, &f->o);
	if (rc) {
		tk_atomic_store_u32(&f->err, (uint32_t)-rc, TK_MO_RELAXED);
		return NULL;
	}
	/* acq_rel: publishes ours (pairs with the acquire above), or
	 * reads the store of an opener that came first. */
	if (!tk_atomic_cas_ptr(&f->inner, &none, in, TK_MO_ACQ_REL)) {
		tk_store_close(in);
		return none;
	}
	return in;
}

static struct tk_store *inner(struct failed_store *f)
{
	return tk_atomic_load_ptr(&f->inner, TK_MO_ACQUIRE);
}

static int failed_apply(struct tk_store *s, const unsigned char *key,
			size_t len, uint64_t now, const struct tk__transform *t)
{
	struct tk_store *in = inner_at(failed_of(s), now);

	return in ? in->ops->apply(in, key, len, now, t)
		  : error_of(failed_of(s));
}

static int failed_apply_multi(struct tk_store *s, uint64_t now,
			      const struct tk__multi *m)
{
	struct tk_store *in = inner_at(failed_of(s), now);

	return in ? in->ops->apply_multi(in, now, m) : error_of(failed_of(s));
}

static int failed_reset(struct tk_store *s, const unsigned char *key,
			size_t len)
{
	struct tk_store *in = inner(failed_of(s));

	return in ? in->ops->reset(in, key, len) : error_of(failed_of(s));
}

static void failed_stats(struct tk_store *s, struct tk_stats *out)
{
	struct tk_store *in = inner(failed_of(s));

	if (in)
		in->ops->stats(in, out);
}

static int failed_supports(struct tk_store *s, const struct tk_policy *p)
{
	struct tk_store *in = inner(failed_of(s));

	return in && in->ops->supports ? in->ops->supports(in, p) : 0;
}

static int failed_failed(struct tk_store *s)
{
	struct tk_store *in = inner(failed_of(s));

	if (!in)
		return error_of(failed_of(s));
	return in->ops->failed ? in->ops->failed(in) : 0;
}

/* An operator's ping tries the open too, on the store's clock. */
static int failed_ping(struct tk_store *s, struct tk_store_ping *out)
{
	struct failed_store *f = failed_of(s);
	struct tk_store *in;
	uint64_t now;
	int rc;

	rc = tk__clock_read(s->clock, &now);
	in = rc ? inner(f) : inner_at(f, now);
	if (!in)
		return rc ? rc : error_of(f);
	return tk_store_ping(in, out, sizeof(*out));
}

static void failed_close(struct tk_store *s)
{
	tk_store_close(inner(failed_of(s)));
	free(s);
}

static const struct tk__store_ops failed_ops = {
	.name = "failed",
	.apply = failed_apply,
	.apply_multi = failed_apply_multi,
	.reset = failed_reset,
	.stats = failed_stats,
	.supports = failed_supports,
	.failed = failed_failed,
	.ping = failed_ping,
	.close = failed_close,
};

int tk__failed_open(struct tk_store **out, const char *spec,
		    const struct tk_options *o, int err)
{
	size_t n = strlen(spec);
	struct failed_store *f = calloc(1, sizeof(*f) + n + 1);
	uint64_t now;

	if (!f)
		return -ENOMEM;
	f->base.ops = &failed_ops;
	f->base.clock = o->clock ? o->clock : tk_clock_system();
	f->o = *o;
	f->o.flags &= ~TK_OPT_RETRY_OPEN;
	f->o.prefix = NULL; /* not the store's, and not copied */
	memcpy(f->spec, spec, n + 1);
	tk_atomic_store_u32(&f->err, (uint32_t)-err, TK_MO_RELAXED);
	/* The open just failed: the first retry is a second away. */
	if (tk__clock_read(f->base.clock, &now) == 0)
		tk_atomic_store_u64(&f->next_try, now + RETRY_NS,
				    TK_MO_RELAXED);
	*out = &f->base;
	return 0;
}
