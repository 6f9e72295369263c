/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-memory.c - the in-process store: lock-free, multithreaded.
 *
 * Keys live in the zone's slot table in this process's own memory
 * (shm/grow.c: a private table), the same lock-free protocol as a zone
 * (docs/shm-protocol.md), for this process's threads.  A key is its
 * fingerprint, the low 56 bits of tk__keyhash() (AES-CMAC with AES-NI,
 * else SipHash-1-3; lib/keyhash.c) under a random secret of the store, so
 * keys are told apart the way a zone tells them apart.  A state of one
 * word that is its own expiry time lives in the key's slot; larger states
 * in blocks of the table's arena; the dimensions of a composite are
 * updated together by one multi-key step.
 *
 * The table starts small and grows whenever it is full, twice the slots
 * or twice the arena of blocks, whichever was full, up to the smallest
 * power of two of slots that holds max_keys (or 2^32 slots when
 * unbounded); at that size it evicts the coldest key, like a zone.
 * Expired states are swept by checks, a chunk at a time, and by the
 * reclaimer thread unless TK_OPT_NO_RECLAIMER; that thread also shrinks
 * the table once few keys remain (tk__table_shrink()).
 *
 * Checks and denials are counted per thread (lib/tally.h: a plain load
 * and store in a cache line of the thread's own) and summed when the
 * counters are read, so that a check writes no line other threads write.
 *
 * Every operation that touches the table runs inside an RCU read-side
 * section (lib/rcu.h): the tables a growth leaves behind are freed by
 * the reclaimer thread, after grace periods (tk__table_reclaim()), never
 * by a check, which never waits.  Without the thread they are freed at
 * close.
 */
#include "internal.h"
#include "keyhash.h"
#include "rcu.h"
#include "reclaimer.h"
#include "slot-store.h"
#include "tally.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_SLOTS UINT64_C(1024)
#define DEFAULT_INTERVAL UINT64_C(1000000000)

struct mem_store {
	struct tk_store base;
	struct tk__table *table;
	struct tk__keyhash_key kh;    /* the store's random secret, prepared */
	uint64_t capacity;	      /* most slots; 0: unbounded */
	uint64_t near_max;	      /* tk__slot_near_max() */
	_Atomic uint64_t growths;     /* of the table, as far was last set */
	struct tk__zone_tally *tally; /* checks and denials */
	int use_thread;
	struct tk__reclaimer reclaimer; /* when use_thread */
};

static inline __attribute__((always_inline)) void
key_of(const struct mem_store *s, const unsigned char *key, size_t len,
       int block, uint32_t alg, struct tk__zone_key *k)
{
	k->fp = tk__slot_fp(tk__keyhash_fast(&s->kh, key, len), block, alg);
	k->pos = tk__table_pos(k->fp);
}

/* Start the reclaimer thread if the store has one and this process does
 * not run it yet.  Whether it runs first: that is the one test every
 * check makes once it does (s->reclaimer is zeroed without a thread). */
static inline void before(struct mem_store *s)
{
	if (caa_likely(tk__reclaimer_running(&s->reclaimer)))
		return;
	if (s->use_thread)
		tk__reclaimer_start(&s->reclaimer);
}

/* A chunk of @k's shard, when a sweep of it is due.  In a read-side
 * section, as every function below that touches the table. */
static void sweep(struct mem_store *s, const struct tk__zone_key *k,
		  uint64_t now)
{
	tk__zone_maybe_sweep(tk__table_zone(s->table), k, now);
}

/* After an insert may have grown the table, or a pass shrunk it: is it
 * far now? */
static inline void grown(struct mem_store *s)
{
	uint64_t g = tk__table_growths(s->table);

	/* One load when nothing changed: applies come here by the million. */
	if (g == atomic_load_explicit(&s->growths, memory_order_relaxed))
		return;
	atomic_store_explicit(&s->growths, g, memory_order_relaxed);
	tk__slot_far_update(&s->base,
			    tk__zone_geo(tk__table_zone(s->table))->capacity,
			    s->near_max);
}

/* A check decided (@denied: a denial), counted. */
static inline void counted(struct mem_store *s, int denied)
{
	tk__tally_add(s->tally, denied);
}

/* A transition's result @rc: counted if it decided the check @flags
 * names (TK__T_CHECK). */
static void decided(struct mem_store *s, uint32_t flags, int rc)
{
	if (rc >= 0 && (flags & TK__T_CHECK))
		counted(s, rc == TK__ZONE_KEEP);
}

static int result(int rc)
{
	if (rc == -E2BIG)
		return -ENOTSUP; /* a state larger than a block holds */
	if (rc < 0)
		return rc;
	return rc == TK__ZONE_PERSIST ? TK__PERSIST : TK__KEEP;
}

static int memory_apply(struct tk_store *base, const unsigned char *key,
			size_t len, uint64_t now, const struct tk__transform *t)
{
	struct mem_store *s = (struct mem_store *)base;
	struct tk__zone_key k;
	int rc;

	before(s);
	key_of(s, key, len, tk__slot_block(t), t->alg, &k);
	tk__rcu_read_lock();
	rc = tk__table_apply(s->table, &k, now, t->words, t->fn, t->ctx);
	sweep(s, &k, now);
	grown(s);
	tk__rcu_read_unlock();
	decided(s, t->flags, rc);
	return result(rc);
}

/* Both checks of a GCRA state (a word key): at @now, or, with @far, at
 * the time read from @far after the key's slot is prefetched.  In a
 * read-side section, a @light one where tk__rcu_light(). */
static inline __attribute__((always_inline)) int
check_gcra(struct tk_store *base, const unsigned char *key, size_t len,
	   uint64_t now, struct tk__when *far, const struct tk__policy *p,
	   uint64_t cost, struct tk_decision *d, int light)
{
	struct mem_store *s = (struct mem_store *)base;
	struct tk__zone *z;
	struct tk__zone_key k;
	struct tkz_cand cand;
	unsigned long *ctr = NULL;
	int denied = 0, rc;

	before(s);
	/* A GCRA state is a word key. */
	key_of(s, key, len, 0, p->alg->id, &k);
	if (light)
		ctr = tk__rcu_light_lock();
	else
		tk__rcu_read_lock();
	z = tk__table_zone(s->table);
	/* While keys move to a new table, apply() pulls them first. */
	if (tk__zone_old(z)) {
		rc = TK__DIRECT_NO;
		goto out;
	}
	if (!far) {
		rc = tk__slot_direct(z, &k, NULL, now, p, cost, d, &denied);
		goto out;
	}
	rc = tk__slot_prefetch_then_read(z, &k, &cand, far);
	if (rc == 0)
		rc = tk__slot_direct(z, &k, &cand, far->ns, p, cost, d,
				     &denied);
out:
	if (light)
		tk__rcu_light_unlock(ctr);
	else
		tk__rcu_read_unlock();
	if (rc == 0)
		counted(s, denied);
	return rc;
}

/* The near and far checks of the store's ops, their read-side sections
 * @light or not (fenced_ops). */
#define CHECKS(name, light)                                                    \
	static int name(struct tk_store *base, const unsigned char *key,       \
			size_t len, uint64_t now, const struct tk__policy *p,  \
			uint64_t cost, struct tk_decision *d)                  \
	{                                                                      \
		return check_gcra(base, key, len, now, NULL, p, cost, d,       \
				  light);                                      \
	}                                                                      \
	static int name##_far(struct tk_store *base, const unsigned char *key, \
			      size_t len, struct tk__when *now,                \
			      const struct tk__policy *p, uint64_t cost,       \
			      struct tk_decision *d)                           \
	{                                                                      \
		return check_gcra(base, key, len, 0, now, p, cost, d, light);  \
	}

CHECKS(memory_check_gcra, 1)
CHECKS(fenced_check_gcra, 0)

static int memory_apply_multi(struct tk_store *base, uint64_t now,
			      const struct tk__multi *m)
{
	struct mem_store *s = (struct mem_store *)base;
	struct tk__zone_key k[TK__ZONE_MULTI_MAX];
	size_t i;
	int rc;

	if (m->n > TK__ZONE_MULTI_MAX)
		return -ENOTSUP;
	before(s);
	for (i = 0; i < m->n; i++)
		key_of(s, m->key[i], m->len[i], 1, m->alg[i], &k[i]);
	tk__rcu_read_lock();
	rc = tk__table_apply_multi(s->table, m->n, k, m->words, now, m->fn,
				   m->ctx);
	for (i = 0; i < m->n; i++)
		sweep(s, &k[i], now);
	grown(s);
	tk__rcu_read_unlock();
	decided(s, m->flags, rc);
	return result(rc);
}

static int memory_reset(struct tk_store *base, const unsigned char *key,
			size_t len)
{
	struct mem_store *s = (struct mem_store *)base;
	struct tk__zone_key k;
	int rc;

	/* Slots match by key, whatever the shape of the state they hold.
	 * A reset judges nothing by time (a move it makes reads every
	 * state as live): no clock. */
	key_of(s, key, len, 0, TK__ALG_GCRA, &k);
	tk__rcu_read_lock();
	rc = tk__table_reset(s->table, &k, 0);
	tk__rcu_read_unlock();
	return rc;
}

static void memory_stats(struct tk_store *base, struct tk_stats *out)
{
	struct mem_store *s = (struct mem_store *)base;
	uint64_t n[TKZ_COUNTERS];

	memset(out, 0, sizeof(*out));
	tk__rcu_read_lock();
	out->keys = tk__table_keys(s->table);
	tk__table_counters(s->table, n);
	/* Both in the section, live first: no table counted live is freed
	 * before the count of all, so reserved >= live. */
	out->live = tk__table_live(s->table);
	out->reserved = tk__table_reserved(s->table);
	tk__rcu_read_unlock();
	out->capacity = s->capacity;
	tk__tally_sum(s->tally, &out->checks, &out->denies);
	out->inserts = n[TKZ_INSERTS];
	out->expirations = n[TKZ_RECLAIMS];
	out->evictions = n[TKZ_EVICTIONS];
	out->resets = n[TKZ_RESETS];
}

static void memory_close(struct tk_store *base)
{
	struct mem_store *s = (struct mem_store *)base;

	if (s->use_thread)
		tk__reclaimer_destroy(&s->reclaimer);
	tk__table_free(s->table);
	free(s->tally);
	explicit_bzero(&s->kh, sizeof(s->kh));
	free(s);
}

const struct tk__keyhash_key *tk__memory_keyhash(struct tk_store *base)
{
	return &((struct mem_store *)base)->kh;
}

struct tk__table *tk__memory_table(struct tk_store *base)
{
	return ((struct mem_store *)base)->table;
}

uint64_t tk__memory_secret[2];

/* The store's ops with the checks @check and @check_far. */
#define MEMORY_OPS(check, check_far)                                           \
	{                                                                      \
		.name = "memory", .apply = memory_apply, .check_gcra = check,  \
		.check_gcra_far = check_far,                                   \
		.apply_multi = memory_apply_multi, .reset = memory_reset,      \
		.stats = memory_stats, .close = memory_close,                  \
	}

static const struct tk__store_ops memory_ops =
	MEMORY_OPS(memory_check_gcra, memory_check_gcra_far);
/* Where liburcu-bp's readers need full barriers (no membarrier(2)): it
 * decides once, when it initialises, and never goes back. */
static const struct tk__store_ops fenced_ops =
	MEMORY_OPS(fenced_check_gcra, fenced_check_gcra_far);

static void synchronize(void)
{
	tk__rcu_synchronize();
}

/*
 * The reclaimer thread's pass: the keys a growth left to move, if the
 * checks have not moved them all; expired states; the tables growths
 * retired (outside any read-side section: it waits for grace periods);
 * then, if the table is mostly empty, a smaller one, its keys moved at
 * once (the next pass frees the table they left).
 */
static void sweep_everything(void *arg, uint64_t now)
{
	struct mem_store *s = arg;

	tk__rcu_read_lock();
	(void)tk__table_move(s->table, now);
	tk__zone_sweep_all(tk__table_zone(s->table), now);
	tk__rcu_read_unlock();
	tk__table_reclaim(s->table, synchronize);
	tk__table_clear(s->table, synchronize);
	tk__rcu_read_lock();
	if (tk__table_shrink(s->table) == 1)
		(void)tk__table_move(s->table, now);
	grown(s);
	tk__rcu_read_unlock();
}

int tk__memory_open(struct tk_store **out, const struct tk_options *o)
{
	struct tk__zone_config cfg;
	struct mem_store *s;
	uint64_t secret[2], most = TKZ_CAPACITY_MAX;
	int rc;

	if (o->max_keys > UINT32_MAX)
		return -EINVAL;
	tk__rcu_setup(); /* the fork generation the reclaimer goes by */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = tk__rcu_light() ? &memory_ops : &fenced_ops;
	s->base.clock = o->clock ? o->clock : tk_clock_system();
	s->near_max = tk__slot_near_max();
	s->tally = tk__tally_new();
	memset(&cfg, 0, sizeof(cfg));
	cfg.grace = o->reclaim_grace;
	rc = s->tally ? tk__clock_read(s->base.clock, &cfg.now) : -ENOMEM;
	if (rc == 0)
		rc = tk__random_bytes(secret, sizeof(secret));
	if (rc)
		goto fail;
	if (tk__memory_secret[0] | tk__memory_secret[1])
		memcpy(secret, tk__memory_secret, sizeof(secret));
	if (o->max_keys) {
		most = TKZ_CAPACITY_MIN;
		while (most < o->max_keys)
			most *= 2;
		s->capacity = most;
	}
	cfg.capacity = most < INITIAL_SLOTS ? most : INITIAL_SLOTS;
	rc = tk__table_new(&s->table, &cfg, most, secret);
	/* Private to this process: AES-CMAC only where AES-NI makes it
	 * cheaper than SipHash-1-3 (lib/keyhash.c). */
	tk__keyhash_setup(&s->kh, (const unsigned char *)secret,
			  tk__keyhash_aesni() ? TK__KEYHASH_CMAC
					      : TK__KEYHASH_SIP13);
	explicit_bzero(secret, sizeof(secret));
	if (rc)
		goto fail;
	tk__slot_far_update(&s->base,
			    tk__zone_geo(tk__table_zone(s->table))->capacity,
			    s->near_max);
	s->use_thread = !(o->flags & TK_OPT_NO_RECLAIMER);
	if (s->use_thread)
		tk__reclaimer_init(&s->reclaimer, sweep_everything, s,
				   s->base.clock,
				   o->reclaim_interval ? o->reclaim_interval
						       : DEFAULT_INTERVAL);
	*out = &s->base;
	return 0;
fail:
	explicit_bzero(&s->kh, sizeof(s->kh));
	free(s->tally);
	free(s);
	return rc;
}
