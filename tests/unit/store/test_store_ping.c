/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_ping.c - tk_store_ping() against real redis-servers that the
 * test starts itself (tests/kit/redis-kit.c): the version is the one
 * redis-cli reads from INFO server, the engine the one the checks then
 * use (FCALL on Redis 7; EVALSHA where the FUNCTION command is renamed
 * away), a stopped server is -ECONNREFUSED, a wrong password -EACCES and
 * no field ever holds the password.  The memory store and zones answer
 * without a server.  Without redis-server the Redis tests are skipped.
 */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "workers.h"

#define PASSWORD "pa55-Secret-word"

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void start(struct redis_kit *k, const char *password)
{
	if (!redis_kit_available())
		skip();
	assert_int_equal(redis_kit_start(k, password), 0);
}

/* The value of @field in `redis-cli -p PORT INFO @section`, or "". */
static void cli_info(const struct redis_kit *k, const char *section,
		     const char *field, char *out, size_t len)
{
	char cmd[256], line[512];
	size_t n = strlen(field);
	FILE *f;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "%s -p %d %s%s INFO %s", REDIS_CLI, k->port,
		 k->password[0] ? "--no-auth-warning -a " : "", k->password,
		 section);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			line[strcspn(line, "\r\n")] = '\0';
			snprintf(out, len, "%s", line + n + 1);
		}
	pclose(f);
}

/* Calls of @cmd counted by the server (INFO commandstats). */
static long calls(const struct redis_kit *k, const char *cmd)
{
	char field[64], v[256];

	snprintf(field, sizeof(field), "cmdstat_%s", cmd);
	cli_info(k, "commandstats", field, v, sizeof(v));
	return strncmp(v, "calls=", 6) == 0 ? atol(v + 6) : 0;
}

/*
 * The ping of @k's server names @engine, and a check then runs by @used
 * (the command the server counts) and @unused is called at most
 * @unused_max times.
 */
static void engine_is(struct redis_kit *k, const struct tk_store_ping *p,
		      const char *engine, const char *used, const char *unused,
		      long unused_max)
{
	struct tk_limiter *l;
	struct tk_decision d;

	assert_string_equal(p->engine, engine);
	assert_rc(
		tk_limiter_open(&l, "gcra:10/s", redis_kit_slow(k->spec), NULL),
		0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	tk_limiter_close(l);
	assert_true(calls(k, used) >= 1);
	assert_true(calls(k, unused) <= unused_max);
	redis_kit_destroy(k);
}

static void ping_spec(const char *spec, struct tk_store_ping *p, int want)
{
	struct tk_store *s;

	memset(p, 0, sizeof(*p));
	assert_rc(tk_store_open(&s, redis_kit_slow(spec), NULL), 0);
	assert_rc(tk_store_ping(s, p, sizeof(*p)), want);
	tk_store_close(s);
}

static void test_redis_functions(void **state)
{
	struct redis_kit k = { 0 };
	struct tk_store_ping p;
	char want[64], server[64];

	(void)state;
	start(&k, NULL);
	ping_spec(k.spec, &p, 0);
	cli_info(&k, "server", "redis_version", want, sizeof(want));
	assert_true(want[0] != '\0');
	assert_string_equal(p.version, want);
	assert_string_equal(p.store, "redis");
	snprintf(server, sizeof(server), "127.0.0.1:%d", k.port);
	assert_string_equal(p.server, server);
	/* A round trip on loopback: more than nothing, less than 1 s. */
	assert_true(p.rtt > 0 && p.rtt < 1000000000);
	/* Redis 7 has Functions: the checks then run by FCALL. */
	engine_is(&k, &p, "functions", "fcall", "evalsha", 0);
}

/* A server whose FUNCTION command is renamed away: EVALSHA, as checks. */
static void test_redis_evalsha(void **state)
{
	struct redis_kit k = { .extra = { "--rename-command", "FUNCTION",
					  "" } };
	struct tk_store_ping p;

	(void)state;
	start(&k, NULL);
	ping_spec(k.spec, &p, 0);
	/* A connection's first check tries FCALL once. */
	engine_is(&k, &p, "evalsha", "evalsha", "fcall", 1);
}

/* A server that is gone: -ECONNREFUSED (the kernel's answer, not a
 * timeout), before the connect timeout (5 s) could have passed: no
 * waiting, no retrying until it does. */
static void test_redis_refused(void **state)
{
	struct redis_kit k = { 0 };
	struct tk_store_ping p;
	char spec[160];
	uint64_t t;

	(void)state;
	start(&k, NULL);
	redis_kit_stop(&k);
	snprintf(spec, sizeof(spec), "%s?connect_timeout=5s", k.spec);
	memset(&p, 0x5a, sizeof(p));
	t = mono_ms();
	{
		struct tk_store *s;

		assert_rc(tk_store_open(&s, spec, NULL), 0);
		assert_rc(tk_store_ping(s, &p, sizeof(p)), -ECONNREFUSED);
		tk_store_close(s);
	}
	assert_true(mono_ms() - t < 5000);
	/* Untouched on failure. */
	assert_int_equal((unsigned char)p.engine[0], 0x5a);
	redis_kit_destroy(&k);
}

/* AUTH: the right password pings, a wrong one is -EACCES; no field of
 * the answer holds the password. */
static void test_redis_password(void **state)
{
	struct redis_kit k = { 0 };
	struct tk_store_ping p;
	char spec[192], want[64];

	(void)state;
	start(&k, PASSWORD);
	snprintf(spec, sizeof(spec), "redis://default:%s@127.0.0.1:%d",
		 PASSWORD, k.port);
	ping_spec(spec, &p, 0);
	cli_info(&k, "server", "redis_version", want, sizeof(want));
	assert_string_equal(p.version, want);
	assert_null(memmem(&p, sizeof(p), PASSWORD, 5));
	assert_null(memmem(&p, sizeof(p), "default", 7));
	snprintf(spec, sizeof(spec), "redis://default:wrong@127.0.0.1:%d",
		 k.port);
	ping_spec(spec, &p, -EACCES);
	snprintf(spec, sizeof(spec), "redis://127.0.0.1:%d", k.port);
	ping_spec(spec, &p, -EACCES);
	redis_kit_destroy(&k);
}

/* A cluster answers for the master of slot 0: one of its nodes. */
static void test_redis_cluster(void **state)
{
	struct redis_kit nodes[3];
	struct tk_store_ping p;
	char spec[128], node[32], owner[4096], *me, *eol;
	int i, found = 0;

	(void)state;
	if (!redis_cluster_available())
		skip();
	memset(nodes, 0, sizeof(nodes));
	assert_int_equal(redis_cluster_start(nodes, spec, sizeof(spec)), 0);
	ping_spec(spec, &p, 0);
	assert_string_equal(p.store, "redis");
	assert_string_equal(p.engine, "functions");
	for (i = 0; i < 3; i++) {
		snprintf(node, sizeof(node), "127.0.0.1:%d", nodes[i].port);
		if (strcmp(p.server, node) != 0)
			continue;
		/* Its own line of CLUSTER NODES ends with its slots, which
		 * begin at 0. */
		found = 1;
		assert_int_equal(redis_kit_cmd(&nodes[i], owner, sizeof(owner),
					       "CLUSTER NODES"),
				 0);
		me = strstr(owner, "myself");
		assert_non_null(me);
		eol = strchr(me, '\n');
		if (eol)
			*eol = '\0';
		assert_non_null(strstr(me, " 0-"));
	}
	assert_true(found);
	for (i = 0; i < 3; i++)
		redis_kit_destroy(&nodes[i]);
}

/* Stores in this host: the library answers, no round trip. */
static void test_local(void **state)
{
	char dir[] = "/tmp/tk-ping-XXXXXX";
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store_ping p;
	struct tk_store *s;

	(void)state;
	ping_spec("memory", &p, 0);
	assert_string_equal(p.store, "memory");
	assert_string_equal(p.engine, "memory");
	assert_string_equal(p.version, tk_version());
	assert_string_equal(p.server, "");
	assert_int_equal(p.rtt, 0);

	assert_int_equal(kit_zone_dir(dir), 0);
	ping_spec("shm:ping", &p, 0);
	assert_string_equal(p.store, "shm");
	assert_string_equal(p.engine, "zone");
	assert_string_equal(p.version, tk_version());
	assert_int_equal(p.rtt, 0);
	o.flags = TK_OPT_ZONE_NO_CREATE;
	assert_rc(tk_store_open(&s, "shm:ping", &o), 0);
	assert_rc(tk_store_ping(s, NULL, sizeof(p)), -EINVAL);
	assert_rc(tk_store_ping(NULL, &p, sizeof(p)), -EINVAL);
	/* A smaller, older structure gets its prefix only. */
	memset(&p, 0x5a, sizeof(p));
	assert_rc(tk_store_ping(s, &p, offsetof(struct tk_store_ping, engine)),
		  0);
	assert_string_equal(p.store, "shm");
	assert_int_equal((unsigned char)p.engine[0], 0x5a);
	tk_store_close(s);
	assert_rc(tk_zone_destroy("ping"), 0);
	assert_int_equal(kit_zone_dir_remove(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redis_functions),
		cmocka_unit_test(test_redis_evalsha),
		cmocka_unit_test(test_redis_refused),
		cmocka_unit_test(test_redis_password),
		cmocka_unit_test(test_redis_cluster),
		cmocka_unit_test(test_local),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
