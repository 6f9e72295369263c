/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone.c - the shared-memory store across processes: exact counts
 * with forked workers, kill -9 chaos, and refusal of bad segments.
 *
 * Zones live in a private temporary directory (TK_SHM_DIR).  Workers that
 * must share one manual time read it from an anonymous shared page
 * through a custom clock.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)

static char dir[] = "/tmp/tk-zones-XXXXXX";

static struct kit_shared *sh;	      /* kit_shared() */
static struct tk_clock *shared_clock; /* reads sh->now */
static uint64_t zone_arena;	      /* for zones open_zone() creates */
static uint64_t zone_grace;

static int shared_now(void *ctx, uint64_t *ns)
{
	(void)ctx;
	*ns = atomic_load(&sh->now);
	return 0;
}

static struct tk_limiter *open_zone(const char *zone, const char *policy,
				    uint64_t capacity, unsigned int flags)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[128];
	int rc;

	o.clock = shared_clock;
	o.zone_capacity = capacity;
	o.zone_arena = zone_arena;
	o.reclaim_grace = zone_grace;
	o.flags = flags;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	rc = tk_limiter_open(&l, policy, spec, &o);
	return rc ? NULL : l;
}

/* The zone and policy hot_worker() uses. */
static const char *hot_zone = "hot", *hot_policy = "gcra:1000/1h";
static uint64_t hot_capacity;

static void hot_worker(int i)
{
	struct tk_limiter *l = open_zone(hot_zone, hot_policy, hot_capacity, 0);
	struct tk_decision d;
	int k;

	(void)i;
	if (!l)
		_exit(2);
	for (k = 0; k < 3000; k++) {
		if (tk_limiter_check(l, "k", 1, 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
	tk_limiter_close(l);
}

/* N processes x M checks on one key at limit L admit exactly L. */
static void test_processes_admit_exactly_limit(void **state)
{
	struct tk_zone_info info;

	(void)state;
	kit_shared_reset(T0);
	kit_run_workers(4, hot_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	assert_int_equal(atomic_load(&sh->allowed), 1000);
	assert_int_equal(tk_zone_verify("hot", &info, sizeof(info)), 0);
	assert_int_equal(info.keys, 1);
	assert_int_equal(info.checks, 4 * 3000);
	assert_int_equal(info.denies, 4 * 3000 - 1000);
	assert_int_equal(tk_zone_destroy("hot"), 0);
}

static const char *many_policy = "gcra:5/1h";

static void many_worker(int i)
{
	struct tk_limiter *l = open_zone("many", many_policy, 8192, 0);
	struct tk_decision d;
	char key[16];
	int k, r;

	(void)i;
	if (!l)
		_exit(2);
	/* Every worker inserts the same new keys at the same time. */
	for (k = 0; k < 1024; k++) {
		snprintf(key, sizeof(key), "key-%d", k);
		for (r = 0; r < 3; r++) {
			if (tk_limiter_check(l, key, strlen(key), 1, &d) != 0)
				atomic_fetch_add(&sh->errors, 1);
			else if (d.allowed)
				atomic_fetch_add(&sh->per_key[k], 1);
		}
	}
	tk_limiter_close(l);
}

/* Many keys inserted concurrently: each admits exactly its limit, for
 * a slot state (GCRA) and a block state (sliding log). */
static void test_many_keys_each_exact(void **state)
{
	static const char *const policies[] = { "gcra:5/1h",
						"sliding-log:5/1h" };
	struct tk_zone_info info;
	size_t p;
	int k;

	(void)state;
	for (p = 0; p < 2; p++) {
		many_policy = policies[p];
		kit_shared_reset(T0);
		kit_run_workers(4, many_worker);
		assert_int_equal(atomic_load(&sh->errors), 0);
		for (k = 0; k < 1024; k++)
			assert_int_equal(atomic_load(&sh->per_key[k]), 5);
		assert_int_equal(tk_zone_verify("many", &info, sizeof(info)),
				 0);
		assert_int_equal(info.keys, 1024);
		assert_int_equal(info.violations, 0);
		/* One block per block key once updates have settled. */
		assert_int_equal(info.blocks, p ? 1024 : 0);
		assert_int_equal(tk_zone_destroy("many"), 0);
	}
}

static void clock_worker(int i)
{
	struct tk_limiter *l = open_zone("time", "gcra:100/1s", 256, 0);
	struct tk_decision d;
	char key[16];
	int k;

	if (!l)
		_exit(2);
	for (k = 0; k < 20000; k++) {
		/* Worker 0 moves the shared clock; everyone checks. */
		if (i == 0 && k % 50 == 0)
			atomic_fetch_add(&sh->now, SEC / 10);
		snprintf(key, sizeof(key), "k%d", k % 300);
		if (tk_limiter_check(l, key, strlen(key), 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
	}
	tk_limiter_close(l);
}

/* Time passing, keys expiring and reclaimed while others insert. */
static void test_reclaim_under_churn(void **state)
{
	struct tk_zone_info info;

	(void)state;
	kit_shared_reset(T0);
	kit_run_workers(4, clock_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	assert_int_equal(tk_zone_verify("time", &info, sizeof(info)), 0);
	assert_true(info.reclaims > 0 || info.evictions > 0);
	assert_int_equal(info.violations, 0);
	assert_int_equal(tk_zone_destroy("time"), 0);
}

/* What spread_worker() checks: many keys, more than fit. */
static struct {
	const char *zone, *policy;
	uint64_t capacity;
	unsigned int flags;
	int keys; /* at most 1024 */
} spread;

static void spread_worker(int i)
{
	struct tk_limiter *l = open_zone(spread.zone, spread.policy,
					 spread.capacity, spread.flags);
	struct tk_decision d;
	char key[16];
	int k, n, rc;

	if (!l)
		_exit(2);
	for (k = 0; k < 3000; k++) {
		n = (k * 13 + i) % spread.keys;
		snprintf(key, sizeof(key), "s%d", n);
		rc = tk_limiter_check(l, key, strlen(key), 1, &d);
		if (rc == 0 && d.allowed)
			atomic_fetch_add(&sh->per_key[n], 1);
		else if (rc != 0 && rc != -ENOSPC)
			atomic_fetch_add(&sh->errors, 1);
	}
	tk_limiter_close(l);
}

/* What flood_worker() checks: a hot key among a flood of new keys. */
static const char *flood_hot, *flood_new;

static void flood_worker(int i)
{
	struct tk_limiter *hot =
		open_zone("flood", flood_hot, 64, TK_OPT_ZONE_RECLAIMER);
	struct tk_limiter *other = open_zone("flood", flood_new, 64, 0);
	struct tk_decision d;
	char key[24];
	int k;

	if (!hot || !other)
		_exit(2);
	for (k = 0; k < 3000; k++) {
		/* Worker 0 moves time on: flood keys expire, are reclaimed. */
		if (i == 0 && k % 100 == 0)
			atomic_fetch_add(&sh->now, SEC);
		if (tk_limiter_check(hot, "hot", 3, 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
		snprintf(key, sizeof(key), "f%d-%d", i, k);
		if (tk_limiter_check(other, key, strlen(key), 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
	}
	tk_limiter_close(hot);
	tk_limiter_close(other);
}

/*
 * A hot key amid a flood of keys used once, in a zone of 64 slots (and a
 * 64 KiB arena) that must evict all the time, with reclaimer threads
 * running and time moving: a key used once goes before a key used again,
 * so the flood evicts itself and the hot key admits exactly its limit, in a
 * slot and in a block.
 */
static void test_hot_key_exact_under_flood(void **state)
{
	static const char *const hot[] = {
		"gcra:1000/100d", "sliding-window:1000/100d,buckets=4"
	};
	static const char *const flood[] = { "gcra:1/1s,burst=1",
					     "sliding-window:1/1s,buckets=4" };
	struct tk_zone_info info;
	int p;

	(void)state;
	zone_grace = SEC;
	zone_arena = 64 * 1024;
	for (p = 0; p < 2; p++) {
		kit_shared_reset(T0);
		flood_hot = hot[p];
		flood_new = flood[p];
		kit_run_workers(4, flood_worker);
		assert_int_equal(atomic_load(&sh->errors), 0);
		assert_int_equal(atomic_load(&sh->allowed), 1000);
		/* The flood evicts its own oldest keys first, expired ones
		 * before live ones, so few last to be reclaimed meanwhile;
		 * those it leaves are, once expired for the grace. */
		assert_int_equal(tk_zone_sweep("flood", atomic_load(&sh->now) +
								10 * SEC),
				 0);
		assert_int_equal(tk_zone_verify("flood", &info, sizeof(info)),
				 0);
		assert_true(info.evictions > 0);
		assert_true(info.reclaims > 0);
		assert_int_equal(tk_zone_destroy("flood"), 0);
	}
	zone_grace = 0;
	zone_arena = 0;
}

/* A zone that refuses when full never evicts, so never over-admits. */
static void test_full_zone_refuses(void **state)
{
	struct tk_zone_info info;
	int k;

	(void)state;
	kit_shared_reset(T0);
	spread.zone = "full";
	spread.policy = "gcra:3/1h";
	spread.capacity = 64;
	spread.flags = TK_OPT_ZONE_REFUSE_FULL;
	spread.keys = 200;
	kit_run_workers(4, spread_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	for (k = 0; k < 200; k++)
		assert_true(atomic_load(&sh->per_key[k]) <= 3);
	assert_int_equal(tk_zone_verify("full", &info, sizeof(info)), 0);
	assert_int_equal(info.evictions, 0);
	assert_true(info.keys <= 64);
	assert_int_equal(tk_zone_destroy("full"), 0);
}

static void evict_worker(int i)
{
	struct tk_limiter *l = open_zone("evict", "gcra:3/1h", 64, 0);
	struct tk_decision d;
	char key[16];
	int k;

	if (!l)
		_exit(2);
	for (k = 0; k < 3000; k++) {
		snprintf(key, sizeof(key), "e%d-%d", i, k);
		if (tk_limiter_check(l, key, strlen(key), 1, &d) != 0 ||
		    !d.allowed)
			atomic_fetch_add(&sh->errors, 1);
	}
	tk_limiter_close(l);
}

/* A flood of new keys in a small zone: evicts, stays consistent. */
static void test_eviction_pressure(void **state)
{
	struct tk_zone_info info;

	(void)state;
	kit_shared_reset(T0);
	kit_run_workers(4, evict_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	assert_int_equal(tk_zone_verify("evict", &info, sizeof(info)), 0);
	assert_true(info.evictions >= 4 * 3000 - 64);
	assert_true(info.keys <= 64);
	assert_int_equal(tk_zone_destroy("evict"), 0);
}

static const char *chaos_policy = "gcra:200/1h";

static void chaos_worker(int i)
{
	struct tk_limiter *l = open_zone("chaos", chaos_policy, 128, 0);
	struct tk_decision d;
	char key[16];
	uint64_t k;

	(void)i;
	if (!l)
		_exit(2);
	for (k = 0;; k++) {
		snprintf(key, sizeof(key), "c%llu",
			 (unsigned long long)(k % 40));
		if (tk_limiter_check(l, "hot", 3, 1, &d) == 0 && d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
		tk_limiter_check(l, key, strlen(key), 1, &d);
		if (k % 7 == 0)
			tk_limiter_reset(l, key, strlen(key));
	}
}

/* One more admitted check on every key of the chaos zone. */
static void touch_chaos_keys(const char *policy)
{
	struct tk_limiter *l = open_zone("chaos", policy, 128, 0);
	struct tk_decision d;
	char key[16];
	int k;

	assert_non_null(l);
	for (k = 0; k <= 40; k++) {
		snprintf(key, sizeof(key), k < 40 ? "c%d" : "hot", k);
		assert_int_equal(tk_limiter_reset(l, key, strlen(key)), 0);
		assert_int_equal(tk_limiter_check(l, key, strlen(key), 1, &d),
				 0);
		assert_true(d.allowed);
	}
	tk_limiter_close(l);
}

/* Fork 4 workers running @fn(i) forever, SIGKILL them all after @us
 * microseconds, and verify @zone. */
static void kill_round(const char *zone, void (*fn)(int), unsigned int us)
{
	struct tk_zone_info info;
	pid_t pid[4];
	int i, status;

	for (i = 0; i < 4; i++) {
		pid[i] = kit_fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			fn(i);
			_exit(0);
		}
	}
	usleep(us);
	for (i = 0; i < 4; i++) {
		kill(pid[i], SIGKILL);
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFSIGNALED(status));
	}
	assert_int_equal(tk_zone_verify(zone, &info, sizeof(info)), 0);
}

/*
 * Workers killed with SIGKILL at random instants while they insert,
 * update, reset and evict.  Afterwards the zone verifies, the hot key
 * never admitted more than its limit, and new workers limit exactly.
 */
static void chaos(const char *policy)
{
	struct tk_zone_info info;
	int round, i;
	unsigned int seed = 12345;

	chaos_policy = policy;
	/* Room for every key's block: eviction is tested elsewhere. */
	zone_arena = 1 << 20;
	kit_shared_reset(T0);
	/* There before anyone is killed, however early. */
	tk_limiter_close(open_zone("chaos", policy, 128, 0));
	for (round = 0; round < 30; round++) {
		kill_round("chaos", chaos_worker, 1000 + rand_r(&seed) % 3000);
		/* Seen admitted <= actually consumed <= the limit. */
		assert_true(atomic_load(&sh->allowed) <= 200);
	}
	/* Survivors' leftovers are finished by whoever comes next. */
	{
		struct tk_limiter *l = open_zone("chaos", policy, 128, 0);
		struct tk_decision d;
		uint64_t before = atomic_load(&sh->allowed), more = 0;

		assert_non_null(l);
		for (i = 0; i < 500; i++) {
			assert_int_equal(tk_limiter_check(l, "hot", 3, 1, &d),
					 0);
			more += d.allowed;
		}
		assert_true(before + more <= 200);
		/* A fresh key limits exactly after all that. */
		atomic_store(&sh->allowed, 0);
		assert_int_equal(tk_limiter_reset(l, "hot", 3), 0);
		tk_limiter_close(l);
	}
	hot_zone = "chaos";
	hot_policy = policy;
	hot_capacity = 128;
	kit_run_workers(4, hot_worker);
	assert_int_equal(atomic_load(&sh->allowed), 200);
	assert_int_equal(tk_zone_verify("chaos", &info, sizeof(info)), 0);
	/* Blocks killed workers held: once every key has moved on, a sweep
	 * collects all of them. */
	touch_chaos_keys(policy);
	assert_int_equal(tk_zone_sweep("chaos", atomic_load(&sh->now)), 0);
	assert_int_equal(tk_zone_verify("chaos", &info, sizeof(info)), 0);
	assert_int_equal(info.blocks,
			 strncmp(policy, "gcra", 4) == 0 ? 0 : info.keys);
	zone_arena = 0;
	assert_int_equal(tk_zone_destroy("chaos"), 0);
}

static void test_kill9_chaos(void **state)
{
	(void)state;
	chaos("gcra:200/1h");
}

/* The same with states in blocks, killed while claiming, writing,
 * publishing and releasing them. */
static void test_kill9_chaos_blocks(void **state)
{
	(void)state;
	chaos("sliding-window:200/1h,buckets=4");
	chaos("sliding-log:200/1h");
}

/* Rewrite @len bytes at @off of zone @name's file. */
static void poke(const char *name, off_t off, const void *bytes, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/throttlekit.%s", dir, name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, len, off), (ssize_t)len);
	close(fd);
}

static void resize(const char *name, off_t size)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/throttlekit.%s", dir, name);
	assert_int_equal(truncate(path, size), 0);
}

static int attach_rc(const char *name)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_limiter *l;
	char spec[64];
	int a, b;

	a = tk_zone_info(name, &info, sizeof(info));
	snprintf(spec, sizeof(spec), "shm:%s", name);
	o.flags = TK_OPT_ZONE_NO_CREATE;
	b = tk_limiter_open(&l, "gcra:1/s", spec, &o);
	if (b == 0)
		tk_limiter_close(l);
	/* The admin path and the attach path agree. */
	assert_int_equal(a, b);
	return a;
}

static void fresh(const char *name)
{
	struct tk_options o = TK_OPTIONS_INIT;

	tk_zone_destroy(name);
	o.zone_capacity = 256;
	assert_int_equal(tk_zone_create(name, &o), 0);
	assert_int_equal(attach_rc(name), 0);
}

static int first_slot(void *ctx, uint64_t slot, uint64_t fp, uint64_t w1)
{
	(void)fp;
	(void)w1;
	*(uint64_t *)ctx = slot;
	return 1;
}

/*
 * A block key whose slot references no valid block, or no valid
 * descriptor (a corrupt arena): verify says so, and a check does not
 * crash but starts the key afresh, which repairs it.
 */
static void broken_block_reference(uint64_t bogus)
{
	struct tk_zone_info info;
	struct tk_decision d;
	struct tk_limiter *l;
	uint64_t slot = UINT64_MAX;

	fresh("bad");
	l = open_zone("bad", "sliding-window:3/1h,buckets=2", 256, 0);
	assert_non_null(l);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(tk_zone_walk("bad", first_slot, &slot), 1);
	assert_true(slot < 256);
	poke("bad", (off_t)(4096 + 16 * slot + 8), &bogus, sizeof(bogus));
	assert_int_equal(tk_zone_verify("bad", &info, sizeof(info)), -EBADMSG);
	assert_int_equal(info.violations, 1);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 2);
	assert_int_equal(tk_zone_verify("bad", &info, sizeof(info)), 0);
	tk_limiter_close(l);
}

/*
 * The geometry is validated at attach and kept privately: a header
 * rewritten afterwards (capacity, shards, pages zeroed or huge) changes
 * nothing for processes already attached, and crashes none.
 */
static void header_rewritten_under_us(void)
{
	static const struct {
		off_t off;
		uint64_t v;
	} pokes[] = { { 40, 0 },
		      { 40, UINT64_C(1) << 32 },
		      { 48, 0 },
		      { 80, 0 },
		      { 80, UINT64_MAX } };
	struct tk_decision d;
	struct tk_limiter *a, *b;
	size_t i;

	for (i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
		fresh("bad");
		a = open_zone("bad", "gcra:3/1h", 256, 0);
		b = open_zone("bad", "sliding-window:3/1h,buckets=2", 256, 0);
		assert_non_null(a);
		assert_non_null(b);
		assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
		poke("bad", pokes[i].off, &pokes[i].v, 8);
		assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
		assert_int_equal(d.remaining, 1);
		assert_int_equal(tk_limiter_check(b, "j", 1, 1, &d), 0);
		assert_int_equal(d.remaining, 2);
		tk_limiter_close(a);
		tk_limiter_close(b);
		/* New attaches refuse it. */
		assert_int_equal(attach_rc("bad"), -EPROTO);
	}
}

/* Corrupt, truncated, foreign and other-version segments are refused. */
static void test_bad_segments(void **state)
{
	/* Another layout, its check word left stale; test_zone_security's
	 * test_previous_layout refuses the version alone. */
	uint32_t version = 4;
	uint64_t junk = 0x1234;
	uint8_t flip;
	char path[256];

	(void)state;
	fresh("bad");
	poke("bad", 0, "NOTAZONE", 8);
	assert_int_equal(attach_rc("bad"), -EINVAL);
	fresh("bad");
	poke("bad", 8, &version, sizeof(version));
	assert_int_equal(attach_rc("bad"), -EPROTO);
	fresh("bad");
	/* A flipped bit in the geometry: the check word catches it. */
	flip = 0x80;
	poke("bad", 41, &flip, 1);
	assert_int_equal(attach_rc("bad"), -EPROTO);
	fresh("bad");
	poke("bad", 120, &junk, sizeof(junk));
	assert_int_equal(attach_rc("bad"), -EPROTO);
	fresh("bad");
	resize("bad", 4096 + 16 * 100);
	assert_int_equal(attach_rc("bad"), -EPROTO);
	fresh("bad");
	resize("bad", 4096 + 16 * 512);
	assert_int_equal(attach_rc("bad"), -EPROTO);
	fresh("bad");
	resize("bad", 100);
	assert_int_equal(attach_rc("bad"), -EPROTO);
	resize("bad", 0);
	assert_int_equal(attach_rc("bad"), -EPROTO);
	header_rewritten_under_us();
	broken_block_reference(UINT64_C(0x1ffffff) << 37 | 5);
	broken_block_reference(UINT64_C(1) << 62 | UINT64_C(0x1ffffff) << 37);
	broken_block_reference(UINT64_C(1) << 62 | UINT64_C(1) << 37 | 9);
	/* Another user's zone is refused whatever its mode (the trust rules
	 * have their own tests: test_zone_security). */
	fresh("bad");
	snprintf(path, sizeof(path), "%s/throttlekit.bad", dir);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(attach_rc("bad"), -EACCES);
		assert_int_equal(chmod(path, 0666), 0);
		assert_int_equal(attach_rc("bad"), -EACCES);
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(chmod(path, 0600), 0);
	}
	assert_int_equal(tk_zone_destroy("bad"), 0);
	/* Names and absence. */
	assert_int_equal(attach_rc("bad"), -ENOENT);
	assert_int_equal(tk_zone_info("../etc", NULL, 0), -EINVAL);
	assert_int_equal(tk_zone_create(".hidden", NULL), -EINVAL);
	assert_int_equal(tk_zone_create("a/b", NULL), -EINVAL);
	assert_int_equal(tk_zone_destroy("nosuch"), -ENOENT);
}

/* Two processes creating at once get one zone; neither fails. */
static void create_worker(int i)
{
	struct tk_limiter *l = open_zone("race", "gcra:1/1h", 1024, 0);
	struct tk_decision d;

	(void)i;
	if (!l)
		_exit(2);
	if (tk_limiter_check(l, "k", 1, 1, &d) == 0 && d.allowed)
		atomic_fetch_add(&sh->allowed, 1);
	tk_limiter_close(l);
}

static void excl_worker(int i)
{
	struct tk_options o = TK_OPTIONS_INIT;
	int rc;

	(void)i;
	o.zone_capacity = 128;
	rc = tk_zone_create("excl", &o);
	if (rc == 0)
		atomic_fetch_add(&sh->allowed, 1);
	else if (rc != -EEXIST)
		atomic_fetch_add(&sh->errors, 1);
}

static void test_creation_race(void **state)
{
	int round;

	(void)state;
	/* tk_zone_create: exactly one of the racers creates it. */
	for (round = 0; round < 20; round++) {
		kit_shared_reset(T0);
		tk_zone_destroy("excl");
		kit_run_workers(4, excl_worker);
		assert_int_equal(atomic_load(&sh->errors), 0);
		assert_int_equal(atomic_load(&sh->allowed), 1);
	}
	assert_int_equal(tk_zone_destroy("excl"), 0);
	for (round = 0; round < 20; round++) {
		kit_shared_reset(T0);
		tk_zone_destroy("race");
		kit_run_workers(4, create_worker);
		/* One zone: the key admitted once across all creators. */
		assert_int_equal(atomic_load(&sh->allowed), 1);
	}
	assert_int_equal(tk_zone_destroy("race"), 0);
}

/* Every algorithm on a zone: N processes x M checks admit exactly L. */
static void test_every_algorithm_exact(void **state)
{
	static const char *const policies[] = {
		"token-bucket:capacity=1000,refill=1/1h",
		"fixed-window:1000/1h",
		"sliding-window:1000/1h,buckets=10",
		"sliding-log:500/1h",
		"quota:1000/day",
		"quota:1000/month,offset=+05:30",
		"fixed-window:1000/10ms",
		"quota:1000/10ms,anchor=1",
		/* The edges of packing a window into a slot. */
		"fixed-window:1000/16777216ns",
		"fixed-window:1000/16777215ns",
	};
	/* Which live in a block: windows shorter than 2^24 ns, sliding. */
	static const int in_block[] = { 0, 0, 1, 1, 0, 0, 1, 1, 0, 1 };
	struct tk_zone_info info;
	size_t p;

	(void)state;
	for (p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
		kit_shared_reset(T0);
		hot_zone = "kinds";
		hot_policy = policies[p];
		hot_capacity = 256;
		kit_run_workers(4, hot_worker);
		assert_int_equal(atomic_load(&sh->errors), 0);
		assert_int_equal(atomic_load(&sh->allowed),
				 p == 3 ? 500 : 1000);
		assert_int_equal(tk_zone_verify("kinds", &info, sizeof(info)),
				 0);
		assert_int_equal(info.keys, 1);
		assert_int_equal(info.blocks, in_block[p]);
		assert_int_equal(tk_zone_destroy("kinds"), 0);
	}
	hot_zone = "hot";
	hot_policy = "gcra:1000/1h";
	hot_capacity = 0;
}

/* What combo_worker() runs: a composite of an IP and a user limit. */
static const char *combo_policy;
static int combo_forever;

static void combo_worker(int i)
{
	struct tk_limiter *l = open_zone("combo", combo_policy, 1024, 0);
	struct tk_key k[2] = { { "ip", 2 }, { NULL, 0 } };
	struct tk_decision d;
	char user[16];
	int n;

	if (!l)
		_exit(2);
	snprintf(user, sizeof(user), "user%d", i);
	k[1].key = user;
	k[1].key_len = strlen(user);
	for (n = 0; combo_forever || n < 400; n++) {
		if (tk_limiter_check_keys(l, k, 2, 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (d.allowed)
			atomic_fetch_add(&sh->per_key[i], 1);
		/* Readers too: a peek is validated, never half-applied. */
		if (n % 16 == 0 && tk_limiter_peek(l, "other", 5, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
	}
	tk_limiter_close(l);
}

/* Admissions left for @ip and @user, each probed with a fresh partner. */
static uint64_t left(struct tk_limiter *l, const char *ip, const char *user)
{
	struct tk_key k[2] = { { ip, strlen(ip) }, { user, strlen(user) } };
	struct tk_decision d;
	uint64_t n;

	for (n = 0;; n++) {
		assert_int_equal(tk_limiter_check_keys(l, k, 2, 1, &d), 0);
		if (!d.allowed)
			return n;
	}
}

/*
 * The charges of an all(IP, user) composite, measured afterwards: every
 * user charged what it was admitted (@seen, at least), the IP charged the
 * sum, which no partial step could give.
 */
static void check_charges(const char *policy, const uint64_t *seen, int n,
			  int exact)
{
	struct tk_limiter *l = open_zone("combo", policy, 1024, 0);
	uint64_t ip_charged, users = 0;
	char user[16], ip[16];
	int i;

	assert_non_null(l);
	for (i = 0; i < n; i++) {
		uint64_t charged;

		snprintf(user, sizeof(user), "user%d", i);
		snprintf(ip, sizeof(ip), "fresh%d", i);
		charged = 300 - left(l, ip, user);
		if (exact)
			assert_int_equal(charged, seen[i]);
		else
			assert_true(charged >= seen[i]);
		users += charged;
	}
	ip_charged = 1000 - left(l, "ip", "fresh-user");
	assert_int_equal(ip_charged, users);
	tk_limiter_close(l);
}

/*
 * Four processes, one IP, a user each: the IP admits exactly 1000 of
 * 1600, and each user was charged exactly what it was admitted.
 */
static void test_composite_exact_across_processes(void **state)
{
	static const char *const policies[] = {
		"all(fixed-window:1000/1h,fixed-window:300/1h)",
		"all(gcra:1000/1h,sliding-window:300/1h,buckets=4)",
	};
	struct tk_zone_info info;
	uint64_t seen[4], total;
	size_t p;
	int i;

	(void)state;
	for (p = 0; p < 2; p++) {
		kit_shared_reset(T0);
		combo_policy = policies[p];
		kit_run_workers(4, combo_worker);
		assert_int_equal(atomic_load(&sh->errors), 0);
		for (i = 0, total = 0; i < 4; i++)
			total += seen[i] = atomic_load(&sh->per_key[i]);
		assert_int_equal(total, 1000);
		assert_int_equal(tk_zone_verify("combo", &info, sizeof(info)),
				 0);
		/* The peeks of "other" created no key. */
		assert_int_equal(info.keys, 5 * 1 + 0 * 0 + 0);
		check_charges(policies[p], seen, 4, 1);
		assert_int_equal(tk_zone_destroy("combo"), 0);
	}
}

/*
 * kill -9 in the middle of composite steps: afterwards the zone
 * verifies, and the IP was charged exactly what the users were, so no
 * step was ever half applied, whoever died where.
 */
static void test_composite_kill9_chaos(void **state)
{
	const char *policy = "all(fixed-window:1000/1h,fixed-window:300/1h)";
	struct tk_zone_info info;
	struct tk_limiter *l;
	unsigned int seed = 777;
	uint64_t seen[4];
	int round, i;

	(void)state;
	kit_shared_reset(T0);
	combo_policy = policy;
	combo_forever = 1;
	/* There before anyone is killed, however early. */
	l = open_zone("combo", policy, 1024, 0);
	assert_non_null(l);
	tk_limiter_close(l);
	for (round = 0; round < 20; round++)
		kill_round("combo", combo_worker, 500 + rand_r(&seed) % 2000);
	combo_forever = 0;
	assert_int_equal(atomic_load(&sh->errors), 0);
	for (i = 0; i < 4; i++)
		seen[i] = atomic_load(&sh->per_key[i]);
	check_charges(policy, seen, 4, 0);
	/* Once every key has moved on, a sweep leaves one block per key. */
	assert_int_equal(tk_zone_sweep("combo", atomic_load(&sh->now)), 0);
	assert_int_equal(tk_zone_verify("combo", &info, sizeof(info)), 0);
	assert_int_equal(info.blocks, info.keys);
	assert_int_equal(tk_zone_destroy("combo"), 0);
}

/* A policy of another shape on a key holding a state: a state of its
 * own (its store key's tag), as in memory; the first state is untouched
 * and a reset forgets only the resetting policy's. */
static void test_other_shape_apart(void **state)
{
	struct tk_limiter *a, *b;
	struct tk_decision d;

	(void)state;
	a = open_zone("shape", "sliding-window:2/1h,buckets=2", 256, 0);
	b = open_zone("shape", "sliding-log:2/1h", 256, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check(b, "k", 1, 2, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(tk_limiter_reset(b, "k", 1), 0);
	assert_int_equal(tk_limiter_check(b, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	tk_limiter_close(a);
	tk_limiter_close(b);
	assert_int_equal(tk_zone_destroy("shape"), 0);
}

/*
 * 300 keys of 2 KiB states in an arena of 64 KiB (32 blocks): the arena
 * evicts by second chance and stays consistent.  A zone created to
 * refuse answers -ENOSPC instead, and never over-admits.
 */
static void test_arena_pressure(void **state)
{
	struct tk_zone_info info;
	int refuse, k;

	(void)state;
	zone_arena = 64 * 1024;
	for (refuse = 0; refuse < 2; refuse++) {
		kit_shared_reset(T0);
		spread.zone = "arena";
		spread.policy = "sliding-log:100/1h";
		spread.capacity = 1024;
		spread.flags = refuse ? TK_OPT_ZONE_REFUSE_FULL : 0;
		spread.keys = 300;
		kit_run_workers(4, spread_worker);
		assert_int_equal(atomic_load(&sh->errors), 0);
		assert_int_equal(tk_zone_verify("arena", &info, sizeof(info)),
				 0);
		assert_int_equal(info.arena_size, 64 * 1024);
		assert_true(info.blocks <= 32);
		if (refuse) {
			assert_int_equal(info.evictions, 0);
			for (k = 0; k < 300; k++)
				assert_true(atomic_load(&sh->per_key[k]) <=
					    100);
		} else {
			assert_true(info.evictions > 0);
		}
		assert_int_equal(tk_zone_destroy("arena"), 0);
	}
	zone_arena = 0;
}

static void test_same_zone_twice_and_reclaimer(void **state)
{
	struct tk_zone_info info;
	struct tk_limiter *a, *b;
	struct tk_decision d;
	char key[16];
	int i;

	(void)state;
	kit_shared_reset(T0);
	a = open_zone("twice", "gcra:2/1s", 256, TK_OPT_ZONE_RECLAIMER);
	b = open_zone("twice", "gcra:2/1s", 256, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	assert_int_equal(tk_limiter_check(b, "k", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 0);
	tk_limiter_close(b);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	for (i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "r%d", i);
		assert_int_equal(tk_limiter_check(a, key, strlen(key), 1, &d),
				 0);
	}
	/* Past expiry and the 60 s grace: the thread reclaims them. */
	atomic_fetch_add(&sh->now, 120 * SEC);
	for (i = 0; i < 400; i++) {
		assert_int_equal(tk_zone_info("twice", &info, sizeof(info)), 0);
		if (info.keys == 0)
			break;
		usleep(10000);
	}
	assert_int_equal(info.keys, 0);
	assert_true(info.reclaims >= 51);
	tk_limiter_close(a);
	assert_int_equal(tk_zone_destroy("twice"), 0);
}

static void *thread_main(void *arg)
{
	struct tk_limiter *l = arg;
	struct tk_decision d;
	int k;

	for (k = 0; k < 3000; k++) {
		if (tk_limiter_check(l, "t", 1, 1, &d) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
	return NULL;
}

/* Threads of one process on one zone: exact too, for a state in a slot,
 * in a block and a composite (the ThreadSanitizer build's view of it). */
static void test_threads_on_a_zone(void **state)
{
	static const char *const policies[] = {
		"gcra:700/1h",
		"fixed-window:700/1h",
		"all(sliding-window:700/1h,buckets=3,gcra:2000/1h)",
	};
	struct tk_limiter *l;
	pthread_t th[4];
	size_t p;
	int i;

	(void)state;
	for (p = 0; p < 3; p++) {
		kit_shared_reset(T0);
		l = open_zone("threads", policies[p], 256, 0);
		assert_non_null(l);
		for (i = 0; i < 4; i++)
			assert_int_equal(
				pthread_create(&th[i], NULL, thread_main, l),
				0);
		for (i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		assert_int_equal(atomic_load(&sh->errors), 0);
		assert_int_equal(atomic_load(&sh->allowed), 700);
		tk_limiter_close(l);
		assert_int_equal(tk_zone_destroy("threads"), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_processes_admit_exactly_limit),
		cmocka_unit_test(test_many_keys_each_exact),
		cmocka_unit_test(test_reclaim_under_churn),
		cmocka_unit_test(test_full_zone_refuses),
		cmocka_unit_test(test_eviction_pressure),
		cmocka_unit_test(test_hot_key_exact_under_flood),
		cmocka_unit_test(test_kill9_chaos),
		cmocka_unit_test(test_bad_segments),
		cmocka_unit_test(test_creation_race),
		cmocka_unit_test(test_every_algorithm_exact),
		cmocka_unit_test(test_composite_exact_across_processes),
		cmocka_unit_test(test_composite_kill9_chaos),
		cmocka_unit_test(test_other_shape_apart),
		cmocka_unit_test(test_arena_pressure),
		cmocka_unit_test(test_kill9_chaos_blocks),
		cmocka_unit_test(test_same_zone_twice_and_reclaimer),
		cmocka_unit_test(test_threads_on_a_zone),
	};
	int rc;

	sh = kit_shared();
	if (kit_zone_dir(dir) != 0 || !sh)
		return 99;
	if (tk_clock_custom_new(&shared_clock, shared_now, NULL) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("zone", tests, NULL, NULL);
	tk_clock_free(shared_clock);
	rmdir(dir);
	return rc;
}
