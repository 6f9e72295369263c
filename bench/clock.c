/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c - what a clock read costs: tk_clock_now() on the system clock
 * (CLOCK_REALTIME), on the coarse clock (CLOCK_REALTIME_COARSE) and on
 * the TSC clock (tk_clock_tsc()), in the same run, interleaved rounds,
 * median ns per read and the ratios, the coarse clock's step
 * (clock_getres(2)), and how far the TSC clock was from CLOCK_REALTIME.
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

/* The farthest a TSC reading fell outside two CLOCK_REALTIME readings
 * around it, over @n tries 1 ms apart (ns). */
static uint64_t tsc_distance(struct tk_clock *tsc, int n)
{
	struct timespec a, b, ms = { 0, 1000000 };
	uint64_t ra, rb, v, worst = 0;

	while (n-- > 0) {
		clock_gettime(CLOCK_REALTIME, &a);
		tk_clock_now(tsc, &v);
		clock_gettime(CLOCK_REALTIME, &b);
		ra = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
		rb = (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec;
		if (v < ra && ra - v > worst)
			worst = ra - v;
		if (v > rb && v - rb > worst)
			worst = v - rb;
		nanosleep(&ms, NULL);
	}
	return worst;
}

int main(void)
{
	double sys[ROUNDS], coarse[ROUNDS], tsc[ROUNDS];
	struct tk_clock *tc = tk_clock_tsc();
	struct timespec res;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		sys[r] = round_ns(tk_clock_system());
		coarse[r] = round_ns(tk_clock_coarse());
		tsc[r] = round_ns(tc);
	}
	qsort(sys, ROUNDS, sizeof(double), cmp);
	qsort(coarse, ROUNDS, sizeof(double), cmp);
	qsort(tsc, ROUNDS, sizeof(double), cmp);
	clock_getres(CLOCK_REALTIME_COARSE, &res);
	printf("clock: tk_clock_now(), median of %d rounds of %d reads\n",
	       ROUNDS, READS);
	printf("  system (CLOCK_REALTIME)        %6.1f ns\n", sys[ROUNDS / 2]);
	printf("  coarse (CLOCK_REALTIME_COARSE) %6.1f ns  (%.2fx the "
	       "system clock; steps of %.3f ms)\n",
	       coarse[ROUNDS / 2], coarse[ROUNDS / 2] / sys[ROUNDS / 2],
	       (double)res.tv_nsec / 1e6);
	printf("  tsc    (%s) %6.1f ns  (%.2fx the system clock, %.2fx the "
	       "coarse one)\n",
	       tk_clock_kind(tc) == TK_CLOCK_TSC ? "time-stamp counter   "
						 : "fallback: the system ",
	       tsc[ROUNDS / 2], tsc[ROUNDS / 2] / sys[ROUNDS / 2],
	       tsc[ROUNDS / 2] / coarse[ROUNDS / 2]);
	printf("  tsc: farthest outside CLOCK_REALTIME read around it, "
	       "1000 reads 1 ms apart: %llu ns\n",
	       (unsigned long long)tsc_distance(tc, 1000));
	return 0;
}
