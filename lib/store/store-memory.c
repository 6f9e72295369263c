/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-memory.c - the in-process store: lock-free, multithreaded.
 *
 * Keys live in a private table (shm/table.c): zones in this process's
 * own memory, the same lock-free protocol as a zone
 * (docs/shm-protocol.md), for this process's threads.  A key is its
 * fingerprint, the low 56 bits of tk__keyhash() (AES-CMAC with AES-NI,
 * else SipHash-1-3; lib/hash/keyhash.c) under a random secret of the store, so
 * keys are told apart the way a zone tells them apart.  A state of one
 * word that is its own expiry time lives in the key's slot; larger states
 * in blocks of the table's arena; the dimensions of a composite are
 * updated together by one multi-key step.
 *
 * The table starts small and grows whenever it is full, twice the slots
 * or twice the arena of blocks, whichever was full, up to the smallest
 * power of two of slots that holds max_keys live keys without evicting
 * one (MAX_LOAD_TENTHS; or 2^32 slots when unbounded); at that size it evicts
 * the coldest key, like a zone.
 * Expired states are swept by checks, a chunk at a time, and by the
 * reclaimer thread unless TK_OPT_NO_RECLAIMER; that thread also shrinks
 * the table once few keys remain (tk__table_shrink()).
 *
 * Checks and denials are counted per thread (lib/store/tally.h: a plain load
 * and store in a cache line of the thread's own) and summed when the
 * counters are read, so that a check writes no line other threads write.
 *
 * Every operation that touches the table runs inside an RCU read-side
 * section (lib/rcu.h): the tables a growth leaves behind are freed by
 * the reclaimer thread, after grace periods (tk__table_reclaim()), never
 * by a check, which never waits.  Without the thread they are freed at
 * close.
 *
 * The operations themselves are the slot store's (store-slot.c), which
 * the zone store shares; this file opens the table, reads its counters
 * and closes it.
 */
#include "store/store-ops.h"
#include "clock.h"
#include "hash/siphash.h"
#include "hash/keyhash.h"
#include "test-hooks.h"
#include "fork.h"
#include "rcu.h"
#include "store/slot-store.h"
#include "store/tally.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_SLOTS UINT64_C(1024)
/*
 * The share of its slots, in tenths, a bounded table fills when max_keys
 * keys are live: low enough that each finds room without an eviction.  A key
 * takes the first free slot of its first window of 16, then of its
 * second, so candidates fill up long before the table does: a table of
 * 2^20 slots filled with a million keys evicted 2.3% of them, and 47.7%
 * of 2^21 slots a few keys in each of three fills; at 42% and below no
 * fill of 2^12 to 2^22 slots overflowed one (a simulation of the
 * placement, bench/README.md, "max_keys").
 */
#define MAX_LOAD_TENTHS 4

struct mem_store {
	struct tk__slot_store slot;
	uint64_t capacity; /* most slots; 0: unbounded */
	uint64_t max_keys; /* 0: unbounded */
};

/* A composite's dimensions are keys updated together: more of them than
 * max_keys could never all be held (tk__table_apply_multi() refuses). */
static int memory_supports(struct tk_store *base, const struct tk_policy *p)
{
	uint64_t most = ((struct mem_store *)base)->max_keys;

	return most && p->n > most ? -ENOTSUP : 0;
}

static void memory_stats(struct tk_store *base, struct tk_stats *out)
{
	struct mem_store *s = (struct mem_store *)base;
	struct tk__table *t = s->slot.table;
	uint64_t n[TKZ_COUNTERS], now;

	memset(out, 0, sizeof(*out));
	tk__rcu_read_lock();
	tk__table_counters(t, n);
	/* Both in the section, live first: no table counted live is freed
	 * before the count of all, so reserved >= live. */
	out->live = tk__table_live(t);
	out->reserved = tk__table_reserved(t);
	/* Keys a move copies behind the scan of its table would count
	 * nowhere (tk__table_keys()), and the reclaimer thread moves while
	 * the application reads: the reader finishes the move first, as
	 * any check would help it (after the sizes, which the move's end
	 * would change: its table retired, not freed yet). */
	if (tk__clock_read(base->clock, &now) == 0)
		(void)tk__table_move(t, now);
	out->keys = tk__table_keys(t);
	tk__rcu_read_unlock();
	out->capacity = s->capacity;
	tk__tally_sum(s->slot.tally, &out->checks, &out->denies);
	out->inserts = n[TKZ_INSERTS];
	out->expirations = n[TKZ_RECLAIMS];
	out->evictions = n[TKZ_EVICTIONS];
	out->resets = n[TKZ_RESETS];
}

static void memory_close(struct tk_store *base)
{
	struct mem_store *s = (struct mem_store *)base;

	tk__slot_stop(&s->slot);
	tk__table_free(s->slot.table);
	free(s->slot.tally);
	explicit_bzero(&s->slot.kh, sizeof(s->slot.kh));
	free(s);
}

#if TK_TEST_HOOKS /* test-hooks.h */
const struct tk__keyhash_key *tk__memory_keyhash(struct tk_store *base)
{
	return &((struct mem_store *)base)->slot.kh;
}

struct tk__table *tk__memory_table(struct tk_store *base)
{
	return ((struct mem_store *)base)->slot.table;
}

uint64_t tk__memory_secret[2];
#endif

/* The store's ops with the fast paths @try (try_check) and @win
 * (try_window). */
#define MEMORY_OPS(try, win)                                                   \
	{                                                                      \
		.name = "memory", .apply = tk__slot_table_apply,               \
		.try_check = try, .try_window = win,                           \
		.apply_multi = tk__slot_apply_multi, .reset = tk__slot_reset,  \
		.stats = memory_stats, .supports = memory_supports,            \
		.close = memory_close,                                         \
	}

static const struct tk__store_ops memory_ops =
	MEMORY_OPS(tk__slot_table_try, tk__slot_table_window);
/* Where liburcu-bp's readers need full barriers (no membarrier(2)): it
 * decides once, when it initialises, and never goes back. */
static const struct tk__store_ops fenced_ops =
	MEMORY_OPS(tk__slot_fenced_try, tk__slot_fenced_window);

/* The table of @o: its first size and its largest, and the secret. */
static int table_open(struct mem_store *s, const struct tk_options *o)
{
	struct tk__zone_config cfg;
	uint64_t secret[2], most = TKZ_CAPACITY_MAX;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.grace = o->reclaim_grace;
	cfg.max_keys = o->max_keys;
	rc = tk__clock_read(o->clock ? o->clock : tk_clock_system(), &cfg.now);
	if (rc == 0)
		rc = tk__random_bytes(secret, sizeof(secret));
	if (rc)
		return rc;
	if (tk__memory_secret[0] | tk__memory_secret[1])
		memcpy(secret, tk__memory_secret, sizeof(secret));
	if (o->max_keys) {
		most = TKZ_CAPACITY_MIN;
		while (most * MAX_LOAD_TENTHS < o->max_keys * 10 &&
		       most < TKZ_CAPACITY_MAX)
			most *= 2;
		s->capacity = most;
		s->max_keys = o->max_keys;
	}
	cfg.capacity = most < INITIAL_SLOTS ? most : INITIAL_SLOTS;
	rc = tk__table_new(&s->slot.table, &cfg, most, secret);
	/* Private to this process: AES-CMAC only where AES-NI makes it
	 * cheaper than SipHash-1-3 (lib/hash/keyhash.c). */
	tk__keyhash_setup(&s->slot.kh, (const unsigned char *)secret,
			  tk__keyhash_aesni() ? TK__KEYHASH_CMAC
					      : TK__KEYHASH_SIP13);
	explicit_bzero(secret, sizeof(secret));
	return rc;
}

int tk__memory_open(struct tk_store **out, const struct tk_options *o)
{
	struct mem_store *s;
	int rc;

	if (o->max_keys > UINT32_MAX)
		return -EINVAL;
	tk__rcu_setup(); /* the fork generation the reclaimer goes by */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->slot.base.ops = tk__rcu_light() ? &memory_ops : &fenced_ops;
	s->slot.kind = TK__SLOT_TABLE;
	s->slot.tally = tk__tally_new();
	rc = s->slot.tally ? table_open(s, o) : -ENOMEM;
	if (rc) {
		explicit_bzero(&s->slot.kh, sizeof(s->slot.kh));
		free(s->slot.tally);
		free(s);
		return rc;
	}
	tk__slot_init(&s->slot, o, !(o->flags & TK_OPT_NO_RECLAIMER));
	*out = &s->slot.base;
	return 0;
}
