/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udiv.h - division by a divisor fixed at policy parse time, with a
 * multiply instead of a divide instruction (a 64-bit div costs 10 to 90
 * cycles depending on the CPU, a multiply 3).
 *
 * The method is Granlund and Montgomery's ("Division by invariant
 * integers using multiplication", PLDI 1994, figure 4.1): with
 * l = ceil(log2 d) and m = floor(2^64 (2^l - d) / d) + 1,
 *
 *     t = (m * n) >> 64,  n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0)
 *
 * exactly, for every 64-bit n and every divisor d >= 1 (their theorem
 * 4.2; tests/unit/algo/test_udiv.c checks it against the divide instruction).
 * Nothing overflows: t <= n, so t + (n - t) / 2 <= n.
 */
#ifndef TK_UDIV_H
#define TK_UDIV_H

#include <stdint.h>

struct tk__udiv {
	uint64_t m;
	uint8_t s1, s2;
};

/* @d >= 1. */
static inline void tk__udiv_init(struct tk__udiv *u, uint64_t d)
{
	unsigned int l = d > 1 ? 64 - (unsigned int)__builtin_clzll(d - 1) : 0;
	unsigned __int128 over = ((unsigned __int128)1 << l) - d;

	u->m = (uint64_t)((over << 64) / d) + 1;
	u->s1 = l < 1 ? (uint8_t)l : 1;
	u->s2 = l > 0 ? (uint8_t)(l - 1) : 0;
}

static inline uint64_t tk__udiv(const struct tk__udiv *u, uint64_t n)
{
	uint64_t t = (uint64_t)(((unsigned __int128)u->m * n) >> 64);

	return (t + ((n - t) >> u->s1)) >> u->s2;
}

/*
 * @n / @d for a 128-bit @n whose quotient fits in 64 bits (n < d * 2^64):
 * on x86-64 one divide instruction, where the compiler calls a library
 * routine for any 128-bit division.
 */
static inline uint64_t tk__div128(unsigned __int128 n, uint64_t d)
{
#if defined(__x86_64__)
	uint64_t q, r;

	__asm__("divq %4"
		: "=a"(q), "=d"(r)
		: "a"((uint64_t)n), "d"((uint64_t)(n >> 64)), "rm"(d));
	return q;
#else
	return (uint64_t)(n / d);
#endif
}

#endif /* TK_UDIV_H */
