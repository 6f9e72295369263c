/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table.h - a private table (struct tk__table), as table.c, which makes
 * it, counts it and frees the tables it retired, and grow.c, which grows
 * and shrinks it, share it.  Only those two include it.
 */
#ifndef TK_SHM_TABLE_H
#define TK_SHM_TABLE_H

#include "word.h"

#include <stddef.h>

#define MOVE_CHUNK 64 /* slots a user of the successor moves per call */
/* Entries of retired[]: more than the 42 ever in use (see the top). */
#define RING 64
#define ROUNDS_MAX 64
#define PAGE_BYTES (TKZ_PAGE_CELLS * sizeof(struct tkz_cell))

/* A retired[] entry whose table is freed; its counters are in gone[].
 * One object for both files (table.c defines it): a mark each file made
 * its own would never equal the other's. */
extern char tk__table_gone_mark;
#define GONE ((struct tk__zone *)(void *)&tk__table_gone_mark)

/* What the freed tables below entry @base of retired[] counted. */
struct ledger {
	uint64_t base;
	uint64_t sums[TKZ_COUNTERS];
};

struct tk__table {
	struct tk__zone *cur; /* first: struct tk__table_head; see newest() */
	struct tk__zone_config cfg;
	uint64_t seed[2];
	uint64_t max_capacity;
	uint64_t min_pages, max_pages; /* of an arena: the first's, the most */
	/* Entry i, the table of index i once its successor's growth
	 * completed (__atomic), or GONE once unlinked: slot i % RING. */
	struct tk__zone *retired[RING];
	/* 1 (__atomic) once the successor of entry i has lost its old. */
	uint8_t unlinked[RING];
	/* A GONE entry's table not freed yet: written before GONE is
	 * published (release), cleared once freed, under the fork lock (see
	 * tk__table_reclaim()). */
	struct tk__zone *dying[RING];
	/* A GONE entry's counters: written before GONE is published
	 * (release), read after it is seen (acquire). */
	uint64_t gone[RING][TKZ_COUNTERS];
	/* ledger[current] (__atomic) is what readers take for the entries
	 * below its base; the reclaimer writes the other one (fold()). */
	struct ledger ledger[2];
	uint64_t current;
	uint64_t cleared;   /* the reclaimer's: entries below it are empty */
	uint64_t n_retired; /* __atomic: entries of retired[] stored */
	uint64_t freed;	    /* ck_pr: retired tables freed */
	uint64_t growths;   /* ck_pr: successors published, shrinks too */
	uint64_t shrinks;   /* ck_pr */
	uint64_t reserved;  /* ck_pr: bytes of the tables allocated */
};

/* What a successor holds: slots, arena pages (0: as the table's
 * configuration says), and what it is made for, its predecessor's keys
 * and the arena pages their blocks hold. */
struct tk__table_size {
	uint64_t capacity, pages;
	uint64_t keys, used;
};

static inline struct tk__zone_head *head(struct tk__zone *z)
{
	return (struct tk__zone_head *)(void *)z;
}

static inline uint64_t bytes_of(struct tk__zone *z)
{
	return tk__zone_geo(z)->segment_size;
}

/* Slot of entry @i of retired[]. */
static inline uint64_t ring(uint64_t i)
{
	return i % RING;
}

/* The ledger readers take now (acquire: pairs with fold()'s release). */
static inline const struct ledger *ledger_of(struct tk__table *t)
{
	return &t->ledger[__atomic_load_n(&t->current, __ATOMIC_ACQUIRE)];
}

_Static_assert(offsetof(struct tk__table, cur) ==
		       offsetof(struct tk__table_head, cur),
	       "tk__table_zone() reads the table's cur");

/* Where keys are inserted: the end of the chain of successors. */
static inline struct tk__zone *newest(struct tk__table *t)
{
	return tk__table_zone(t);
}

/* Entries of retired[] stored: each before it is counted here. */
static inline uint64_t retired_count(struct tk__table *t)
{
	/* Acquire: pairs with the release of complete()'s CAS. */
	return __atomic_load_n(&t->n_retired, __ATOMIC_ACQUIRE);
}

/*
 * Entry @i of retired[]: its slot holds it from when complete() stores
 * it until a grace period after a ledger whose base is above @i is
 * published (fold()), so a caller in a read-side section that took a
 * ledger whose base is at most @i reads that entry, not a later one.
 */
static inline struct tk__zone *entry(struct tk__table *t, uint64_t i)
{
	/* Acquire: pairs with the release of complete()'s CAS. */
	return __atomic_load_n(&t->retired[ring(i)], __ATOMIC_ACQUIRE);
}

static inline void add_counters(uint64_t out[TKZ_COUNTERS],
				const uint64_t n[TKZ_COUNTERS])
{
	int c;

	for (c = 0; c < TKZ_COUNTERS; c++)
		out[c] += n[c];
}

/* table.c, for grow.c */
struct tk__zone *tk__table_make(struct tk__table *t,
				const struct tk__table_size *s,
				struct tk__zone *old);
/* A table and what it holds. */
void tk__table_drop(struct tk__zone *z);
/* Held while tables are freed, or a shrink's successor is made and
 * published, and by fork(): see table.c. */
void tk__table_freeing_hold(void);
void tk__table_freeing_release(void);
uint64_t tk__table_count_keys(struct tk__zone *z, struct tk__zone *nz);

#endif /* TK_SHM_TABLE_H */
