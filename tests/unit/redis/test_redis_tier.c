/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_tier.c - two tiers (shm:NAME+redis://...) on a real
 * redis-server (tests/kit/redis-kit.c), skipped without one (failed with
 * TK_REQUIRE_REDIS=1): H hosts, each a zone of its own, times P forked
 * processes on one key, on a clock all of them share.
 *
 * - lease=1 decides exactly as the global limiter: L per window.
 * - Adaptive leases: never above L in a fixed window, however the
 *   credit was leased before; under a demand far above the limit,
 *   within 1% of it; over any interval of a GCRA, at most the exact
 *   allowance plus H times the largest lease.  Denied leases fall back
 *   to the exact check; leases shrink near the limit.
 * - Far from the limit, Redis sees few of the checks; a client over its
 *   limit costs at most one Redis call per retry interval.
 * - Redis stopped and restarted, alone and mid-run under H hosts x P
 *   processes; processes and a host killed.
 * - The same on a 3-master Redis Cluster.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <throttlekit.h>

#include "redis-kit.h"
#include "test-hooks.h"
#include "workers.h"

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)
#define MS UINT64_C(1000000)
#define SLOTS 1024 /* kit_shared()->per_key */

static struct redis_kit kit;
static struct redis_kit nodes[3]; /* a cluster, for test_cluster() */
static char cluster_spec[256];
static int cluster_up;
static char dir[] = "/tmp/tk-tier-XXXXXX";
static struct kit_shared *sh;
static struct tk_clock *clock_;

/* Each read of the shared clock moves it by @step ns (0: frozen). */
static _Atomic uint64_t step;
static __thread uint64_t last_read;

static int shared_now(void *ctx, uint64_t *ns)
{
	(void)ctx;
	*ns = last_read = atomic_fetch_add(&sh->now, step) + step;
	return 0;
}

/* The run's parameters, which forked workers read. */
static struct run {
	const char *policy;
	const char *opts; /* the zone's options, "" or "?lease=1" ... */
	int hosts, procs;
	long checks;	   /* per process, at most */
	long until_denied; /* or until so many denials in a row (0: all) */
	uint64_t cost;	   /* per check */
	uint64_t slot;	   /* ns per slot of sh->per_key (0: none) */
	int zone_base;	   /* zone names: tier-<zone_base + host> */
	unsigned int fail;
	const char *redis; /* the Redis spec; NULL: kit's server */
} run;

static void spec_of(int host, char *buf, size_t len)
{
	snprintf(buf, len, "shm:tier-%d%s+%s", run.zone_base + host, run.opts,
		 redis_kit_manual(run.redis ? run.redis : kit.spec));
}

static struct tk_limiter *open_on(int host)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[700];

	spec_of(host, spec, sizeof(spec));
	o.clock = clock_;
	o.zone_capacity = 1024;
	o.flags = TK_OPT_NO_RECLAIMER;
	o.fail = run.fail;
	if (tk_limiter_open(&l, run.policy, spec, &o) != 0)
		return NULL;
	return l;
}

/* Worker @i: host i / procs; counts what it admits, per slot of time. */
static void worker(int i)
{
	struct tk_limiter *l = open_on(i / run.procs);
	struct tk_decision d;
	uint64_t at;
	long n, denied;

	KIT_CHILD_CHECK(10, l != NULL);
	for (n = 0, denied = 0; n < run.checks; n++) {
		if (tk_limiter_check(l, "k", 1, run.cost, &d) != 0) {
			atomic_fetch_add(&sh->errors, 1);
			continue;
		}
		if (!d.allowed) {
			if (run.until_denied && ++denied >= run.until_denied)
				break;
			continue;
		}
		denied = 0;
		atomic_fetch_add(&sh->allowed, run.cost);
		at = run.slot ? (last_read - T0) / run.slot : 0;
		if (at < SLOTS)
			atomic_fetch_add(&sh->per_key[at], run.cost);
	}
	tk_limiter_close(l);
}

/* The script calls the server ran (FCALL or EVALSHA), since the last
 * CONFIG RESETSTAT. */
static long long script_calls(void)
{
	char info[8192], *at;
	long long n = 0;
	const char *names[] = { "cmdstat_fcall:", "cmdstat_evalsha:" };
	size_t i;

	assert_true(redis_kit_cmd(&kit, info, sizeof(info),
				  "INFO commandstats") >= 0);
	if (getenv("TIER_DEBUG"))
		print_message("%s\n", info);
	for (i = 0; i < 2; i++) {
		/* Those that ran: not "Function not found" before a load. */
		at = strstr(info, names[i]);
		if (at)
			n += atoll(strstr(at, "calls=") + 6) -
			     atoll(strstr(at, "failed_calls=") + 13);
	}
	return n;
}

static void fresh(const char *policy, const char *opts, int hosts, int procs,
		  long checks)
{
	static int zones;

	redis_kit_need(&kit);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FLUSHALL"), 0);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "CONFIG RESETSTAT"), 0);
	kit_shared_reset(T0);
	atomic_store(&step, 0);
	run = (struct run){ .policy = policy,
			    .opts = opts,
			    .hosts = hosts,
			    .procs = procs,
			    .checks = checks,
			    .cost = 1,
			    .zone_base = zones };
	zones += hosts;
}

static void run_all(void)
{
	kit_run_workers(run.hosts * run.procs, worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
}

static uint64_t took(void)
{
	return atomic_exchange(&sh->allowed, 0);
}

static void next_window(uint64_t ns)
{
	atomic_fetch_add(&sh->now, ns);
}

/* The spec's grammar, without a server: no zone made by validating. */
static void test_spec(void **state)
{
	char why[200], path[300];

	(void)state;
	assert_int_equal(tk_store_validate("shm:v+redis://127.0.0.1:1", why,
					   sizeof(why)),
			 0);
	assert_int_equal(tk_store_validate("shm:v?lease=1&lease_max=9+redis+"
					   "cluster://127.0.0.1:1",
					   why, sizeof(why)),
			 0);
	assert_int_equal(
		tk_store_validate("shm:v?lease=0+redis://h", why, sizeof(why)),
		-EINVAL);
	assert_non_null(strstr(why, "lease="));
	assert_int_equal(
		tk_store_validate("shm:v?size=2+redis://h", why, sizeof(why)),
		-EINVAL);
	assert_int_equal(
		tk_store_validate("shm:v?+redis://h", why, sizeof(why)),
		-EINVAL);
	assert_int_equal(
		tk_store_validate("shm:.v+redis://h", why, sizeof(why)),
		-EINVAL);
	assert_int_equal(tk_store_validate("shm:v+redis:/h", why, sizeof(why)),
			 -EINVAL);
	/* A zone whose path holds "+redis" is a zone. */
	assert_int_equal(
		tk_store_validate("shm:/run/a+redis/v", why, sizeof(why)), 0);
	assert_int_equal(tk_store_validate("shm:/run/a+redis/v+redis+unix:///s",
					   why, sizeof(why)),
			 0);
	snprintf(path, sizeof(path), "%s/throttlekit.v", dir);
	assert_int_equal(access(path, F_OK), -1);
}

/* lease=1: the global limiter's decisions, L a window, over 3 windows. */
static void exact_windows(const char *policy, uint64_t window)
{
	long long calls;
	int w;

	fresh(policy, "?lease=1", 3, 2, 40);
	for (w = 0; w < 3; w++) {
		run_all();
		assert_int_equal(took(), 50);
		/* Each admission a call; a denial from Redis a process at
		 * most, the others cached. */
		calls = script_calls();
		print_message("# %s: %lld calls\n", policy, calls);
		assert_true(calls >= 50 && calls <= 50 + 6);
		assert_int_equal(
			redis_kit_cmd(&kit, NULL, 0, "CONFIG RESETSTAT"), 0);
		next_window(window);
	}
}

static void test_lease1_exact(void **state)
{
	(void)state;
	exact_windows("fixed-window:50/10s", 10 * SEC);
	exact_windows("gcra:50/10s", 10 * SEC);
	exact_windows("sliding-log:50/10s", 10 * SEC);
}

/*
 * A fixed window leased before, a little (leases grow), then saturated
 * in the next: never above L in either (a lease dies with its window),
 * and the saturated one within 1% of L.
 */
static void test_window_bound(void **state)
{
	uint64_t first, second;

	(void)state;
	fresh("fixed-window:4000/1s", "?lease_max=64", 3, 2, 300);
	run_all();
	first = took();
	assert_true(first <= 4000);
	next_window(SEC);
	/* Demand that lasts: every process checks on until denied 50
	 * times in a row (its host's credit, tried first, is gone). */
	run.checks = 100000;
	run.until_denied = 50;
	run_all();
	second = took();
	print_message("# windows: %llu then %llu\n", (unsigned long long)first,
		      (unsigned long long)second);
	assert_true(second <= 4000);
	assert_true(second >= 3960);
	/* Unused credit was left over when the window ended. */
	assert_true(first == 6 * 300);
}

/* The check that lands inside another (tk__tier_pause), once. */
struct landing {
	struct tk_limiter *other;
	int where, landed;
};

static void land(void *arg, int where)
{
	struct landing *x = arg;
	struct tk_decision d;

	if (where != x->where || x->landed)
		return;
	x->landed = 1;
	assert_int_equal(tk_limiter_check(x->other, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
}

/*
 * One host, two of its checks interleaved where a lease lands: the
 * other check finds the credit word empty while the first's lease is
 * recorded but not yet credited (@where 1), or the first finds the word
 * empty before the other's whole lease lands (@where 0).  Either way no
 * second lease is taken on top of the first, whose credit the cap of
 * one lease per host would drop: the host admits the window's 40
 * exactly.
 */
static void interleaved(int where)
{
	struct landing x = { .where = where };
	struct tk_limiter *l;
	struct tk_decision d;
	uint64_t n = 0;
	int denied = 0;

	fresh("fixed-window:40/10s", "?lease=16", 1, 1, 0);
	l = open_on(0);
	x.other = open_on(0);
	assert_non_null(l);
	assert_non_null(x.other);
	tk__tier_pause = land;
	tk__tier_pause_arg = &x;
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed && x.landed);
	tk__tier_pause = NULL;
	/* Where the other check found the claim held, it went to Redis
	 * for its own unit: 2 calls, else 1 (the first's lease covered
	 * it once it looked again). */
	assert_int_equal(script_calls(), where == 1 ? 2 : 1);
	n = 2;
	while (denied < 2) {
		assert_int_equal(tk_limiter_check(n % 2 ? l : x.other, "k", 1,
						  1, &d),
				 0);
		if (d.allowed)
			n++;
		else
			denied++;
	}
	assert_int_equal(n, 40);
	tk_limiter_close(x.other);
	tk_limiter_close(l);
}

static void test_landing(void **state)
{
	(void)state;
	interleaved(1);
	interleaved(0);
}

/*
 * A fixed lease of 4 in a window of 10: the leases denied near its end
 * are asked again smaller, down to the check's own cost: 10 admitted.
 */
static void test_lease_tail(void **state)
{
	(void)state;
	fresh("fixed-window:10/10s", "?lease=4", 1, 1, 20);
	run_all();
	assert_int_equal(took(), 10);
}

/*
 * Leases shrink as the global remaining falls: a host that stops holds
 * little credit, and another host gets nearly all that is left.  (At
 * 896 checks a lease of 64 would strand 63 units.)
 */
static void test_stranded(void **state)
{
	uint64_t second;

	(void)state;
	fresh("fixed-window:1000/10s", "?lease_max=64", 2, 1, 896);
	run.hosts = 1;
	run_all();
	assert_int_equal(took(), 896);
	run.zone_base++;
	run.checks = 300;
	run_all();
	second = took();
	print_message("# the second host: %llu of 104\n",
		      (unsigned long long)second);
	assert_true(second <= 104 && second >= 78);
}

/*
 * GCRA on a clock that every check moves: over every interval of slots,
 * admitted <= burst + rate x its length + H x the largest lease, and the
 * whole run within 1% of what the exact limiter allows (less the credit
 * left in the leases at the end).
 */
static void test_gcra_bound(void **state)
{
	const uint64_t rate = 2000, burst = 200, kmax = 32, slot = 50 * MS;
	uint64_t sum, allowed, total = 0, span, worst = 0;
	size_t i, j, n;

	(void)state;
	fresh("gcra:2000/s,burst=200", "?lease_max=32", 3, 2, 4000);
	run.slot = slot;
	atomic_store(&step, 100000); /* 0.1 ms a check: 10 x the rate */
	run_all();
	span = atomic_load(&sh->now) - T0;
	n = (size_t)(span / slot) + 1;
	assert_true(n < SLOTS);
	for (i = 0; i < n; i++) {
		sum = 0;
		for (j = i; j < n; j++) {
			sum += atomic_load(&sh->per_key[j]);
			allowed = burst + rate * (j - i + 1) * slot / SEC +
				  3 * kmax;
			if (sum + 3 * kmax > allowed + worst)
				worst = sum + 3 * kmax - allowed;
			if (sum > allowed)
				fail_msg("slots %zu..%zu: %llu > %llu", i, j,
					 (unsigned long long)sum,
					 (unsigned long long)allowed);
		}
		total += atomic_load(&sh->per_key[i]);
	}
	allowed = burst + rate * span / SEC;
	print_message("# %llu admitted, exact %llu, worst interval +%llu\n",
		      (unsigned long long)total, (unsigned long long)allowed,
		      (unsigned long long)worst);
	assert_true(total <= allowed + 3 * kmax);
	/* Short of it by 1% at most, and by what the hosts whose processes
	 * finished first still held (no demand left to use it). */
	assert_true((total + 3 * kmax) * 100 >= allowed * 99);
}

/* 10^6/s, 4 hosts x 2 processes: >= 95% of checks without Redis. */
static void test_far_local(void **state)
{
	long long calls;

	(void)state;
	fresh("gcra:1000000/s", "", 4, 2, 20000);
	/* A check every 10 µs of the shared clock: 10^5/s. */
	atomic_store(&step, 10000);
	run_all();
	assert_int_equal(took(), 8 * 20000);
	calls = script_calls();
	print_message("# %lld script calls for %d checks\n", calls, 8 * 20000);
	assert_true(calls * 20 <= 8 * 20000);
}

/* Over its limit, a client costs <= 1 Redis call a retry interval. */
static void test_cached_denials(void **state)
{
	struct tk_decision d;
	struct tk_limiter *l;
	long long calls;
	uint64_t admitted;

	(void)state;
	/* A denial cached for a check of 5 units denies no smaller one. */
	fresh("fixed-window:10/10s", "", 1, 1, 0);
	l = open_on(0);
	assert_non_null(l);
	assert_int_equal(tk_limiter_check(l, "k", 1, 8, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check(l, "k", 1, 5, &d), 0);
	assert_true(!d.allowed && d.retry_after == 10 * SEC);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed && d.remaining == 1);
	tk_limiter_close(l);
	/* A fixed window exhausted: one denial from Redis a host, at most
	 * (two processes may both ask before the first one's is cached). */
	fresh("fixed-window:10/10s", "", 1, 2, 500);
	run_all();
	assert_int_equal(took(), 10);
	calls = script_calls();
	assert_true(calls <= 10 + 2);
	/* GCRA, 10/s (retry 100 ms), 1 ms a check for 2 s: each retry
	 * interval one admission and one denial from Redis, at most. */
	fresh("gcra:10/s,burst=1", "", 1, 1, 2000);
	atomic_store(&step, MS);
	run_all();
	admitted = took();
	calls = script_calls();
	print_message("# %lld script calls, %llu admitted, 2000 checks\n",
		      calls, (unsigned long long)admitted);
	assert_true(admitted >= 19 && admitted <= 21);
	assert_true(calls <= 2 * 21 + 2);
}

/* Redis stopped: credit admits (degraded once a call failed), then the
 * fail policy; restarted: Redis decides again. */
static void test_redis_down(void **state)
{
	struct tk_decision d;
	struct tk_limiter *l;
	int n, rc;

	(void)state;
	fresh("fixed-window:100000/100s", "?lease=40", 1, 1, 0);
	run.fail = TK_FAIL_CLOSED;
	l = open_on(0);
	assert_non_null(l);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed && !d.degraded);
	assert_true(d.remaining == 100000 - 40);
	redis_kit_stop(&kit);
	for (n = 0; n < 30; n++) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.allowed && !d.degraded);
		assert_true(d.remaining <= 100000 - 40);
		/* The lease's end: the window's, to 2^24 ns, never before. */
		assert_true(d.reset_at >= T0 + 100 * SEC &&
			    d.reset_at < T0 + 100 * SEC + 17 * MS);
	}
	/* 9 left: a check of 10 needs Redis, which fails: closed. */
	assert_int_equal(tk_limiter_check(l, "k", 1, 10, &d), 0);
	assert_true(!d.allowed && d.degraded);
	for (n = 0; n < 9; n++) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.allowed && d.degraded);
	}
	rc = tk_limiter_check(l, "k", 1, 1, &d);
	assert_int_equal(rc, 0);
	assert_true(!d.allowed && d.degraded);
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed && !d.degraded);
	tk_limiter_close(l);
}

static void forever(void)
{
	struct tk_limiter *l = open_on(0);
	struct tk_decision d;

	if (!l)
		_exit(10);
	atomic_fetch_add(&sh->ready, 1);
	for (;;)
		if (tk_limiter_check(l, "k", 1, 1, &d) == 0 && d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
}

/*
 * Host 0's processes killed (-9) while checking, its zone destroyed;
 * host 1 then saturates the window: never above L, and short of it by
 * at most what host 0 held (its credit, a lease in flight a process).
 */
static void test_killed(void **state)
{
	const uint64_t limit = 5000, kmax = 64;
	pid_t pid[2];
	char name[32];
	uint64_t total;
	int i;

	(void)state;
	fresh("fixed-window:5000/100s", "?lease_max=64", 2, 2, 0);
	for (i = 0; i < 2; i++) {
		fflush(NULL);
		pid[i] = kit_fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0)
			forever();
	}
	while (atomic_load(&sh->ready) < 2 || atomic_load(&sh->allowed) < 500)
		usleep(1000);
	for (i = 0; i < 2; i++) {
		kill(pid[i], SIGKILL);
		assert_int_equal(waitpid(pid[i], NULL, 0), pid[i]);
	}
	snprintf(name, sizeof(name), "tier-%d", run.zone_base);
	assert_int_equal(tk_zone_destroy(name), 0);
	atomic_store(&sh->ready, 0);
	run.zone_base++; /* host 1 only, as hosts 0 and 1 */
	run.hosts = 1;
	run.checks = 3000;
	run_all();
	total = atomic_load(&sh->allowed);
	print_message("# %llu admitted of %llu\n", (unsigned long long)total,
		      (unsigned long long)limit);
	assert_true(total <= limit);
	assert_true(total + 3 * kmax >= limit);
}

/* test_restart's counters and its stage, in sh->per_key (no slots). */
enum {
	R_STAGE,     /* 0 Redis up, 1 held, 2 stopped, 3 restarting, 4 done */
	R_HELD,	     /* workers holding still */
	R_X_ALLOWED, /* "x", over its limit, admitted: never */
	R_X_UNCACHED, /* "x" denied by no cached denial, Redis stopped */
	R_X_CACHED,   /* "x" denied by the host's cached denial, stopped */
	R_DOWN_BAD,   /* "k" denied, stopped, not by the fail policy */
	R_STARTED,    /* workers past their first round */
	R_FAILED = 8, /* + host: "k" denied by the fail policy */
	R_BACK = 16,  /* + host: "k" decided by Redis, restarted */
	R_FULL = 24,  /* + host: "k" denied by Redis, restarted */
	R_CREDIT = 32, /* + host: "k" admitted, stopped: leased credit */
};

/* One round of a worker of test_restart() on host @h, at stage @st. */
static void restart_round(struct tk_limiter *l, int h, uint64_t st)
{
	_Atomic uint64_t *c = sh->per_key;
	struct tk_decision x, d;

	KIT_CHILD_CHECK(11, tk_limiter_check(l, "x", 1, 1, &x) == 0);
	KIT_CHILD_CHECK(12, tk_limiter_check(l, "k", 1, 1, &d) == 0);
	if (x.allowed)
		atomic_fetch_add(&c[R_X_ALLOWED], 1);
	if (d.allowed)
		atomic_fetch_add(&sh->allowed, 1);
	/* A round the stage changed under (Redis restarted while it ran)
	 * belongs to neither stage. */
	if (atomic_load(&c[R_STAGE]) != st)
		return;
	if (!x.allowed && st == 2)
		atomic_fetch_add(&c[x.degraded ? R_X_UNCACHED : R_X_CACHED], 1);
	if (st == 2 && d.allowed)
		atomic_fetch_add(&c[R_CREDIT + h], 1);
	else if (st == 2)
		atomic_fetch_add(&c[d.degraded ? R_FAILED + h : R_DOWN_BAD], 1);
	if (st == 3 && !d.degraded)
		atomic_fetch_add(&c[R_BACK + h], 1);
	if (st == 3 && !d.degraded && !d.allowed)
		atomic_fetch_add(&c[R_FULL + h], 1);
}

/*
 * What test_restart()'s workers admit of its 2000 before the hold: they
 * stop there themselves, so that a parent descheduled under load cannot
 * let them take the window whole before it holds them. Each still runs
 * one round first: a worker descheduled until the others had reached
 * it would leave its host with no cached denial of "x".
 */
#define RESTART_BEFORE 500

/* Worker @i of test_restart(): rounds by the stage read first. */
static void restart_worker(int i)
{
	struct tk_limiter *l = open_on(i / run.procs);
	uint64_t st;
	int held = 0, rounds = 0;

	KIT_CHILD_CHECK(10, l != NULL);
	while ((st = atomic_load(&sh->per_key[R_STAGE])) < 4) {
		if (st == 0 && rounds &&
		    atomic_load(&sh->allowed) >= RESTART_BEFORE) {
			usleep(100);
			continue;
		}
		if (st == 1) {
			if (!held++)
				atomic_fetch_add(&sh->per_key[R_HELD], 1);
			usleep(100);
			continue;
		}
		restart_round(l, i / run.procs, st);
		if (!rounds++)
			atomic_fetch_add(&sh->per_key[R_STARTED], 1);
	}
	tk_limiter_close(l);
}

/* Until c[@at + h] >= @n for each of run.hosts hosts (30 s at most). */
static int reached(int at, uint64_t n)
{
	int h, tries;

	for (tries = 0; tries < 30000; tries++, usleep(1000)) {
		for (h = 0; h < run.hosts; h++)
			if (atomic_load(&sh->per_key[at + h]) < n)
				break;
		if (h == run.hosts)
			return 1;
	}
	return 0;
}

/*
 * Every host's next refill, the workers held: a check of "k" until
 * Redis decides one (its reset_at the window's end to the ns, not the
 * lease's rounded), after which the host holds the lease's credit.
 */
static void refill_hosts(uint64_t window_end)
{
	struct tk_decision d = { .reset_at = 0 };
	struct tk_limiter *l;
	int h, n;

	for (h = 0; h < run.hosts; h++) {
		l = open_on(h);
		assert_non_null(l);
		for (n = 0; n < 200 && d.reset_at != window_end; n++) {
			assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
			assert_true(d.allowed);
			atomic_fetch_add(&sh->allowed, 1);
		}
		assert_true(d.reset_at == window_end);
		d.reset_at = 0;
		tk_limiter_close(l);
	}
}

/*
 * Redis stopped mid-run (its state saved) and restarted under 2 hosts x
 * 2 processes, fail=closed: while it is down each host admits from its
 * leased credit (some, at most a lease), keeps denying "x" by its
 * cached denial, then denies by the fail policy, degraded; restarted,
 * Redis decides again for every host, until the window is full: never
 * above L in all, and short of it by at most the leases lost in flight.
 */
static void test_restart(void **state)
{
	const uint64_t limit = 2000, kmax = 64;
	_Atomic uint64_t *c = sh->per_key;
	struct tk_decision d;
	struct tk_limiter *l;
	int i, down, back;
	uint64_t total;
	pid_t pid[4];

	(void)state;
	fresh("fixed-window:2000/100s", "?lease_max=64", 2, 2, 0);
	run.fail = TK_FAIL_CLOSED;
	l = open_on(0);
	assert_non_null(l);
	assert_int_equal(tk_limiter_check(l, "x", 1, limit, &d), 0);
	assert_true(d.allowed);
	tk_limiter_close(l);
	for (i = 0; i < 4; i++) {
		fflush(NULL);
		pid[i] = kit_fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			restart_worker(i);
			_exit(0);
		}
	}
	while (atomic_load(&sh->allowed) < RESTART_BEFORE ||
	       atomic_load(&c[R_STARTED]) < 4)
		usleep(1000);
	atomic_store(&c[R_STAGE], 1);
	while (atomic_load(&c[R_HELD]) < 4)
		usleep(1000);
	refill_hosts(T0 + 100 * SEC);
	/* Saved, so that Redis restarts with the window's count. */
	redis_kit_cmd(&kit, NULL, 0, "SHUTDOWN SAVE");
	redis_kit_stop(&kit);
	atomic_store(&c[R_STAGE], 2);
	down = reached(R_FAILED, 100);
	/* Stage 3 before the start: it answers before start() returns. */
	atomic_store(&c[R_STAGE], 3);
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	back = reached(R_FULL, 20);
	atomic_store(&c[R_STAGE], 4);
	for (i = 0; i < 4; i++)
		kit_wait_exit(pid[i], 0);
	total = atomic_load(&sh->allowed);
	print_message("# %llu admitted of %llu; Redis down: %llu and %llu "
		      "from credit, %llu cached denials\n",
		      (unsigned long long)total, (unsigned long long)limit,
		      (unsigned long long)atomic_load(&c[R_CREDIT]),
		      (unsigned long long)atomic_load(&c[R_CREDIT + 1]),
		      (unsigned long long)atomic_load(&c[R_X_CACHED]));
	assert_true(down && back);
	assert_int_equal(atomic_load(&c[R_X_ALLOWED]), 0);
	assert_int_equal(atomic_load(&c[R_X_UNCACHED]), 0);
	assert_true(atomic_load(&c[R_X_CACHED]) > 0);
	assert_int_equal(atomic_load(&c[R_DOWN_BAD]), 0);
	for (i = 0; i < 2; i++)
		assert_true(atomic_load(&c[R_CREDIT + i]) >= 1 &&
			    atomic_load(&c[R_CREDIT + i]) <= kmax);
	assert_true(total <= limit);
	assert_true(total + 4 * kmax >= limit);
}

/*
 * On a 3-master Redis Cluster: lease=1 exactly L; adaptive leases never
 * above L in a window, and within 1% of it under a demand that lasts.
 */
static void test_cluster(void **state)
{
	uint64_t total;
	int i;

	(void)state;
	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
	fresh("fixed-window:50/10s", "?lease=1", 2, 2, 40);
	run.redis = cluster_spec;
	run_all();
	assert_int_equal(took(), 50);
	for (i = 0; i < 3; i++)
		assert_int_equal(redis_kit_cmd(&nodes[i], NULL, 0, "FLUSHALL"),
				 0);
	fresh("fixed-window:3000/10s", "?lease_max=64", 2, 2, 100000);
	run.redis = cluster_spec;
	run.until_denied = 50;
	run_all();
	total = took();
	assert_true(total >= 2970 && total <= 3000);
}

static int setup(void **state)
{
	(void)state;
	sh = kit_shared();
	if (!sh || kit_zone_dir(dir) != 0)
		return -1;
	return tk_clock_custom_new(&clock_, shared_now, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	int i;

	redis_kit_destroy(&kit);
	for (i = 0; i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	tk_clock_free(clock_);
	return kit_zone_dir_remove(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_lease1_exact),
		cmocka_unit_test(test_window_bound),
		cmocka_unit_test(test_landing),
		cmocka_unit_test(test_lease_tail),
		cmocka_unit_test(test_stranded),
		cmocka_unit_test(test_gcra_bound),
		cmocka_unit_test(test_far_local),
		cmocka_unit_test(test_cached_denials),
		cmocka_unit_test(test_redis_down),
		cmocka_unit_test(test_killed),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_cluster),
	};

	return cmocka_run_group_tests_name("two tiers", tests, setup, teardown);
}
