/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-shm.c - the zone store ("shm:NAME"): keys of every process on a
 * host in one lock-free table in shared memory (shm/).
 *
 * This file turns keys into what shm/ understands: a fingerprint and a
 * position hash, both from one keyed hash under the zone's own secret
 * (tk__keyhash(), lib/hash/keyhash.c: AES-CMAC, or SipHash-1-3 in a zone whose
 * creator had no AES-NI, as its header's TKZ_FLAG_SIPHASH records), and
 * a transition over a state.  A state of one word that is its own expiry
 * time (GCRA, token bucket, leaky shaper) lives in the key's slot, because
 * the zone's reclaimers judge slots without knowing their policy; larger
 * states live in blocks that record their expiry.  The dimensions of a
 * composite are block keys, updated together by one multi-key step.
 *
 * Counters of checks and denials are batched per process and added to the
 * zone every 256 checks and at close, so that a check never writes a
 * shared counter line (a fork() child drops its parent's unflushed batch).
 *
 * Every touch of the mapping runs through tk__zone_run(): if the zone's
 * file is truncated under us, the call returns -EPROTO instead of dying of
 * SIGBUS, and the zone is broken for good (every later call of every store
 * on it returns -EPROTO at once; a new open maps the file afresh).
 *
 * The operations themselves are the slot store's (store-slot.c), which
 * the memory store shares; this file attaches the zone, reads its
 * counters and detaches.
 */
#include "store/store-ops.h"
#include "clock.h"
#include "fork.h"
#include "hash/keyhash.h"
#include "store/slot-store.h"
#include "store/tally.h"
#include "../../shm/rules.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct tk__slot_store *shm_of(struct tk_store *base)
{
	return (struct tk__slot_store *)base;
}

struct stats_call {
	struct tk__slot_store *s;
	struct tk_stats *out;
};

static int stats(void *ctx)
{
	struct stats_call *c = ctx;
	struct tk__zone_census census = { .valid = NULL };
	uint64_t n[TKZ_COUNTERS];

	tk__tally_flush(c->s->zone, c->s->tally, -1);
	c->out->keys =
		tk__zone_census(c->s->zone, &census) == 0 ? census.mem : 0;
	tk__zone_counters(c->s->zone, n);
	c->out->inserts = n[TKZ_INSERTS];
	c->out->expirations = n[TKZ_RECLAIMS];
	c->out->evictions = n[TKZ_EVICTIONS];
	c->out->resets = n[TKZ_RESETS];
	c->out->checks = n[TKZ_CHECKS];
	c->out->denies = n[TKZ_DENIES];
	c->out->reserved = tk__zone_geo(c->s->zone)->segment_size;
	c->out->live = c->out->reserved;
	return 0;
}

static void shm_stats(struct tk_store *base, struct tk_stats *out)
{
	struct tk__slot_store *s = shm_of(base);
	struct stats_call c = { s, out };

	/* After a fault the counters are not the zone's: tk_store_stats()
	 * returns shm_failed()'s error instead. */
	if (tk__zone_run(s->zone, stats, &c) != 0)
		memset(out, 0, sizeof(*out));
	out->capacity = tk__zone_geo(s->zone)->capacity;
}

/* A zone truncated under this process: every call fails from then on. */
static int shm_failed(struct tk_store *base)
{
	return tk__zone_broken(shm_of(base)->zone) ? -EPROTO : 0;
}

static int flush_call(void *ctx)
{
	struct tk__slot_store *s = ctx;

	tk__tally_flush(s->zone, s->tally, -1);
	return 0;
}

static void shm_close(struct tk_store *base)
{
	struct tk__slot_store *s = shm_of(base);

	tk__slot_stop(s);
	tk__zone_run(s->zone, flush_call, s);
	tk__zone_close_shared(s->zone);
	free(s);
}

struct rule_call {
	struct tk__zone *z;
	const struct tk__rule *r;
};

static int rule_register(void *ctx)
{
	struct rule_call *c = ctx;

	return tk__rules_register(c->z, c->r);
}

static int shm_rule_register(struct tk_store *base, const struct tk__rule *r)
{
	struct rule_call c = { shm_of(base)->zone, r };

	return tk__zone_run(c.z, rule_register, &c);
}

/* A rule's counts, under the guard (a truncated zone counts nothing). */
static void shm_rule_count(struct tk_store *base, int idx, uint64_t checks,
			   uint64_t denies)
{
	struct tk__zone *z = shm_of(base)->zone;

	if (tk__zone_enter(z) == 0) {
		tk__rules_count(z, (unsigned int)idx, checks, denies);
		tk__zone_leave(z, 0);
	}
}

/* One mapping per zone and process (zone-registry.c): the same zone. */
static int shm_same(struct tk_store *a, struct tk_store *b)
{
	return shm_of(a)->zone == shm_of(b)->zone;
}

static const struct tk__store_ops shm_ops = {
	.name = "shm",
	.apply = tk__slot_zone_apply,
	.try_check = tk__slot_zone_try,
	.try_window = tk__slot_zone_window,
	.apply_multi = tk__slot_apply_multi,
	.reset = tk__slot_reset,
	.stats = shm_stats,
	.rule_register = shm_rule_register,
	.rule_count = shm_rule_count,
	.failed = shm_failed,
	.same = shm_same,
	.close = shm_close,
};

/* What creating a zone from @o means. */
int tk__zone_config_from(const struct tk_options *o, struct tk__zone_config *c)
{
	memset(c, 0, sizeof(*c));
	c->capacity = o->zone_capacity;
	c->mode = o->zone_mode;
	c->uid = (uid_t)-1;
	c->gid = (gid_t)-1;
	if (o->flags & TK_OPT_ZONE_UID) {
		if (o->zone_uid < 0 || o->zone_uid > UINT32_MAX - 1)
			return -EINVAL;
		c->uid = (uid_t)o->zone_uid;
	}
	if (o->flags & TK_OPT_ZONE_GID) {
		if (o->zone_gid < 0 || o->zone_gid > UINT32_MAX - 1)
			return -EINVAL;
		c->gid = (gid_t)o->zone_gid;
	}
	c->flags =
		o->flags & TK_OPT_ZONE_REFUSE_FULL ? TKZ_FLAG_REFUSE_FULL : 0;
	/* The key hash of a zone this creates: AES-CMAC where this CPU
	 * has AES-NI, else SipHash-1-3 (lib/hash/keyhash.c). */
	if (!tk__keyhash_aesni())
		c->flags |= TKZ_FLAG_SIPHASH;
	c->grace = o->reclaim_grace;
	c->arena = o->zone_arena;
	/* The creation time is wall-clock metadata, whatever the clock. */
	return tk__clock_read(tk_clock_system(), &c->now);
}

int tk__shm_open(struct tk_store **out, const char *name,
		 const struct tk_options *o)
{
	struct tk__zone_config cfg;
	struct tk__slot_store *s;
	int rc;

	rc = tk__zone_config_from(o, &cfg);
	if (rc)
		return rc;
	tk__rcu_setup(); /* the fork generation */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = tk__zone_open_shared(
		&s->zone, &s->tally, name, &cfg,
		o->flags & TK_OPT_ZONE_NO_CREATE ? 0 : TK__ZONE_CREATE);
	if (rc) {
		free(s);
		return rc;
	}
	/* The function the zone's creator chose, whatever this CPU has. */
	tk__keyhash_setup(&s->kh, tk__zone_geo(s->zone)->seed,
			  tk__zone_geo(s->zone)->flags & TKZ_FLAG_SIPHASH
				  ? TK__KEYHASH_SIP13
				  : TK__KEYHASH_CMAC);
	s->base.ops = &shm_ops;
	s->kind = TK__SLOT_ZONE;
	tk__slot_init(s, o, !!(o->flags & TK_OPT_ZONE_RECLAIMER));
	*out = &s->base;
	return 0;
}
