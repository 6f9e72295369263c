/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_acl.c - least privilege on a real redis-server
 * (tests/kit/redis-kit.c): a user whose ACL allows FCALL but not
 * FUNCTION or SCRIPT ("+@all -function -script") checks on a library an
 * administrator loaded, on every new connection and in batches; with no
 * library loaded it gets -EACCES (tk_store_open(3)), and passes once an
 * administrator loads it, without reopening.  The user the manual
 * documents as the minimum checks, peeks and resets.  A ping, which
 * loads the library, is the administrator's: -EACCES for such a user.
 * The same for fast.lua's library (a sliding log's check): called on a
 * preload, and where no one loaded it, check.lua decides instead.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)

static struct redis_kit kit;

static int teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

/* An ACL user "app" (password "pw") with @rules; its spec in @spec. */
static void user(const char *rules, char *spec, size_t len)
{
	char cmd[160];

	redis_kit_need(&kit);
	assert_true(redis_kit_cmd(&kit, NULL, 0, "ACL DELUSER app") >= 0);
	/* The rules as separate arguments: the format splits at spaces. */
	snprintf(cmd, sizeof(cmd), "ACL SETUSER app on >pw %s", rules);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, cmd), 0);
	snprintf(spec, len, "redis://app:pw@127.0.0.1:%d?timeout=2s", kit.port);
}

/* What an administrator does: any check as the default user loads. */
static void admin_loads(void)
{
	struct tk_limiter *l;
	struct tk_decision d;

	assert_int_equal(tk_limiter_open(&l, "gcra:10/s",
					 redis_kit_slow(kit.spec), NULL),
			 0);
	assert_int_equal(tk_limiter_check(l, "admin", 5, 1, &d), 0);
	tk_limiter_close(l);
}

static void flush_functions(void)
{
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FUNCTION FLUSH"), 0);
}

static void test_preloaded(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_request req[8];
	struct tk_decision out[8];
	int rcs[8], i, n;
	char spec[128];
	struct tk_store *s;
	struct tk_store_ping p;

	(void)state;
	user("~* +@all -function -script", spec, sizeof(spec));
	flush_functions();
	admin_loads();
	/* Each limiter its own store: a new connection each. */
	for (n = 0; n < 3; n++) {
		assert_int_equal(
			tk_limiter_open(&l, "fixed-window:5/1h", spec, NULL),
			0);
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, 4 - n);
		tk_limiter_close(l);
	}
	assert_int_equal(
		tk_limiter_open(&l, "gcra:100/s,burst=100", spec, NULL), 0);
	for (i = 0; i < 8; i++) {
		req[i].key = "batch";
		req[i].key_len = 5;
		req[i].cost = 1;
	}
	tk_limiter_check_many(l, req, 8, out, rcs);
	for (i = 0; i < 8; i++) {
		assert_int_equal(rcs[i], 0);
		assert_true(out[i].allowed);
	}
	tk_limiter_close(l);
	/* A ping loads (an administrator's preload): not this user's. */
	assert_int_equal(tk_store_open(&s, spec, NULL), 0);
	assert_int_equal(tk_store_ping(s, &p, sizeof(p)), -EACCES);
	tk_store_close(s);
}

static void test_not_loaded(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char spec[128];

	(void)state;
	user("~* +@all -function -script", spec, sizeof(spec));
	flush_functions();
	assert_int_equal(tk_limiter_open(&l, "gcra:10/s", spec, NULL), 0);
	assert_int_equal(tk_limiter_check(l, "n", 1, 1, &d), -EACCES);
	assert_int_equal(tk_limiter_check(l, "n", 1, 1, &d), -EACCES);
	/* Loaded meanwhile: the same connection calls it. */
	admin_loads();
	assert_int_equal(tk_limiter_check(l, "n", 1, 1, &d), 0);
	assert_true(d.allowed);
	/* Lost again (FUNCTION FLUSH): the same answer, then back. */
	flush_functions();
	assert_int_equal(tk_limiter_check(l, "n", 1, 1, &d), -EACCES);
	admin_loads();
	assert_int_equal(tk_limiter_check(l, "n", 1, 1, &d), 0);
	tk_limiter_close(l);
}

/* The minimal ACL of tk_store_open(3), for the default key_prefix. */
#define MINIMAL_ACL                                                            \
	"~tk:* +fcall +evalsha +get +mget +set +del +pttl +time +strlen "      \
	"+getrange +exists +append +pexpire +setrange"

/* Field @field ("calls=", "rejected_calls=") of @cmd's line of INFO
 * commandstats: the server's count. */
static long long cmdstat(const char *cmd, const char *field)
{
	char info[16384], want[64];
	const char *at, *end;

	assert_int_equal(
		redis_kit_cmd(&kit, info, sizeof(info), "INFO commandstats"),
		0);
	snprintf(want, sizeof(want), "cmdstat_%s:", cmd);
	at = strstr(info, want);
	if (!at)
		return 0;
	end = strchr(at, '\n');
	at = strstr(at, field);
	return at && (!end || at < end) ? atoll(at + strlen(field)) : 0;
}

static long long calls(const char *cmd)
{
	return cmdstat(cmd, "calls=");
}

/* An administrator's preload (tk_store_ping(3)): both libraries. */
static void admin_pings(void)
{
	struct tk_store *st;
	struct tk_store_ping p;

	assert_int_equal(tk_store_open(&st, redis_kit_slow(kit.spec), NULL), 0);
	assert_int_equal(tk_store_ping(st, &p, sizeof(p)), 0);
	tk_store_close(st);
}

/* A sliding log and a sliding window of 3 an hour: fast.lua takes both. */
#define LOG "sliding-log:3/1h"
#define RING "sliding-window:3/1h,buckets=10"

/* Four checks of @policy (LOG or RING) as the user of @spec; the STRLEN
 * calls they made (fast.lua's, not check.lua's). */
static long long fast_checks(const char *spec, const char *policy,
			     const char *key)
{
	struct tk_limiter *l;
	struct tk_decision d;
	long long was = calls("strlen");
	int i;

	assert_int_equal(tk_limiter_open(&l, policy, spec, NULL), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(tk_limiter_check(l, key, strlen(key), 1, &d),
				 0);
		assert_int_equal(d.allowed, i < 3);
		assert_int_equal(d.remaining, i < 3 ? 2 - i : 0);
	}
	tk_limiter_close(l);
	return calls("strlen") - was;
}

/* A sliding log's check that drops a stamp as user "app" (on its own
 * clock: server_time=0): fast.lua writes how many it dropped
 * (SETRANGE).  The SETRANGE calls made. */
static long long log_drop(void)
{
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_clock *c;
	char own[192];
	long long was = calls("setrange");
	int i;

	snprintf(own, sizeof(own), "redis://app:pw@127.0.0.1:%d?server_time=0",
		 kit.port);
	redis_kit_limiter(&l, &c, "sliding-log:3/1s", own, T0);
	for (i = 0; i < 3; i++) {
		tk_clock_set(c, T0 + (uint64_t)i * 600 * MS);
		assert_int_equal(tk_limiter_check(l, "d", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, i < 2 ? 2 - i : 1);
	}
	tk_limiter_close(l);
	tk_clock_free(c);
	return calls("setrange") - was;
}

static void test_fast(void **state)
{
	char spec[128];
	long long refused;

	(void)state;
	user("~* +@all -function -script", spec, sizeof(spec));
	/* Only check.lua's library (a check loaded it), not this user's to
	 * load fast.lua's: check.lua decides. */
	flush_functions();
	admin_loads();
	refused = cmdstat("function|load", "rejected_calls=");
	assert_int_equal(fast_checks(spec, LOG, "f1"), 0);
	/* Tried once on the connection, not at every check. */
	assert_int_equal(cmdstat("function|load", "rejected_calls=") - refused,
			 1);
	/* Preloaded by a ping: fast.lua decides every check. */
	flush_functions();
	admin_pings();
	assert_int_equal(fast_checks(spec, LOG, "f2"), 4);
	/* Loaded: a connection that found it refused uses it once new. */
	flush_functions();
	admin_loads();
	assert_int_equal(fast_checks(spec, LOG, "f3"), 0);
	admin_pings();
	assert_int_equal(fast_checks(spec, LOG, "f4"), 4);
}

static void test_minimal_acl(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char spec[128];

	(void)state;
	user(MINIMAL_ACL, spec, sizeof(spec));
	flush_functions();
	admin_pings();
	assert_int_equal(tk_limiter_open(&l, "gcra:10/s,burst=2", spec, NULL),
			 0);
	assert_int_equal(tk_limiter_check(l, "m", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_peek(l, "m", 1, &d), 0);
	assert_int_equal(d.remaining, 1);
	assert_int_equal(tk_limiter_reset(l, "m", 1), 0);
	assert_int_equal(tk_limiter_peek(l, "m", 1, &d), 0);
	assert_int_equal(d.remaining, 2);
	tk_limiter_close(l);
	/* server_time=1 reads TIME. */
	strcat(spec, "&server_time=1");
	assert_int_equal(tk_limiter_open(&l, "fixed-window:5/1h", spec, NULL),
			 0);
	assert_int_equal(tk_limiter_check(l, "w", 1, 1, &d), 0);
	assert_true(d.allowed);
	tk_limiter_close(l);
	/* A sliding log and a sliding window: fast.lua's commands, on
	 * either clock. */
	assert_int_equal(fast_checks(spec, LOG, "s1"), 4);
	assert_int_equal(fast_checks(spec, RING, "r1"), 4);
	*strstr(spec, "&server_time=1") = '\0';
	assert_int_equal(fast_checks(spec, LOG, "s2"), 4);
	assert_int_equal(fast_checks(spec, RING, "r2"), 4);
	assert_int_equal(log_drop(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preloaded),
		cmocka_unit_test(test_not_loaded),
		cmocka_unit_test(test_minimal_acl),
		cmocka_unit_test(test_fast),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
