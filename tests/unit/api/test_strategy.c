/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_strategy.c - tk_strategy_register(): what it accepts, how a policy
 * names a strategy (parse, format, info, change), and what the library
 * does with a strategy's results (a broken promise is -EPROTO; a peek
 * and a forecast write nothing).  The stores' side is the conformance
 * kit's (tests/kit/store-api-kit.c, store_api_kit_strategy_*).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "diff-kit.h"
#include "rnd.h"
#include "strategy-kit.h"
#include "workers.h"

static char zone_dir[] = "/tmp/tk-strategy-XXXXXX";

/* What bad() returns: its result and TTL, set by each test. */
static int bad_rc;
static uint64_t bad_ttl;

static int bad(void *ctx, unsigned char *state, uint64_t now, uint64_t cost,
	       uint64_t arg, struct tk_decision *d, uint64_t *ttl)
{
	(void)ctx, (void)state, (void)now, (void)cost, (void)arg;
	d->allowed = 1;
	*ttl = bad_ttl;
	return bad_rc;
}

/*
 * Writes a pattern of 32 bytes at each check, whatever it read, after
 * checking that what it read is the pattern or zeros; counts its runs.
 */
static unsigned int runs, peeks;

static int pattern(void *ctx, unsigned char *state, uint64_t now, uint64_t cost,
		   uint64_t arg, struct tk_decision *d, uint64_t *ttl)
{
	unsigned char want[32];
	size_t i;

	(void)ctx, (void)now;
	for (i = 0; i < 32; i++)
		want[i] = (unsigned char)(i * 7 + arg);
	runs++;
	peeks += cost == 0;
	d->allowed = 1;
	d->remaining = memcmp(state, want, 32) == 0 ? 1 : 0;
	d->limit = state[0] == 0 && state[31] == 0 ? 2 : 3;
	memcpy(state, want, 32);
	*ttl = SEC;
	return TK_STRATEGY_WRITE;
}

static struct tk_strategy def(const char *name, size_t size,
			      int (*fn)(void *, unsigned char *, uint64_t,
					uint64_t, uint64_t,
					struct tk_decision *, uint64_t *))
{
	struct tk_strategy s = TK_STRATEGY_INIT;

	s.name = name;
	s.state_size = size;
	s.check = fn;
	return s;
}

static int setup(void **state)
{
	struct tk_strategy s = def("ut-bad", 4, bad);

	(void)state;
	assert_rc(tk_strategy_register(&s), 0);
	s = def("ut-pattern", 32, pattern);
	assert_rc(tk_strategy_register(&s), 0);
	return 0;
}

static void register_refuses(void **state)
{
	static const char *const names[] = {
		"",	"Upper", "1digit", "under_score", "sixteen-lettersx",
		"gcra", "all",	 "any",	   "leaky",	  "token-bucket",
	};
	struct tk_strategy s = def("ut-ok", 8, bad);
	size_t i;

	(void)state;
	assert_rc(tk_strategy_register(NULL), -EINVAL);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		s.name = names[i];
		assert_rc(tk_strategy_register(&s), -EINVAL);
	}
	s.name = NULL;
	assert_rc(tk_strategy_register(&s), -EINVAL);
	s = def("ut-ok", 0, bad);
	assert_rc(tk_strategy_register(&s), -EINVAL);
	s = def("ut-ok", TK_STRATEGY_STATE_MAX + 1, bad);
	assert_rc(tk_strategy_register(&s), -EINVAL);
	s = def("ut-ok", 8, NULL);
	assert_rc(tk_strategy_register(&s), -EINVAL);
	s = def("ut-ok", 8, bad);
	s.size = 0;
	assert_rc(tk_strategy_register(&s), -EINVAL);
	/* Fifteen letters is the most; a name is taken once. */
	s = def("fifteen-letters", TK_STRATEGY_STATE_MAX, bad);
	assert_rc(tk_strategy_register(&s), 0);
	s = def("ut-bad", 8, pattern);
	assert_rc(tk_strategy_register(&s), -EEXIST);
}

static void policies_name_it(void **state)
{
	struct tk_policy *p, *q;
	struct tk_policy_info info;
	struct tk_parse_error err;
	char buf[128];

	(void)state;
	assert_rc(tk_policy_parse(&p, "all(gcra:10/s,ut-bad:42)", &err), 0);
	assert_int_equal(tk_policy_format(p, buf, sizeof(buf)),
			 strlen("all(gcra:10/1s,ut-bad:42)"));
	assert_string_equal(buf, "all(gcra:10/1s,ut-bad:42)");
	assert_rc(tk_policy_info(p, 1, &info, sizeof(info)), 0);
	assert_string_equal(info.algorithm, "ut-bad");
	assert_int_equal(info.limit, 42);
	assert_false(info.shaper);
	/* The same strategy with another argument reads the same states;
	 * another strategy, none. */
	assert_rc(tk_policy_parse(&q, "all(gcra:10/s,ut-bad:7)", NULL), 0);
	assert_int_equal(tk_policy_change(p, q), 3);
	tk_policy_free(q);
	assert_rc(tk_policy_parse(&q, "all(gcra:10/s,ut-pattern:42)", NULL), 0);
	assert_int_equal(tk_policy_change(p, q), 1);
	tk_policy_free(q);
	tk_policy_free(p);
	assert_rc(tk_policy_parse(&p, "ut-nothing:1", &err), -EINVAL);
	assert_int_equal(err.position, 0);
	assert_rc(tk_policy_parse(&p, "ut-bad:x", &err), -EINVAL);
	assert_int_equal(err.position, 7);
	assert_rc(tk_policy_parse(&p, "ut-bad", &err), -EINVAL);
}

static struct tk_limiter *open_on(const char *policy, struct tk_clock **c)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	assert_rc(tk_clock_manual_new(c, 1000 * SEC), 0);
	o.clock = *c;
	assert_rc(tk_limiter_open(&l, policy, "memory", &o), 0);
	return l;
}

static void broken_promises(void **state)
{
	static const struct {
		int rc;
		uint64_t ttl;
		int want;
	} cases[] = {
		{ TK_STRATEGY_WRITE, 1, 0 },
		{ TK_STRATEGY_WRITE, UINT64_C(1) << 62, 0 },
		{ TK_STRATEGY_KEEP, 0, 0 },
		{ -ERANGE, 0, -ERANGE },
		{ TK_STRATEGY_WRITE, 0, -EPROTO },
		{ TK_STRATEGY_WRITE, (UINT64_C(1) << 62) + 1, -EPROTO },
		{ 2, 1, -EPROTO },
		{ -ENOMEM, 1, -EPROTO },
	};
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	size_t i;

	(void)state;
	l = open_on("ut-bad:1", &c);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bad_rc = cases[i].rc;
		bad_ttl = cases[i].ttl;
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), cases[i].want);
	}
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* The bytes come back as written; a peek and a forecast write nothing;
 * the state is gone at its TTL. */
static void state_round_trips(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;

	(void)state;
	l = open_on("ut-pattern:5", &c);
	assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_int_equal(peeks, 1);
	assert_int_equal(d.limit, 2); /* saw zeros */
	assert_rc(tk_limiter_forecast(l, "k", 1, 3, &d), 0);
	assert_int_equal(d.limit, 2);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(d.limit, 2);
	assert_int_equal(d.remaining, 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(d.limit, 3);
	assert_int_equal(d.remaining, 1); /* read its pattern back */
	assert_rc(tk_clock_advance(c, SEC - 1), 0);
	assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_int_equal(d.remaining, 1);
	assert_rc(tk_clock_advance(c, 1), 0);
	assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_int_equal(d.limit, 2); /* expired: zeros again */
	assert_int_equal(tk_policy_forecast(tk_limiter_policy(l), 1, 1, &d), 0);
	assert_int_equal(d.limit, 2);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* A zone keeps a strategy's state in a block whose slot records
 * algorithm 0, which its verify takes as a strategy's, and validates. */
static void zone_verifies(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_limiter *l;
	struct tk_decision d;

	(void)state;
	o.zone_capacity = 1024;
	assert_rc(tk_limiter_open(&l, "all(gcra:1/s,ut-pattern:1)",
				  "shm:strategy", &o),
		  0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	tk_limiter_close(l);
	assert_rc(tk_limiter_open(&l, "ut-pattern:1", "shm:strategy", &o), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 1); /* read back from the block */
	tk_limiter_close(l);
	assert_rc(tk_zone_verify("strategy", &info, sizeof(info)), 0);
	assert_int_equal(info.keys, 3);
	assert_int_equal(info.violations, 0);
	assert_int_equal(info.corrupt, 0);
	assert_rc(tk_zone_destroy("strategy"), 0);
}

static unsigned int diff_denied;

/* One generated timeline of @policy on the memory store and on a zone,
 * swept now and then: the same answers, field for field.  Admissions. */
static unsigned int zone_timeline(const char *policy, uint64_t seed)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *m, *z;
	struct tk_store *sm, *sz;
	struct tk_decision dm, dz;
	struct tk_clock *c;
	uint64_t now = 1000 * SEC, cost;
	unsigned int op, admitted = 0;
	char key[8], what[192];
	int i, rm, rz;

	assert_rc(tk_clock_manual_new(&c, now), 0);
	sm = kit_store_on("memory", c);
	sz = kit_store_on("shm:strategy-diff", c);
	o.clock = c;
	o.store = sm;
	assert_rc(tk_limiter_open(&m, policy, NULL, &o), 0);
	o.store = sz;
	assert_rc(tk_limiter_open(&z, policy, NULL, &o), 0);
	for (i = 0; i < 400; i++) {
		switch (rnd_range(&seed, 0, 5)) {
		case 0: /* back, within the grace both keep states for */
			now -= min_u64(now, rnd_range(&seed, 1, 30 * SEC));
			break;
		case 1:
			now += rnd_range(&seed, 1, 3 * SEC);
			break;
		case 2:
			now += STRATEGY_KIT_WIN * rnd_range(&seed, 0, 2);
			break;
		default:
			now += rnd_range(&seed, 0, 200 * MS);
			break;
		}
		assert_rc(tk_clock_set(c, now), 0);
		op = (unsigned int)rnd_range(&seed, 0, 12);
		cost = rnd_range(&seed, 0, 9) ? rnd_range(&seed, 1, 3)
					      : rnd_range(&seed, 1, 8);
		snprintf(key, sizeof(key), "k%u",
			 (unsigned int)rnd_range(&seed, 0, 2));
		rm = diff_kit_step(m, op, key, cost, &dm);
		rz = diff_kit_step(z, op, key, cost, &dz);
		snprintf(what, sizeof(what),
			 "%s step %d op %u cost %llu at %llu", policy, i, op,
			 (unsigned long long)cost, (unsigned long long)now);
		diff_kit_same(what, "memory", rm, &dm, "zone", rz, &dz);
		admitted += rm == 0 && op > 2 && dm.allowed;
		diff_denied += rm == 0 && op > 2 && !dm.allowed;
		if (i % 37 == 0)
			assert_rc(tk_zone_sweep("strategy-diff", now), 0);
	}
	tk_limiter_close(m);
	tk_limiter_close(z);
	tk_store_close(sm);
	tk_store_close(sz);
	tk_clock_free(c);
	assert_rc(tk_zone_destroy("strategy-diff"), 0);
	return admitted;
}

/* The differential property on zones (Redis's and PostgreSQL's are in
 * their tests): user strategies alone and next to every built-in. */
static void zone_differential(void **state)
{
	static const char *const policies[] = {
		"kit-win:4",
		"kit-set:3",
		"all(kit-win:5,gcra:10/1s,burst=4,sliding-log:4/500ms)",
		"any(kit-set:2,sliding-window:7/1s,buckets=4,leaky:2/100ms)",
		"all(token-bucket:capacity=6,refill=3/100ms,kit-set:4,"
		"quota:20/day)",
		"any(fixed-window:3/1s,kit-win:2)",
		"all(kit-win:3,kit-set:2)",
	};
	unsigned int admitted = 0;
	size_t i;
	uint64_t seed;

	(void)state;
	assert_rc(strategy_kit_register(), 0);
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		for (seed = 1; seed <= 4; seed++)
			admitted += zone_timeline(policies[i], seed * 31 + i);
	/* Both admitted and denied, or the comparison proves little. */
	assert_true(admitted > 500);
	assert_true(diff_denied > 500);
}

/* On a Redis store that cannot be reached: its typed error, or the
 * limiter's fail policy, as for any policy, beside any built-in. */
static void redis_unreachable(void **state)
{
	static const char spec[] = "redis://127.0.0.1:1?connect_timeout=200ms";
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	int rc;

	(void)state;
	rc = tk_limiter_open(&l, "all(gcra:1/s,ut-pattern:1)", spec, &o);
	if (rc == -ENOTSUP)
		skip(); /* built without the Redis store */
	assert_rc(rc, 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -ECONNREFUSED);
	tk_limiter_close(l);
	o.fail = TK_FAIL_OPEN;
	assert_rc(tk_limiter_open(&l, "ut-pattern:1", spec, &o), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_true(d.degraded);
	tk_limiter_close(l);
	o.fail = TK_FAIL_CLOSED;
	assert_rc(tk_limiter_open(&l, "ut-pattern:1", spec, &o), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_true(d.degraded);
	tk_limiter_close(l);
	/* Beside a sliding window, whose state the transaction writes as
	 * the script spells it: opens, and fails as any check. */
	o.fail = TK_FAIL_ERROR;
	assert_rc(tk_limiter_open(&l, "all(sliding-window:10/1s,ut-pattern:1)",
				  spec, &o),
		  0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -ECONNREFUSED);
	tk_limiter_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(register_refuses),
		cmocka_unit_test(policies_name_it),
		cmocka_unit_test(broken_promises),
		cmocka_unit_test(state_round_trips),
		cmocka_unit_test(zone_verifies),
		cmocka_unit_test(zone_differential),
		cmocka_unit_test(redis_unreachable),
	};

	if (kit_zone_dir(zone_dir) != 0)
		return 1;
	return cmocka_run_group_tests_name("user strategies", tests, setup,
					   kit_zone_dir_remove);
}
