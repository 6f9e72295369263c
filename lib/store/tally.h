/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tally.h - a process's counts of checks and denies on a zone, batched
 * before they reach the zone's shared counters; and a memory store's
 * counts, which stay in their batch (the store reads the sum).
 *
 * One batch per zone mapping (zone-registry.c), split in shards of a
 * cache line each.  A thread takes a shard of its own at its first check
 * and gives it back when it exits, so up to TK__TALLY_SHARDS threads of a
 * process count at once, each with a plain load and store (a locked add
 * cost a check 7 ns on one hot key, 13 ns on a denial); a thread that
 * finds none free counts in the one shard they all share, by atomic adds.
 * A shard's counts only grow; what of them has reached the zone is kept
 * beside them, moved on by a CAS.  A shard is added to the zone by its
 * counter at every TK__TALLY_FLUSH-th check, and every shard of the
 * mapping when the process reads the counters
 * (tk_store_stats(), tk_zone_info()) or closes a store; a thread's shard
 * (own or shared) of every mapping when the thread exits, and every
 * shard at exit(), so that a worker that leaves without closing its store
 * loses no count: each count reaches the zone exactly once, whoever adds
 * it.  Only a process killed, or one that calls _exit() while a thread
 * that counted still runs, leaves what it did not add yet.  A fork() child
 * drops the batch it inherited (its parent still holds and flushes it).  A
 * memory store's batch is never flushed: its counts are the store's,
 * and a fork() child keeps them with the copy of its table.
 */
#ifndef TK_TALLY_H
#define TK_TALLY_H

#include "fork.h"
#include "atomic.h"

#define TK__TALLY_SHARDS 16
#define TK__TALLY_FLUSH 256

struct tk__tally_shard {
	_Alignas(64) tk_atomic_u64 checks;
	tk_atomic_u64 denies;
	tk_atomic_u64 checks_out, denies_out; /* what reached the zone */
};

struct tk__zone_tally {
	/* The owned shards, then the shared one. */
	struct tk__tally_shard shard[TK__TALLY_SHARDS + 1];
	tk_atomic_u64 gen; /* fork generation the counts belong to */
};

/* This thread's shard + 1 (0: none yet; TK__TALLY_SHARDS + 1: the
 * shared one); zone-registry.c.  Initial-exec, as guard.c's: read inline,
 * not through a TLS descriptor call, on every check. */
extern __thread unsigned int tk__tally_slot
	__attribute__((tls_model("initial-exec")));
unsigned int tk__tally_take_slot(void);
/* A fork() child's shards are free but its thread's; rcu.c. */
void tk__tally_after_fork(void);

/* Zero @t's shards for fork generation @gen; zone-registry.c. */
void tk__tally_reset(struct tk__zone_tally *t, uint64_t gen);
/* A batch of no counts, of this fork generation; NULL if no memory.
 * Freed with free(). */
struct tk__zone_tally *tk__tally_new(void);
/* The checks and denies of every shard of @t (a memory store's). */
void tk__tally_sum(struct tk__zone_tally *t, uint64_t *checks,
		   uint64_t *denies);

/* The batch is this process's: a fork() child drops its parent's. */
static inline void tk__tally_own(struct tk__zone_tally *t)
{
	uint64_t gen = tk_atomic_load_u64(&tk__fork_gen, TK_MO_RELAXED);

	if (__builtin_expect(tk_atomic_load_u64(&t->gen, TK_MO_RELAXED) != gen,
			     0))
		tk__tally_reset(t, gen);
}

/* Count in shard @i - 1 of @t, this thread's own: no other writer. */
static inline uint64_t tk__tally_add_own(struct tk__zone_tally *t,
					 unsigned int i, int denied)
{
	struct tk__tally_shard *sh = &t->shard[i - 1];
	uint64_t c;

	if (denied)
		tk_atomic_store_u64(
			&sh->denies,
			tk_atomic_load_u64(&sh->denies, TK_MO_RELAXED) + 1,
			TK_MO_RELAXED);
	c = tk_atomic_load_u64(&sh->checks, TK_MO_RELAXED) + 1;
	tk_atomic_store_u64(&sh->checks, c, TK_MO_RELAXED);
	return c;
}

/* tk__tally_add() for a thread without a shard of its own yet, or with
 * none free (the shared one, by atomic adds); zone-registry.c. */
uint64_t tk__tally_add_slow(struct tk__zone_tally *t, int denied);

/*
 * Count one check (@denied: a denial) in this thread's shard of @t,
 * whichever process's batch it is.  Returns the shard's count of checks;
 * the shard is tk__tally_slot - 1 then.
 */
static inline uint64_t tk__tally_add(struct tk__zone_tally *t, int denied)
{
	unsigned int i = tk__tally_slot;

	/* One test for both "none yet" (0) and "the shared one". */
	if (__builtin_expect(i - 1 >= TK__TALLY_SHARDS, 0))
		return tk__tally_add_slow(t, denied);
	return tk__tally_add_own(t, i, denied);
}

/*
 * Count one check (@denied: a denial) in this process's batch of a
 * zone.  Returns the shard's index if it is due to be added to the zone,
 * else -1.
 */
static inline int tk__tally_count(struct tk__zone_tally *t, int denied)
{
	uint64_t c;

	tk__tally_own(t);
	c = tk__tally_add(t, denied);
	/* Every TK__TALLY_FLUSH counts of the shard; a flush by anyone
	 * since only makes this one add less. */
	return c % TK__TALLY_FLUSH == 0 ? (int)tk__tally_slot - 1 : -1;
}

/*
 * Add shard @shard of @t (-1: every shard) to zone @z's counters.  Under
 * a guard (tk__zone_run()).  Any thread may, at any time.
 */
struct tk__zone;
void tk__tally_flush(struct tk__zone *z, struct tk__zone_tally *t, int shard);

/* Add this process's batches of zone @name to it (tk_zone_info()). */
void tk__tally_flush_named(const char *name);

#endif /* TK_TALLY_H */
