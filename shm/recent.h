/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recent.h - a zone's rings of recent key names: its denials, and a
 * sample of the checks, so that an operator can see who is limited
 * (throttlectl top) although the slots keep only fingerprints.
 *
 * The region follows the arena (tkz_segment_size()); its bytes are
 * pinned here.  Nothing here includes lib/ headers.
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
 *   invented or torn.
 */
#ifndef TK_SHM_RECENT_H
#define TK_SHM_RECENT_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define TKZ_RECENT_ENTRIES 512 /* records per ring, a power of two */
#define TKZ_RECENT_KEY 96      /* bytes of a key kept */
#define TKZ_RECENT_WORDS (TKZ_RECENT_KEY / 8)
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
 * added (tk__recent_repeat()); not in the sum.  key: the first
 * min(len, TKZ_RECENT_KEY) bytes, the rest of the last word zero.
 */
struct tkz_recent_entry {
	_Alignas(TKZ_LINE) uint64_t seq;
	uint64_t sum;
	uint64_t len;	/* bytes of the whole key */
	uint64_t count; /* events */
	uint64_t key[TKZ_RECENT_WORDS];
};

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
 * The same, but if this thread's last record through here is of @key
 * (its length and kept bytes), in @r, and still whole in its entry, one
 * more to its count (an atomic add to a line the thread wrote itself)
 * instead of a record.  So a flood of denials of one key costs a
 * thread one record and then no shared line; a key's events stay
 * counted whatever their order.  A repeat that races a writer lapping
 * the ring may count one event to the record that took the entry.
 */
void tk__recent_repeat(struct tkz_recent_ring *r, const void *key, size_t len);

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

/* The rings of zone @z (segment.c). */
struct tk__zone;
struct tkz_recent *tk__zone_recent(struct tk__zone *z);

/* tk__recent_put() into ring @id of zone @z, and tk__recent_repeat()
 * into its ring of denials; the caller holds its guard
 * (tk__zone_enter()). */
void tk__zone_recent_put(struct tk__zone *z, int id, const void *key,
			 size_t len);
void tk__zone_recent_deny(struct tk__zone *z, const void *key, size_t len);

#endif /* TK_SHM_RECENT_H */
