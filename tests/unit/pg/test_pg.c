/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_pg.c - the PostgreSQL store against a real server started by the
 * test (tests/kit/pg-kit.c): its spec, decisions identical to the memory
 * store's on generated timelines, exactly L admitted at limit L by forked
 * processes on one new key (alone, in a composite, and with every check
 * on the locked path: the hook, hence a static link), and connections
 * that a fork child does not share, and sessions the server ended while
 * idle replaced without an error.  Without a server the tests skip
 * (fail with TK_REQUIRE_POSTGRES=1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <throttlekit.h>

#include "asserts.h"
#include "diff-kit.h"
#include "pg-kit.h"
#include "rnd.h"
#include "strategy-kit.h"
#include "test-hooks.h"
#include "workers.h"

static struct pg_kit kit;
#define T0 (UINT64_C(1700000000) * SEC)

/* The kit's server with generous timeouts and @opts ("&..." or ""). */
static const char *spec_with(const char *opts)
{
	static char buf[320];

	snprintf(buf, sizeof(buf), "%s?timeout=5s&connect_timeout=5s%s",
		 kit.spec, opts);
	return buf;
}

static void open_at(struct tk_limiter **l, struct tk_clock **c,
		    const char *policy, const char *spec)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_rc(tk_clock_manual_new(c, T0), 0);
	o.clock = *c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(l, policy, spec, &o), 0);
}

static void test_spec(void **state)
{
	static const char *const bad[] = {
		"postgresql://h",		/* no /DB */
		"postgresql:///db",		/* no host */
		"postgresql://h/db?timeout=0s", /* under 1 ms */
		"postgresql://h/db?table=Bad",	/* not lower-case */
		"postgresql://h/db?table=1x",
		"postgresql://h/db?nosuch=1", /* libpq's to refuse */
		"postgresql://h/db?server_time=2",
	};
	char why[256];
	size_t i;

	(void)state;
	assert_rc(tk_store_validate("postgresql://u:pw@h:5433/db?timeout=2s&"
				    "connect_timeout=3s&table=tk_x&"
				    "sslmode=disable",
				    why, sizeof(why)),
		  0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_rc(tk_store_validate(bad[i], why, sizeof(why)), -EINVAL);
		assert_true(why[0] != '\0');
	}
	assert_rc(tk_store_validate("postgresql://h/db?server_time=1", why,
				    sizeof(why)),
		  0);
	/* A message never quotes the password. */
	assert_rc(tk_store_validate("postgresql://u:s3cr3t@h/db?table=X", why,
				    sizeof(why)),
		  -EINVAL);
	assert_null(strstr(why, "s3cr3t"));
	assert_rc(tk_store_validate("postgresql://u:s3cr3t@/db", why,
				    sizeof(why)),
		  -EINVAL);
	assert_null(strstr(why, "s3cr3t"));
}

/* Nothing listens there: the check says so, as a store error. */
static void test_refused(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;

	(void)state;
	pg_kit_need(&kit);
	open_at(&l, &c, "fixed-window:5/1s", "postgresql://127.0.0.1:1/db");
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -ECONNREFUSED);
	tk_limiter_close(l);
	tk_clock_free(c);
}

static const char *const policies[] = {
	"fixed-window:5/1s",
	"gcra:10/1s,burst=4",
	"token-bucket:capacity=6,refill=3/100ms",
	"sliding-window:7/1s,buckets=4",
	"sliding-log:4/500ms",
	"leaky:2/100ms,max-queue=300ms",
	"quota:20/day",
	"all(fixed-window:5/1s,gcra:20/1m)",
	"any(fixed-window:3/1s,sliding-window:6/2s,buckets=2)",
	/* User strategies (strategy-kit.h), alone and next to every
	 * built-in algorithm. */
	"kit-win:4",
	"kit-set:3",
	"all(kit-win:5,gcra:10/1s,burst=4,sliding-log:4/500ms)",
	"any(kit-set:2,sliding-window:7/1s,buckets=4,leaky:2/100ms)",
	"all(token-bucket:capacity=6,refill=3/100ms,kit-set:4,quota:20/day)",
	"any(fixed-window:3/1s,kit-win:2)",
};

/* One timeline of @policy on the memory store and here: same answers. */
static unsigned long long differential(const char *policy, uint64_t seed)
{
	struct tk_limiter *mem, *pg;
	struct tk_clock *cm, *cp;
	struct tk_decision dm, dp;
	uint64_t now = T0, cost;
	unsigned long long admitted = 0;
	unsigned int op;
	char key[8];
	int i, rm, rp;

	open_at(&mem, &cm, policy, "memory");
	open_at(&pg, &cp, policy, spec_with(""));
	for (i = 0; i < 150; i++) {
		switch (rnd_range(&seed, 0, 5)) {
		case 0:
			break;
		case 1: /* back, within the grace both keep states for */
			now -= rnd_range(&seed, 1, 30 * SEC);
			break;
		case 2:
			now += rnd_range(&seed, 1, 3 * SEC);
			break;
		case 3:
			now += rnd_range(&seed, 1, UINT64_C(2) * 86400 * SEC);
			break;
		default:
			now += rnd_range(&seed, 1, 200 * MS);
			break;
		}
		tk_clock_set(cm, now);
		tk_clock_set(cp, now);
		op = (unsigned int)rnd_range(&seed, 0, 12);
		cost = rnd_range(&seed, 0, 9) ? 1 : rnd_range(&seed, 1, 8);
		snprintf(key, sizeof(key), "k%u",
			 (unsigned int)rnd_range(&seed, 0, 2));
		rm = diff_kit_step(mem, op, key, cost, &dm);
		rp = diff_kit_step(pg, op, key, cost, &dp);
		if (rm != rp || memcmp(&dm, &dp, sizeof(dm)) != 0)
			fail_msg("%s step %d op %u at %llu: memory %d allowed "
				 "%d rem %llu reset %llu, postgresql %d "
				 "allowed %d rem %llu reset %llu",
				 policy, i, op, (unsigned long long)now, rm,
				 dm.allowed, (unsigned long long)dm.remaining,
				 (unsigned long long)dm.reset_at, rp,
				 dp.allowed, (unsigned long long)dp.remaining,
				 (unsigned long long)dp.reset_at);
		admitted += rm == 0 && op > 2 && dm.allowed;
	}
	tk_limiter_close(mem);
	tk_limiter_close(pg);
	tk_clock_free(cm);
	tk_clock_free(cp);
	return admitted;
}

static void test_differential(void **state)
{
	unsigned long long admitted = 0;
	size_t i;

	(void)state;
	pg_kit_need(&kit);
	assert_rc(strategy_kit_register(), 0);
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		/* Each timeline starts on an empty table. */
		assert_int_equal(pg_kit_sql(&kit, "DROP TABLE IF EXISTS "
						  "throttlekit_state"),
				 0);
		admitted += differential(policies[i], i + 1);
	}
	/* Both admitted and denied, or the comparison proves little. */
	assert_true(admitted > 100);
}

#define PROCS 6
#define EACH 60

static const char *exact_policy;
static char exact_key[32];

/* A forked worker: its own store, EACH checks on the shared key. */
static void exact_worker(int i)
{
	struct kit_shared *sh = kit_shared();
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision d;
	int n, rc;

	(void)i;
	KIT_CHILD_CHECK(2, tk_clock_manual_new(&c, T0) == 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	KIT_CHILD_CHECK(
		3, tk_limiter_open(&l, exact_policy, spec_with(""), &o) == 0);
	for (n = 0; n < EACH; n++) {
		rc = tk_limiter_check(l, exact_key, strlen(exact_key), 1, &d);
		if (rc)
			sh->errors++;
		else if (d.allowed)
			sh->allowed++;
	}
	tk_limiter_close(l);
	tk_clock_free(c);
	_exit(0);
}

/* PROCS x EACH checks at once on a key no one has touched: exactly @l. */
static void exact(const char *policy, const char *key, uint64_t want)
{
	struct kit_shared *sh = kit_shared();

	exact_policy = policy;
	snprintf(exact_key, sizeof(exact_key), "%s", key);
	kit_shared_reset(T0);
	kit_run_workers(PROCS, exact_worker);
	assert_int_equal(sh->errors, 0);
	assert_int_equal(sh->allowed, want);
}

static void test_exact(void **state)
{
	(void)state;
	pg_kit_need(&kit);
	exact("fixed-window:100/1h", "new-1", 100);
	exact("gcra:10/1h,burst=37", "new-2", 37);
	/* A composite's keys change together: the smaller limit holds. */
	exact("all(fixed-window:150/1h,sliding-window:45/1h,buckets=4)",
	      "new-3", 45);
}

/*
 * Every check on the locked path (the hook: the optimistic path never
 * runs): the row lock alone keeps the count exact.
 */
static void test_locked_exact(void **state)
{
	(void)state;
#if TK_TEST_HOOKS
	pg_kit_need(&kit);
	tk__pg_locked_only = 1;
	exact("fixed-window:100/1h", "locked-1", 100);
	exact("gcra:10/1h,burst=37", "locked-2", 37);
	tk__pg_locked_only = 0;
#else
	skip();
#endif
}

/*
 * A child of a process with connections uses none of them: the parent's
 * session still answers after the children checked and exited.
 */
static void fork_child(void *arg)
{
	struct tk_limiter *l = arg;
	struct tk_decision d;
	int n;

	for (n = 0; n < 3; n++)
		KIT_CHILD_CHECK(2, tk_limiter_check(l, "f", 1, 1, &d) == 0 &&
					   d.allowed);
	tk_limiter_close(l);
	_exit(0);
}

static void test_fork(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	int i;

	(void)state;
	pg_kit_need(&kit);
	open_at(&l, &c, "fixed-window:100/1h", spec_with("&table=tk_fork"));
	assert_rc(tk_limiter_check(l, "f", 1, 1, &d), 0);
	for (i = 0; i < 3; i++)
		kit_in_child(fork_child, l);
	assert_rc(tk_limiter_check(l, "f", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 100 - 11);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/*
 * The server ends every session of this process while they sit idle
 * (pg_terminate_backend(), as a restart would): the next check connects
 * anew and counts on, without an error.
 */
static void test_terminated(void **state)
{
	static const char terminate[] =
		"SELECT count(pg_terminate_backend(pid)) FROM "
		"pg_stat_activity WHERE backend_type = 'client backend' "
		"AND pid <> pg_backend_pid() AND datname = 'postgres'";
	static const char left[] =
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
		"'client backend' AND pid <> pg_backend_pid() AND "
		"datname = 'postgres'";
	struct timespec pause = { 0, 20 * 1000000L };
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	int i;

	(void)state;
	pg_kit_need(&kit);
	open_at(&l, &c, "fixed-window:100/1h", spec_with("&table=tk_term"));
	assert_rc(tk_limiter_check(l, "t", 1, 1, &d), 0);
	assert_true(pg_kit_sql(&kit, terminate) >= 1);
	for (i = 0; i < 250 && pg_kit_sql(&kit, left) > 0; i++)
		nanosleep(&pause, NULL);
	assert_rc(tk_limiter_check(l, "t", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 98);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/*
 * A statement past the spec's timeout (a row another session holds
 * locked) is -ETIMEDOUT, and the connection serves the next check; a
 * server that takes no writes is -EROFS.
 */
static void test_errors(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	char spec[256];
	PGconn *holder;
	PGresult *r;

	(void)state;
	pg_kit_need(&kit);
	snprintf(spec, sizeof(spec),
		 "%s?timeout=300ms&connect_timeout=5s&table=tk_locked",
		 kit.spec);
	open_at(&l, &c, "fixed-window:100/1h", spec);
	assert_rc(tk_limiter_check(l, "x", 1, 1, &d), 0);
	snprintf(spec, sizeof(spec),
		 "host=127.0.0.1 port=%d user=tk dbname=postgres", kit.port);
	holder = PQconnectdb(spec);
	assert_int_equal(PQstatus(holder), CONNECTION_OK);
	r = PQexec(holder, "BEGIN; SELECT 1 FROM tk_locked FOR UPDATE");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	assert_rc(tk_limiter_check(l, "x", 1, 1, &d), -ETIMEDOUT);
	PQclear(PQexec(holder, "ROLLBACK"));
	PQfinish(holder);
	assert_rc(tk_limiter_check(l, "x", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 98);
	tk_limiter_close(l);
	tk_clock_free(c);
	/* libpq's own options pass through: a session that may not write. */
	open_at(&l, &c, "fixed-window:100/1h",
		spec_with("&table=tk_ro&options=-c%20default_transaction_"
			  "read_only%3Don"));
	assert_rc(tk_limiter_check(l, "x", 1, 1, &d), -EROFS);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* What the server is, never who logs in to it. */
static void test_ping(void **state)
{
	struct tk_store_ping p;
	struct tk_store *s;
	char spec[256];

	(void)state;
	pg_kit_need(&kit);
	snprintf(spec, sizeof(spec),
		 "postgresql://tk:s3cr3t@127.0.0.1:%d/"
		 "postgres?table=tk_ping",
		 kit.port);
	assert_rc(tk_store_open(&s, spec, NULL), 0);
	assert_rc(tk_store_ping(s, &p, sizeof(p)), 0);
	assert_string_equal(p.store, "postgresql");
	assert_string_equal(p.engine, "cas");
	assert_int_equal(strncmp(p.version, "15", 2), 0);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", kit.port);
	assert_string_equal(p.server, spec);
	assert_true(p.rtt > 0);
	tk_store_close(s);
}

static int teardown(void **state)
{
	(void)state;
	pg_kit_destroy(&kit);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_locked_exact),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_terminated),
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests_name("postgresql store", tests, NULL,
					   teardown);
}
