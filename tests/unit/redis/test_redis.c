/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis.c - the Redis store against a real redis-server that the
 * test starts itself (tests/kit/redis-kit.c): spec parsing, decisions
 * identical to the memory store on generated timelines (year-long
 * periods, limits up to 2^40, tolerances beyond 2^53 ns), exactness
 * across processes, and the faults: NOSCRIPT, a stopped server, a killed
 * and restarted one, fork, authentication, OOM.  Then the same on a real
 * 3-master Redis Cluster (redis-cli --cluster create): hash slots as the
 * server computes them, decisions identical to memory, exactness across
 * processes on keys of every master while a slot migrates (ASK, MOVED).
 * Without redis-server (or redis-cli, for the cluster) tests are skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "diff-kit.h"
#include "redis-kit.h"
#include "rnd.h"
#include "strategy-kit.h"
#include "algo/algo.h"
#include "store/store-ops.h"
#include "redis/cluster.h"
#include "redis/spec.h"
#include "store/store-key.h"
#include "workers.h"

#define T0 (UINT64_C(1700000000) * SEC)

static struct redis_kit kit;
/* The cluster, started by the first test that needs it. */
static struct redis_kit nodes[3];
static char cluster_spec[128];
static int cluster_up;

static int group_setup(void **state)
{
	(void)state;
	if (strategy_kit_register() != 0)
		return -1;
	if (redis_kit_available() && redis_kit_start(&kit, NULL) != 0)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	for (int i = 0; cluster_up && i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return 0;
}

static void own_server(struct redis_kit *k, const char *password);
static long long clients(const struct redis_kit *k);

static void need_server(void)
{
	if (!kit.pid)
		skip();
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A limiter on @spec with a manual clock at T0. */
static void open_at(struct tk_limiter **l, struct tk_clock **c,
		    const char *policy, const char *spec, unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_rc(tk_clock_manual_new(c, T0), 0);
	o.clock = *c;
	o.fail = fail;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(l, policy, spec, &o), 0);
}

/*
 * A spec on the kit's server with extra options ("" for none, else
 * "?..."), and a generous timeout unless they name one: a test not about
 * time must not fail because a loaded machine stalled a reply beyond the
 * 100 ms default.  server_time=0 unless they name it: these tests decide
 * on a manual clock.
 */
static const char *spec_with(const struct redis_kit *k, const char *opts)
{
	static char buf[256];
	const char *st = strstr(opts, "server_time=") ? "" : "server_time=0&";

	if (strstr(opts, "timeout="))
		snprintf(buf, sizeof(buf), "%s%s%s", k->spec, opts,
			 *st ? "&server_time=0" : "");
	else
		snprintf(buf, sizeof(buf),
			 "%s%s%s%stimeout=5s&connect_timeout=5s", k->spec, opts,
			 *opts ? "&" : "?", st);
	return buf;
}

/* Check "k" until the server answers (10 s at most): the last result. */
static int check_until_up(struct tk_limiter *l, struct tk_decision *d)
{
	uint64_t t = mono_ms();
	int rc;

	while ((rc = tk_limiter_check(l, "k", 1, 1, d)) != 0 &&
	       mono_ms() - t < 10000)
		;
	return rc;
}

/* The end of a test on a server of its own. */
static void close_all(struct tk_limiter *l, struct tk_clock *c,
		      struct redis_kit *k)
{
	tk_limiter_close(l);
	tk_clock_free(c);
	redis_kit_destroy(k);
}

static void assert_parse(const char *spec, int want)
{
	struct tk__redis_spec s;
	char why[128];
	int rc = tk__redis_spec_parse(spec, &s, why, sizeof(why));

	if (rc != want)
		fail_msg("%s: %d (%s), want %d", spec, rc, why, want);
	/* No message ever quotes the password. */
	assert_null(strstr(why, "s3cret"));
	if (rc == -EINVAL)
		assert_non_null(strstr(why, "expected"));
}

static void test_spec_forms(void **state)
{
	struct tk__redis_spec s;
	char why[128];

	(void)state;
	assert_rc(tk__redis_spec_parse("redis://u%40x:s3cret@h.example:7000/"
				       "3?timeout=250ms&connect_timeout=2s&"
				       "key_prefix=app%3A",
				       &s, why, sizeof(why)),
		  0);
	assert_string_equal(s.host, "h.example");
	assert_int_equal(s.port, 7000);
	assert_string_equal(s.user, "u@x");
	assert_string_equal(s.password, "s3cret");
	assert_int_equal(s.db, 3);
	assert_true(s.timeout == 250 * MS);
	assert_true(s.connect_timeout == 2 * SEC);
	assert_string_equal(s.key_prefix, "app:");
	assert_rc(tk__redis_spec_parse("redis://[::1]", &s, why, sizeof(why)),
		  0);
	assert_string_equal(s.host, "::1");
	assert_int_equal(s.port, 6379);
	assert_true(s.timeout == 100 * MS);
	assert_string_equal(s.key_prefix, "tk:");
	assert_rc(tk__redis_spec_parse("redis+unix:///run/r.sock?timeout=1s",
				       &s, why, sizeof(why)),
		  0);
	assert_true(s.unix_socket);
	assert_string_equal(s.path, "/run/r.sock");
	assert_rc(tk__redis_spec_parse("redis+unix://:s3cret@/r.sock", &s, why,
				       sizeof(why)),
		  0);
	assert_true(s.has_password);
	assert_string_equal(s.path, "/r.sock");
	assert_parse("redis://h?server_time=1", 0);
	assert_parse("redis://h?max_connections=65535", 0);
	assert_parse("redis://h?max_connections=0", -EINVAL);
	assert_parse("redis://h?max_connections=65536", -EINVAL);
	/* The server's clock unless the spec says otherwise. */
	assert_rc(tk__redis_spec_parse("redis://h", &s, why, sizeof(why)), 0);
	assert_int_equal(s.server_time, 1);
	assert_rc(tk__redis_spec_parse("redis://h?server_time=0", &s, why,
				       sizeof(why)),
		  0);
	assert_int_equal(s.server_time, 0);
}

static void test_spec_errors(void **state)
{
	static const char *const bad[] = {
		"redis://",
		"redis://:s3cret@",
		"redis://h:0",
		"redis://h:65536",
		"redis://h:12x",
		"redis://u:s3cret@h:99999",
		"redis://h/x",
		"redis://h/1x",
		"redis://h?timeout=",
		"redis://h?timeout=5",
		"redis://h?timeout=5parsecs",
		"redis://h?timeout=0ms",
		"redis://h?timeout=2h",
		"redis://h?timeout=1s&timeout=2s",
		"redis://h?tiemout=1s",
		"redis://u:s3cret@h?bogus=s3cret",
		"redis://h?timeout=1s&",
		"redis://h?server_time=2",
		"redis://h?key_prefix=%zz",
		"redis://h?key_prefix=%00",
		"redis://[::1",
		"redis+unix://",
		"redis+unix://relative.sock",
		"redis+unix://:s3cret@relative",
		"redis+unix:///",
		"http://h",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_parse(bad[i], -EINVAL);
	assert_parse("rediss://u:s3cret@h", -ENOTSUP);
}

/* What the library answers before any server is involved. */
static void test_open_refusals(void **state)
{
	static const char *const every[] = {
		"gcra:5/s",
		"token-bucket:capacity=3,refill=1/s",
		"leaky:5/s",
		"fixed-window:5/s",
		"sliding-window:5/s",
		"sliding-log:5/s",
		"quota:5/month",
		"all(gcra:5/s,sliding-window:50/m)",
		"any(quota:5/day,sliding-log:50/m)",
	};
	struct tk_store *s;
	struct tk_limiter *l;
	size_t i;

	(void)state;
	assert_rc(tk_store_open(&s, "redis://h?tiemout=1s", NULL), -EINVAL);
	assert_rc(tk_store_open(&s, "rediss://h:1", NULL), -ENOTSUP);
	/* Nor does a cluster: its map is discovered at the first check. */
	assert_rc(tk_store_open(&s, "redis+cluster://127.0.0.1:1", NULL), 0);
	tk_store_close(s);
	/* Opening connects nothing: port 1 is never asked. */
	assert_rc(tk_store_open(&s, "redis://127.0.0.1:1", NULL), 0);
	tk_store_close(s);
	/* Every algorithm and composite opens (nothing connects yet). */
	for (i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
		assert_rc(tk_limiter_open(&l, every[i], "redis://h", NULL), 0);
		tk_limiter_close(l);
	}
}

/* A generated policy of a supported algorithm, often at the extremes. */
static void gen_one(uint64_t *seed, char *buf, size_t len)
{
	static const char *const periods[] = { "1s", "1ms",  "1m",   "1h",
					       "1d", "365d", "3650d" };
	const char *p = periods[rnd_range(seed, 0, 6)];
	uint64_t limit = rnd_range(seed, 0, 3) == 0
				 ? rnd_range(seed, 1, UINT64_C(1) << 40)
				 : rnd_range(seed, 1, 20);
	uint64_t burst = rnd_range(seed, 1, 30), n;

	switch (rnd_range(seed, 0, 12)) {
	case 0:
		snprintf(buf, len, "gcra:%llu/%s", (unsigned long long)limit,
			 p);
		break;
	case 11:
		/* User strategies (strategy-kit.h): a transaction, not the
		 * script, alone and next to every built-in algorithm. */
		snprintf(buf, len, "kit-win:%llu", (unsigned long long)limit);
		break;
	case 12:
		snprintf(buf, len, "kit-set:%llu",
			 (unsigned long long)rnd_range(seed, 0, 5));
		break;
	case 1:
		/* A burst beyond 2^53 ns of tolerance: T large. */
		snprintf(buf, len, "gcra:%llu/3650d,burst=%llu",
			 (unsigned long long)rnd_range(seed, 1, 5),
			 (unsigned long long)burst);
		break;
	case 2:
		snprintf(buf, len, "token-bucket:capacity=%llu,refill=%llu/%s",
			 (unsigned long long)burst, (unsigned long long)limit,
			 p);
		break;
	case 5:
		/* Packed in one word (W >= 2^24 ns, L < 2^24) or not. */
		snprintf(buf, len, "fixed-window:%llu/%s",
			 (unsigned long long)limit, p);
		break;
	case 6:
		snprintf(buf, len, "fixed-window:%llu/%lluns",
			 (unsigned long long)burst,
			 (unsigned long long)rnd_range(seed, 1, 100 * MS));
		break;
	case 7:
		snprintf(buf, len, "quota:%llu/%s,offset=%s%02u:%02u",
			 (unsigned long long)burst,
			 rnd_range(seed, 0, 1) ? "month" : "week",
			 rnd_range(seed, 0, 1) ? "+" : "-",
			 (unsigned int)rnd_range(seed, 0, 14),
			 (unsigned int)rnd_range(seed, 0, 1) * 30);
		break;
	case 8:
		snprintf(buf, len, "quota:%llu/%s", (unsigned long long)limit,
			 p);
		break;
	case 9:
		snprintf(
			buf, len, "sliding-log:%llu/%s",
			(unsigned long long)(rnd_range(seed, 0, 3)
						     ? burst
						     : rnd_range(seed, 1, 512)),
			rnd_range(seed, 0, 1) ? p : "100ms");
		break;
	case 10:
		n = rnd_range(seed, 1, 12);
		snprintf(
			buf, len, "sliding-window:%llu/%lluns,buckets=%llu",
			(unsigned long long)(rnd_range(seed, 0, 2) ? burst
								   : limit),
			(unsigned long long)(n * rnd_range(seed, 1, 3) *
					     (rnd_range(seed, 0, 1)
						      ? rnd_range(seed, 1, 1000)
						      : rnd_range(
								seed, 1,
								UINT64_C(1)
									<< 58))),
			(unsigned long long)n);
		break;
	case 3:
		snprintf(buf, len, "leaky:%llu/%s,max-queue=%llums",
			 (unsigned long long)rnd_range(seed, 1, 20), p,
			 (unsigned long long)rnd_range(seed, 0, 5000));
		break;
	default:
		snprintf(buf, len, "leaky:1/%s,max-queue=%s", p,
			 periods[rnd_range(seed, 4, 6)]);
		break;
	}
}

/* One policy, or a composite of two or three, valid (a rate above 1 per
 * ns is not). */
static void gen_policy(uint64_t *seed, char *buf, size_t len)
{
	char dim[3][96];
	struct tk_policy *p;
	uint64_t n, kind;

	for (;;) {
		n = rnd_range(seed, 0, 2) ? 1 : rnd_range(seed, 2, 3);
		kind = rnd_range(seed, 0, 1);
		gen_one(seed, dim[0], sizeof(dim[0]));
		gen_one(seed, dim[1], sizeof(dim[1]));
		gen_one(seed, dim[2], sizeof(dim[2]));
		if (n == 1)
			snprintf(buf, len, "%s", dim[0]);
		else
			snprintf(buf, len, "%s(%s,%s%s%s)",
				 kind ? "any" : "all", dim[0], dim[1],
				 n == 3 ? "," : "", n == 3 ? dim[2] : "");
		if (tk_policy_parse(&p, buf, NULL) == 0)
			break;
	}
	tk_policy_free(p);
}

/* The policy's natural step: its window, or its emission interval. */
static uint64_t unit_of(const struct tk__policy *p)
{
	if (p->alg == &tk__gcra || p->alg == &tk__token_bucket)
		return p->u.gcra.t;
	if (p->alg == &tk__leaky)
		return p->u.leaky.t;
	if (p->alg == &tk__quota)
		return p->u.quota.period ? p->u.quota.period : 86400 * SEC;
	if (p->alg == &tk__sliding_window)
		return p->u.sliding.width;
	if (p->alg == &tk__user)
		return STRATEGY_KIT_WIN;
	return p->u.window.window;
}

static unsigned long long compared, n_admitted, n_denied, n_errors;
/* Timelines of a user strategy, and of one beside a sliding state. */
static unsigned long long n_user, n_user_sliding;

/* One timeline on the memory store and on Redis: same answers. */
static void differential(const char *base, uint64_t seed0, uint64_t start)
{
	uint64_t seed = seed0;
	struct tk_limiter *mem, *red;
	struct tk_clock *cm, *cr;
	struct tk_decision dm, dr;
	char policy[320], key[16], opts[256];
	uint64_t now = start, cost, scale, unit;
	int i, rm, rr;
	unsigned int op;

	gen_policy(&seed, policy, sizeof(policy));
	n_user += strstr(policy, "kit-") != NULL;
	n_user_sliding += strstr(policy, "kit-") && strstr(policy, "sliding");
	open_at(&mem, &cm, policy, "memory", TK_FAIL_ERROR);
	/* Decisions, not deadlines, are compared: a generous timeout, so
	 * that a loaded machine's stall is not taken for a difference. */
	snprintf(opts, sizeof(opts),
		 "%s?timeout=10s&server_time=0&key_prefix=d%llu:", base,
		 (unsigned long long)seed0);
	open_at(&red, &cr, policy, opts, TK_FAIL_ERROR);
	tk_clock_set(cm, now);
	tk_clock_set(cr, now);
	scale = tk_limiter_policy(mem)->dim[0].limit;
	unit = unit_of(&tk_limiter_policy(mem)->dim[0]);
	for (i = 0; i < 60; i++) {
		/*
		 * Steps from nothing to years, and back by at most the grace
		 * (60 s), within which both stores still hold every state
		 * that matters (tk_store_open(3), "Clock steps").
		 */
		switch (rnd_range(&seed, 0, 7)) {
		case 0:
			break;
		case 7:
			/* To a boundary: a whole window or emission interval
			 * after an earlier step. */
			now += rnd_range(&seed, 1, 2) * unit;
			break;
		case 6:
			now -= min_u64(now, rnd_range(&seed, 1, 60 * SEC));
			break;
		case 1:
			now += rnd_range(&seed, 1, 1000);
			break;
		case 2:
			now += rnd_range(&seed, 1, SEC);
			break;
		case 3:
			now += rnd_range(&seed, 1, UINT64_C(400) * 86400 * SEC);
			break;
		default:
			now += rnd_range(&seed, 1, 100 * MS);
			break;
		}
		if (now >= (UINT64_C(1) << 63) - 1)
			now = (UINT64_C(1) << 63) - 1;
		tk_clock_set(cm, now);
		tk_clock_set(cr, now);
		op = (unsigned int)rnd_range(&seed, 0, 12);
		cost = rnd_range(&seed, 0, 9) == 0
			       ? rnd_range(&seed, 1, scale + 2)
			       : rnd_range(&seed, 1, 3);
		snprintf(key, sizeof(key), "k%u",
			 (unsigned int)rnd_range(&seed, 0, 2));
		rm = diff_kit_step(mem, op, key, cost, &dm);
		rr = diff_kit_step(red, op, key, cost, &dr);
		if (rm != rr || memcmp(&dm, &dr, sizeof(dm)) != 0)
			fail_msg("seed %llu step %d %s op %u cost %llu at %llu:"
				 " memory %d allowed %d rem %llu reset %llu"
				 " retry %llu delay %llu, redis %d allowed %d"
				 " rem %llu reset %llu retry %llu delay %llu",
				 (unsigned long long)seed0, i, policy, op,
				 (unsigned long long)cost,
				 (unsigned long long)now, rm, dm.allowed,
				 (unsigned long long)dm.remaining,
				 (unsigned long long)dm.reset_at,
				 (unsigned long long)dm.retry_after,
				 (unsigned long long)dm.delay, rr, dr.allowed,
				 (unsigned long long)dr.remaining,
				 (unsigned long long)dr.reset_at,
				 (unsigned long long)dr.retry_after,
				 (unsigned long long)dr.delay);
		compared++;
		n_errors += rm != 0;
		n_admitted += rm == 0 && op > 2 && dm.allowed;
		n_denied += rm == 0 && op > 2 && !dm.allowed;
	}
	tk_limiter_close(mem);
	tk_limiter_close(red);
	tk_clock_free(cm);
	tk_clock_free(cr);
}

/* @n timelines (TK_REDIS_TIMELINES if set) on @base. */
static void differentials(const char *base, uint64_t n)
{
	uint64_t seed, s2;
	const char *env = getenv("TK_REDIS_TIMELINES");

	n = env ? strtoull(env, NULL, 10) : n;
	compared = n_admitted = n_denied = n_errors = 0;
	n_user = n_user_sliding = 0;
	for (seed = 1; seed <= n; seed++) {
		s2 = seed;
		differential(base, seed,
			     seed % 3 == 0   ? T0
			     : seed % 3 == 1 ? rnd_range(&s2, 0, SEC)
					     : UINT64_C(1) << 62);
	}
	print_message("# %llu decisions identical over %llu timelines "
		      "(checks: %llu admitted, %llu denied; %llu errors)\n",
		      compared, (unsigned long long)n, n_admitted, n_denied,
		      n_errors);
	print_message("# %llu timelines of a user strategy, %llu of one beside "
		      "a sliding window or log\n",
		      n_user, n_user_sliding);
	/* A tenth of the generated policies or more hold a strategy. */
	if (!env)
		assert_true(n_user * 10 >= n);
}

static void test_differential(void **state)
{
	(void)state;
	need_server();
	differentials(kit.spec, 300);
}

/*
 * A state no check of this policy could write (a TAT 2^63 + 10 years
 * out, by a policy of the same algorithm with a longer tolerance) is no
 * state, on Redis as on the memory store.
 */
static void test_invalid_state_is_none(void **state)
{
	static const char *const specs[] = { "memory", NULL };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision d[2][3];
	struct tk_limiter *big, *small;
	struct tk_store *s;
	struct tk_clock *c;
	int i;

	(void)state;
	need_server();
	for (i = 0; i < 2; i++) {
		assert_rc(tk_clock_manual_new(&c, (UINT64_C(1) << 63) - 1), 0);
		o.clock = c;
		o.flags = TK_OPT_NO_RECLAIMER;
		assert_rc(tk_store_open(
				  &s,
				  specs[i] ? specs[i]
					   : spec_with(&kit, "?key_prefix=v:"),
				  &o),
			  0);
		o.store = s;
		assert_rc(
			tk_limiter_open(&big, "gcra:1/3650d,burst=2", NULL, &o),
			0);
		assert_rc(
			tk_limiter_open(&small, "gcra:1/1s,burst=2", NULL, &o),
			0);
		o.store = NULL;
		assert_rc(tk_limiter_check(big, "k", 1, 2, &d[i][0]), 0);
		assert_rc(tk_limiter_check(small, "k", 1, 1, &d[i][1]), 0);
		assert_rc(tk_limiter_check(small, "k", 1, 1, &d[i][2]), 0);
		tk_limiter_close(big);
		tk_limiter_close(small);
		tk_store_close(s);
		tk_clock_free(c);
	}
	assert_true(d[1][1].allowed);
	for (i = 0; i < 3; i++)
		assert_same_decision(d[0][i], d[1][i]);
}

/*
 * A sliding window's estimate scaled by a width of 2^58 ns: products far
 * beyond 2^53, where one unit of old weight decides (a double would round
 * 2^59 + 1 to 2^59 and admit).
 */
static void test_estimate_beyond_2_53(void **state)
{
	static const char *const specs[] = { "memory", NULL };
	const uint64_t w = UINT64_C(1) << 58, c0 = 20;
	struct tk_decision d[2][3];
	struct tk_limiter *l;
	struct tk_clock *c;
	char policy[64];
	int i;

	(void)state;
	need_server();
	snprintf(policy, sizeof(policy), "sliding-window:2/%lluns,buckets=1",
		 (unsigned long long)w);
	for (i = 0; i < 2; i++) {
		open_at(&l, &c, policy,
			specs[i] ? specs[i] : spec_with(&kit, "?key_prefix=e:"),
			TK_FAIL_ERROR);
		tk_clock_set(c, c0 * w);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d[i][0]), 0);
		tk_clock_set(c, (c0 + 1) * w + w - 1);
		assert_rc(tk_limiter_check(l, "k", 1, 2, &d[i][1]), 0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d[i][2]), 0);
		tk_limiter_close(l);
		tk_clock_free(c);
	}
	assert_false(d[0][1].allowed);
	assert_true(d[0][2].allowed);
	for (i = 0; i < 3; i++)
		assert_memory_equal(&d[0][i], &d[1][i], sizeof(d[0][i]));
}

/*
 * The script's fast paths (check.lua) at their edges, as on memory:
 * times at the split of nine digits, 2^53 and 10^18, next to 2^63 (the
 * general code's); tolerances and windows at 10^15 ns (the fast paths'
 * bound) and at 46 days (their TTL's); limits 1 and huge; windows crossed.
 */
static void test_fast_path_edges(void **state)
{
	static const char *const policies[] = {
		"gcra:1/1s,burst=1",
		"gcra:1/999999s,burst=2",
		"gcra:1/1000000s,burst=2",
		"gcra:1/46d,burst=2",
		"gcra:1000000000/1s,burst=1000000000000",
		"token-bucket:capacity=2,refill=1/10ms",
		"leaky:1/1s,max-queue=1s",
		"fixed-window:2/10ms",
		"fixed-window:1/999999s",
		"fixed-window:1/1000000s",
		"fixed-window:1/47d",
		"fixed-window:1000000000000/1s",
		"quota:2/day",
	};
	static const uint64_t starts[] = {
		0,
		999999999,
		(UINT64_C(1) << 53) - 3,
		UINT64_C(999999999999999999),
		(UINT64_C(1) << 63) - 10 * SEC,
	};
	static const uint64_t steps[] = {
		0,
		0,
		1,
		10 * MS - 1,
		1,
		SEC,
		1000000 * SEC - 2,
		2,
		46 * 86400 * SEC,
	};
	struct tk_decision d[2];
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
	size_t i, j, k;
	uint64_t now;
	int m, rc[2];

	(void)state;
	need_server();
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		for (j = 0; j < sizeof(starts) / sizeof(starts[0]); j++) {
			open_at(&l[0], &c[0], policies[i], "memory",
				TK_FAIL_ERROR);
			open_at(&l[1], &c[1], policies[i],
				spec_with(&kit, "?key_prefix=edge:"),
				TK_FAIL_ERROR);
			assert_rc(tk_limiter_reset(l[1], "k", 1), 0);
			now = starts[j];
			for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
				now += steps[k];
				if (now > (UINT64_C(1) << 63) - 1)
					now = (UINT64_C(1) << 63) - 1;
				/* A quota has no calendar near 2^63:
				 * -EOVERFLOW on both. */
				for (m = 0; m < 2; m++) {
					tk_clock_set(c[m], now);
					rc[m] = tk_limiter_check(l[m], "k", 1,
								 1, &d[m]);
				}
				assert_rc(rc[1], rc[0]);
				if (rc[0] == 0)
					assert_same_decision(d[1], d[0]);
			}
			for (m = 0; m < 2; m++) {
				tk_limiter_close(l[m]);
				tk_clock_free(c[m]);
			}
		}
}

/* Batches (request by request) and waits of a shaper, as on memory. */
static void test_batches_and_waits(void **state)
{
	static const char *const specs[] = { "memory", NULL };
	static const struct tk_request reqs[5] = {
		{ "a", 1, 1 },	{ "b", 1, 2 }, { "a", 1, 1 },
		{ "a", 1, 99 }, { "a", 1, 1 },
	};
	struct tk_decision d[2][5], w[2];
	struct tk_limiter *l, *s;
	struct tk_clock *c, *cs;
	int rcs[2][5], i;

	(void)state;
	need_server();
	for (i = 0; i < 2; i++) {
		open_at(&l, &c, "token-bucket:capacity=2,refill=1/s",
			specs[i] ? specs[i] : spec_with(&kit, "?key_prefix=b:"),
			TK_FAIL_ERROR);
		assert_rc(tk_limiter_check_many(l, reqs, 5, d[i], rcs[i]),
			  -ERANGE);
		tk_limiter_close(l);
		tk_clock_free(c);
		/* The shaper's wait: a short delay, slept for real. */
		open_at(&s, &cs, "leaky:100/1s,max-queue=50ms",
			specs[i] ? specs[i] : spec_with(&kit, "?key_prefix=w:"),
			TK_FAIL_ERROR);
		assert_rc(tk_limiter_check(s, "q", 1, 1, &w[i]), 0);
		assert_rc(tk_limiter_wait(s, "q", 1, 1, NULL, NULL, &w[i]), 0);
		tk_limiter_close(s);
		tk_clock_free(cs);
	}
	assert_memory_equal(rcs[0], rcs[1], sizeof(rcs[0]));
	for (i = 0; i < 5; i++)
		if (rcs[0][i] == 0)
			assert_memory_equal(&d[0][i], &d[1][i],
					    sizeof(d[0][i]));
	assert_true(w[1].allowed);
	assert_int_equal(w[1].delay, 10 * MS);
	assert_memory_equal(&w[0], &w[1], sizeof(w[0]));
}

/* Group checks and per-dimension keys: as on the memory store. */
static void test_groups_and_keys(void **state)
{
	static const char *const specs[] = { "memory", NULL };
	static const struct tk_key keys[2] = { { "u1", 2 }, { "ip9", 3 } };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision d[2][40], dims[2][40][3];
	struct tk_limiter *ls[2][2], *c[2];
	struct tk_store *st;
	struct tk_clock *clk;
	int i, j;

	(void)state;
	need_server();
	memset(d, 0, sizeof(d));
	memset(dims, 0, sizeof(dims));
	for (i = 0; i < 2; i++) {
		assert_rc(tk_clock_manual_new(&clk, T0), 0);
		o.clock = clk;
		o.flags = TK_OPT_NO_RECLAIMER;
		assert_rc(tk_store_open(
				  &st,
				  specs[i] ? specs[i]
					   : spec_with(&kit, "?key_prefix=g:"),
				  &o),
			  0);
		o.store = st;
		o.prefix = "user";
		assert_rc(tk_limiter_open(&ls[i][0], "all(gcra:5/s,leaky:2/s)",
					  NULL, &o),
			  0);
		o.prefix = "ip";
		assert_rc(tk_limiter_open(&ls[i][1], "fixed-window:7/1s", NULL,
					  &o),
			  0);
		o.prefix = "pair";
		assert_rc(tk_limiter_open(&c[i], "any(gcra:3/s,gcra:4/2s)",
					  NULL, &o),
			  0);
		o.store = NULL;
		o.prefix = NULL;
		for (j = 0; j < 20; j++) {
			tk_clock_set(clk, T0 + (uint64_t)j * 97 * MS);
			assert_rc(tk_limiter_check_group(ls[i], keys, 2, 1,
							 &d[i][j], dims[i][j],
							 3),
				  0);
			assert_rc(tk_limiter_check_keys(c[i], keys, 2, 1,
							&d[i][20 + j]),
				  0);
		}
		tk_limiter_close(ls[i][0]);
		tk_limiter_close(ls[i][1]);
		tk_limiter_close(c[i]);
		tk_store_close(st);
		tk_clock_free(clk);
	}
	for (j = 0; j < 40; j++) {
		assert_memory_equal(&d[0][j], &d[1][j], sizeof(d[0][j]));
		assert_memory_equal(dims[0][j], dims[1][j], sizeof(dims[0][j]));
	}
}

struct thread_arg {
	struct tk_limiter *l;
	_Atomic uint64_t *admitted;
	int failed;
};

static void *checker(void *p)
{
	struct thread_arg *a = p;
	struct tk_decision d;
	int i;

	for (i = 0; i < 200; i++) {
		if (tk_limiter_check(a->l, "t", 1, 1, &d) != 0)
			a->failed = 1;
		else if (d.allowed)
			atomic_fetch_add(a->admitted, 1);
	}
	return NULL;
}

/*
 * Threads of one limiter: each on its own connection, exactly the limit
 * admitted, and a thread's connection reused by the next thread.
 */
static void test_threads(void **state)
{
	enum { T = 4 };
	_Atomic uint64_t admitted = 0;
	struct thread_arg a[T];
	pthread_t th[T];
	struct tk_limiter *l;
	struct tk_clock *c;
	struct redis_kit k;
	long long base;
	int i, round;

	(void)state;
	own_server(&k, NULL);
	open_at(&l, &c, "gcra:300/1d", spec_with(&k, ""), TK_FAIL_ERROR);
	base = clients(&k);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < T; i++) {
			a[i] = (struct thread_arg){ l, &admitted, 0 };
			assert_int_equal(
				pthread_create(&th[i], NULL, checker, &a[i]),
				0);
		}
		for (i = 0; i < T; i++) {
			assert_int_equal(pthread_join(th[i], NULL), 0);
			assert_false(a[i].failed);
		}
		/* T connections, kept for the next threads. */
		assert_int_equal(clients(&k), base + T);
	}
	assert_int_equal(atomic_load(&admitted), 300);
	close_all(l, c, &k);
}

/* N processes x M checks of one key at limit L admit exactly L. */
static void test_exact_across_processes(void **state)
{
	enum { N = 6, M = 300, L = 1000 };
	_Atomic uint64_t *admitted;
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	pid_t pids[N];
	int i, j, status;

	(void)state;
	need_server();
	admitted = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(admitted != MAP_FAILED);
	/* Opened once: every child must make its own connection. */
	open_at(&l, &c, "gcra:1000/1d", spec_with(&kit, "?key_prefix=x:"),
		TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "warm", 4, 1, &d), 0);
	for (i = 0; i < N; i++) {
		pids[i] = kit_fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			for (j = 0; j < M; j++) {
				if (tk_limiter_check(l, "one", 3, 1, &d) != 0)
					_exit(1);
				if (d.allowed)
					atomic_fetch_add(admitted, 1);
			}
			_exit(0);
		}
	}
	for (i = 0; i < N; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(atomic_load(admitted), L);
	/* The parent's own connection survived its children. */
	assert_rc(tk_limiter_check(l, "one", 3, 1, &d), 0);
	assert_false(d.allowed);
	tk_limiter_close(l);
	tk_clock_free(c);
	munmap((void *)admitted, 4096);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static int near(uint64_t a, uint64_t b)
{
	return (a > b ? a - b : b - a) < 5 * SEC;
}

/*
 * server_time=1: decisions at the server's clock (here the host's), not
 * the limiter's, for GCRA, windows (arguments at the estimated server
 * time, or TIME first) and peeks.
 */
static void test_server_time(void **state)
{
	struct tk_limiter *g, *f, *a;
	struct tk_clock *c1, *c2, *c3;
	struct tk_decision d;
	const char *spec = spec_with(&kit, "?key_prefix=st:&server_time=1");
	uint64_t hour = 3600 * SEC, end;

	(void)state;
	need_server();
	open_at(&g, &c1, "gcra:2/1h", spec, TK_FAIL_ERROR);
	open_at(&f, &c2, "fixed-window:5/1h", spec, TK_FAIL_ERROR);
	open_at(&a, &c3, "all(gcra:2/1h,sliding-window:3/1h)", spec,
		TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(g, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_true(near(d.reset_at, realtime_ns() + hour / 2));
	/* The limiter's clock a day on changes nothing. */
	tk_clock_advance(c1, 24 * hour);
	assert_admits(g, "k", 1, true);
	assert_admits(g, "k", 1, false);
	assert_rc(tk_limiter_peek(g, "k", 1, &d), 0);
	assert_false(d.allowed);
	assert_true(near(d.reset_at, realtime_ns() + hour));
	assert_rc(tk_limiter_check(f, "f", 1, 1, &d), 0);
	end = (realtime_ns() / hour + 1) * hour;
	assert_true(d.reset_at == end || d.reset_at == end - hour);
	assert_int_equal(d.remaining, 4);
	assert_rc(tk_limiter_check(a, "a", 1, 2, &d), 0);
	assert_true(d.allowed);
	assert_true(near(d.reset_at, realtime_ns() + hour));
	tk_limiter_close(g);
	tk_limiter_close(f);
	tk_limiter_close(a);
	tk_clock_free(c1);
	tk_clock_free(c2);
	tk_clock_free(c3);
}

/* A spec that does not name server_time= decides at the server's clock,
 * whatever the limiter's (here T0, in 2023). */
static void test_server_time_default(void **state)
{
	struct tk_limiter *g;
	struct tk_clock *c;
	struct tk_decision d;
	char spec[256];

	(void)state;
	need_server();
	snprintf(spec, sizeof(spec), "%s?key_prefix=sd:&timeout=5s", kit.spec);
	open_at(&g, &c, "gcra:2/1h", spec, TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(g, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_true(near(d.reset_at, realtime_ns() + 3600 * SEC / 2));
	tk_limiter_close(g);
	tk_clock_free(c);
}

/* Calls of @cmd the kit's server counted ("cmdstat_fcall"). */
static long long calls(const struct redis_kit *k, const char *cmd)
{
	char info[8192], *at;

	redis_kit_cmd(k, info, sizeof(info), "INFO commandstats");
	at = strstr(info, cmd);
	return at ? atoll(at + strlen(cmd) + strlen(":calls=")) : 0;
}

/* A flushed script cache (restart, failover) is reloaded transparently. */
static void test_noscript_recovery(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;

	(void)state;
	need_server();
	open_at(&l, &c, "gcra:2/s", spec_with(&kit, "?key_prefix=n:"),
		TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	assert_true(calls(&kit, "cmdstat_fcall") > 0);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FUNCTION FLUSH"), 0);
	assert_admits(l, "k", 1, true);
	assert_admits(l, "k", 1, false);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FUNCTION FLUSH"), 0);
	tk_clock_advance(c, SEC);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* A server without Functions (renamed away here, as before Redis 7):
 * EVALSHA, and SCRIPT FLUSH recovered. */
static void test_evalsha_fallback(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct redis_kit k;

	(void)state;
	memset(&k, 0, sizeof(k));
	need_server();
	k.extra[0] = "--rename-command";
	k.extra[1] = "FUNCTION";
	k.extra[2] = "";
	assert_int_equal(redis_kit_start(&k, NULL), 0);
	open_at(&l, &c, "all(gcra:2/s,sliding-log:3/1m)", spec_with(&k, ""),
		TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	assert_true(calls(&k, "cmdstat_evalsha") > 0);
	assert_int_equal(redis_kit_cmd(&k, NULL, 0, "SCRIPT FLUSH"), 0);
	assert_admits(l, "k", 1, true);
	assert_admits(l, "k", 1, false);
	/* FCALL tried once, on the connection's first check. */
	assert_int_equal(calls(&k, "cmdstat_fcall"), 1);
	close_all(l, c, &k);
}

/* The state carries a TTL: its expiry plus the grace, from now. */
static void test_ttl(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_clock *c;
	long long ttl;

	(void)state;
	need_server();
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.reclaim_grace = 5 * SEC;
	assert_rc(tk_limiter_open(&l, "gcra:1/1h", "redis://127.0.0.1:1", &o),
		  0);
	tk_limiter_close(l);
	assert_rc(tk_limiter_open(&l, "gcra:1/1h",
				  spec_with(&kit, "?key_prefix=ttl:"), &o),
		  0);
	assert_admits(l, "k", 1, true);
	ttl = redis_kit_cmd(&kit, NULL, 0, "PTTL ttl:%b", "{\0\0k}", (size_t)5);
	/* 1 h + 5 s, in ms, rounded up; less what passed since. */
	assert_true(ttl > 3605000 - 5000 && ttl <= 3605001);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/*
 * Keys on the server: the key_prefix, then the limiter's key in braces,
 * a composite's dimension after them, so that one key's dimensions share
 * a hash tag.
 */
static void test_key_names(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	(void)state;
	need_server();
	o.prefix = "api";
	assert_rc(tk_limiter_open(&l, "all(gcra:5/s,fixed-window:9/1m)",
				  spec_with(&kit, "?key_prefix=n%7Bx:"), &o),
		  0);
	assert_admits(l, "u}1", 3, true);
	tk_limiter_close(l);
	o.prefix = NULL;
	assert_rc(tk_limiter_open(&l, "gcra:5/s", spec_with(&kit, ""), &o), 0);
	assert_admits(l, "u}1", 3, true);
	tk_limiter_close(l);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "EXISTS n{x:%b",
				       "{\x80\x03"
				       "apiu}1}\x00",
				       (size_t)11),
			 1);
	/* A fixed window's dimension: its tag (algorithm, packed, 60 s)
	 * after the index, its length last. */
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "EXISTS n{x:%b",
				       "{\x80\x03"
				       "apiu}1}\x01\x03\x01"
				       "\x00\x00\x00\x0d\xf8\x47\x58\x00\x8a",
				       (size_t)22),
			 1);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "EXISTS tk:%b",
				       "{\0\0u}1}", (size_t)7),
			 1);
}

/* A check of @b on a key that @a used: a fresh budget of 5 (another
 * policy's state is under another Redis key). */
static void assert_foreign(const char *a, const char *b)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;

	open_at(&l, &c, a, spec_with(&kit, "?key_prefix=p:"), TK_FAIL_ERROR);
	assert_rc(tk_limiter_reset(l, "k", 1), 0);
	assert_admits(l, "k", 1, true);
	tk_limiter_close(l);
	tk_clock_free(c);
	open_at(&l, &c, b, spec_with(&kit, "?key_prefix=p:"), TK_FAIL_ERROR);
	assert_rc(tk_limiter_reset(l, "k", 1), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 4);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* A policy of another algorithm keeps its own states; a value no
 * algorithm wrote: -EPROTO. */
static void test_foreign_state(void **state)
{
	struct tk_limiter *g, *k;
	struct tk_clock *c1, *c2;
	struct tk_decision d;

	(void)state;
	need_server();
	open_at(&g, &c1, "gcra:5/s", spec_with(&kit, "?key_prefix=f:"),
		TK_FAIL_ERROR);
	open_at(&k, &c2, "leaky:5/s", spec_with(&kit, "?key_prefix=f:"),
		TK_FAIL_ERROR);
	assert_admits(g, "k", 1, true);
	assert_rc(tk_limiter_check(k, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "SET f:%b junk",
				       "{\0\0j}", (size_t)5),
			 0);
	assert_rc(tk_limiter_check(g, "j", 1, 1, &d), -EPROTO);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "SET f:%b 1:12x",
				       "{\0\0j}", (size_t)5),
			 0);
	assert_rc(tk_limiter_peek(g, "j", 1, &d), -EPROTO);
	assert_rc(tk_limiter_reset(g, "j", 1), 0);
	/* Windows of another width, or another calendar: another policy's
	 * key, as on every store (tk_limiter_open(3)). */
	assert_foreign("fixed-window:5/1s", "fixed-window:5/2s");
	assert_foreign("quota:5/month", "quota:5/month,offset=+01:00");
	assert_foreign("quota:5/1h", "quota:5/1h,anchor=1");
	assert_admits(g, "j", 1, true);
	tk_limiter_close(g);
	tk_limiter_close(k);
	tk_clock_free(c1);
	tk_clock_free(c2);
}

/* A server of its own, for the tests that stop, kill or starve it. */
static void own_server(struct redis_kit *k, const char *password)
{
	memset(k, 0, sizeof(*k));
	need_server();
	assert_int_equal(redis_kit_start(k, password), 0);
}

/*
 * A stopped server: every fail policy answers once the timeout has
 * passed, not before half of it and well before ten times it (a loaded
 * machine may be slow to wake a thread; a check that hangs, or waits
 * for more than its own reply, is not).
 */
#define STOPPED_TIMEOUT_MS 100
static void test_stopped_server(void **state)
{
	static const unsigned int fails[] = { TK_FAIL_ERROR, TK_FAIL_OPEN,
					      TK_FAIL_CLOSED };
	struct tk_limiter *l[3];
	struct tk_clock *c[3];
	struct tk_decision d;
	struct redis_kit k;
	uint64_t t;
	int i, rc;

	(void)state;
	own_server(&k, NULL);
	for (i = 0; i < 3; i++) {
		open_at(&l[i], &c[i], "gcra:5/s",
			spec_with(&k, "?timeout=100ms&connect_timeout=100ms"),
			fails[i]);
		assert_admits(l[i], "k", 1, true);
	}
	assert_int_equal(kill(k.pid, SIGSTOP), 0);
	for (i = 0; i < 3; i++) {
		t = mono_ms();
		rc = tk_limiter_check(l[i], "k", 1, 1, &d);
		t = mono_ms() - t;
		assert_true(t >= STOPPED_TIMEOUT_MS / 2);
		assert_true(t < 10 * STOPPED_TIMEOUT_MS);
		if (fails[i] == TK_FAIL_ERROR) {
			assert_rc(rc, -ETIMEDOUT);
			/* A timed-out command starts no backoff: the next
			 * check connects (the kernel accepts for the stopped
			 * server) and waits for its own reply. */
			t = mono_ms();
			assert_rc(tk_limiter_check(l[0], "k", 1, 1, &d),
				  -ETIMEDOUT);
			assert_true(mono_ms() - t >= STOPPED_TIMEOUT_MS / 2);
			continue;
		}
		assert_rc(rc, 0);
		assert_true(d.degraded);
		assert_int_equal(d.allowed, fails[i] == TK_FAIL_OPEN);
	}
	assert_int_equal(kill(k.pid, SIGCONT), 0);
	assert_rc(check_until_up(l[0], &d), 0);
	assert_false(d.degraded);
	for (i = 0; i < 3; i++) {
		tk_limiter_close(l[i]);
		tk_clock_free(c[i]);
	}
	redis_kit_destroy(&k);
}

/* A server killed and restarted: reconnected, scripts reloaded. */
static void test_restarted_server(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	struct redis_kit k;
	int rc;

	(void)state;
	own_server(&k, NULL);
	open_at(&l, &c, "gcra:5/s", spec_with(&k, ""), TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	assert_int_equal(kill(k.pid, SIGKILL), 0);
	waitpid(k.pid, NULL, 0);
	k.pid = 0;
	rc = tk_limiter_check(l, "k", 1, 1, &d);
	assert_true(rc == -ECONNRESET || rc == -ECONNREFUSED);
	rc = tk_limiter_check(l, "k", 1, 1, &d);
	assert_true(rc == -ECONNRESET || rc == -ECONNREFUSED);
	assert_int_equal(redis_kit_start(&k, NULL), 0);
	assert_rc(check_until_up(l, &d), 0);
	/* A fresh server: the state is gone, the script was reloaded. */
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 4);
	close_all(l, c, &k);
}

/*
 * A connection the server closes (CLIENT KILL, an idle timeout): seen
 * before the next check is sent, which a new connection carries, applied
 * once.
 */
static void test_connection_killed(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	struct redis_kit k;

	(void)state;
	own_server(&k, NULL);
	open_at(&l, &c, "gcra:5/s", spec_with(&k, ""), TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	assert_true(redis_kit_cmd(&k, NULL, 0,
				  "CLIENT KILL TYPE normal SKIPME yes") == 1);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 3);
	close_all(l, c, &k);
}

static long long clients(const struct redis_kit *k)
{
	char info[4096], *at;

	redis_kit_cmd(k, info, sizeof(info), "INFO clients");
	at = strstr(info, "connected_clients:");
	return at ? atoll(at + 18) : -1;
}

/* A child of fork() connects on its own; the parent's socket is left. */
static void test_fork_after_open(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	struct redis_kit k;
	long long before;
	pid_t pid;
	int status;

	(void)state;
	own_server(&k, NULL);
	open_at(&l, &c, "gcra:5/s", spec_with(&k, ""), TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	before = clients(&k); /* the limiter's, and the asking one */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The child's first check makes a second connection. */
		if (tk_limiter_check(l, "k", 1, 1, &d) != 0 || !d.allowed ||
		    d.remaining != 3 || clients(&k) != before + 1)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 2);
	close_all(l, c, &k);
}

/* AUTH: a wrong password is -EACCES; the right one works. */
static void test_auth(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	struct redis_kit k;
	char spec[160];

	(void)state;
	own_server(&k, "s3cret");
	open_at(&l, &c, "gcra:5/s", spec_with(&k, ""), TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -EACCES);
	tk_limiter_close(l);
	tk_clock_free(c);
	snprintf(spec, sizeof(spec), "redis://:wrong@127.0.0.1:%d", k.port);
	open_at(&l, &c, "gcra:5/s", spec, TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -EACCES);
	tk_limiter_close(l);
	tk_clock_free(c);
	snprintf(spec, sizeof(spec), "redis://default:s3cret@127.0.0.1:%d/2",
		 k.port);
	open_at(&l, &c, "gcra:5/s", spec, TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	close_all(l, c, &k);
}

/* A server out of memory answers a typed -ENOMEM. */
static void test_server_oom(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	struct redis_kit k;

	(void)state;
	own_server(&k, NULL);
	open_at(&l, &c, "gcra:5/s", spec_with(&k, ""), TK_FAIL_ERROR);
	assert_admits(l, "k", 1, true);
	assert_int_equal(
		redis_kit_cmd(&k, NULL, 0,
			      "CONFIG SET maxmemory-policy noeviction"),
		0);
	assert_int_equal(redis_kit_cmd(&k, NULL, 0, "CONFIG SET maxmemory 1"),
			 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -ENOMEM);
	assert_int_equal(redis_kit_cmd(&k, NULL, 0, "CONFIG SET maxmemory 0"),
			 0);
	assert_admits(l, "k", 1, true);
	close_all(l, c, &k);
}

static void test_cluster_spec(void **state)
{
	static const char *const bad[] = {
		"redis+cluster://",
		"redis+cluster://h:1,",
		"redis+cluster://,h:1",
		"redis+cluster://h:1,h:0",
		"redis+cluster://u:s3cret@h:1,h:99999",
		"redis+cluster://h:1/0",
		"redis+cluster://u:s3cret@h:1/",
		"redis+cluster://h:1,[::1?timeout=1s",
		"redis+cluster://h:1?tiemout=1s",
		"redis+cluster://h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9,h:10,h:11,"
		"h:12,h:13,h:14,h:15,h:16,h:17",
	};
	struct tk__redis_spec s;
	char why[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_parse(bad[i], -EINVAL);
	assert_rc(tk__redis_spec_parse("redis+cluster://u:s3cret@a:7000,[::1]:"
				       "7001,b?timeout=1s&key_prefix=p:",
				       &s, why, sizeof(why)),
		  0);
	assert_true(s.cluster);
	assert_int_equal(s.seeds, 3);
	assert_string_equal(s.seed[0].host, "a");
	assert_int_equal(s.seed[0].port, 7000);
	assert_string_equal(s.seed[1].host, "::1");
	assert_int_equal(s.seed[1].port, 7001);
	assert_string_equal(s.seed[2].host, "b");
	assert_int_equal(s.seed[2].port, 6379);
	assert_string_equal(s.password, "s3cret");
	assert_true(s.timeout == SEC);
	assert_string_equal(s.key_prefix, "p:");
}

/* The cluster, started once; skipped only without the programs. */
static void need_cluster(void)
{
	redis_cluster_need(nodes, cluster_spec, sizeof(cluster_spec),
			   &cluster_up);
}

static unsigned int slot_of(const char *key)
{
	return tk__redis_slot(key, strlen(key));
}

/* Hash slots as Redis computes them (its documented vectors, then the
 * server's CLUSTER KEYSLOT of generated keys). */
static void test_cluster_slots(void **state)
{
	uint64_t seed = 7;
	char key[24];
	int i, j, n;

	(void)state;
	assert_int_equal(slot_of("123456789"), 0x31c3);
	assert_int_equal(slot_of("{user1000}.following"), slot_of("user1000"));
	assert_int_equal(slot_of("foo{}{bar}"), 8363);
	assert_int_equal(slot_of("foo{{bar}}zap"), slot_of("{bar"));
	assert_int_equal(slot_of("foo{bar}{zap}"), slot_of("bar"));
	need_cluster();
	for (i = 0; i < 200; i++) {
		n = (int)rnd_range(&seed, 1, sizeof(key) - 1);
		for (j = 0; j < n; j++)
			key[j] = (char)rnd_range(&seed, 33, 126);
		key[n] = '\0';
		assert_int_equal(redis_kit_cmd(&nodes[0], NULL, 0,
					       "CLUSTER KEYSLOT %b", key,
					       (size_t)n),
				 slot_of(key));
	}
}

static void test_cluster_differential(void **state)
{
	(void)state;
	need_cluster();
	differentials(cluster_spec, 40);
}

/*
 * The Redis key of @key of a one-dimension limiter of policy @p (NULL:
 * gcra, which has no tag) without a prefix.
 */
static size_t state_key(const char *key_prefix, const char *key,
			const struct tk__policy *p, char *buf)
{
	size_t n = strlen(key_prefix), k = strlen(key);
	size_t t = p ? p->tag_len : 0;

	memcpy(buf, key_prefix, n);
	memcpy(buf + n, "{\0\0", 3);
	if (t) {
		buf[n + 1] = (char)TK__STORE_KEY_TAG;
		memcpy(buf + n + 3, p->tag, t);
	}
	memcpy(buf + n + 3 + t, key, k);
	buf[n + 3 + t + k] = '}';
	return n + 4 + t + k;
}

static unsigned int state_slot(const char *key, const struct tk__policy *p)
{
	char buf[96];

	return tk__redis_slot(buf, state_key("", key, p, buf));
}

/* The node that serves @key's slot now (the others answer MOVED). */
static int owner(const char *buf, size_t len)
{
	int i;

	for (i = 0; i < 3; i++)
		if (redis_kit_cmd(&nodes[i], NULL, 0, "EXISTS %b", buf, len) >=
		    0)
			return i;
	fail_msg("no node serves the key");
	return -1;
}

static void node_id(int i, char id[64])
{
	assert_int_equal(redis_kit_cmd(&nodes[i], id, 64, "CLUSTER MYID"), 0);
}

/*
 * Start moving the slot of @key (a single state) to the next node as
 * redis-cli --cluster reshard does: IMPORTING, MIGRATING, MIGRATE; from
 * then on the old node answers ASK.  Returns the old node.
 */
static int migrate_start(const char *key_prefix, const char *key,
			 const struct tk__policy *p)
{
	char buf[96];
	size_t len = state_key(key_prefix, key, p, buf);
	unsigned int slot = state_slot(key, p);
	int from = owner(buf, len), to = (from + 1) % 3;
	char id[2][64];

	node_id(from, id[0]);
	node_id(to, id[1]);
	assert_int_equal(redis_kit_cmd(&nodes[to], NULL, 0,
				       "CLUSTER SETSLOT %u IMPORTING %s", slot,
				       id[0]),
			 0);
	assert_int_equal(redis_kit_cmd(&nodes[from], NULL, 0,
				       "CLUSTER SETSLOT %u MIGRATING %s", slot,
				       id[1]),
			 0);
	assert_int_equal(redis_kit_cmd(&nodes[from], NULL, 0,
				       "MIGRATE 127.0.0.1 %d %b 0 5000",
				       nodes[to].port, buf, len),
			 0);
	return from;
}

/* The slot of @key now on the node after @from: MOVED from the others. */
static void migrate_finish(const char *key, const struct tk__policy *p,
			   int from)
{
	int to = (from + 1) % 3, i;
	char id[64], why[128];

	node_id(to, id);
	for (i = 0; i < 3; i++)
		if (redis_kit_cmd(&nodes[(to + i) % 3], why, sizeof(why),
				  "CLUSTER SETSLOT %u NODE %s",
				  state_slot(key, p), id) != 0)
			fail_msg("SETSLOT NODE on node %d: %s", (to + i) % 3,
				 why);
}

/*
 * A key whose slot migrates between checks: ASK (the state already on
 * the new node, the slot not yet) then MOVED, and the decisions stay the
 * memory store's.
 */
static void test_cluster_moved(void **state)
{
	const struct tk__policy *pol;
	struct tk_limiter *mem, *red;
	struct tk_clock *cm, *cr;
	struct tk_decision dm, dr;
	char spec[256];
	int i, from = 0;

	(void)state;
	need_cluster();
	snprintf(spec, sizeof(spec),
		 "%s?key_prefix=m:&timeout=5s&server_time=0", cluster_spec);
	open_at(&mem, &cm, "sliding-window:10/1m", "memory", TK_FAIL_ERROR);
	open_at(&red, &cr, "sliding-window:10/1m", spec, TK_FAIL_ERROR);
	pol = &tk_limiter_policy(red)->dim[0];
	for (i = 0; i < 14; i++) {
		if (i == 4) {
			char buf[96];
			size_t len = state_key("m:", "mk", pol, buf);

			/* The state is where its tag says (keys.c). */
			assert_int_equal(redis_kit_cmd(&nodes[owner(buf, len)],
						       NULL, 0, "EXISTS %b",
						       buf, len),
					 1);
			from = migrate_start("m:", "mk", pol);
		}
		if (i == 8)
			migrate_finish("mk", pol, from);
		tk_clock_set(cm, T0 + (uint64_t)i * SEC);
		tk_clock_set(cr, T0 + (uint64_t)i * SEC);
		assert_rc(tk_limiter_check(mem, "mk", 2, 1, &dm), 0);
		assert_rc(tk_limiter_check(red, "mk", 2, 1, &dr), 0);
		assert_memory_equal(&dm, &dr, sizeof(dm));
	}
	assert_rc(tk_limiter_reset(red, "mk", 2), 0);
	assert_admits(red, "mk", 2, true);
	tk_limiter_close(mem);
	tk_limiter_close(red);
	tk_clock_free(cm);
	tk_clock_free(cr);
}

/* A seed that is down is passed over: the map comes from the next. */
static void test_cluster_dead_seed(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	char spec[256];

	(void)state;
	need_cluster();
	snprintf(spec, sizeof(spec),
		 "redis+cluster://127.0.0.1:1,127.0.0.1:%d?key_prefix=s:",
		 nodes[2].port);
	open_at(&l, &c, "fixed-window:1/1h", spec, TK_FAIL_ERROR);
	assert_admits(l, "a", 1, true);
	assert_admits(l, "b", 1, true);
	assert_admits(l, "a", 1, false);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/*
 * N processes x M checks of each of K keys (slots on every master) at
 * limit L admit exactly L per key, while one key's slot migrates.  A
 * group over keys of several slots is refused; a composite is one slot.
 */
static void test_cluster_exact(void **state)
{
	enum { N = 4, M = 150, K = 4, L = 200 };
	static const char *const keys[K] = { "a", "b", "c", "d" };
	static const struct tk_key two[2] = { { "a", 1 }, { "b", 1 } };
	struct tk_limiter *pair[2];
	_Atomic uint64_t *admitted;
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	char spec[256];
	pid_t pids[N];
	int i, j, k, rc, status, seen[3] = { 0 };

	(void)state;
	need_cluster();
	for (k = 0; k < K; k++)
		seen[state_slot(keys[k], NULL) * 3 / 16384] = 1;
	assert_int_equal(seen[0] + seen[1] + seen[2], 3);
	admitted = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(admitted != MAP_FAILED);
	/* A loaded machine must not turn a redirected check into a timeout:
	 * exactness, not speed, is the subject. */
	snprintf(spec, sizeof(spec),
		 "%s?key_prefix=x:&timeout=5s&server_time=0", cluster_spec);
	open_at(&l, &c, "gcra:200/1d", spec, TK_FAIL_ERROR);
	pair[0] = pair[1] = l;
	/* Keys of two slots: one script per slot (test_redis_xslot.c). */
	assert_rc(tk_limiter_check_group(pair, two, 2, 1, &d, NULL, 0), 0);
	assert_true(d.allowed);
	for (i = 0; i < N; i++) {
		pids[i] = kit_fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			for (j = 0; j < M; j++)
				for (k = 0; k < K; k++) {
					rc = tk_limiter_check(l, keys[k], 1, 1,
							      &d);
					if (rc != 0)
						_exit(-rc & 0x7f);
					if (d.allowed)
						atomic_fetch_add(&admitted[k],
								 1);
				}
			_exit(0);
		}
	}
	i = migrate_start("x:", "c", NULL);
	migrate_finish("c", NULL, i);
	for (i = 0; i < N; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("worker %d: %s", i,
				 WIFEXITED(status)
					 ? tk_strerrorname(-WEXITSTATUS(status))
					 : "killed");
	}
	/* The group's check of "a" and "b" took one of each: a simple
	 * limiter's group and single checks share its states. */
	for (k = 0; k < K; k++)
		assert_int_equal(atomic_load(&admitted[k]), k < 2 ? L - 1 : L);
	tk_limiter_close(l);
	tk_clock_free(c);
	munmap((void *)admitted, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_forms),
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_open_refusals),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_invalid_state_is_none),
		cmocka_unit_test(test_estimate_beyond_2_53),
		cmocka_unit_test(test_fast_path_edges),
		cmocka_unit_test(test_groups_and_keys),
		cmocka_unit_test(test_batches_and_waits),
		cmocka_unit_test(test_exact_across_processes),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_noscript_recovery),
		cmocka_unit_test(test_evalsha_fallback),
		cmocka_unit_test(test_server_time),
		cmocka_unit_test(test_server_time_default),
		cmocka_unit_test(test_ttl),
		cmocka_unit_test(test_key_names),
		cmocka_unit_test(test_foreign_state),
		cmocka_unit_test(test_stopped_server),
		cmocka_unit_test(test_restarted_server),
		cmocka_unit_test(test_connection_killed),
		cmocka_unit_test(test_fork_after_open),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_server_oom),
		cmocka_unit_test(test_cluster_spec),
		cmocka_unit_test(test_cluster_slots),
		cmocka_unit_test(test_cluster_differential),
		cmocka_unit_test(test_cluster_moved),
		cmocka_unit_test(test_cluster_exact),
		cmocka_unit_test(test_cluster_dead_seed),
	};

	return cmocka_run_group_tests_name("redis store", tests, group_setup,
					   group_teardown);
}
