/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slot-store.h - the store on the slot table (store-slot.c), which the
 * zone store (store-shm.c, a zone in shared memory) and the memory store
 * (store-memory.c, a private table that grows) both are: its handle, the
 * operations it runs for both, and the inline steps of its hot path (a
 * key's fingerprint, the kind of slot a transition needs, the direct
 * check on a word slot).  Each store file keeps only what differs: how
 * it opens, counts its keys and closes.
 */
#ifndef TK_SLOT_STORE_H
#define TK_SLOT_STORE_H

#include "algo/algo.h"
#include "store/store-ops.h"
#include "clock.h"
#include "algo/gcra.h"
#include "hash/keyhash.h"
#include "store/store-key.h"
#include "store/reclaimer.h"
#include "../../shm/recent.h"
#include "../../shm/word.h"

#include <stdatomic.h>
#include <string.h>

/* A transition's results are the table's: shm/ runs t->fn as it is. */
_Static_assert(TK__PERSIST == TK__ZONE_PERSIST && TK__KEEP == TK__ZONE_KEEP,
	       "one meaning for a transition's result");
_Static_assert(TK__WORD_SLACK == TKZ_WORD_SLACK, "one rule for words");

/*
 * The fingerprint of a key of keyed hash @h: its low 56 bits (never 0),
 * and the shape of its state: a block (@block) or a word, and the
 * algorithm @alg that writes it.
 */
static inline uint64_t tk__slot_fp(uint64_t h, int block, uint32_t alg)
{
	uint64_t fp = h & TKZ_FP_KEY;

	if (fp == 0)
		fp = 1;
	fp |= (uint64_t)(alg & TK__ALG_SLOT_MASK) << TKZ_FP_ALG_SHIFT;
	return block ? fp | TKZ_FP_BLOCK : fp;
}

/* A state that is not one word holding its own expiry needs a block. */
static inline int tk__slot_block(const struct tk__transform *t)
{
	return t->words != 1 || !(t->flags & TK__T_WORD_IS_EXPIRY);
}

/*
 * When a check reads its clock: before hashing its key (the limiter
 * reads it and hands try_check() the time), or after, with the key's slot
 * prefetched (try_check() reads it).  The clock's ordered TSC read
 * waits for the instructions before it, so a hash before it (ten AES
 * rounds) adds to every check; but a table larger than a core's cache
 * misses on most slots, and a prefetch issued before the clock read
 * overlaps the miss with it, which is worth more (bench/README.md,
 * "2026-11-26").  A store sets its @far while its table is that large
 * (tk__store_reads_clock()).
 */
static inline __attribute__((always_inline)) int
tk__slot_prefetch_then_read(struct tk__zone *z, const struct tk__zone_key *k,
			    struct tkz_cand *c, struct tk__when *now)
{
	tk__zone_prefetch(z, k, c);
	return tk__when_read(now);
}

/* Keep @s's @far as a table of @capacity slots makes it. */
static inline void tk__slot_far_update(struct tk_store *s, uint64_t capacity,
				       uint64_t near_max)
{
	int far = capacity > near_max;

	/* Written once it changes, not by every apply: a shared line. */
	if (atomic_load_explicit(&s->far, memory_order_relaxed) != far)
		atomic_store_explicit(&s->far, far, memory_order_relaxed);
}

/* store.c: the most slots a table may have to count as near (in a
 * core's cache), as a store opens. */
uint64_t tk__slot_near_max(void);

/*
 * Remember what a direct check wrote (struct tk__last_write): an
 * admission that finds another word in the slot this thread wrote last
 * met a rival writer.  A denial writes nothing, and two cores that only
 * read a line share it, so after one the near order is the right one.
 */
static inline void tk__slot_wrote(const struct tk__zone_word *w, uint64_t word)
{
	struct tk__last_write *m = &tk__last_write;

	m->rival = (w->slot == m->slot) & (w->w1 != m->word);
	m->slot = w->slot;
	m->word = word;
}

/*
 * A check's store key, for a zone's rings of recent keys (shm/recent.h),
 * read only where a check is recorded.  The hot path keeps it in its
 * frame as a volatile (check() in store-slot.c): as two values live to
 * the end, they took registers from the key's hash, which then read the
 * length from the stack at each use; in the frame they cost two stores.
 */
struct tk__slot_name {
	const struct tk__store_head *head; /* NULL: @key is the whole key */
	const void *key;		   /* the store key, or after @head */
	size_t len;			   /* bytes at @key */
};

/*
 * Record @name in @z's ring @id (shm/recent.h), or as a denial at @now:
 * a repeat of this thread's last one counted to it, known by the key's
 * fingerprint @id (tk__recent_repeat()), else a new record, paced: a
 * thread makes TK__DENY_BURST new records at once, then one every
 * TK__DENY_GAP ns of its checks' clock, so that a flood of denials of
 * distinct keys (many clients over their limits) does not pay a record
 * each (35 ns: bench/README.md, "2026-11-28 late").  Repeats are not
 * paced; a denial left unrecorded ends the last record's run, so that a
 * record still counts only denials of its key with none of another
 * between them.  The pace is the thread's, across every zone and clock
 * it checks with.  The store key is joined first if it comes in two
 * parts.
 */
#define TK__DENY_BURST 64
#define TK__DENY_GAP 1000 /* ns */
void tk__slot_name_put(struct tk__zone *z, int id,
		       const volatile struct tk__slot_name *name);
void tk__slot_name_deny(struct tk__zone *z,
			const volatile struct tk__slot_name *name, uint64_t id,
			uint64_t now);

/*
 * A check of GCRA or the token bucket in one call chain: the key's slot
 * found in @z (shm/word.h), the algorithm's own step on its word (gcra.h),
 * the slot updated by the CAS the table's apply would make.  Returns 0
 * with the decision in *@d (*@denied set for a denial), a negative errno,
 * or TK__NOT_HERE before anything is written for anything but the plain
 * case (no slot yet, an insert of the key under way, a sweep due, a state
 * of another shape or that does not validate, the slot changed twice under
 * us): the limiter then runs the store's apply, which decides as it
 * always does.  @cand: @k's candidates, if known, or NULL.  @name: the
 * store key, whose denial goes to @z's ring of recent denials, or NULL
 * for none (a private table).
 */
#define TK__SLOT_DIRECT_ROUNDS 2

static inline __attribute__((always_inline)) int
tk__slot_direct(struct tk__zone *z, const struct tk__zone_key *k,
		const struct tkz_cand *cand, uint64_t now,
		const struct tk__policy *p, uint64_t cost,
		struct tk_decision *out, int *denied,
		const volatile struct tk__slot_name *name)
{
	struct tk__zone_word w;
	struct tk__gcra_step step;
	int round, rc;

	for (round = 0; round < TK__SLOT_DIRECT_ROUNDS; round++) {
		if (!tk__zone_word_find(z, k, cand, now, &w) ||
		    !tk__gcra_valid(p, 1, &w.w1))
			return TK__NOT_HERE;
		rc = tk__gcra_step(p, &w.w1, now, cost, &step);
		if (rc < 0)
			return rc;
		/* Written first, explained after (tk__gcra_step()). */
		if (rc == TK__PERSIST) {
			if (!tk__zone_word_put(&w, step.tat_new))
				continue;
			tk__slot_wrote(&w, step.tat_new);
		} else {
			if (!tk__zone_word_keep(&w))
				continue;
			tk__last_write.rival = 0;
			/* Where the denial is known, so that an admission
			 * tests nothing more. */
			if (name)
				tk__slot_name_deny(z, name, w.w0 & TKZ_FP_KEY,
						   now);
		}
		memset(out, 0, sizeof(*out));
		tk__gcra_explain(p, &step, rc, now, out);
		*denied = rc == TK__KEEP;
		return 0;
	}
	return TK__NOT_HERE;
}

/* The tables a slot store runs on (struct tk__slot_store's kind). */
#define TK__SLOT_ZONE 0	 /* a zone: every touch under its fault guard */
#define TK__SLOT_TABLE 1 /* a private table: every touch under RCU */

/* Ns between the reclaimer thread's sweeps unless the options say. */
#define TK__SLOT_RECLAIM_INTERVAL UINT64_C(1000000000)

struct tk__slot_store {
	struct tk_store base;
	int kind;		      /* TK__SLOT_* */
	struct tk__zone *zone;	      /* TK__SLOT_ZONE */
	struct tk__table *table;      /* TK__SLOT_TABLE */
	struct tk__keyhash_key kh;    /* the secret, prepared */
	struct tk__zone_tally *tally; /* checks and denials */
	uint64_t near_max;	      /* tk__slot_near_max() */
	_Atomic uint64_t growths;     /* of the table, as far was last set */
	int use_thread;
	struct tk__reclaimer reclaimer; /* when use_thread */
};

/*
 * What every slot store sets as it opens, once its table is there: the
 * clock (@o's, else the system's), far for its table's size, and the
 * reclaimer thread (if @use_thread; started by the first apply) sweeping
 * every @o->reclaim_interval ns or TK__SLOT_RECLAIM_INTERVAL.
 */
void tk__slot_init(struct tk__slot_store *s, const struct tk_options *o,
		   int use_thread);
/* Stop the reclaimer thread, if the store has one (close). */
void tk__slot_stop(struct tk__slot_store *s);

/*
 * The operations both stores share (struct tk__store_ops), one instance
 * per kind of table, each compiled for it: the zone's, and the private
 * table's with RCU sections that are light (tk__rcu_light()) or fenced.
 */
int tk__slot_zone_apply(struct tk_store *s, const unsigned char *key,
			size_t len, uint64_t now,
			const struct tk__transform *t);
int tk__slot_table_apply(struct tk_store *s, const unsigned char *key,
			 size_t len, uint64_t now,
			 const struct tk__transform *t);
int tk__slot_zone_try(struct tk_store *s, const struct tk__store_head *head,
		      const char *key, size_t key_len, uint64_t now,
		      struct tk__when *late, const struct tk__policy *p,
		      uint64_t cost, struct tk_decision *d);
int tk__slot_table_try(struct tk_store *s, const struct tk__store_head *head,
		       const char *key, size_t key_len, uint64_t now,
		       struct tk__when *late, const struct tk__policy *p,
		       uint64_t cost, struct tk_decision *d);
int tk__slot_fenced_try(struct tk_store *s, const struct tk__store_head *head,
			const char *key, size_t key_len, uint64_t now,
			struct tk__when *late, const struct tk__policy *p,
			uint64_t cost, struct tk_decision *d);
/* try_window(): the same for a window's key (store-slot.c, window()). */
int tk__slot_zone_window(struct tk_store *s, const struct tk__store_head *head,
			 const char *key, size_t key_len, uint64_t now,
			 struct tk__when *late, const struct tk__policy *p,
			 uint64_t cost, struct tk_decision *d);
int tk__slot_table_window(struct tk_store *s, const struct tk__store_head *head,
			  const char *key, size_t key_len, uint64_t now,
			  struct tk__when *late, const struct tk__policy *p,
			  uint64_t cost, struct tk_decision *d);
int tk__slot_fenced_window(struct tk_store *s,
			   const struct tk__store_head *head, const char *key,
			   size_t key_len, uint64_t now, struct tk__when *late,
			   const struct tk__policy *p, uint64_t cost,
			   struct tk_decision *d);
int tk__slot_apply_multi(struct tk_store *s, uint64_t now,
			 const struct tk__multi *m);
int tk__slot_reset(struct tk_store *s, const unsigned char *key, size_t len);

#endif /* TK_SLOT_STORE_H */
