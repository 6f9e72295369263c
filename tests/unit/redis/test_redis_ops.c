/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_ops.c - a Redis store set up wrong says what is wrong, on
 * real redis-servers the test starts (tests/kit/redis-kit.c): a spec
 * pointed at a replica is -EROFS, a database the server lacks -ENXIO, no
 * descriptor left for the socket -EMFILE; none is the "incompatible
 * state" of -EPROTO or the -ECONNREFUSED of a server that is not there.
 * And tk_store_ping() reads the eviction policy, or says it could not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

static struct redis_kit kit;

static int ping(const char *spec)
{
	struct tk_store_ping p;
	struct tk_store *s;
	int rc;

	assert_rc(tk_store_open(&s, redis_kit_slow(spec), NULL), 0);
	rc = tk_store_ping(s, &p, sizeof(p));
	tk_store_close(s);
	return rc;
}

static int check(const char *spec)
{
	struct tk_limiter *l;
	struct tk_decision d;
	int rc;

	assert_rc(tk_limiter_open(&l, "gcra:10/s", redis_kit_slow(spec), NULL),
		  0);
	rc = tk_limiter_check(l, "k", 1, 1, &d);
	tk_limiter_close(l);
	return rc;
}

/* A single-node spec pointed at a replica: its READONLY named. */
static void test_replica(void **state)
{
	struct redis_kit replica = { 0 };
	char port[16];

	(void)state;
	redis_kit_need(&kit);
	snprintf(port, sizeof(port), "%d", kit.port);
	replica.extra[0] = "--replicaof";
	replica.extra[1] = "127.0.0.1";
	replica.extra[2] = port;
	assert_int_equal(redis_kit_start(&replica, NULL), 0);
	assert_rc(ping(replica.spec), -EROFS);
	assert_rc(check(replica.spec), -EROFS);
	/* Also once the master loaded the library, which replicates. */
	assert_rc(check(kit.spec), 0);
	assert_rc(check(replica.spec), -EROFS);
	assert_non_null(strstr(tk_strerror(-EROFS), "replica"));
	assert_string_equal(tk_strerrorname(-EROFS), "EROFS");
	redis_kit_destroy(&replica);
}

/* SELECT of a database the server does not have (16 by default). */
static void test_wrong_db(void **state)
{
	char spec[160];

	(void)state;
	redis_kit_need(&kit);
	snprintf(spec, sizeof(spec), "%s/15", kit.spec);
	assert_rc(ping(spec), 0);
	assert_rc(check(spec), 0);
	snprintf(spec, sizeof(spec), "%s/16", kit.spec);
	assert_rc(ping(spec), -ENXIO);
	assert_rc(check(spec), -ENXIO);
	snprintf(spec, sizeof(spec), "%s/1073741823", kit.spec);
	assert_rc(check(spec), -ENXIO);
	assert_non_null(strstr(tk_strerror(-ENXIO), "database"));
}

/* A cluster node has database 0 only: SELECT 1 is refused there too. */
static void test_db_on_cluster_node(void **state)
{
	struct redis_kit node = { 0 };
	unsigned int seed = (unsigned int)getpid();
	char spec[160];

	(void)state;
	redis_kit_need(&kit);
	assert_int_equal(redis_kit_start_node(&node, &seed), 0);
	snprintf(spec, sizeof(spec), "%s/1", node.spec);
	assert_rc(ping(spec), -ENXIO);
	redis_kit_destroy(&node);
}

/*
 * In a child whose descriptors are all taken: a connect over TCP and
 * over a unix socket.  The exit status says what went wrong.
 */
static int exhausted(const char *tcp)
{
	const char *specs[2] = { tcp, "redis+unix:///nonexistent/tk.sock" };
	struct tk_limiter *l[2];
	struct tk_decision d;
	struct rlimit rl = { 64, 64 };
	int i, rc;

	for (i = 0; i < 2; i++)
		if (tk_limiter_open(&l[i], "gcra:10/s", specs[i], NULL))
			return 10 + i;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 20;
	while (dup(0) >= 0)
		;
	if (errno != EMFILE)
		return 21;
	for (i = 0; i < 2; i++) {
		rc = tk_limiter_check(l[i], "k", 1, 1, &d);
		if (rc != -EMFILE) {
			fprintf(stderr, "# %s: %s\n", specs[i],
				tk_strerrorname(rc));
			return 30 + i;
		}
	}
	return 0;
}

static void test_fd_exhaustion(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	redis_kit_need(&kit);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(exhausted(redis_kit_slow(kit.spec)));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_non_null(strstr(tk_strerror(-EMFILE), "open files"));
}

static void policy_is(const char *spec, const char *want)
{
	struct tk_store_ping p;
	struct tk_store *s;

	memset(&p, 'X', sizeof(p));
	assert_rc(tk_store_open(&s, redis_kit_slow(spec), NULL), 0);
	assert_rc(tk_store_ping(s, &p, sizeof(p)), 0);
	tk_store_close(s);
	assert_string_equal(p.maxmemory_policy, want);
}

/* Any policy but noeviction may drop live states: ping names it. */
static void test_eviction_policy(void **state)
{
	char spec[160];

	(void)state;
	redis_kit_need(&kit);
	policy_is(kit.spec, "noeviction");
	assert_rc(redis_kit_cmd(&kit, NULL, 0,
				"CONFIG SET maxmemory-policy allkeys-lru"),
		  0);
	policy_is(kit.spec, "allkeys-lru");
	/* A user the ACL denies CONFIG: the ping works, the policy is "". */
	assert_rc(redis_kit_cmd(&kit, NULL, 0,
				"ACL SETUSER noconfig on >pw ~* +@all -config"),
		  0);
	snprintf(spec, sizeof(spec), "redis://noconfig:pw@127.0.0.1:%d",
		 kit.port);
	policy_is(spec, "");
	assert_rc(redis_kit_cmd(&kit, NULL, 0,
				"CONFIG SET maxmemory-policy noeviction"),
		  0);
	policy_is("memory", "");
}

static int teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replica),
		cmocka_unit_test(test_wrong_db),
		cmocka_unit_test(test_db_on_cluster_node),
		cmocka_unit_test(test_fd_exhaustion),
		cmocka_unit_test(test_eviction_policy),
	};

	return cmocka_run_group_tests_name("redis_ops", tests, NULL, teardown);
}
