/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_load16.c - the untorn 16-byte read (shm/load16.h) that confirms a
 * denial on a zone slot or a memory-store cell.
 *
 * A writer thread moves a pair through {i, ~i} with 16-byte CASes while a
 * reader reads it: every pair read must be one the writer wrote, by the
 * shared SSE load where this CPU has it and by the locked read.  Two plain
 * 64-bit loads in its place read torn pairs.
 *
 * White-box: linked statically for tk__load16().
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../shm/load16.h"

static struct {
	_Alignas(64) uint64_t w[2];
	int stop;
} pair;

static void *writer(void *arg)
{
	uint64_t i = 0;

	(void)arg;
	while (!ck_pr_load_int(&pair.stop)) {
		uint64_t expect[2] = { i, ~i }, set[2] = { i + 1, ~(i + 1) };

		if (ck_pr_cas_64_2(pair.w, expect, set))
			i++;
	}
	return NULL;
}

/*
 * Pairs read while the writer runs that it never wrote.  Only reads that
 * overlap a write can tear, so the reader goes on until it has seen the
 * pair change between two of its reads CHANGES times, or for TIME_MAX s:
 * on a machine whose other CPUs are busy the two threads may take turns
 * on one CPU, and the pair then changes between two reads only when they
 * switch.  So the two are pinned to two CPUs where the process may run
 * two: then they overlap whenever both run, however busy the machine.  A
 * run that saw fewer changes proved too little, and skips.
 */
#define CHANGES 200000
#define CHUNK 100000
#define TIME_MAX 60

static time_t started;

static int out_of_time(void)
{
	return time(NULL) - started > TIME_MAX;
}

/*
 * Pin the reader (this thread) and @t to two CPUs of this process's set,
 * if it has two; *@was keeps the reader's set, to put back.
 */
static void pin_apart(pthread_t t, cpu_set_t *was)
{
	cpu_set_t one;
	int cpu, first = -1;

	if (sched_getaffinity(0, sizeof(*was), was) != 0)
		return;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, was))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (first < 0) {
			first = cpu;
			continue;
		}
		pthread_setaffinity_np(t, sizeof(one), &one);
		CPU_ZERO(&one);
		CPU_SET(first, &one);
		sched_setaffinity(0, sizeof(one), &one);
		return;
	}
}

static unsigned long torn_reads(unsigned long *changes)
{
	pthread_t t;
	cpu_set_t was;
	unsigned long torn = 0, seen = 0, n;
	uint64_t out[2], last = 0;

	pair.w[0] = 0;
	pair.w[1] = ~UINT64_C(0);
	pair.stop = 0;
	assert_int_equal(pthread_create(&t, NULL, writer, NULL), 0);
	CPU_ZERO(&was);
	pin_apart(t, &was);
	started = time(NULL);
	while (seen < CHANGES && !out_of_time()) {
		for (n = 0; n < CHUNK; n++) {
			tk__load16(pair.w, out);
			torn += out[1] != ~out[0];
			seen += out[0] != last;
			last = out[0];
		}
	}
	ck_pr_store_int(&pair.stop, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (CPU_COUNT(&was) > 0)
		sched_setaffinity(0, sizeof(was), &was);
	*changes = seen;
	return torn;
}

static void test_sse_read_untorn(void **state)
{
	unsigned long moved, torn;

	(void)state;
	tk__load16_use_sse(1);
	if (!tk__load16_sse)
		skip();
	torn = torn_reads(&moved);
	assert_int_equal(torn, 0);
	/* The writer ran while we read, or nothing was proved. */
	if (moved < CHANGES)
		skip();
}

static void test_locked_read_untorn(void **state)
{
	unsigned long moved;

	(void)state;
	tk__load16_use_sse(0);
	assert_int_equal(tk__load16_sse, 0);
	assert_int_equal(torn_reads(&moved), 0);
	tk__load16_use_sse(1);
	if (moved < CHANGES)
		skip();
}

/* The CPU's choice: the SSE read exactly where the vendor documents it. */
static void test_choice_follows_cpuinfo(void **state)
{
	char line[4096];
	int avx = 0, vendor = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	(void)state;
	if (!f)
		skip();
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "vendor_id", 9))
			vendor = strstr(line, "GenuineIntel") ||
				 strstr(line, "AuthenticAMD");
		if (!strncmp(line, "flags", 5)) {
			avx = strstr(line, " avx ") || strstr(line, " avx\n");
			break;
		}
	}
	fclose(f);
#ifdef TK__LOAD16_SSE
	tk__load16_use_sse(1);
	assert_int_equal(tk__load16_sse, avx && vendor);
#else
	(void)avx;
	(void)vendor;
	assert_int_equal(tk__load16_sse, 0);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sse_read_untorn),
		cmocka_unit_test(test_locked_read_untorn),
		cmocka_unit_test(test_choice_follows_cpuinfo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
