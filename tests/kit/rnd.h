/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rnd.h - a tiny seeded generator for the property tests, so that a
 * failure reproduces exactly from its seed, and the arithmetic their
 * reference models share.
 */
#ifndef TK_TESTS_KIT_RND_H
#define TK_TESTS_KIT_RND_H

#include <stdint.h>

/* splitmix64. */
static inline uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]; the modulo bias is irrelevant here. */
static inline uint64_t rnd_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	if (hi - lo == UINT64_MAX)
		return rnd_next(s);
	return lo + rnd_next(s) % (hi - lo + 1);
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

#endif
