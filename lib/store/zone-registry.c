/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zone-registry.c - the zones this process has mapped, shared by every
 * store that opens the same name.
 *
 * Opening "shm:NAME" twice in one process must not map the zone twice
 * (each mapping would batch its own counters and cost its own address
 * space), so stores share one mapping per name.  The registry is a
 * process-local list read under RCU and changed under a mutex: lookups
 * never block on an open or close elsewhere, and an entry is freed only
 * after a grace period.  This is the right place for RCU; the zone's slots
 * are not: RCU grace periods do not span processes, so the slot protocol
 * (docs/shm-protocol.md) protects what lives in shared memory.
 *
 * After fork() the child inherits the list and the mappings (MAP_SHARED):
 * it keeps using them as they are.
 *
 * Each mapping also holds the process's batch of check and denial counts
 * for its zone (tally.h), so that every store on the mapping, and
 * tk_zone_info() on the name, folds the same batch.
 */
#include "store/store-ops.h"
#include "fork.h"
#include "atomic.h"
#include "rcu.h"
#include "store/tally.h"
#include "../../shm/guard.h"
#include "../../shm/zone.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/rculist.h>

/*
 * No alignment beyond a pointer's: the list's head is walked as an entry
 * too (cds_list_for_each_entry_rcu() ends at it), so the cache-line
 * aligned batch is allocated apart.
 */
struct entry {
	struct tk__zone_tally *tally;
	struct cds_list_head node;
	tk_atomic_u64 refs; /* 0: being removed; do not take */
	struct tk__zone *zone;
	char name[];
};

static CDS_LIST_HEAD(zones);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__thread unsigned int tk__tally_slot __attribute__((tls_model("initial-exec")));

/* Bit i: shard i has an owner.  The key gives a shard back at its
 * thread's exit (the library is linked -z nodelete, so the destructor
 * outlives a dlclose()). */
static tk_atomic_u32 owned;
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static int slot_key_ok;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

_Static_assert(TK__TALLY_SHARDS <= 32, "owned is 32 bits");

struct shard_of {
	struct entry *e;
	int shard; /* -1: every shard */
};

static int flush_shard_of(void *ctx)
{
	struct shard_of *f = ctx;

	tk__tally_flush(f->e->zone, f->e->tally, f->shard);
	return 0;
}

/*
 * Add shard @shard of every mapping's batch to its zone.  A process may
 * leave by _exit() or be killed once its threads are done, and nothing
 * else would add what a thread counted since its last TK__TALLY_FLUSH-th
 * check.  RCU, not the lock: a fork() child may inherit the lock held.
 */
static void flush_all(int shard)
{
	struct shard_of f = { NULL, shard };
	struct entry *e;

	tk__rcu_read_lock();
	cds_list_for_each_entry_rcu(e, &zones, node)
	{
		if (tk__zone_broken(e->zone))
			continue;
		f.e = e;
		tk__zone_run(e->zone, flush_shard_of, &f);
	}
	tk__rcu_read_unlock();
}

static void give_back(unsigned int bit)
{
	/* A later destructor of this thread may still check: it counts in
	 * the shared shard, not in the next owner's. */
	tk__tally_slot = TK__TALLY_SHARDS + 1;
	/* Release: the next owner sees this one's counts. */
	if (bit < TK__TALLY_SHARDS)
		tk_atomic_and_u32(&owned, ~(UINT32_C(1) << bit), TK_MO_RELEASE);
}

static void thread_exit(void *v)
{
	unsigned int bit = (unsigned int)(uintptr_t)v - 1;

	flush_all((int)bit);
	give_back(bit);
}

static void slot_key_init(void)
{
	slot_key_ok = pthread_key_create(&slot_key, thread_exit) == 0;
}

unsigned int tk__tally_take_slot(void)
{
	uint32_t o = tk_atomic_load_u32(&owned, TK_MO_RELAXED);
	unsigned int bit;

	pthread_once(&slot_once, slot_key_init);
	while (slot_key_ok && o != UINT32_MAX >> (32 - TK__TALLY_SHARDS)) {
		bit = (unsigned int)__builtin_ctz(~o);
		if (!tk_atomic_cas_u32(&owned, &o, o | UINT32_C(1) << bit,
				       TK_MO_ACQUIRE))
			continue;
		if (pthread_setspecific(slot_key,
					(void *)(uintptr_t)(bit + 1)) != 0) {
			give_back(bit);
			break;
		}
		return tk__tally_slot = bit + 1;
	}
	/* The shared shard too is added at this thread's exit. */
	if (slot_key_ok)
		(void)pthread_setspecific(
			slot_key, (void *)(uintptr_t)(TK__TALLY_SHARDS + 1));
	return tk__tally_slot = TK__TALLY_SHARDS + 1;
}

uint64_t tk__tally_add_slow(struct tk__zone_tally *t, int denied)
{
	unsigned int i = tk__tally_slot;
	struct tk__tally_shard *sh;

	if (i == 0)
		i = tk__tally_take_slot();
	if (i <= TK__TALLY_SHARDS)
		return tk__tally_add_own(t, i, denied);
	sh = &t->shard[i - 1];
	if (denied)
		tk_atomic_add_u64(&sh->denies, 1, TK_MO_RELAXED);
	return tk_atomic_add_u64(&sh->checks, 1, TK_MO_RELAXED) + 1;
}

void tk__tally_after_fork(void)
{
	unsigned int i = tk__tally_slot;

	tk_atomic_store_u32(
		&owned, i && i <= TK__TALLY_SHARDS ? UINT32_C(1) << (i - 1) : 0,
		TK_MO_RELAXED);
}

void tk__tally_reset(struct tk__zone_tally *t, uint64_t gen)
{
	unsigned int i;

	for (i = 0; i <= TK__TALLY_SHARDS; i++) {
		tk_atomic_store_u64(&t->shard[i].checks, 0, TK_MO_RELAXED);
		tk_atomic_store_u64(&t->shard[i].denies, 0, TK_MO_RELAXED);
		tk_atomic_store_u64(&t->shard[i].checks_out, 0, TK_MO_RELAXED);
		tk_atomic_store_u64(&t->shard[i].denies_out, 0, TK_MO_RELAXED);
	}
	tk_atomic_store_u64(&t->gen, gen, TK_MO_RELAXED);
}

struct tk__zone_tally *tk__tally_new(void)
{
	struct tk__zone_tally *t =
		aligned_alloc(_Alignof(struct tk__zone_tally), sizeof(*t));

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	tk_atomic_store_u64(&t->gen, tk__fork_generation(), TK_MO_RELAXED);
	return t;
}

void tk__tally_sum(struct tk__zone_tally *t, uint64_t *checks, uint64_t *denies)
{
	unsigned int i;

	*checks = *denies = 0;
	for (i = 0; i <= TK__TALLY_SHARDS; i++) {
		*checks +=
			tk_atomic_load_u64(&t->shard[i].checks, TK_MO_RELAXED);
		*denies +=
			tk_atomic_load_u64(&t->shard[i].denies, TK_MO_RELAXED);
	}
}

/* Add what @count has that has not reached the zone's counter @to. */
static void fold(tk_atomic_u64 *count, tk_atomic_u64 *out, uint64_t *to)
{
	uint64_t o = tk_atomic_load_u64(out, TK_MO_RELAXED), c;

	for (;;) {
		/* Counts only grow, and *out only ever takes a count read
		 * after it: c >= o. */
		c = tk_atomic_load_u64(count, TK_MO_RELAXED);
		if (c == o)
			return;
		if (tk_atomic_cas_u64(out, &o, c, TK_MO_RELAXED)) {
			ck_pr_faa_64(to, c - o);
			return;
		}
	}
}

static void flush_shard(struct tkz_header *h, struct tk__tally_shard *sh)
{
	fold(&sh->checks, &sh->checks_out, &h->counters[TKZ_CHECKS].v);
	fold(&sh->denies, &sh->denies_out, &h->counters[TKZ_DENIES].v);
}

void tk__tally_flush(struct tk__zone *z, struct tk__zone_tally *t, int shard)
{
	struct tkz_header *h = tk__zone_header(z);
	int i;

	tk__tally_own(t);
	if (shard >= 0) {
		flush_shard(h, &t->shard[shard]);
		return;
	}
	for (i = 0; i <= TK__TALLY_SHARDS; i++)
		flush_shard(h, &t->shard[i]);
}

static int flush_entry(void *ctx)
{
	struct entry *e = ctx;

	tk__tally_flush(e->zone, e->tally, -1);
	return 0;
}

/* exit() with stores still open: every shard, the exiting thread's
 * (which runs no key destructor) and the shared one among them. */
static void flush_at_exit(void)
{
	flush_all(-1);
}

static void exit_flush_init(void)
{
	(void)atexit(flush_at_exit);
}

void tk__tally_flush_named(const char *name)
{
	struct entry *e;

	/* The mapping is unmapped only after a grace period. */
	tk__rcu_read_lock();
	cds_list_for_each_entry_rcu(e, &zones, node)
	{
		if (strcmp(e->name, name) == 0 && !tk__zone_broken(e->zone))
			tk__zone_run(e->zone, flush_entry, e);
	}
	tk__rcu_read_unlock();
}

/* A reference to an entry that is not being removed. */
static int take(struct entry *e)
{
	uint64_t r = tk_atomic_load_u64(&e->refs, TK_MO_RELAXED);

	while (r != 0)
		if (tk_atomic_cas_u64(&e->refs, &r, r + 1, TK_MO_ACQUIRE))
			return 1;
	return 0;
}

static struct entry *find(const char *name, const struct tk__zone_config *cfg)
{
	struct entry *z = NULL;
	struct entry *e;

	tk__rcu_read_lock();
	cds_list_for_each_entry_rcu(e, &zones, node)
	{
		/* A broken mapping, or one of a file destroyed or replaced
		 * since, serves its stores until they close; a new open
		 * maps the name afresh, as any other process would, and is
		 * judged by the trust rules with its own options. */
		if (strcmp(e->name, name) == 0 && !tk__zone_broken(e->zone) &&
		    tk__zone_current(e->zone, cfg) && take(e)) {
			z = e;
			break;
		}
	}
	tk__rcu_read_unlock();
	return z;
}

/* A new entry for @name, mapped; under the lock. */
static int add(struct entry **out, const char *name,
	       const struct tk__zone_config *cfg, int flags)
{
	struct entry *e = calloc(1, sizeof(*e) + strlen(name) + 1);
	int rc = -ENOMEM;

	if (!e)
		return rc;
	e->tally = tk__tally_new();
	if (e->tally)
		rc = tk__zone_attach(&e->zone, name, cfg, flags);
	if (rc) {
		free(e->tally);
		free(e);
		return rc;
	}
	strcpy(e->name, name);
	atomic_init(&e->refs, 1);
	cds_list_add_rcu(&e->node, &zones);
	*out = e;
	return 0;
}

int tk__zone_open_shared(struct tk__zone **out, struct tk__zone_tally **tally,
			 const char *name, const struct tk__zone_config *cfg,
			 int flags)
{
	struct entry *e;
	int rc = 0;

	tk__rcu_setup();
	pthread_once(&exit_once, exit_flush_init);
	/* Every store open, also of a zone already mapped: a server may
	 * have replaced the handler since (see shm/guard.c). */
	tk__guard_install();
	e = find(name, cfg);
	if (!e) {
		pthread_mutex_lock(&lock);
		/* Again, under the lock: another thread may have just mapped
		 * it. */
		e = find(name, cfg);
		if (!e)
			rc = add(&e, name, cfg, flags);
		pthread_mutex_unlock(&lock);
		if (rc)
			return rc;
	}
	*out = e->zone;
	*tally = e->tally;
	return 0;
}

void tk__zone_close_shared(struct tk__zone *z)
{
	struct entry *e, *found = NULL;

	pthread_mutex_lock(&lock);
	cds_list_for_each_entry(e, &zones, node)
	{
		if (e->zone == z) {
			found = e;
			break;
		}
	}
	if (found &&
	    atomic_fetch_sub_explicit(&found->refs, 1, TK_MO_ACQ_REL) == 1)
		cds_list_del_rcu(&found->node);
	else
		found = NULL;
	pthread_mutex_unlock(&lock);
	if (!found)
		return;
	/* Readers that found it before the unlink are done after this. */
	tk__rcu_synchronize();
	tk__zone_detach(found->zone);
	free(found->tally);
	free(found);
}
