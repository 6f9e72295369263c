/*
 * tally.h - a process's counts of checks and denies on a zone, batched
 * before they reach the zone's shared counters.
 *
 * One batch per zone mapping (zone-registry.c), split in shards of a
 * cache line each: a thread takes a shard at its first check, in turn,
 * so up to TK__TALLY_SHARDS threads of a process count without sharing a
 * line (more share one, still exactly: every add is atomic).  A shard is
 * added to the zone when it reaches TK__TALLY_FLUSH checks, and every
 * shard of the mapping when the process reads the counters
 * (tk_store_stats(), tk_zone_info()) or closes a store: an exchange per
 * shard, so each count reaches the zone exactly once.  A fork() child
 * drops the batch it inherited (its parent still holds and flushes it).
 */
#ifndef TK_TALLY_H
#define TK_TALLY_H

#include "internal.h"
#include "atomic.h"

#define TK__TALLY_SHARDS 16
#define TK__TALLY_FLUSH 256

struct tk__tally_shard {
	_Alignas(64) tk_atomic_u64 checks;
	tk_atomic_u64 denies;
};

struct tk__zone_tally {
	struct tk__tally_shard shard[TK__TALLY_SHARDS];
	tk_atomic_u64 gen; /* fork generation the counts belong to */
};

/* rcu.c: tk__fork_generation(), for an inline read. */
extern tk_atomic_u64 tk__fork_gen;

/* This thread's shard + 1 (0: none yet); zone-registry.c. */
extern __thread unsigned int tk__tally_slot;
unsigned int tk__tally_take_slot(void);

/* Zero @t's shards for fork generation @gen; zone-registry.c. */
void tk__tally_reset(struct tk__zone_tally *t, uint64_t gen);

/* The batch is this process's: a fork() child drops its parent's. */
static inline void tk__tally_own(struct tk__zone_tally *t)
{
	uint64_t gen = tk_atomic_load_u64(&tk__fork_gen, TK_MO_RELAXED);

	if (__builtin_expect(tk_atomic_load_u64(&t->gen, TK_MO_RELAXED) != gen,
			     0))
		tk__tally_reset(t, gen);
}

/*
 * Count one check (@denied: a denial) in this thread's shard.  Returns the
 * shard's index if it is due to be added to the zone, else -1.
 */
static inline int tk__tally_count(struct tk__zone_tally *t, int denied)
{
	unsigned int i = tk__tally_slot;
	struct tk__tally_shard *sh;

	if (__builtin_expect(i == 0, 0))
		i = tk__tally_take_slot();
	tk__tally_own(t);
	sh = &t->shard[i - 1];
	if (denied)
		tk_atomic_add_u64(&sh->denies, 1, TK_MO_RELAXED);
	if (tk_atomic_add_u64(&sh->checks, 1, TK_MO_RELAXED) + 1 >=
	    TK__TALLY_FLUSH)
		return (int)i - 1;
	return -1;
}

/*
 * Add shard @shard of @t (-1: every shard) to zone @z's counters.  Under
 * a guard (tk__zone_run()).
 */
struct tk__zone;
void tk__tally_flush(struct tk__zone *z, struct tk__zone_tally *t, int shard);

/* Add this process's batches of zone @name to it (tk_zone_info()). */
void tk__tally_flush_named(const char *name);

#endif /* TK_TALLY_H */
