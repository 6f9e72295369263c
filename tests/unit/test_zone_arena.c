/*
 * test_zone_arena.c - the arena of state blocks when it is full: eviction
 * of blocks by second chance, pages going back to a common pool when they
 * empty, what a zone that refuses does, and exact counts across forked
 * processes meanwhile.
 *
 * Arenas here are the smallest there is, 64 KiB: 4 pages of 16 KiB.  A
 * sliding log of limit 100 takes a block of 128 cells (2 KiB), so the
 * arena holds 32 of them; a sliding window of 3 buckets one of 16 cells.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)
#define ARENA (64 * 1024)
#define LOG "sliding-log:100/1h"	       /* 32 blocks fill the arena */
#define WINDOW "sliding-window:5/1h,buckets=3" /* another size */
#define BLOCKS 32

static char dir[] = "/tmp/tk-arena-XXXXXX";

/* What forked workers share. */
struct shared {
	_Atomic uint64_t allowed;
	_Atomic uint64_t errors;
	_Atomic uint64_t per_key[64];
	_Atomic uint64_t ready;
};

static struct shared *sh;
static struct tk_clock *clk; /* a manual clock at T0: nothing expires */

static struct tk_limiter *open_on(const char *zone, const char *policy,
				  unsigned int flags)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[64];

	o.clock = clk;
	o.zone_capacity = 4096;
	o.zone_arena = ARENA;
	o.flags = flags | TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	if (tk_limiter_open(&l, policy, spec, &o) != 0)
		l = NULL;
	return l;
}

/* Check @key once: its rc, with *allowed set. */
static int check(struct tk_limiter *l, const char *key, int *allowed)
{
	struct tk_decision d;
	int rc = tk_limiter_check(l, key, strlen(key), 1, &d);

	*allowed = rc == 0 && d.allowed;
	return rc;
}

static void check_ok(struct tk_limiter *l, const char *key)
{
	int allowed;

	assert_int_equal(check(l, key, &allowed), 0);
	assert_true(allowed);
}

/* Keys @prefix0 .. @prefix(n-1), each checked @times times (admitted). */
static void fill(struct tk_limiter *l, const char *prefix, int n, int times)
{
	char key[32];
	int i, t;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		for (t = 0; t < times; t++)
			check_ok(l, key);
	}
}

static void verify(const char *zone, struct tk_zone_info *info)
{
	assert_int_equal(tk_zone_verify(zone, info, sizeof(*info)), 0);
	assert_int_equal(info->violations, 0);
}

/* Fork @n workers running @fn(i); they must all exit 0. */
static void run_workers(int n, void (*fn)(int))
{
	pid_t pid[8];
	int i, status;

	for (i = 0; i < n; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			atomic_fetch_add(&sh->ready, 1);
			while (atomic_load(&sh->ready) < (uint64_t)n)
				;
			fn(i);
			_exit(0);
		}
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	atomic_store(&sh->ready, 0);
}

/*
 * Every block of a size referenced (each key used twice, the last use of
 * the last key needing a block more than the arena has): keys still get
 * blocks, by second chance: spare none, then evict, never the key being
 * updated.  Then hot keys keep exact counts while a flood of keys used
 * once evicts itself.
 */
static void test_full_class_evicts(void **state)
{
	struct tk_limiter *l = open_on("evict", LOG, 0);
	struct tk_zone_info info;
	char key[32];
	int i, h, allowed, admitted[4] = { 0 };

	(void)state;
	assert_non_null(l);
	fill(l, "c", BLOCKS, 2);
	check_ok(l, "new");
	/* Used twice in a row: they earn their second chance. */
	for (h = 0; h < 4; h++) {
		snprintf(key, sizeof(key), "hot%d", h);
		check_ok(l, key);
		check_ok(l, key);
		admitted[h] = 2;
	}
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "f%d", i);
		check_ok(l, key);
		for (h = 0; h < 4; h++) {
			snprintf(key, sizeof(key), "hot%d", h);
			assert_int_equal(check(l, key, &allowed), 0);
			admitted[h] += allowed;
		}
	}
	for (h = 0; h < 4; h++)
		assert_int_equal(admitted[h], 100);
	tk_limiter_close(l);
	verify("evict", &info);
	assert_true(info.evictions >= 200);
	assert_true(info.blocks <= BLOCKS);
	assert_int_equal(tk_zone_destroy("evict"), 0);
}

/* A shared hot key amid this worker's flood of keys used once. */
static void flood_worker(int i)
{
	struct tk_limiter *l = open_on("evictp", LOG, 0);
	char key[32];
	int k, allowed;

	if (!l)
		_exit(2);
	for (k = 0; k < 150; k++) {
		snprintf(key, sizeof(key), "f%d-%d", i, k);
		if (check(l, key, &allowed) != 0 || !allowed)
			atomic_fetch_add(&sh->errors, 1);
		if (k % 3)
			continue;
		if (check(l, "hot", &allowed) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
	tk_limiter_close(l);
}

/* Four processes evict all the time; the hot key's count stays exact. */
static void test_eviction_across_processes(void **state)
{
	struct tk_limiter *l = open_on("evictp", LOG, 0);
	struct tk_zone_info info;

	(void)state;
	assert_non_null(l);
	memset(sh, 0, sizeof(*sh));
	/* Used twice: it earned its second chance before the flood. */
	check_ok(l, "hot");
	check_ok(l, "hot");
	run_workers(4, flood_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	/* 2 + 4 x 50 checks, at most 100 admitted: exactly 100. */
	assert_int_equal(atomic_load(&sh->allowed) + 2, 100);
	tk_limiter_close(l);
	verify("evictp", &info);
	assert_true(info.evictions > 0);
	assert_int_equal(tk_zone_destroy("evictp"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_class_evicts),
		cmocka_unit_test(test_eviction_across_processes),
	};
	int rc;

	if (!mkdtemp(dir))
		return 99;
	setenv("TK_SHM_DIR", dir, 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || tk_clock_manual_new(&clk, T0) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("zone_arena", tests, NULL, NULL);
	tk_clock_free(clk);
	rmdir(dir);
	return rc;
}
