/*
 * store-memory.h - the memory store's structures, shared by its files:
 * store-memory.c (the table and apply), memory-reclaim.c (expiry wheel,
 * CLOCK eviction, deferred frees, the reclaimer thread) and memory-mcas.c
 * (atomic steps over several keys).
 */
#ifndef TK_STORE_MEMORY_H
#define TK_STORE_MEMORY_H

#include "internal.h"
#include "atomic.h"
#include "reclaimer.h"

#include <pthread.h>
#include <stddef.h>

#include <urcu/rculfhash.h>

#define DEAD 0 /* expires_at of a killed entry */
/* expires_at of a cell that a multi-key step holds: word 0 is its
 * struct mcas (memory-mcas.c).  States never expire this late. */
#define MARK UINT64_MAX

#define WHEEL_SLOTS 512
#define WHEEL_TICK_SHIFT 27 /* a tick is 2^27 ns, about 134 ms */
#define SWEEP_BUDGET 64	    /* entries an applier sweeps per turn */
#define DEFAULT_INTERVAL UINT64_C(1000000000)
#define INITIAL_BUCKETS 1024
#define DEFAULT_GRACE (UINT64_C(60) * 1000000000)

/* A ring slot taken by an inserter that has not published its entry. */
#define RESERVED ((void *)1)

/* Key bytes an entry keeps on its first line (the rest in key[]). */
#define KEY_HEAD 16

/*
 * A lookup and a check read only an entry's first 64 bytes: the table's
 * node (next pointer and reverse hash, compared before the key), the
 * cell, the shape and the first KEY_HEAD bytes of the key, which for a
 * key that short is the whole key.  Entries are not 64-byte aligned:
 * aligned_alloc(64) doubled the resident size per key (121 -> 265
 * bytes) and bought no measurable time at 100k keys.
 */
struct mem_entry {
	/* First line: what a lookup and a check read. */
	struct cds_lfht_node node;
	struct tk_cell cell;	  /* {state word, expires_at ns; DEAD} */
	tk_atomic_u32 published;  /* see published() */
	tk_atomic_u32 referenced; /* CLOCK second-chance bit */
	/* The shape of the state: a key read as another is -EPROTO. */
	uint16_t words;
	uint16_t alg; /* TK__ALG_* */
	uint16_t key_len;
	/* The key's first KEY_HEAD bytes, zero after its end. */
	uint64_t head[KEY_HEAD / 8];
	/* Second line: reclamation's. */
	struct mem_entry *wheel_next; /* owned by the wheel bucket */
	struct mem_entry *retire_next;
	/* Unlink steps left: table removal, ring slot; 0 = unreachable. */
	tk_atomic_u32 unlink_pending;
	tk_atomic_u32 pins; /* multi-key steps that name this entry */
	uint32_t ring_slot;
	unsigned char key[]; /* the key's bytes past KEY_HEAD */
};

/*
 * State of more than one word lives in an immutable block whose address
 * the cell holds: an update writes a fresh block and swings the cell to
 * it with the same 16-byte CAS, then retires the old block.
 */
struct mem_block {
	struct mem_block *retire_next;
	tk_atomic_u32 published; /* see published() */
	uint64_t w[];
};

struct mem_store {
	struct tk_store base;
	struct cds_lfht *ht;
	struct tk__keyhash_key kh; /* the store's random secret, prepared */
	uint64_t hash_or; /* ORed into every hash: 0, or all ones to test */
	uint64_t buckets; /* current hash table size (sweeper's) */
	tk_atomic_u64 grow_at; /* keys above which to grow: 2 x buckets */
	uint64_t grace;	       /* ns a state stays after it expired */
	int use_thread;

	/* CLOCK ring; NULL when unbounded. */
	tk_atomic_ptr *ring;
	uint64_t ring_cap;
	tk_atomic_u64 hand;

	tk_atomic_ptr wheel[WHEEL_SLOTS];
	tk_atomic_u64 cursor;	    /* first tick not yet processed */
	tk_atomic_u64 drain_cursor; /* next slot of a draining pass */
	/* 0 when free, else (fork generation << 1) | 1 of the holder. */
	tk_atomic_u64 sweeper;

	tk_atomic_ptr retired;	      /* entries */
	tk_atomic_ptr retired_blocks; /* blocks replaced by updates */
	tk_atomic_ptr retired_mcas;   /* finished multi-key steps */
	tk_atomic_u64 n_retired;
	tk_atomic_u64 dead_pending; /* killed entries still in the wheel */

	tk_atomic_u64 keys, inserts, expirations, evictions, resets;
	tk_atomic_u64 visited; /* wheel entries examined, for tests */

	struct tk__reclaimer reclaimer; /* when use_thread */
};

static inline uint64_t tick_of(uint64_t ns)
{
	return ns >> WHEEL_TICK_SHIFT;
}

static inline struct mem_block *block_of(uint64_t word)
{
	return (struct mem_block *)(uintptr_t)word;
}

/*
 * cds_lfht already orders an entry's initialisation before its discovery
 * (rcu_dereference); this acquire, paired with the release in insert(),
 * restates that in C11 terms so that ThreadSanitizer, which cannot see
 * inside the uninstrumented liburcu, sees it too.  On x86 it is a plain
 * load of a line the caller is about to read anyway.
 */
static inline void published(tk_atomic_u32 *flag)
{
	(void)tk_atomic_load_u32(flag, TK_MO_ACQUIRE);
}

/*
 * A multi-key step (a descriptor, after Harris, Fraser and Pratt, "A
 * practical multi-word compare-and-swap operation", 2002): it replaces
 * old[i] by new[i] in every entry's cell, or changes nothing.
 */
#define MCAS_MAX 8

struct mcas {
	tk_atomic_u64 status;	 /* MCAS_UNDECIDED, _SUCCEEDED, _FAILED */
	tk_atomic_u32 published; /* see published() */
	size_t n;
	struct mem_entry *e[MCAS_MAX]; /* in address order */
	uint64_t old[MCAS_MAX][2];
	uint64_t new[MCAS_MAX][2];
	struct mcas *retire_next;
};

/* A stack entry holding just a key: what match_key() compares against. */
union probe {
	struct mem_entry e;
	unsigned char bytes[offsetof(struct mem_entry, key) + 2 +
			    TK_PREFIX_MAX + TK_KEY_MAX];
};

static inline struct mcas *block_of_mcas(uint64_t word)
{
	return (struct mcas *)(uintptr_t)word;
}

/* The expires_at a cell may hold for a state: never DEAD nor MARK. */
static inline uint64_t tk__mem_expiry(uint64_t expires)
{
	if (expires == DEAD)
		return 1;
	return expires == MARK ? MARK - 1 : expires;
}

/*
 * When an entry whose state expires at @expires may be reclaimed: only
 * after the grace period, so that a backward clock step of up to the
 * grace still finds the state (max(TAT, now) needs the TAT).
 */
static inline uint64_t reclaim_at(const struct mem_store *s, uint64_t expires)
{
	return expires > UINT64_MAX - s->grace ? UINT64_MAX
					       : expires + s->grace;
}

/* store-memory.c */
int tk__mem_probe(struct mem_store *s, union probe *p, const unsigned char *key,
		  size_t len, uint64_t *hash);
struct mem_entry *tk__mem_lookup(struct mem_store *s, uint64_t hash,
				 const struct mem_entry *k);
int tk__mem_insert(struct mem_store *s, uint64_t hash, const unsigned char *key,
		   size_t len, uint32_t words, uint32_t alg, uint64_t word,
		   uint64_t expires, uint64_t now);
const uint64_t *tk__mem_words(const struct mem_entry *e, uint64_t *cell);
int tk__mem_word_for(uint32_t words, const uint64_t *next,
		     struct mem_block **fresh, uint64_t *word);
int tk__mem_kill(struct mem_store *s, struct mem_entry *e, uint64_t cell[2]);
void tk__mem_free_entry(struct mem_entry *e);

/* memory-mcas.c */
void tk__mem_help(struct mem_store *s, struct mcas *d);
int tk__mem_apply_multi(struct tk_store *base, uint64_t now,
			const struct tk__multi *m);

/* memory-reclaim.c */
void tk__mem_wheel_push(struct mem_store *s, struct mem_entry *e,
			uint64_t tick);
struct mem_entry *tk__mem_wheel_take(struct mem_store *s, uint64_t slot);
void tk__mem_retire_block(struct mem_store *s, struct mem_block *b);
void tk__mem_retire_mcas(struct mem_store *s, struct mcas *d);
void tk__mem_free_retired(struct mem_store *s);
void tk__mem_sweep(struct mem_store *s, uint64_t now, uint64_t budget);
/*
 * More killed entries than this waiting in the wheel: drain it now.  Also
 * how many retired entries an applier gathers before it waits for a grace
 * period to free them: one wait per quarter of max_keys keeps a flood's
 * cost per check low and its memory bounded.
 */
static inline uint64_t tk__mem_drain_limit(const struct mem_store *s)
{
	return s->ring_cap / 4 > 4096 ? s->ring_cap / 4 : 4096;
}

/* The reclaimer thread, started by the first apply of each process.
 * Inline, as tk__mem_after_apply(): both run on every apply. */
static inline void tk__mem_before_apply(struct mem_store *s)
{
	if (s->use_thread && tk__reclaimer_ensure(&s->reclaimer))
		s->use_thread = 0; /* no thread: sweep on access instead */
}

void tk__mem_after_apply_work(struct mem_store *s, uint64_t now);

/* Grow the table, drain a flood or, without a reclaimer thread, sweep a
 * bounded chunk, when one is due (tk__mem_after_apply_work()). */
static inline void tk__mem_after_apply(struct mem_store *s, uint64_t now)
{
	uint64_t limit = tk__mem_drain_limit(s);

	if (tk_atomic_load_u64(&s->keys, TK_MO_RELAXED) >
		    tk_atomic_load_u64(&s->grow_at, TK_MO_RELAXED) ||
	    tk_atomic_load_u64(&s->dead_pending, TK_MO_RELAXED) > limit ||
	    (!s->use_thread &&
	     (tick_of(now) > tk_atomic_load_u64(&s->cursor, TK_MO_RELAXED) ||
	      tk_atomic_load_u64(&s->n_retired, TK_MO_RELAXED) >= limit)))
		tk__mem_after_apply_work(s, now);
}
int tk__mem_ring_claim(struct mem_store *s, uint64_t now, uint32_t *slot);

#endif /* TK_STORE_MEMORY_H */
