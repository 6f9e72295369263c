/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_pg_ops.c - the PostgreSQL store in operation, against a real
 * server started by the test (tests/kit/pg-kit.c): decisions at the
 * server's clock (server_time=1), the sweep of expired rows beside a
 * check that holds its row, and failures (a restart, a session
 * terminated inside a transaction, a statement timeout on the locked
 * path, a hot standby, a wrong password, a client killed with its row
 * locked) as typed errors under each fail policy, counts exact, and a
 * fork child on a session of its own.  The
 * locked path is forced and paused with test hooks (white box, static
 * link); test_pg.c runs its exact-count test on the locked path.
 * Without a server the tests skip (fail with
 * TK_REQUIRE_POSTGRES=1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
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
#include "pg-kit.h"
#include "test-hooks.h"
#include "workers.h"

static struct pg_kit kit;
#define T0 (UINT64_C(1700000000) * SEC)
#define HOUR (UINT64_C(3600) * SEC)

/* The kit's server with generous timeouts, table @table and @opts. */
static const char *spec_of(const char *table, const char *opts)
{
	static char buf[2][320];
	static int which;

	which ^= 1;
	snprintf(buf[which], sizeof(buf[which]),
		 "%s?timeout=5s&connect_timeout=5s&table=%s%s", kit.spec, table,
		 opts);
	return buf[which];
}

/* A limiter of @policy on @spec at manual time @t, failing by @fail. */
static struct tk_limiter *open_fail(const char *policy, const char *spec,
				    struct tk_clock **c, uint64_t t,
				    unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	assert_rc(tk_clock_manual_new(c, t), 0);
	o.clock = *c;
	o.flags = TK_OPT_NO_RECLAIMER;
	o.fail = fail;
	o.reclaim_grace = SEC; /* the sweep's grace */
	assert_rc(tk_limiter_open(&l, policy, spec, &o), 0);
	return l;
}

static struct tk_limiter *open_at(const char *policy, const char *spec,
				  struct tk_clock **c, uint64_t t)
{
	return open_fail(policy, spec, c, t, TK_FAIL_ERROR);
}

static void done(struct tk_limiter *l, struct tk_clock *c)
{
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* Two limiters of one table: failing with errors, and by @fail. */
struct pair {
	struct tk_limiter *l, *f;
	struct tk_clock *c, *cf;
};

static void open_pair(struct pair *p, const char *spec, unsigned int fail)
{
	p->l = open_at("fixed-window:10/1h", spec, &p->c, T0);
	p->f = open_fail("fixed-window:10/1h", spec, &p->cf, T0, fail);
}

static void close_pair(struct pair *p)
{
	done(p->l, p->c);
	done(p->f, p->cf);
}

static int check(struct tk_limiter *l, const char *key, struct tk_decision *d)
{
	memset(d, 0, sizeof(*d));
	return tk_limiter_check(l, key, strlen(key), 1, d);
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* Sessions of the server in an open transaction, but this query's. */
static long long in_transaction(void)
{
	return pg_kit_sql(&kit, "SELECT count(*) FROM pg_stat_activity WHERE "
				"state LIKE 'idle in transaction%' AND "
				"pid <> pg_backend_pid()");
}

/* Wait up to 5 s until no session is in a transaction: the count. */
static long long wait_no_transaction(void)
{
	struct timespec pause = { 0, 20 * 1000000L };
	long long n;
	int i;

	for (i = 0; i < 250 && (n = in_transaction()) != 0; i++)
		nanosleep(&pause, NULL);
	return n;
}

/*
 * server_time=1: two limiters whose manual clocks are a century apart
 * share one fixed window, the server's, and report its end; at
 * server_time=0 each decides at its own clock.  So does a composite,
 * and a check on the locked path.
 */
static void server_time_on(const char *key, int locked)
{
	struct tk_limiter *past, *future;
	struct tk_clock *cp, *cf;
	struct tk_decision d;
	uint64_t before, after;

	past = open_at("fixed-window:10/1h", spec_of("tk_st", "&server_time=1"),
		       &cp, T0);
	future = open_at("fixed-window:10/1h",
			 spec_of("tk_st", "&server_time=1"), &cf,
			 T0 + UINT64_C(100) * 365 * 24 * HOUR);
	(void)locked;
#if TK_TEST_HOOKS
	tk__pg_locked_only = locked;
#endif
	before = wall_ns();
	assert_rc(check(past, key, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 9);
	assert_rc(check(future, key, &d), 0);
	after = wall_ns();
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 8);
	/* The window of the server's hour, not of 2023's or 2123's. */
	assert_true(d.reset_at > before - SEC);
	assert_true(d.reset_at <= after + HOUR + SEC);
#if TK_TEST_HOOKS
	tk__pg_locked_only = 0;
#endif
	done(past, cp);
	done(future, cf);
}

static void test_server_time(void **state)
{
	struct tk_limiter *l, *a;
	struct tk_clock *c, *ca;
	struct tk_decision d;
	uint64_t before;

	(void)state;
	pg_kit_need(&kit);
	server_time_on("st-cas", 0);
	server_time_on("st-locked", 1);
	/* server_time=0, the default: the limiter's clock. */
	l = open_at("fixed-window:10/1h", spec_of("tk_st", ""), &c, T0);
	assert_rc(check(l, "st-0", &d), 0);
	assert_int_equal(d.reset_at, T0 - T0 % HOUR + HOUR);
	done(l, c);
	/* A composite decides at the server's clock too. */
	a = open_at("all(fixed-window:10/1h,sliding-window:5/1h,buckets=4)",
		    spec_of("tk_st", "&server_time=1"), &ca, T0);
	before = wall_ns();
	assert_rc(check(a, "st-all", &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 4);
	/* A sliding window's is up to two windows on. */
	assert_true(d.reset_at > before - SEC);
	assert_true(d.reset_at <= wall_ns() + 2 * HOUR + SEC);
	done(a, ca);
}

/* Rows of table tk_sweep that expired before @t (ns). */
static long long expired_rows(uint64_t t)
{
	char sql[160];

	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM tk_sweep WHERE expires_at < %llu",
		 (unsigned long long)t);
	return pg_kit_sql(&kit, sql);
}

struct sweeper {
	struct tk_limiter *l;
	int writes, errors;
};

/* With the row of "held" locked by a check: another store's 64 writes,
 * the last of which sweeps. */
static void sweep_meanwhile(void *arg)
{
	struct sweeper *w = arg;
	struct tk_decision d;
	int i;

#if TK_TEST_HOOKS
	/* The other store's checks take the optimistic path, unpaused. */
	tk__pg_locked_only = 0;
	tk__pg_locked_pause = NULL;
#endif
	for (i = 0; i < 64; i++) {
		w->errors += check(w->l, "busy", &d) != 0;
		w->writes++;
	}
}

/*
 * Expired rows go, in bounded sweeps piggy-backed on writes, without
 * waiting for a row a check holds locked: that row, expired when the
 * sweep began, is written by its check and keeps its state.
 */
static void test_sweep(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c, *cw;
	struct tk_decision d;
	struct sweeper w = { 0 };
	char key[16];
	int i;

	(void)state;
	pg_kit_need(&kit);
	l = open_at("fixed-window:100/1s", spec_of("tk_sweep", "&timeout=1s"),
		    &c, T0);
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "old-%d", i);
		assert_rc(check(l, key, &d), 0);
	}
	assert_rc(check(l, "held", &d), 0);
	assert_int_equal(expired_rows(T0 + 5 * SEC), 201);
	/* 10 s on, every row is expired for longer than the 1 s grace. */
	tk_clock_set(c, T0 + 10 * SEC);
	w.l = open_at("fixed-window:100/1s", spec_of("tk_sweep", "&timeout=1s"),
		      &cw, T0 + 10 * SEC);
#if TK_TEST_HOOKS
	tk__pg_locked_only = 1;
	tk__pg_locked_pause = sweep_meanwhile;
	tk__pg_locked_pause_arg = &w;
	assert_rc(check(l, "held", &d), 0);
	assert_int_equal(w.writes, 64);
	assert_int_equal(w.errors, 0);
	assert_int_equal(d.remaining, 99);
	/* Every expired row but the held one went (a sweep that waited for
	 * it would have timed out and deleted none). */
	assert_int_equal(expired_rows(T0 + 5 * SEC), 0);
	/* Two rows left, both live: "held" and "busy". */
	assert_int_equal(pg_kit_sql(&kit, "SELECT count(*) FROM tk_sweep"), 2);
	assert_rc(check(l, "held", &d), 0);
	assert_int_equal(d.remaining, 98);
#else
	sweep_meanwhile(&w);
	assert_int_equal(expired_rows(T0 + 5 * SEC), 0);
#endif
	done(w.l, cw);
	done(l, c);
}

/*
 * A restart: while the server is down a check fails (-ECONNREFUSED) or
 * its fail policy answers; once it is back, the next check reconnects
 * and counts on from the rows the server kept.
 */
static void test_restart(void **state)
{
	struct tk_limiter *l, *open_l, *closed_l;
	struct tk_clock *c, *co, *cc;
	struct tk_decision d;

	(void)state;
	pg_kit_need(&kit);
	l = open_at("fixed-window:10/1h", spec_of("tk_restart", ""), &c, T0);
	open_l = open_fail("fixed-window:10/1h", spec_of("tk_restart", ""), &co,
			   T0, TK_FAIL_OPEN);
	closed_l = open_fail("fixed-window:10/1h", spec_of("tk_restart", ""),
			     &cc, T0, TK_FAIL_CLOSED);
	assert_rc(check(l, "r", &d), 0);
	assert_rc(check(open_l, "r", &d), 0);
	assert_rc(check(closed_l, "r", &d), 0);
	assert_int_equal(d.remaining, 7);
	assert_int_equal(pg_kit_stop(&kit), 0);
	assert_rc(check(l, "r", &d), -ECONNREFUSED);
	assert_rc(check(open_l, "r", &d), 0);
	assert_true(d.allowed && d.degraded);
	assert_rc(check(closed_l, "r", &d), 0);
	assert_true(!d.allowed && d.degraded);
	assert_int_equal(pg_kit_restart(&kit), 0);
	assert_rc(check(l, "r", &d), 0);
	assert_false(d.degraded);
	assert_int_equal(d.remaining, 6);
	assert_rc(check(open_l, "r", &d), 0);
	assert_false(d.degraded);
	assert_int_equal(d.remaining, 5);
	done(l, c);
	done(open_l, co);
	done(closed_l, cc);
}

#if TK_TEST_HOOKS
/* With the row locked: the server ends every other client session. */
static void terminate_all(void *arg)
{
	(void)arg;
	assert_true(pg_kit_sql(&kit, "SELECT count(pg_terminate_backend(pid)) "
				     "FROM pg_stat_activity WHERE "
				     "backend_type = 'client backend' AND "
				     "pid <> pg_backend_pid()") >= 1);
}
#endif

/*
 * pg_terminate_backend() of the store's session inside the locked
 * path's transaction: that check fails (-ECONNRESET, or its fail policy
 * answers) and counted nothing; the next reconnects, nothing lost and
 * nothing counted twice.
 */
static void test_terminated_locked(void **state)
{
#if TK_TEST_HOOKS
	struct tk_decision d;
	struct pair p;

	(void)state;
	pg_kit_need(&kit);
	open_pair(&p, spec_of("tk_kill", ""), TK_FAIL_OPEN);
	tk__pg_locked_only = 1;
	assert_rc(check(p.l, "t", &d), 0);
	tk__pg_locked_pause = terminate_all;
	assert_rc(check(p.l, "t", &d), -ECONNRESET);
	assert_rc(check(p.f, "t", &d), 0);
	assert_true(d.allowed && d.degraded);
	tk__pg_locked_pause = NULL;
	assert_rc(check(p.l, "t", &d), 0);
	assert_int_equal(d.remaining, 8);
	tk__pg_locked_only = 0;
	assert_rc(check(p.f, "t", &d), 0);
	assert_false(d.degraded);
	assert_int_equal(d.remaining, 7);
	close_pair(&p);
#else
	(void)state;
	skip();
#endif
}

/*
 * A statement past timeout= on the locked path (another session holds
 * the row FOR UPDATE): -ETIMEDOUT, or the fail policy's answer; the
 * store's transaction is rolled back, not left open, and the next check
 * counts on.
 */
static void test_timeout_locked(void **state)
{
#if TK_TEST_HOOKS
	struct tk_decision d;
	struct pair p;
	char conn[128];
	PGconn *holder;

	(void)state;
	pg_kit_need(&kit);
	open_pair(&p, spec_of("tk_to", "&timeout=100ms"), TK_FAIL_CLOSED);
	tk__pg_locked_only = 1;
	assert_rc(check(p.l, "x", &d), 0);
	snprintf(conn, sizeof(conn),
		 "host=127.0.0.1 port=%d user=tk dbname=postgres", kit.port);
	holder = PQconnectdb(conn);
	assert_int_equal(PQstatus(holder), CONNECTION_OK);
	PQclear(PQexec(holder, "BEGIN"));
	PQclear(PQexec(holder, "SELECT 1 FROM tk_to FOR UPDATE"));
	assert_rc(check(p.l, "x", &d), -ETIMEDOUT);
	assert_rc(check(p.f, "x", &d), 0);
	assert_true(!d.allowed && d.degraded);
	/* The holder's transaction only: none of the store's is open. */
	assert_int_equal(in_transaction(), 1);
	PQclear(PQexec(holder, "ROLLBACK"));
	PQfinish(holder);
	assert_int_equal(wait_no_transaction(), 0);
	assert_rc(check(p.l, "x", &d), 0);
	assert_int_equal(d.remaining, 8);
	tk__pg_locked_only = 0;
	close_pair(&p);
#else
	(void)state;
	skip();
#endif
}

/* A hot standby takes no writes: -EROFS, and the fail policies. */
static void test_standby(void **state)
{
	struct pg_kit standby;
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	struct pair p;
	char spec[256];

	(void)state;
	pg_kit_need(&kit);
	l = open_at("fixed-window:10/1h", spec_of("tk_ro", ""), &c, T0);
	assert_rc(check(l, "s", &d), 0);
	done(l, c);
	assert_int_equal(pg_kit_standby(&standby, &kit), 0);
	assert_int_equal(
		pg_kit_sql(&standby, "SELECT pg_is_in_recovery()::int"), 1);
	snprintf(spec, sizeof(spec), "%s?timeout=5s&table=tk_ro", standby.spec);
	open_pair(&p, spec, TK_FAIL_OPEN);
	assert_rc(check(p.l, "s", &d), -EROFS);
	assert_rc(check(p.f, "s", &d), 0);
	assert_true(d.allowed && d.degraded);
	close_pair(&p);
	pg_kit_destroy(&standby);
}

/*
 * A wrong password: -EACCES, and tk_store_probe() says the login was
 * refused, without the password; the right one logs in.
 */
static void test_password(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	char spec[256], why[512];

	(void)state;
	pg_kit_need(&kit);
	assert_int_equal(pg_kit_sql(&kit, "CREATE ROLE pw LOGIN SUPERUSER "
					  "PASSWORD 'r1ght-pw'"),
			 0);
	assert_int_equal(pg_kit_hba_first(&kit, "host all pw 127.0.0.1/32 "
						"scram-sha-256"),
			 0);
	snprintf(spec, sizeof(spec),
		 "postgresql://pw:wr0ng-pw@127.0.0.1:%d/postgres?table=tk_pw",
		 kit.port);
	l = open_at("fixed-window:10/1h", spec, &c, T0);
	assert_rc(check(l, "p", &d), -EACCES);
	done(l, c);
	assert_rc(tk_store_probe(spec, NULL, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "refused the login"));
	assert_null(strstr(why, "wr0ng-pw"));
	snprintf(spec, sizeof(spec),
		 "postgresql://pw:r1ght-pw@127.0.0.1:%d/postgres?table=tk_pw",
		 kit.port);
	l = open_at("fixed-window:10/1h", spec, &c, T0);
	assert_rc(check(l, "p", &d), 0);
	done(l, c);
}

#if TK_TEST_HOOKS
static int ready_fd;
static int kill_calls;

/* In the child: on its 5th locked check, say so and wait to be killed. */
static void hold_for_kill(void *arg)
{
	(void)arg;
	if (++kill_calls < 5)
		return;
	if (write(ready_fd, "k", 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

/*
 * kill -9 of a client with its rows locked inside a transaction (the
 * locked path's, or a composite's, of @policy at limit @limit): the
 * server rolls it back and frees the rows when the socket closes, so the
 * parent's checks on the key go on (timeout=5s would fail them
 * otherwise), and admit exactly the rest of the limit.
 */
static void kill9(const char *policy, const char *key, uint64_t limit)
{
	struct kit_shared *sh = kit_shared();
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	uint64_t admitted = 0, i;
	long long held;
	ssize_t got;
	int fds[2];
	char b;
	pid_t pid;

	kit_shared_reset(T0);
	kill_calls = 0;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		ready_fd = fds[1];
		tk__pg_locked_pause = hold_for_kill;
		l = open_at(policy, spec_of("tk_k9", ""), &c, T0);
		for (;;) {
			KIT_CHILD_CHECK(2, check(l, key, &d) == 0);
			sh->allowed += d.allowed;
		}
	}
	close(fds[1]);
	/* Killed before any assertion, which would leave it behind. */
	got = read(fds[0], &b, 1);
	close(fds[0]);
	held = in_transaction();
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(got, 1);
	assert_int_equal(held, 1);
	l = open_at(policy, spec_of("tk_k9", ""), &c, T0);
	for (i = 0; i < 2 * limit; i++) {
		assert_rc(check(l, key, &d), 0);
		admitted += d.allowed;
	}
	assert_int_equal(sh->allowed, 4);
	assert_int_equal(sh->allowed + admitted, limit);
	assert_int_equal(wait_no_transaction(), 0);
	done(l, c);
}
#endif

static void test_kill9_locked(void **state)
{
	(void)state;
#if TK_TEST_HOOKS
	pg_kit_need(&kit);
	tk__pg_locked_only = 1;
	kill9("fixed-window:20/1h", "k9", 20);
	tk__pg_locked_only = 0;
	kill9("all(fixed-window:30/1h,sliding-window:20/1h,buckets=4)",
	      "k9-all", 20);
#else
	skip();
#endif
}

/* This test's sessions only: those of tests before it may linger. */
#define FORK_APP "tk_fork2"
#define CLIENTS                                                                \
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = "          \
	"'client backend' AND application_name = '" FORK_APP "'"

static long long parent_backend;

/* In a fork child of a process with a connection: its own, and the
 * parent's session still there after the child closed its store. */
static void fork_child(void *arg)
{
	struct tk_limiter *l = arg;
	struct tk_decision d;
	char sql[192];
	int n;

	for (n = 0; n < 3; n++)
		KIT_CHILD_CHECK(2, check(l, "f", &d) == 0 && d.allowed);
	snprintf(sql, sizeof(sql), "%s AND pid <> %lld", CLIENTS,
		 parent_backend);
	KIT_CHILD_CHECK(3, pg_kit_sql(&kit, sql) == 1);
	tk_limiter_close(l);
	_exit(0);
}

/*
 * Fork: a child connects anew rather than use its parent's session, and
 * closing its copy of that session does not end it (no Terminate sent
 * on the parent's socket).
 */
static void test_fork_own_connection(void **state)
{
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d;
	char sql[192];

	(void)state;
	pg_kit_need(&kit);
	l = open_at("fixed-window:100/1h",
		    spec_of("tk_fork2", "&application_name=" FORK_APP), &c, T0);
	assert_rc(check(l, "f", &d), 0);
	assert_int_equal(wait_no_transaction(), 0);
	assert_int_equal(pg_kit_sql(&kit, CLIENTS), 1);
	parent_backend =
		pg_kit_sql(&kit, "SELECT pid FROM pg_stat_activity WHERE "
				 "application_name = '" FORK_APP "'");
	assert_true(parent_backend > 0);
	kit_in_child(fork_child, l);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM pg_stat_activity WHERE pid = %lld",
		 parent_backend);
	assert_int_equal(pg_kit_sql(&kit, sql), 1);
	assert_rc(check(l, "f", &d), 0);
	assert_int_equal(d.remaining, 100 - 5);
	done(l, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_time),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_terminated_locked),
		cmocka_unit_test(test_timeout_locked),
		cmocka_unit_test(test_standby),
		cmocka_unit_test(test_password),
		cmocka_unit_test(test_kill9_locked),
		cmocka_unit_test(test_fork_own_connection),
	};
	int rc = cmocka_run_group_tests_name("postgresql store operations",
					     tests, NULL, NULL);

	pg_kit_destroy(&kit);
	return rc;
}
