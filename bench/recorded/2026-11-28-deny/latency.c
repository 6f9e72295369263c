/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * latency.c - the load-to-use latency of a random line in a table of 1 to
 * 32 MiB: a chase of pointers through every line of the table in random
 * order, so that each load waits for the one before.  What a check on a
 * table of that size waits for at its slot, where the floor's 8-byte words
 * of 100k keys (800 KB) stay in a core's level 2 cache.
 * cc -O2 latency.c && ./a.out
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define LOADS 5000000

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A random number below @n (n < 2^62), from a xorshift state. */
static uint64_t below(uint64_t *x, uint64_t n)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x % n;
}

int main(void)
{
	uint64_t x = 88172645463325252u;
	size_t mib;

	for (mib = 1; mib <= 32; mib *= 2) {
		size_t bytes = mib << 20, lines = bytes / 64, i, j, t;
		size_t *order = malloc(lines * sizeof(*order));
		char *table = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *p;
		double t0;

		if (!order || table == MAP_FAILED)
			return 1;
		for (i = 0; i < lines; i++)
			order[i] = i;
		for (i = lines - 1; i > 0; i--) {
			j = below(&x, i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < lines; i++)
			*(char **)(table + order[i] * 64) =
				table + order[(i + 1) % lines] * 64;
		p = table;
		for (i = 0; i < LOADS; i++) /* warm: every line cached */
			p = *(char **)p;
		t0 = now_ns();
		for (i = 0; i < LOADS; i++)
			p = *(char **)p;
		printf("%2zu MiB: %6.1f ns a load (%p)\n", mib,
		       (now_ns() - t0) / LOADS, (void *)p);
		munmap(table, bytes);
		free(order);
	}
	return 0;
}
