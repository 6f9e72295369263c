/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flood.c - what a flood of unique keys costs in memory: N new keys
 * (default 10 million) through a store bounded to 100,000 keys, with one
 * hot key checked every 1000 new ones.  Reported per store: the peak
 * resident set size (sampled every 50,000 checks, and at the end), the
 * hot key's admissions (its policy admits exactly 1000 in the run: more
 * means it was evicted and forgotten, fewer that it was refused), errors
 * and checks per second.
 *
 * Each store runs in a child process of its own, so that one's memory
 * does not count against the next.  The zone of 131,072 slots is the
 * baseline: its memory is fixed when it is created.
 *
 * Environment: TK_BENCH_FLOOD_KEYS (10000000), TK_SHM_DIR (zones).
 */
#define _GNU_SOURCE
#include <throttlekit.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOT_EVERY 1000
#define SAMPLE_EVERY 50000

struct flood_case {
	const char *name, *store;
	uint64_t max_keys, zone_capacity;
	unsigned int flags;
};

static const struct flood_case cases[] = {
	{ "memory, reclaimer thread", "memory", 100000, 0, 0 },
	{ "memory, no thread", "memory", 100000, 0, TK_OPT_NO_RECLAIMER },
	{ "zone, 131072 slots", "shm:tk-flood", 0, 131072, 0 },
};

static long rss_kib(void)
{
	long size, resident = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double seconds(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* In a child: runs one case, prints one row, exits 0 if it ran. */
static int run_case(const struct flood_case *c, unsigned long n)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct timespec t0, t1;
	unsigned long i, hot = 0, errors = 0;
	long peak = rss_kib(), r, start = peak;
	char key[32];
	int rc, len;

	o.max_keys = c->max_keys;
	o.zone_capacity = c->zone_capacity;
	o.flags = c->flags;
	/* 1000 per 100 days: every flood key is admitted and lives on, so
	 * only eviction makes room. */
	rc = tk_limiter_open(&l, "gcra:1000/100d", c->store, &o);
	if (rc != 0) {
		printf("  %-28s cannot open: %s\n", c->name, tk_strerror(rc));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		len = snprintf(key, sizeof(key), "flood-%lu", i);
		if (tk_limiter_check(l, key, (size_t)len, 1, &d) != 0)
			errors++;
		if (i % HOT_EVERY == 0) {
			if (tk_limiter_check(l, "hot", 3, 1, &d) != 0)
				errors++;
			else if (d.allowed)
				hot++;
		}
		if (i % SAMPLE_EVERY == 0 && (r = rss_kib()) > peak)
			peak = r;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if ((r = rss_kib()) > peak)
		peak = r;
	printf("  %-28s %10.1f %10.1f %8lu %8lu %10.2fM\n", c->name,
	       (double)peak / 1024, (double)start / 1024, hot, errors,
	       (double)(n + n / HOT_EVERY) / seconds(&t0, &t1) / 1e6);
	tk_limiter_close(l);
	if (strncmp(c->store, "shm:", 4) == 0)
		tk_zone_destroy("tk-flood");
	return 0;
}

int main(void)
{
	const char *v = getenv("TK_BENCH_FLOOD_KEYS");
	unsigned long n = v && *v ? strtoul(v, NULL, 10) : 10000000ul;
	size_t i;
	pid_t pid;
	int status, failed = 0;

	printf("flood: %lu new keys, max_keys 100000, hot key every %d "
	       "(expected hot admitted: %lu)\n",
	       n, HOT_EVERY,
	       n / HOT_EVERY + 1 < 1000 ? n / HOT_EVERY + 1 : 1000ul);
	printf("  %-28s %10s %10s %8s %8s %11s\n", "store", "peak MiB",
	       "start MiB", "hot", "errors", "checks/s");
	fflush(stdout);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			status = run_case(&cases[i], n);
			fflush(stdout);
			_exit(status);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failed = 1;
	}
	return failed;
}
