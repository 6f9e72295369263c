/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * layout.h - the bytes of a zone, exactly (see docs/shm-protocol.md).
 *
 * Everything here sits in memory shared by processes that may run
 * different builds: fixed-width integers, offsets instead of pointers,
 * explicit padding, and every offset pinned by a static assertion.  A
 * change to any of it, or to what a slot may hold, is a new TKZ_VERSION.
 */
#ifndef TK_SHM_LAYOUT_H
#define TK_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define TKZ_MAGIC UINT64_C(0x0100454e4f5a4b54) /* "TKZONE\0\1" */
/* 13: a ring of recent keys' count word carries its record's lap above the
 * count (recent.h), where 12 kept the bare count and added to it
 * atomically;
 * 12: a cell's tag word may carry, above its gen, the hot mark of a
 * block's expiry cell and the frozen bit of its hot cell (in-place
 * updates, docs/shm-protocol.md), which a build of 11 takes for a broken
 * state;
 * 11: a key's position is tk__zone_pos() of its hash (zone.h), where 10
 * mixed it by fmix64: a build of 10 looks for a key elsewhere;
 * 10: a one-word state in a word key's slot or in a 1-word block, which
 * a build of 9 refuses (docs/shm-protocol.md, "One state, two shapes");
 * 9: the rings of recent keys (recent.h), the rule directory (rules.h) */
#define TKZ_VERSION 13
#define TKZ_HEADER_SIZE 4096
#define TKZ_WINDOW 16	    /* slots per candidate window */
#define TKZ_SHARDS_MAX 32   /* the shard lines must fit the header */
#define TKZ_CAPACITY_MIN 64 /* slots */
#define TKZ_CAPACITY_MAX (UINT64_C(1) << 32)

/*
 * Header flags, set by the creator and never changed.  REFUSE_FULL: a
 * full table answers -ENOSPC instead of evicting.  SIPHASH: keys hash
 * with SipHash-1-3 under the seed, not AES-CMAC (the creator had no
 * AES-NI; lib/hash/keyhash.c); every attacher hashes as the flag says.  A
 * header with any other bit is refused: it means what this build does not
 * know.
 */
#define TKZ_FLAG_REFUSE_FULL UINT64_C(0x1)
#define TKZ_FLAG_SIPHASH UINT64_C(0x2)
#define TKZ_FLAGS_KNOWN (TKZ_FLAG_REFUSE_FULL | TKZ_FLAG_SIPHASH)

/*
 * The arena of state blocks (states of more than one word): pages of
 * TKZ_PAGE_CELLS 16-byte cells; a page holds blocks of one size class,
 * 4 << k cells for k < TKZ_CLASSES.
 */
#define TKZ_PAGE_CELLS 1024
#define TKZ_CLASS_MIN 4
#define TKZ_CLASSES 9 /* 4 .. 1024 cells */
#define TKZ_PAGES_MIN 4
/* Block references hold block + 1 in 25 bits: 2^25 - 1 blocks of 4 cells
 * at most, so one page less than 2^17. */
#define TKZ_PAGES_MAX ((UINT64_C(1) << 17) - 1)

/* Cache lines, so that hot counters never share one. */
#define TKZ_LINE 64

struct tkz_line {
	_Alignas(TKZ_LINE) uint64_t v; /* updated with atomic adds */
	uint8_t pad[TKZ_LINE - sizeof(uint64_t)];
};

struct tkz_shard {
	_Alignas(TKZ_LINE) uint64_t tickets; /* next insert ticket */
	uint64_t sweep_cursor;		     /* next slot to sweep, index */
	uint64_t next_sweep;		     /* ns: when a sweep is due */
	uint8_t pad[TKZ_LINE - 3 * sizeof(uint64_t)];
};

/*
 * A size class's allocation state (shm/blocks.c, docs/shm-protocol.md,
 * "Finding a free block").  Hints all: a process killed between two of
 * its updates leaves them stale, never wrong for long.
 */
#define TKZ_SPARES 3
struct tkz_alloc {
	_Alignas(TKZ_LINE) uint64_t v; /* where a claim looks first: a cell */
	uint64_t started;	       /* releases begun, ever */
	/* The last "full" verdict: {started when its turn began (48 bits)
	 * | releases then in flight << 48, until when it holds (ns)}. */
	_Alignas(16) uint64_t full[2];
	uint64_t done;		    /* releases ended, ever */
	uint64_t spare[TKZ_SPARES]; /* blocks released lately: cell + 1 */
};
_Static_assert(sizeof(struct tkz_alloc) == TKZ_LINE, "one line a class");

enum tkz_counter {
	TKZ_CHECKS,
	TKZ_DENIES,
	TKZ_INSERTS,
	TKZ_RECLAIMS,
	TKZ_EVICTIONS,
	TKZ_RESETS,
	TKZ_COUNTERS
};

struct tkz_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;  /* bytes */
	uint64_t segment_size; /* bytes */
	uint64_t created;      /* ns since the epoch */
	uint64_t flags;	       /* TKZ_FLAG_* */
	uint64_t capacity;     /* slots, a power of two */
	uint32_t shards;       /* a power of two */
	uint32_t window;       /* TKZ_WINDOW */
	uint64_t seed[2];      /* secret hash key */
	uint64_t grace;	       /* ns an expired state is kept */
	uint64_t pages;	       /* arena pages of TKZ_PAGE_CELLS cells */
	uint8_t reserved[32];
	uint64_t check; /* hash of bytes 0..119; see tkz_header_check() */
	struct tkz_line counters[TKZ_COUNTERS]; /* from byte 128 */
	uint8_t pad1[1024 - 128 - TKZ_COUNTERS * TKZ_LINE];
	struct tkz_shard shard[TKZ_SHARDS_MAX]; /* from byte 1024 */
	/* From byte 3072: each size class's allocation state, and the
	 * arena sweep's cursor. */
	struct tkz_alloc alloc[TKZ_CLASSES];
	struct tkz_line arena_sweep;
	/* The next page a class short of pages looks at to empty. */
	struct tkz_line reuse;
	uint8_t pad2[TKZ_HEADER_SIZE - 3072 - (TKZ_CLASSES + 2) * TKZ_LINE];
};

_Static_assert(offsetof(struct tkz_header, magic) == 0, "layout");
_Static_assert(offsetof(struct tkz_header, version) == 8, "layout");
_Static_assert(offsetof(struct tkz_header, header_size) == 12, "layout");
_Static_assert(offsetof(struct tkz_header, segment_size) == 16, "layout");
_Static_assert(offsetof(struct tkz_header, created) == 24, "layout");
_Static_assert(offsetof(struct tkz_header, flags) == 32, "layout");
_Static_assert(offsetof(struct tkz_header, capacity) == 40, "layout");
_Static_assert(offsetof(struct tkz_header, shards) == 48, "layout");
_Static_assert(offsetof(struct tkz_header, window) == 52, "layout");
_Static_assert(offsetof(struct tkz_header, seed) == 56, "layout");
_Static_assert(offsetof(struct tkz_header, grace) == 72, "layout");
_Static_assert(offsetof(struct tkz_header, pages) == 80, "layout");
_Static_assert(offsetof(struct tkz_header, check) == 120, "layout");
_Static_assert(offsetof(struct tkz_header, counters) == 128, "layout");
_Static_assert(offsetof(struct tkz_header, shard) == 1024, "layout");
_Static_assert(offsetof(struct tkz_header, alloc) == 3072, "layout");
_Static_assert(sizeof(struct tkz_header) == TKZ_HEADER_SIZE, "layout");

/*
 * A slot: w0 = state (2 bits) | ref (1 bit) | fingerprint (61 bits: the
 * shape of the key's state, 4 bits, the frozen bit, and 56 bits of hash
 * naming the key),
 * w1 = the state word or a block reference (MEM), or a ticket (INS, COL).
 * 16-byte aligned: the 16-byte CAS faults on anything less.
 */
struct tkz_slot {
	_Alignas(16) uint64_t w[2];
};

_Static_assert(sizeof(struct tkz_slot) == 16, "layout");
_Static_assert(TKZ_HEADER_SIZE % 16 == 0, "slots are 16-byte aligned");

/*
 * Bit 62 of an INS's ticket marks a copy's insert in a private table that
 * grows (grow.c, slots.c settle()).  A zone never sets it (its tickets
 * count up from 1 and never reach it), so its slots do not change.
 */
#define TKZ_COPY (UINT64_C(1) << 62)

#define TKZ_EMPTY UINT64_C(0)
#define TKZ_INS UINT64_C(1)
#define TKZ_MEM UINT64_C(2)
#define TKZ_COL UINT64_C(3)
#define TKZ_STATE_SHIFT 62
#define TKZ_REF (UINT64_C(1) << 61)
#define TKZ_FP_MASK ((UINT64_C(1) << 61) - 1)
/*
 * The shape of a fingerprint: whether the key's state lives in a block,
 * and the algorithm that wrote it (TK__ALG_*, 1..7).  Slots are matched
 * by the key bits alone, so a key read under another shape is found, and
 * refused, rather than given a second slot.
 */
#define TKZ_FP_BLOCK (UINT64_C(1) << 60)
#define TKZ_FP_ALG_SHIFT 57
#define TKZ_FP_ALG_MASK (UINT64_C(7) << TKZ_FP_ALG_SHIFT)
#define TKZ_FP_SHAPE (TKZ_FP_BLOCK | TKZ_FP_ALG_MASK)
/*
 * Bit 56 is never part of a key: it marks a slot FROZEN, one whose value
 * no one may change again.  Only a private table that grows (grow.c)
 * freezes slots, as it moves their keys to its successor; a frozen slot
 * matches no key (tkz_same_key() compares the bit too) and is not EMPTY.
 * In a zone the bit is never set: a slot that has it is a violation.
 */
#define TKZ_FROZEN (UINT64_C(1) << 56)
#define TKZ_FP_KEY (TKZ_FROZEN - 1)
/* A state word w (TAT, departure, packed window) has expired by
 * w | TKZ_WORD_SLACK: reclaimers judge words by that. */
#define TKZ_WORD_SLACK ((UINT64_C(1) << 24) - 1)

static inline uint64_t tkz_state(uint64_t w0)
{
	return w0 >> TKZ_STATE_SHIFT;
}

static inline uint64_t tkz_fp(uint64_t w0)
{
	return w0 & TKZ_FP_MASK;
}

/* Do fingerprints @a and @b name one key (whatever its shape), neither
 * frozen? */
static inline int tkz_same_key(uint64_t a, uint64_t b)
{
	return ((a ^ b) & (TKZ_FP_KEY | TKZ_FROZEN)) == 0;
}

static inline int tkz_frozen(uint64_t w0)
{
	return (w0 & TKZ_FROZEN) != 0;
}

static inline uint64_t tkz_fp_alg(uint64_t fp)
{
	return (fp & TKZ_FP_ALG_MASK) >> TKZ_FP_ALG_SHIFT;
}

static inline uint64_t tkz_w0(uint64_t state, uint64_t ref, uint64_t fp)
{
	return state << TKZ_STATE_SHIFT | (ref ? TKZ_REF : 0) | fp;
}

/*
 * w1 of a block key's MEM slot: "no state yet" (bit 63 and a ticket), or
 * a reference to one incarnation of a block: (block + 1) in bits 37..61,
 * where block = cell index / TKZ_CLASS_MIN, and the low 37 bits of its
 * gen; bit 62 set makes it a reference to a descriptor of a multi-key
 * update in progress (mcas.c) instead of a state.
 */
#define TKZ_NOSTATE (UINT64_C(1) << 63)
#define TKZ_DESC (UINT64_C(1) << 62)
#define TKZ_REF_GEN_BITS 37
#define TKZ_REF_GEN_MASK ((UINT64_C(1) << TKZ_REF_GEN_BITS) - 1)

static inline uint64_t tkz_ref(uint64_t cell, uint64_t gen)
{
	return (cell / TKZ_CLASS_MIN + 1) << TKZ_REF_GEN_BITS |
	       (gen & TKZ_REF_GEN_MASK);
}

static inline int tkz_is_ref(uint64_t w1)
{
	return !(w1 & (TKZ_NOSTATE | TKZ_DESC)) &&
	       (w1 >> TKZ_REF_GEN_BITS) != 0;
}

static inline int tkz_is_desc(uint64_t w1)
{
	return (w1 & (TKZ_NOSTATE | TKZ_DESC)) == TKZ_DESC &&
	       ((w1 & ~TKZ_DESC) >> TKZ_REF_GEN_BITS) != 0;
}

/*
 * Only a block key's w1 references anything: a word key's w1 is a time,
 * which may have any bits (a TAT of 2^62 ns or more looks like a
 * descriptor reference).  Judge a slot's w1 with its w0.
 */
static inline int tkz_slot_desc(uint64_t w0, uint64_t w1)
{
	return (w0 & TKZ_FP_BLOCK) && tkz_is_desc(w1);
}

/*
 * The 32-bit tag of a slot value that a claimed block is bound to: a hash,
 * so that values differing anywhere (block, gen, ticket) differ in it.
 */
static inline uint64_t tkz_tag(uint64_t w1)
{
	return (w1 * UINT64_C(0x9e3779b97f4a7c15)) >> 32;
}

/* The header cell a reference (to a state or a descriptor) names. */
static inline uint64_t tkz_ref_cell(uint64_t w1)
{
	return (((w1 & ~TKZ_DESC) >> TKZ_REF_GEN_BITS) - 1) * TKZ_CLASS_MIN;
}

/*
 * A cell of the arena.  A block's cell 0 is its header:
 *   h0 = used (1 bit) | words (11 bits) | gen (52 bits)
 *   h1 = bound slot (32 bits) | expected tag (32 bits)
 * (free: used and words 0, h1 0; all zero is a free block of gen 0), and
 * cells 1.. are {tag = the gen that wrote it, value}: cell 1 the expiry
 * time of the state, then its words.  Above the gen, cell 1's tag holds
 * the hot mark (the index + 1 of the one word that may change in place,
 * 0: none), and that word's cell the frozen bit once a process carries
 * the state forward (docs/shm-protocol.md, "In-place updates").
 */
struct tkz_cell {
	_Alignas(16) uint64_t w[2];
};

_Static_assert(sizeof(struct tkz_cell) == 16, "layout");

#define TKZ_BLK_USED (UINT64_C(1) << 63)
#define TKZ_BLK_WORDS_SHIFT 52
#define TKZ_BLK_WORDS_MAX ((1u << 11) - 1)
#define TKZ_BLK_GEN_MASK ((UINT64_C(1) << TKZ_BLK_WORDS_SHIFT) - 1)
#define TKZ_BLK_OVERHEAD 2 /* header and expiry cells */
#define TKZ_CELL_FROZEN (UINT64_C(1) << 62)
#define TKZ_CELL_HOT_SHIFT 52
#define TKZ_CELL_HOT_MAX ((1u << 10) - 1) /* a mark: index + 1 */
/* A block's memo: words after the state, written with it, never changed
 * (docs/shm-protocol.md, "Memos"). */
#define TKZ_BLK_MEMO 4
/* The words field of a descriptor's header: no state has that many. */
#define TKZ_BLK_DESC TKZ_BLK_WORDS_MAX
/* Most words a block state may have: the largest class, less overhead. */
#define TKZ_STATE_WORDS_MAX (TKZ_PAGE_CELLS - TKZ_BLK_OVERHEAD)

/*
 * A page's word in the page table: the size of its blocks in cells (0: a
 * page of the common pool), its state, and an epoch that grows with every
 * change of state but one, so that a page word never repeats:
 *   FREE     size 0, in the pool: every cell is {f, 0} (a free header of
 *            gen f, for blocks of any size; all zero at first)
 *   OPEN     blocks of its size are claimed and released
 *   CLOSING  going back to the pool: every free block is being marked
 *            closed (h1 = TKZ_BLK_CLOSED | epoch); a block in use aborts
 *   FORMAT   every block closed: every cell is being set to {f, 0}, f
 *            above every gen the page has held
 * FREE(e) -> OPEN(e) -> CLOSING(e) -> FORMAT(e) -> FREE(e + 1), and
 * CLOSING(e) -> OPEN(e + 1) when aborted (see blocks.c).  A zone's first
 * word, 0, is FREE(0).
 */
#define TKZ_PAGE_SIZE_MASK UINT64_C(0x7ff)
#define TKZ_PAGE_CLOSING (UINT64_C(1) << 11)
#define TKZ_PAGE_FORMAT (UINT64_C(1) << 12)
#define TKZ_PAGE_EPOCH_SHIFT 13
/* h1 of a free block header marked closed: this bit and the epoch. */
#define TKZ_BLK_CLOSED (UINT64_C(1) << 63)

/* The block size in cells of page word @pw, or 0 if it names none. */
static inline uint64_t tkz_page_size(uint64_t pw)
{
	uint64_t c = pw & TKZ_PAGE_SIZE_MASK;

	return c >= TKZ_CLASS_MIN && c <= TKZ_PAGE_CELLS && !(c & (c - 1)) ? c
									   : 0;
}

static inline uint64_t tkz_pagetable_size(uint64_t pages)
{
	/* Rounded to a cache line: pages stay 64-byte aligned. */
	return (pages * sizeof(uint64_t) + TKZ_LINE - 1) / TKZ_LINE * TKZ_LINE;
}

/* Bytes of the rings of recent keys after the arena; recent.h pins
 * them: two rings of a head line and 512 entries of 128 bytes. */
#define TKZ_RECENT_SIZE (2 * (TKZ_LINE + 512 * 128))

/*
 * The rule directory (shm/rules.h): TKZ_RULES entries of TKZ_RULE_SIZE
 * bytes, after the rings, so that no offset before it moves.
 */
#define TKZ_RULES 64
#define TKZ_RULE_SIZE 2304

static inline uint64_t tkz_rules_offset(uint64_t capacity, uint64_t pages)
{
	return TKZ_HEADER_SIZE + capacity * sizeof(struct tkz_slot) +
	       tkz_pagetable_size(pages) +
	       pages * TKZ_PAGE_CELLS * sizeof(struct tkz_cell) +
	       TKZ_RECENT_SIZE;
}

static inline uint64_t tkz_segment_size(uint64_t capacity, uint64_t pages)
{
	return tkz_rules_offset(capacity, pages) + TKZ_RULES * TKZ_RULE_SIZE;
}

#endif /* TK_SHM_LAYOUT_H */
