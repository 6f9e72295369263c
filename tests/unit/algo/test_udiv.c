/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_udiv.c - division by a fixed divisor with a multiply (lib/udiv.h)
 * gives the divide instruction's quotient for every divisor and dividend
 * tried: the edges (1, powers of two and their neighbours, 2^64 - 1),
 * multiples of the divisor and their neighbours, and random numbers of
 * every bit length.  GCRA's remaining units use it on every check.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "udiv.h"

#include "rnd.h"

static void check(uint64_t d, uint64_t n)
{
	struct tk__udiv u;
	uint64_t got;

	tk__udiv_init(&u, d);
	got = tk__udiv(&u, n);
	if (got != n / d)
		fail_msg("%llu / %llu: %llu, not %llu", (unsigned long long)n,
			 (unsigned long long)d, (unsigned long long)got,
			 (unsigned long long)(n / d));
}

/* A number of @bits significant bits (1..64), or 0. */
static uint64_t of_bits(uint64_t *seed, unsigned int bits)
{
	uint64_t v = rnd_next(seed);

	return bits >= 64 ? v : (v & ((UINT64_C(1) << bits) - 1));
}

/* Dividends worth trying against @d. */
static void around(uint64_t *seed, uint64_t d)
{
	uint64_t k, q;
	unsigned int b;
	int i;

	check(d, 0);
	check(d, 1);
	check(d, UINT64_MAX);
	check(d, UINT64_MAX - 1);
	check(d, d);
	check(d, d - 1);
	if (d < UINT64_MAX)
		check(d, d + 1);
	q = UINT64_MAX / d;
	for (i = 0; i < 4 && (uint64_t)i < q; i++) { /* the last multiples */
		k = q - (uint64_t)i;
		check(d, k * d);
		check(d, k * d - 1);
		if (k * d < UINT64_MAX)
			check(d, k * d + 1);
	}
	for (i = 0; i < 64; i++) {
		k = rnd_range(seed, 1, q);
		check(d, k * d);
		check(d, k * d - 1);
	}
	for (b = 1; b <= 64; b++)
		for (i = 0; i < 8; i++)
			check(d, of_bits(seed, b));
}

static void test_edges(void **state)
{
	uint64_t seed = 1;
	unsigned int b;

	(void)state;
	for (b = 0; b < 64; b++) {
		uint64_t p = UINT64_C(1) << b;

		around(&seed, p);
		if (p > 1)
			around(&seed, p - 1);
		around(&seed, p + 1);
	}
	around(&seed, UINT64_MAX);
	around(&seed, UINT64_MAX - 1);
	around(&seed, 3);
	around(&seed, 7);
	/* GCRA's t for common policies: 1s/100, 1min/1000, 1h/7, 1d/86401. */
	around(&seed, 10000000);
	around(&seed, 60000000);
	around(&seed, UINT64_C(514285714285));
	around(&seed, UINT64_C(999988426));
}

static void test_random_divisors(void **state)
{
	uint64_t seed = 0x5eed;
	unsigned int b;
	int i;

	(void)state;
	for (b = 1; b <= 64; b++)
		for (i = 0; i < 200; i++) {
			uint64_t d = of_bits(&seed, b) | UINT64_C(1) << (b - 1);

			around(&seed, d);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_random_divisors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
