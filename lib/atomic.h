/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * atomic.h - the one place where atomic operations are spelled out.
 *
 * Thin typed wrappers over C11 <stdatomic.h> that always take an explicit
 * memory order, plus the 16-byte compare-and-swap from Concurrency Kit.
 * Nothing else in the library names an atomic builtin.
 *
 * Why ck_pr for 16 bytes: GCC 12 compiles a 16-byte __atomic CAS into a
 * call to libatomic, which may fall back to a process-local lock table;
 * ck_pr_cas_64_2 is an inline "lock cmpxchg16b", lock-free everywhere,
 * including in memory shared between processes.
 */
#ifndef TK_ATOMIC_H
#define TK_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_pr.h>

#include "../shm/load16.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "need lock-free 64-bit atomics");
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "need lock-free pointers");
#ifndef CK_F_PR_CAS_64_2
#error "Concurrency Kit lacks a 16-byte CAS on this platform"
#endif

#define TK_MO_RELAXED memory_order_relaxed
#define TK_MO_ACQUIRE memory_order_acquire
#define TK_MO_RELEASE memory_order_release
#define TK_MO_ACQ_REL memory_order_acq_rel
#define TK_MO_SEQ_CST memory_order_seq_cst

/* The strongest failure order C11 allows for a CAS of order @mo. */
static inline memory_order tk__cas_failure_order(memory_order mo)
{
	if (mo == TK_MO_RELAXED || mo == TK_MO_RELEASE)
		return TK_MO_RELAXED;
	if (mo == TK_MO_ACQ_REL)
		return TK_MO_ACQUIRE;
	return mo;
}

typedef _Atomic uint64_t tk_atomic_u64;
typedef _Atomic uint32_t tk_atomic_u32;
typedef _Atomic(void *) tk_atomic_ptr;

static inline uint64_t tk_atomic_load_u64(const tk_atomic_u64 *p,
					  memory_order mo)
{
	return atomic_load_explicit(p, mo);
}

static inline void tk_atomic_store_u64(tk_atomic_u64 *p, uint64_t v,
				       memory_order mo)
{
	atomic_store_explicit(p, v, mo);
}

static inline uint64_t tk_atomic_add_u64(tk_atomic_u64 *p, uint64_t v,
					 memory_order mo)
{
	return atomic_fetch_add_explicit(p, v, mo);
}

static inline uint64_t tk_atomic_xchg_u64(tk_atomic_u64 *p, uint64_t v,
					  memory_order mo)
{
	return atomic_exchange_explicit(p, v, mo);
}

static inline uint64_t tk_atomic_sub_u64(tk_atomic_u64 *p, uint64_t v,
					 memory_order mo)
{
	return atomic_fetch_sub_explicit(p, v, mo);
}

/* On failure *expected receives the current value. */
static inline bool tk_atomic_cas_u64(tk_atomic_u64 *p, uint64_t *expected,
				     uint64_t desired, memory_order mo)
{
	return atomic_compare_exchange_strong_explicit(
		p, expected, desired, mo, tk__cas_failure_order(mo));
}

static inline uint32_t tk_atomic_load_u32(const tk_atomic_u32 *p,
					  memory_order mo)
{
	return atomic_load_explicit(p, mo);
}

static inline void tk_atomic_store_u32(tk_atomic_u32 *p, uint32_t v,
				       memory_order mo)
{
	atomic_store_explicit(p, v, mo);
}

static inline uint32_t tk_atomic_add_u32(tk_atomic_u32 *p, uint32_t v,
					 memory_order mo)
{
	return atomic_fetch_add_explicit(p, v, mo);
}

static inline uint32_t tk_atomic_and_u32(tk_atomic_u32 *p, uint32_t v,
					 memory_order mo)
{
	return atomic_fetch_and_explicit(p, v, mo);
}

/* On failure *expected receives the current value. */
static inline bool tk_atomic_cas_u32(tk_atomic_u32 *p, uint32_t *expected,
				     uint32_t desired, memory_order mo)
{
	return atomic_compare_exchange_strong_explicit(
		p, expected, desired, mo, tk__cas_failure_order(mo));
}

static inline void *tk_atomic_load_ptr(tk_atomic_ptr *p, memory_order mo)
{
	return atomic_load_explicit(p, mo);
}

static inline void tk_atomic_store_ptr(tk_atomic_ptr *p, void *v,
				       memory_order mo)
{
	atomic_store_explicit(p, v, mo);
}

static inline void *tk_atomic_xchg_ptr(tk_atomic_ptr *p, void *v,
				       memory_order mo)
{
	return atomic_exchange_explicit(p, v, mo);
}

static inline bool tk_atomic_cas_ptr(tk_atomic_ptr *p, void **expected,
				     void *desired, memory_order mo)
{
	return atomic_compare_exchange_strong_explicit(
		p, expected, desired, mo, tk__cas_failure_order(mo));
}

/*
 * A 16-byte cell, changed only as a whole.  Its two halves may be read
 * with plain 64-bit atomic loads; such a pair can be torn, so every
 * decision taken from it is validated by tk_cell_cas() or tk_cell_load().
 */
struct tk_cell {
	_Alignas(16) tk_atomic_u64 w[2];
};

/* Full barrier, as "lock cmpxchg16b" is on x86-64 (and ck_pr elsewhere). */
static inline bool tk_cell_cas(struct tk_cell *c, uint64_t expect[2],
			       const uint64_t desired[2])
{
	uint64_t seen[2];
	uint64_t set[2] = { desired[0], desired[1] };
	bool ok;

	ok = ck_pr_cas_64_2_value((uint64_t *)(void *)c->w, expect, set, seen);
	if (!ok) {
		expect[0] = seen[0];
		expect[1] = seen[1];
	}
	return ok;
}

/*
 * An untorn snapshot (shm/load16.h): one movdqa where the CPU guarantees
 * its atomicity, else a cmpxchg16b that takes the line exclusively.
 */
static inline void tk_cell_load(struct tk_cell *c, uint64_t out[2])
{
	tk__load16((const uint64_t *)(const void *)c->w, out);
}

/* Possibly torn read; pairs with the release of tk_cell_cas(). */
static inline void tk_cell_read(const struct tk_cell *c, uint64_t out[2])
{
	out[0] = tk_atomic_load_u64(&c->w[0], TK_MO_ACQUIRE);
	out[1] = tk_atomic_load_u64(&c->w[1], TK_MO_ACQUIRE);
}

/* Only before the cell is published to other threads. */
static inline void tk_cell_init(struct tk_cell *c, uint64_t w0, uint64_t w1)
{
	tk_atomic_store_u64(&c->w[0], w0, TK_MO_RELAXED);
	tk_atomic_store_u64(&c->w[1], w1, TK_MO_RELAXED);
}

#endif /* TK_ATOMIC_H */
