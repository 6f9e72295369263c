/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c - what a clock read costs: tk_clock_now() on the system clock
 * (CLOCK_REALTIME) and on the coarse clock (CLOCK_REALTIME_COARSE), in
 * the same run, interleaved rounds, median ns per read and the ratio, and
 * the coarse clock's step (clock_getres(2)).
 */
#define _GNU_SOURCE
#include <throttlekit.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 7
#define READS 2000000

static double round_ns(struct tk_clock *c)
{
	struct timespec a, b;
	uint64_t now, sum = 0;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < READS; i++) {
		tk_clock_now(c, &now);
		sum += now;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (sum == 42)
		puts("");
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 +
		(double)(b.tv_nsec - a.tv_nsec)) /
	       READS;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	double sys[ROUNDS], coarse[ROUNDS];
	struct timespec res;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		sys[r] = round_ns(tk_clock_system());
		coarse[r] = round_ns(tk_clock_coarse());
	}
	qsort(sys, ROUNDS, sizeof(double), cmp);
	qsort(coarse, ROUNDS, sizeof(double), cmp);
	clock_getres(CLOCK_REALTIME_COARSE, &res);
	printf("clock: tk_clock_now(), median of %d rounds of %d reads\n",
	       ROUNDS, READS);
	printf("  system (CLOCK_REALTIME)        %6.1f ns\n", sys[ROUNDS / 2]);
	printf("  coarse (CLOCK_REALTIME_COARSE) %6.1f ns  (%.2fx the "
	       "system clock; steps of %.3f ms)\n",
	       coarse[ROUNDS / 2], coarse[ROUNDS / 2] / sys[ROUNDS / 2],
	       (double)res.tv_nsec / 1e6);
	return 0;
}
