/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * load16.h - an untorn read of an aligned 16-byte pair, shared by the
 * zone's slots (slot.h) and the memory store's cells (lib/atomic.h).
 *
 * Concurrency Kit's ck_pr_load_64_2 is a "lock cmpxchg16b" on x86-64: it
 * takes the cache line exclusively, so processes that only read a key
 * (a denial confirms the pair it decided on) would bounce its line
 * between CPUs as writers do.  Intel (SDM vol. 3A, 9.1.1) and AMD (APM
 * vol. 2, 7.3.2) guarantee that an aligned 16-byte SSE load (movdqa) is
 * atomic on every processor that enumerates AVX: there the read is one
 * movdqa, a shared read that scales.  Elsewhere it stays the locked
 * instruction, or a CAS that writes back what it finds.
 */
#ifndef TK_SHM_LOAD16_H
#define TK_SHM_LOAD16_H

#include <stdint.h>

#include <ck_pr.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define TK__LOAD16_SSE 1
#endif

/* Non-zero if movdqa reads 16 aligned bytes atomically on this CPU: set
 * once when the library is loaded (load16.c). */
extern int tk__load16_sse;

static inline void tk__load16_locked(const uint64_t *w, uint64_t out[2])
{
#ifdef CK_F_PR_LOAD_64_2
	ck_pr_load_64_2(w, out);
#else
	uint64_t zero[2] = { 0, 0 };

	ck_pr_cas_64_2_value((uint64_t *)(uintptr_t)w, zero, zero, out);
#endif
}

/* Read {@w[0], @w[1]} (16-byte aligned) as one value, with the ordering
 * of an acquire load. */
static inline void tk__load16(const uint64_t *w, uint64_t out[2])
{
#ifdef TK__LOAD16_SSE
	if (__builtin_expect(tk__load16_sse, 1)) {
		__m128i v;

		/* One instruction, which the compiler may not split. */
		__asm__ __volatile__("movdqa %1, %0"
				     : "=x"(v)
				     : "m"(*(const __m128i *)(const void *)w)
				     : "memory");
		out[0] = (uint64_t)_mm_cvtsi128_si64(v);
		out[1] = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
		return;
	}
#endif
	tk__load16_locked(w, out);
}

/* For tests: force the locked read (0) or restore the CPU's choice (1). */
void tk__load16_use_sse(int on);

#endif /* TK_SHM_LOAD16_H */
