/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-shm.c - the zone store ("shm:NAME"): keys of every process on a
 * host in one lock-free table in shared memory (shm/).
 *
 * This file turns keys into what shm/ understands: a fingerprint and a
 * position hash, both from one keyed hash under the zone's own secret
 * (tk__keyhash(), lib/keyhash.c: AES-CMAC, or SipHash-1-3 in a zone whose
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
 */
#include "internal.h"
#include "atomic.h"
#include "keyhash.h"
#include "reclaimer.h"
#include "slot-store.h"
#include "tally.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ck_pr.h>

struct shm_store {
	struct tk_store base;
	struct tk__zone *zone;
	struct tk__keyhash_key kh;	/* the zone's secret, prepared */
	struct tk__zone_tally *tally;	/* the mapping's, shared */
	int want_thread;		/* TK_OPT_ZONE_RECLAIMER */
	struct tk__reclaimer reclaimer; /* when want_thread */
};

struct sweep_call {
	struct tk__zone *zone;
	uint64_t now;
};

static int sweep_all(void *ctx)
{
	struct sweep_call *c = ctx;

	tk__zone_sweep_all(c->zone, c->now);
	return 0;
}

/* The reclaimer thread's sweep: a broken zone is left alone. */
static void sweep_zone(void *arg, uint64_t now)
{
	struct shm_store *s = arg;
	struct sweep_call c = { s->zone, now };

	tk__zone_run(s->zone, sweep_all, &c);
}

/*
 * One keyed hash gives both: the fingerprint is its low 56 bits (and the
 * shape of the state: its kind and algorithm @alg), the position a
 * bijective mix of all 64 (so two keys that share a window still differ
 * in ~56 fingerprint bits, and positions stay as secret as the hash).
 */
static inline __attribute__((always_inline)) void
key_of(const struct shm_store *s, const unsigned char *key, size_t len,
       int block, uint32_t alg, struct tk__zone_key *k)
{
	uint64_t h = tk__keyhash_fast(&s->kh, key, len);

	k->fp = tk__slot_fp(h, block, alg);
	k->pos = tk__zone_mix(h);
}

/* Under a guard (tk__zone_run()), as everything below that touches the
 * zone. */
static inline __attribute__((always_inline)) void tally(struct shm_store *s,
							int denied)
{
	int due = tk__tally_count(s->tally, denied);

	if (due >= 0)
		tk__tally_flush(s->zone, s->tally, due);
}

struct apply_call {
	struct shm_store *s;
	const struct tk__zone_key *k;
	uint64_t now;
	const struct tk__transform *t;
};

static int apply(void *ctx)
{
	struct apply_call *c = ctx;
	int rc;

	rc = tk__zone_apply(c->s->zone, c->k, c->now, c->t->words, c->t->fn,
			    c->t->ctx);
	tk__zone_maybe_sweep(c->s->zone, c->k, c->now);
	if (rc >= 0 && (c->t->flags & TK__T_CHECK))
		tally(c->s, rc == TK__ZONE_KEEP);
	return rc;
}

struct direct_call {
	struct shm_store *s;
	const struct tk__zone_key *k;
	const struct tkz_cand *cand; /* the key's candidates, or NULL */
	uint64_t now;
	const struct tk__policy *p;
	uint64_t cost;
	struct tk_decision *d;
};

/* slot-store.h's direct check, counted like any other. */
static inline __attribute__((always_inline)) int direct(void *ctx)
{
	struct direct_call *c = ctx;
	int denied, rc;

	rc = tk__slot_direct(c->s->zone, c->k, c->cand, c->now, c->p, c->cost,
			     c->d, &denied);
	if (rc == 0)
		tally(c->s, denied);
	return rc;
}

static int shm_apply(struct tk_store *base, const unsigned char *key,
		     size_t len, uint64_t now, const struct tk__transform *t)
{
	struct shm_store *s = (struct shm_store *)base;
	struct tk__zone_key k;
	struct apply_call c = { s, &k, now, t };
	int rc;

	if (s->want_thread)
		tk__reclaimer_ensure(&s->reclaimer);
	key_of(s, key, len, tk__slot_block(t), t->alg, &k);
	rc = tk__zone_run(s->zone, apply, &c);
	if (rc < 0)
		return rc;
	return rc == TK__ZONE_PERSIST ? TK__PERSIST : TK__KEEP;
}

/* Both checks of a GCRA state (a word key): at @now, or, with @far, at
 * the time read from @far after the key's slot is prefetched. */
static inline __attribute__((always_inline)) int
check_gcra(struct tk_store *base, const unsigned char *key, size_t len,
	   uint64_t now, struct tk__when *far, const struct tk__policy *p,
	   uint64_t cost, struct tk_decision *d)
{
	struct shm_store *s = (struct shm_store *)base;
	struct tk__zone_key k;
	struct tkz_cand cand;
	struct direct_call c = { s, &k, NULL, now, p, cost, d };
	int rc;

	if (s->want_thread)
		tk__reclaimer_ensure(&s->reclaimer);
	/* A GCRA state is a word key. */
	key_of(s, key, len, 0, p->alg->id, &k);
	if (far) {
		rc = tk__slot_prefetch_then_read(s->zone, &k, &cand, far);
		if (rc)
			return rc;
		c.cand = &cand;
		c.now = far->ns;
	}
	return tk__zone_run(s->zone, direct, &c);
}

static int shm_check_gcra(struct tk_store *base, const unsigned char *key,
			  size_t len, uint64_t now, const struct tk__policy *p,
			  uint64_t cost, struct tk_decision *d)
{
	return check_gcra(base, key, len, now, NULL, p, cost, d);
}

static int shm_check_gcra_far(struct tk_store *base, const unsigned char *key,
			      size_t len, struct tk__when *now,
			      const struct tk__policy *p, uint64_t cost,
			      struct tk_decision *d)
{
	return check_gcra(base, key, len, 0, now, p, cost, d);
}

struct multi_call {
	struct shm_store *s;
	const struct tk__zone_key *k;
	uint64_t now;
	const struct tk__multi *m;
};

static int apply_multi(void *ctx)
{
	struct multi_call *c = ctx;
	size_t i;
	int rc;

	rc = tk__zone_apply_multi(c->s->zone, c->m->n, c->k, c->m->words,
				  c->now, c->m->fn, c->m->ctx);
	for (i = 0; i < c->m->n; i++)
		tk__zone_maybe_sweep(c->s->zone, &c->k[i], c->now);
	if (rc >= 0 && (c->m->flags & TK__T_CHECK))
		tally(c->s, rc == TK__ZONE_KEEP);
	return rc;
}

/* Composites: every dimension's state in a block, one atomic step over
 * all of them (shm/mcas.c). */
static int shm_apply_multi(struct tk_store *base, uint64_t now,
			   const struct tk__multi *m)
{
	struct shm_store *s = (struct shm_store *)base;
	struct tk__zone_key k[TK__ZONE_MULTI_MAX];
	struct multi_call c = { s, k, now, m };
	size_t i;
	int rc;

	if (m->n > TK__ZONE_MULTI_MAX)
		return -ENOTSUP;
	if (s->want_thread)
		tk__reclaimer_ensure(&s->reclaimer);
	for (i = 0; i < m->n; i++)
		key_of(s, m->key[i], m->len[i], 1, m->alg[i], &k[i]);
	rc = tk__zone_run(s->zone, apply_multi, &c);
	if (rc == -E2BIG)
		return -ENOTSUP;
	if (rc < 0)
		return rc;
	return rc == TK__ZONE_PERSIST ? TK__PERSIST : TK__KEEP;
}

struct reset_call {
	struct tk__zone *zone;
	struct tk__zone_key k;
};

static int reset(void *ctx)
{
	struct reset_call *c = ctx;

	/* Slots match by key, whatever the shape of the state they hold. */
	return tk__zone_reset(c->zone, &c->k);
}

static int shm_reset(struct tk_store *base, const unsigned char *key,
		     size_t len)
{
	struct shm_store *s = (struct shm_store *)base;
	struct reset_call c = { .zone = s->zone };

	key_of(s, key, len, 0, TK__ALG_GCRA, &c.k);
	return tk__zone_run(s->zone, reset, &c);
}

struct stats_call {
	struct shm_store *s;
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
	struct shm_store *s = (struct shm_store *)base;
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
	struct shm_store *s = (struct shm_store *)base;

	return tk__zone_broken(s->zone) ? -EPROTO : 0;
}

static int flush_call(void *ctx)
{
	struct shm_store *s = ctx;

	tk__tally_flush(s->zone, s->tally, -1);
	return 0;
}

static void shm_close(struct tk_store *base)
{
	struct shm_store *s = (struct shm_store *)base;

	if (s->want_thread)
		tk__reclaimer_destroy(&s->reclaimer);
	tk__zone_run(s->zone, flush_call, s);
	tk__zone_close_shared(s->zone);
	free(s);
}

static const struct tk__store_ops shm_ops = {
	.name = "shm",
	.apply = shm_apply,
	.check_gcra = shm_check_gcra,
	.check_gcra_far = shm_check_gcra_far,
	.apply_multi = shm_apply_multi,
	.reset = shm_reset,
	.stats = shm_stats,
	.failed = shm_failed,
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
	 * has AES-NI, else SipHash-1-3 (lib/keyhash.c). */
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
	struct shm_store *s;
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
	s->base.clock = o->clock ? o->clock : tk_clock_system();
	s->want_thread = !!(o->flags & TK_OPT_ZONE_RECLAIMER);
	tk__slot_far_update(&s->base, tk__zone_geo(s->zone)->capacity,
			    tk__slot_near_max());
	if (s->want_thread)
		tk__reclaimer_init(&s->reclaimer, sweep_zone, s, s->base.clock,
				   o->reclaim_interval ? o->reclaim_interval
						       : UINT64_C(1000000000));
	*out = &s->base;
	return 0;
}
