/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slot.h - the atomic steps every part of the zone protocol is made of.
 *
 * Atomics are Concurrency Kit's ck_pr: inline instructions that work in
 * memory shared between processes (a 16-byte __atomic CAS may become a
 * libatomic call with a process-local lock).
 */
#ifndef TK_SHM_SLOT_H
#define TK_SHM_SLOT_H

#include "load16.h"
#include "zone.h"

#include <ck_pr.h>

/* Two plain loads: a torn pair is caught by the CAS that uses it. */
static inline void tkz_read(uint64_t *w, uint64_t *w0, uint64_t *w1)
{
	*w0 = ck_pr_load_64(&w[0]);
	*w1 = ck_pr_load_64(&w[1]);
}

/* An untorn read (load16.h): a shared read where the CPU allows one. */
static inline void tkz_load2(uint64_t *w, uint64_t out[2])
{
	tk__load16(w, out);
}

/*
 * Ordering, for weakly ordered CPUs (on x86-64 these are compiler
 * barriers): whatever a process wrote into a block or descriptor is
 * released before the CAS that makes it reachable from a slot, and a
 * process that read a reference from a slot acquires before it reads what
 * the reference names.
 */
#define tkz_before_publish() ck_pr_fence_release()
#define tkz_after_reference() ck_pr_fence_acquire()

/*
 * The 16-byte CAS of a slot or a cell.  On x86-64, ck_pr_cas_64_2()'s
 * "lock cmpxchg16b" with the expected pair in registers: ck's takes it
 * from memory, two stores and two loads more for each of the dozens of
 * CAS a block update makes.  The same barriers: a locked instruction,
 * and a compiler barrier ("memory").
 */
static inline int tkz_cas(uint64_t *w, uint64_t e0, uint64_t e1, uint64_t n0,
			  uint64_t n1)
{
#if defined(__x86_64__)
	int z;

	/* The flag as the output (no setz): a caller's branch tests it. */
	__asm__ __volatile__("lock cmpxchg16b %0"
			     : "+m"(*w), "=@ccz"(z), "+a"(e0), "+d"(e1)
			     : "b"(n0), "c"(n1)
			     : "memory");
	return z;
#else
	uint64_t expect[2] = { e0, e1 }, set[2] = { n0, n1 };

	return ck_pr_cas_64_2(w, expect, set);
#endif
}

static inline void tkz_read_slot(struct tkz_slot *s, uint64_t *w0, uint64_t *w1)
{
	tkz_read(s->w, w0, w1);
}

static inline int tkz_cas_slot(struct tkz_slot *s, uint64_t e0, uint64_t e1,
			       uint64_t n0, uint64_t n1)
{
	return tkz_cas(s->w, e0, e1, n0, n1);
}

static inline void tkz_count(struct tk__zone *z, enum tkz_counter c)
{
	ck_pr_faa_64(&tk__zone_header(z)->counters[c].v, 1);
}

#endif /* TK_SHM_SLOT_H */
