/*
 * layout.h - the bytes of a zone, exactly (see docs/shm-protocol.md).
 *
 * Everything here sits in memory shared by processes that may run
 * different builds: fixed-width integers, offsets instead of pointers,
 * explicit padding, and every offset pinned by a static assertion.  A
 * change to any of it is a new TKZ_VERSION.
 */
#ifndef TK_SHM_LAYOUT_H
#define TK_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define TKZ_MAGIC UINT64_C(0x0100454e4f5a4b54) /* "TKZONE\0\1" */
#define TKZ_VERSION 1
#define TKZ_HEADER_SIZE 4096
#define TKZ_WINDOW 16	    /* slots per candidate window */
#define TKZ_SHARDS_MAX 32   /* the shard lines must fit the header */
#define TKZ_CAPACITY_MIN 64 /* slots */
#define TKZ_CAPACITY_MAX (UINT64_C(1) << 32)

#define TKZ_FLAG_REFUSE_FULL UINT64_C(0x1)

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
	uint8_t reserved[40];
	uint64_t check; /* hash of bytes 0..119; see tkz_header_check() */
	struct tkz_line counters[TKZ_COUNTERS]; /* from byte 128 */
	uint8_t pad1[1024 - 128 - TKZ_COUNTERS * TKZ_LINE];
	struct tkz_shard shard[TKZ_SHARDS_MAX]; /* from byte 1024 */
	uint8_t pad2[TKZ_HEADER_SIZE - 1024 - TKZ_SHARDS_MAX * TKZ_LINE];
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
_Static_assert(offsetof(struct tkz_header, check) == 120, "layout");
_Static_assert(offsetof(struct tkz_header, counters) == 128, "layout");
_Static_assert(offsetof(struct tkz_header, shard) == 1024, "layout");
_Static_assert(sizeof(struct tkz_header) == TKZ_HEADER_SIZE, "layout");

/*
 * A slot: w0 = state (2 bits) | ref (1 bit) | fingerprint (61 bits),
 * w1 = the state word (MEM) or a ticket (INS, COL).  16-byte aligned: the
 * 16-byte CAS faults on anything less.
 */
struct tkz_slot {
	_Alignas(16) uint64_t w[2];
};

_Static_assert(sizeof(struct tkz_slot) == 16, "layout");
_Static_assert(TKZ_HEADER_SIZE % 16 == 0, "slots are 16-byte aligned");

#define TKZ_EMPTY UINT64_C(0)
#define TKZ_INS UINT64_C(1)
#define TKZ_MEM UINT64_C(2)
#define TKZ_COL UINT64_C(3)
#define TKZ_STATE_SHIFT 62
#define TKZ_REF (UINT64_C(1) << 61)
#define TKZ_FP_MASK ((UINT64_C(1) << 61) - 1)

static inline uint64_t tkz_state(uint64_t w0)
{
	return w0 >> TKZ_STATE_SHIFT;
}

static inline uint64_t tkz_fp(uint64_t w0)
{
	return w0 & TKZ_FP_MASK;
}

static inline uint64_t tkz_w0(uint64_t state, uint64_t ref, uint64_t fp)
{
	return state << TKZ_STATE_SHIFT | (ref ? TKZ_REF : 0) | fp;
}

static inline uint64_t tkz_segment_size(uint64_t capacity)
{
	return TKZ_HEADER_SIZE + capacity * sizeof(struct tkz_slot);
}

#endif /* TK_SHM_LAYOUT_H */
