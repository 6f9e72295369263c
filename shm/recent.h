/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recent.h - a zone's rings of recent key names: its denials, and a
 * sample of the checks, so that an operator can see who is limited
 * (throttlectl top) although the slots keep only fingerprints.
 *
 * The region follows the arena (tkz_segment_size()); its bytes are
 * pinned here.  Of lib/, only fork.h: a repeat's fork generation.
 *
 * Contract:
 * - Writers take no lock and never wait for one another: one fetch-add
 *   on the ring's head, one CAS to claim an entry, plain stores, one CAS
 *   to publish; a thread that repeats its last record's key adds to its
 *   count instead.  A process may die at any instruction; the entry it was
 *   writing stays odd (skipped) until a writer one lap later claims it.
 * - Readers write nothing: they copy an entry between two loads of its
 *   sequence, and check its sum, which catches the one tear a sequence
 *   cannot (a writer delayed a whole lap, still storing into an entry a
 *   later writer took).
 * - Records are hints for people, not counters: a record may be lost (a
 *   writer lapped before its claim, a reader racing a writer), never
 *   invented or torn; and a caller may leave some out (the slot store
 *   paces a thread's new denial records: lib/store/slot-store.h).
 */
#ifndef TK_SHM_RECENT_H
#define TK_SHM_RECENT_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "zone.h"
#include "../lib/fork.h"

#include <ck_pr.h>

#define TKZ_RECENT_ENTRIES 512 /* records per ring, a power of two */
#define TKZ_RECENT_KEY 96      /* bytes of a key kept */
#define TKZ_RECENT_WORDS (TKZ_RECENT_KEY / 8)
#define TKZ_RECENT_COUNT_BITS 40 /* of a count word; the lap above */
#define TKZ_RECENT_COUNT_MAX ((UINT64_C(1) << TKZ_RECENT_COUNT_BITS) - 1)
/* Checks of a thread per sampled one, on average (lib/store/store-slot.c;
 * not part of the layout). */
#define TK__RECENT_SAMPLE 64

enum tkz_recent_ring_id {
	TKZ_RECENT_DENIED,  /* denials, a thread's repeats counted */
	TKZ_RECENT_SAMPLED, /* one check in about TK__RECENT_SAMPLE */
	TKZ_RECENT_RINGS
};

/*
 * seq: 0 never written; 2t + 1 while the record of ticket t is written
 * (or its writer died), 2t + 2 once it is complete.  sum: of the ticket,
 * len and the kept words (recent.c, sum()).  count: the events the record
 * stands for, 1 and then one more for each repeat its writer's thread
 * added (tk__recent_repeat()), in the low TKZ_RECENT_COUNT_BITS, under
 * the record's lap (t / TKZ_RECENT_ENTRIES, its low bits) in the high
 * ones; not in the sum.  Only the record's writer stores it, so a plain
 * store will do, and the lap tells a reader when the store was a writer's
 * one lap late, into an entry a later ticket took.  key: the first
 * min(len, TKZ_RECENT_KEY) bytes, the rest of the last word zero.
 */
struct tkz_recent_entry {
	_Alignas(TKZ_LINE) uint64_t seq;
	uint64_t sum;
	uint64_t len;	/* bytes of the whole key */
	uint64_t count; /* events */
	uint64_t key[TKZ_RECENT_WORDS];
};

/* The lap of ticket @t, as a count word keeps it. */
static inline uint64_t tkz_recent_lap(uint64_t t)
{
	return (t / TKZ_RECENT_ENTRIES) & (UINT64_MAX >> TKZ_RECENT_COUNT_BITS);
}

/* Ticket @t's count word of @count events. */
static inline uint64_t tkz_recent_count_word(uint64_t t, uint64_t count)
{
	return tkz_recent_lap(t) << TKZ_RECENT_COUNT_BITS | count;
}

struct tkz_recent_ring {
	struct tkz_line head; /* tickets taken, ever */
	struct tkz_recent_entry e[TKZ_RECENT_ENTRIES];
};

struct tkz_recent {
	struct tkz_recent_ring ring[TKZ_RECENT_RINGS];
};

_Static_assert(sizeof(struct tkz_recent_entry) == 2 * TKZ_LINE, "layout");
_Static_assert(offsetof(struct tkz_recent_entry, sum) == 8, "layout");
_Static_assert(offsetof(struct tkz_recent_entry, len) == 16, "layout");
_Static_assert(offsetof(struct tkz_recent_entry, count) == 24, "layout");
_Static_assert(offsetof(struct tkz_recent_entry, key) == 32, "layout");
_Static_assert(offsetof(struct tkz_recent_ring, e) == TKZ_LINE, "layout");
_Static_assert(sizeof(struct tkz_recent) == TKZ_RECENT_SIZE, "layout");
_Static_assert((TKZ_RECENT_ENTRIES & (TKZ_RECENT_ENTRIES - 1)) == 0,
	       "a ticket's entry is a mask away");

/* One record as a reader copied it. */
struct tk__recent_rec {
	uint64_t ticket; /* its place in the ring's history */
	uint64_t count;	 /* events it stands for */
	uint64_t len;	 /* bytes of the whole key */
	uint32_t kept;	 /* bytes of it in key */
	unsigned char key[TKZ_RECENT_KEY];
};

/* What a read passed over, and why. */
struct tk__recent_skips {
	uint64_t busy;	 /* odd or not yet claimed: being written, or its
			    writer died */
	uint64_t torn;	 /* its sequence moved while it was copied */
	uint64_t bad;	 /* complete, but its sum does not match */
	uint64_t lapped; /* taken by a later ticket since the head was read */
};

/*
 * Record @len bytes of @key in @r, a count of 1: its ticket, or
 * UINT64_MAX if a later ticket took the entry first (the record is lost).
 * Any thread of any process; never blocks; async-signal-safe.  Release:
 * the record's words before its even sequence (pairs with the acquire in
 * tk__recent_read()).
 */
uint64_t tk__recent_put(struct tkz_recent_ring *r, const void *key, size_t len);

/*
 * A repeat: if this thread's last record through tk__recent_first() is in
 * @r, of a key of @len bytes and id @id, made in this process (not its
 * parent before a fork()) and still whole in its entry, its count one more
 * (a plain store to a line the thread wrote itself) and 1; else 0, and
 * the caller records the key with tk__recent_first(), which remembers it.
 * @id is the key's fingerprint (the TKZ_FP_KEY bits of its zone key,
 * which its slot keeps), so that a repeat neither copies nor compares the
 * key's bytes, and a caller does not even join them: a flood of denials
 * of one key costs a thread one record, then a load and a store to its
 * own line per denial, no atomic read-modify-write.  Two keys of one
 * fingerprint and length would count the second to the first's record:
 * about 2^-56 for two given keys, and the hash is keyed, so an attacker
 * cannot aim for it.  A repeat that read the sequence just before a writer
 * one lap ahead took the entry may store its count after that writer's:
 * a word of the old lap, which readers take as a count of 1, so that the
 * new record's count until then is lost unless its writer repeats again.
 * The window is two adjacent instructions, held open for a whole lap of
 * 512 records.
 */
static inline int tk__recent_repeat(struct tkz_recent_ring *r, uint64_t id,
				    size_t len);
void tk__recent_first(struct tkz_recent_ring *r, uint64_t id, const void *key,
		      size_t len);

/*
 * Call @fn(@ctx, rec) for each complete record of @r, oldest first, the
 * last TKZ_RECENT_ENTRIES tickets at most; counts what it skipped in
 * @skips (may be NULL).  Stops when @fn returns non-zero and returns
 * that, else 0.  Writes nothing to @r.
 */
int tk__recent_read(struct tkz_recent_ring *r, struct tk__recent_skips *skips,
		    int (*fn)(void *ctx, const struct tk__recent_rec *rec),
		    void *ctx);

/* Tests: if set, called by a writer once it has claimed @e and stored
 * half of the key, and by a reader once it has copied half of it. */
extern void (*tk__recent_write_hook)(struct tkz_recent_entry *e);
extern void (*tk__recent_read_hook)(struct tkz_recent_entry *e);

/* The rings of zone @z (fixed at attach, segment.c). */
static inline struct tkz_recent *tk__zone_recent(struct tk__zone *z)
{
	return ((struct tk__zone_head *)(void *)z)->recent;
}

/* tk__recent_put() into ring @id of zone @z; the caller holds the zone's
 * guard (tk__zone_enter()). */
void tk__zone_recent_put(struct tk__zone *z, int id, const void *key,
			 size_t len);

/* This thread's last record through tk__recent_first() (recent.c): its
 * ring, ticket and count, the key's id and length, and the fork
 * generation it was made in.  Initial-exec, as the tally's slot: read
 * inline at every denial. */
struct tk__recent_last {
	struct tkz_recent_ring *ring;
	uint64_t ticket, count, id, len, gen;
};
extern __thread struct tk__recent_last tk__recent_last
	__attribute__((tls_model("initial-exec")));

/* This thread denied a key it did not record (the caller paces its
 * records): its last record's run of one key ends, and the next denial of
 * that key is no repeat of it. */
static inline void tk__recent_forget(void)
{
	tk__recent_last.ring = NULL;
}

static inline int tk__recent_repeat(struct tkz_recent_ring *r, uint64_t id,
				    size_t len)
{
	struct tkz_recent_entry *e;
	uint64_t t = tk__recent_last.ticket;

	/* The fields by name, not through a pointer to the variable: the
	 * undefined behaviour sanitizer takes the address of an initial-exec
	 * variable in a static executable for a null pointer. */
	if (tk__recent_last.ring != r || tk__recent_last.id != id ||
	    tk__recent_last.len != len ||
	    tk__recent_last.gen !=
		    tk_atomic_load_u64(&tk__fork_gen, TK_MO_RELAXED))
		return 0;
	e = &r->e[t & (TKZ_RECENT_ENTRIES - 1)];
	/* Still our record: published, not taken since. */
	if (ck_pr_load_64(&e->seq) != 2 * t + 2)
		return 0;
	if (tk__recent_last.count < TKZ_RECENT_COUNT_MAX)
		tk__recent_last.count++;
	ck_pr_store_64(&e->count,
		       tkz_recent_count_word(t, tk__recent_last.count));
	return 1;
}

#endif /* TK_SHM_RECENT_H */
