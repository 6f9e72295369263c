/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_sentinel.c - redis+sentinel:// on real servers
 * (tests/kit/redis-kit.c): one master, one replica (--replicaof), one
 * sentinel (redis-server CONF --sentinel; quorum 1,
 * down-after-milliseconds 1000, failover-timeout 5000).
 *
 * - The spec: its forms parsed (white-box), its errors, its passwords
 *   never shown (tk_spec_redact(), the parser's messages).
 * - A sentinel that knows no such master: -EHOSTUNREACH, and
 *   tk_store_probe() says why; no sentinel reachable: -ECONNREFUSED, or
 *   a degraded decision under TK_FAIL_OPEN.
 * - Failover: a thread checks continuously (timeout=200ms); the master
 *   is killed (kill -9); once the sentinel names the replica as the
 *   master, every check begun SETTLE_MS later succeeds (a reply later
 *   than 200 ms on a shared machine aside: -ETIMEDOUT, at most 1%), and
 *   a fresh key's decisions are exact on the new master (its limit
 *   admitted, no more, its state there).  Then the old master restarts
 *   and the sentinel makes it a replica: a store that last used it
 *   before the kill meets READONLY there, which sends it to the
 *   sentinels and its check to the new master.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "redis/spec.h"

#define EVENTS_MAX 100000
#define SETTLE_MS 1000 /* checks begun this long after promotion pass */
#define AFTER_N 50     /* and at least this many of them are made */
#define WAIT_MS 30000  /* for the servers: no bound on speed */

static struct redis_kit master, replica, sentinel;
static char conf_dir[64], conf[96], master_port[16];

struct event {
	unsigned long long start;
	int rc;
};

static struct event ev[EVENTS_MAX];
static atomic_size_t n_ev;
static atomic_int stop;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A command on the sentinel (or any kit), its reply; NULL on failure. */
static redisReply *ask(const struct redis_kit *k, const char *fmt, ...)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", k->port, tv);
	redisReply *r = NULL;
	va_list ap;

	if (c && !c->err) {
		redisSetTimeout(c, tv);
		va_start(ap, fmt);
		r = redisvCommand(c, fmt, ap);
		va_end(ap);
	}
	redisFree(c);
	return r;
}

/* The master's port as the sentinel names it; 0: none or no answer. */
static int named_master(void)
{
	redisReply *r = ask(&sentinel, "SENTINEL get-master-addr-by-name m");
	int port = 0;

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING)
		port = atoi(r->element[1]->str);
	freeReplyObject(r);
	return port;
}

/* Does INFO replication of @k hold @text? */
static int replication_says(const struct redis_kit *k, const char *text)
{
	char info[4096];

	return redis_kit_cmd(k, info, sizeof(info), "INFO replication") == 0 &&
	       strstr(info, text) != NULL;
}

/* The sentinel knows the replica, not down: a failover can happen. */
static int sentinel_sees_replica(void)
{
	redisReply *r = ask(&sentinel, "SENTINEL replicas m");
	int ok = 0;
	size_t i;

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		/* A flat list of names and values. */
		for (i = 0; i + 1 < r->element[0]->elements; i += 2)
			if (strcmp(r->element[0]->element[i]->str, "flags") ==
			    0)
				ok = strcmp(r->element[0]->element[i + 1]->str,
					    "slave") == 0;
	}
	freeReplyObject(r);
	return ok;
}

static void wait_until(int (*cond)(void), const char *what)
{
	unsigned long long t0 = redis_kit_mono_ms();

	while (!cond()) {
		if (redis_kit_mono_ms() - t0 > WAIT_MS)
			fail_msg("not within %d ms: %s", WAIT_MS, what);
		sleep_ms(20);
	}
}

static int replica_up(void)
{
	return replication_says(&replica, "master_link_status:up");
}

static int setup(void **state)
{
	FILE *f;

	(void)state;
	if (!redis_kit_available())
		return 0;
	if (redis_kit_start(&master, NULL) != 0)
		return -1;
	snprintf(master_port, sizeof(master_port), "%d", master.port);
	replica.extra[0] = "--replicaof";
	replica.extra[1] = "127.0.0.1";
	replica.extra[2] = master_port;
	if (redis_kit_start(&replica, NULL) != 0)
		return -1;
	snprintf(conf_dir, sizeof(conf_dir), "/tmp/tk-sentinel-XXXXXX");
	if (!mkdtemp(conf_dir))
		return -1;
	snprintf(conf, sizeof(conf), "%s/sentinel.conf", conf_dir);
	f = fopen(conf, "w");
	if (!f)
		return -1;
	fprintf(f,
		"sentinel monitor m 127.0.0.1 %d 1\n"
		"sentinel down-after-milliseconds m 1000\n"
		"sentinel failover-timeout m 5000\n",
		master.port);
	fclose(f);
	sentinel.conf = conf;
	sentinel.extra[0] = "--sentinel";
	return redis_kit_start(&sentinel, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&sentinel);
	redis_kit_destroy(&replica);
	redis_kit_destroy(&master);
	if (conf_dir[0]) {
		unlink(conf);
		rmdir(conf_dir);
	}
	return 0;
}

static void need_servers(void)
{
	if (!redis_kit_available()) {
		if (getenv("TK_REQUIRE_REDIS"))
			fail_msg("no redis-server (TK_REQUIRE_REDIS set)");
		skip();
	}
}

static const struct {
	const char *spec;
	int want;
} cases[] = {
	{ "redis+sentinel://h/m", 0 },
	{ "redis+sentinel://h:1,h:2,h:3/m?server_time=0", 0 },
	{ "redis+sentinel://h", -EINVAL },     /* no name */
	{ "redis+sentinel://h/", -EINVAL },    /* an empty name */
	{ "redis+sentinel:///m", -EINVAL },    /* no host */
	{ "redis+sentinel://h:0/m", -EINVAL }, /* a port */
	{ "redis+sentinel://h,/m", -EINVAL },  /* an empty host */
	{ "redis+sentinel://h/m?db=1&db=2", -EINVAL },
	{ "redis+sentinel://h/m?db=1073741824", -EINVAL },
	{ "redis+sentinel://u:s3cr@h/m?nope=1", -EINVAL },
	{ "redis+sentinel://u:s3cr@h/m?sentinel_password=t0p%", -EINVAL },
	/* db= and sentinel_password= are the sentinel form's only. */
	{ "redis://h?db=1", -EINVAL },
	{ "redis://h?sentinel_password=s3cr", -EINVAL },
	{ "redis+cluster://h?sentinel_password=s3cr", -EINVAL },
};

static void test_spec(void **state)
{
	struct tk__redis_spec s;
	char why[256], shown[256];
	size_t i;
	int rc;

	(void)state;
	assert_rc(tk__redis_spec_parse(
			  "redis+sentinel://app:s3cr%40t@10.0.0.1,[::1]:26380/"
			  "my%2Fmaster?db=3&sentinel_password=t0p%26&"
			  "timeout=200ms&key_prefix=k:",
			  &s, why, sizeof(why)),
		  0);
	assert_true(s.sentinel);
	assert_false(s.cluster);
	assert_int_equal(s.seeds, 2);
	assert_string_equal(s.seed[0].host, "10.0.0.1");
	assert_int_equal(s.seed[0].port, 26379);
	assert_string_equal(s.seed[1].host, "::1");
	assert_int_equal(s.seed[1].port, 26380);
	assert_string_equal(s.master_name, "my/master");
	assert_string_equal(s.user, "app");
	assert_string_equal(s.password, "s3cr@t");
	assert_true(s.has_sentinel_password);
	assert_string_equal(s.sentinel_password, "t0p&");
	assert_int_equal(s.db, 3);
	assert_true(s.timeout == UINT64_C(200000000));
	assert_string_equal(s.key_prefix, "k:");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = tk__redis_spec_parse(cases[i].spec, &s, why, sizeof(why));
		if (rc != cases[i].want)
			fail_msg("%s: %d (%s)", cases[i].spec, rc, why);
		/* No message quotes a password. */
		assert_null(strstr(why, "s3cr"));
		assert_null(strstr(why, "t0p"));
	}
	assert_rc(tk_store_validate("redis+sentinel://h:1/m", why, sizeof(why)),
		  0);
	/* Shown: neither the data nodes' password nor the sentinels'. */
	tk_spec_redact("redis+sentinel://app:s3cr@t@h:1/m?"
		       "sentinel_password=t0p&timeout=1s&sentinel_password=t0p",
		       shown, sizeof(shown));
	assert_null(strstr(shown, "s3cr"));
	assert_null(strstr(shown, "t0p"));
	assert_non_null(strstr(shown, "sentinel_password=***&timeout=1s"));
	tk_spec_redact("redis+sentinel://h:1/m?sentinel_password=t0p", shown,
		       sizeof(shown));
	assert_string_equal(shown,
			    "redis+sentinel://h:1/m?sentinel_password=***");
}

/* A limiter of @policy on a store of @spec (open), under @fail. */
static struct tk_limiter *limiter(struct tk_store **st, const char *spec,
				  const char *policy, unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	assert_rc(tk_store_open(st, spec, NULL), 0);
	o.store = *st;
	o.fail = fail;
	assert_rc(tk_limiter_open(&l, policy, NULL, &o), 0);
	return l;
}

/* One check on a fresh store of @spec under @fail: its result, and
 * the decision in *@d. */
static int check_on(const char *spec, unsigned int fail, struct tk_decision *d)
{
	struct tk_limiter *l;
	struct tk_store *st;
	int rc;

	l = limiter(&st, spec, "gcra:10/1s", fail);
	rc = tk_limiter_check(l, "k", 1, 1, d);
	tk_limiter_close(l);
	tk_store_close(st);
	return rc;
}

static void test_unknown_master(void **state)
{
	struct tk_decision d;
	char spec[160], why[512];

	(void)state;
	need_servers();
	snprintf(spec, sizeof(spec),
		 "redis+sentinel://127.0.0.1:%d/nosuch?connect_timeout=2s&"
		 "timeout=2s",
		 sentinel.port);
	assert_rc(check_on(spec, TK_FAIL_ERROR, &d), -EHOSTUNREACH);
	assert_string_equal(tk_strerrorname(-EHOSTUNREACH), "EHOSTUNREACH");
	assert_rc(tk_store_probe(spec, NULL, why, sizeof(why)), -EHOSTUNREACH);
	assert_non_null(strstr(why, "know no master"));
	/* sentinel_password= goes to the sentinels, which have none. */
	snprintf(spec, sizeof(spec),
		 "redis+sentinel://127.0.0.1:%d/m?sentinel_password=t0p&"
		 "connect_timeout=2s&timeout=2s",
		 sentinel.port);
	assert_rc(check_on(spec, TK_FAIL_ERROR, &d), -EACCES);
	/* No sentinel at all (nothing listens on port 1, which only root
	 * may bind): the connection's error, as any store's. */
	snprintf(spec, sizeof(spec),
		 "redis+sentinel://127.0.0.1:1/m?connect_timeout=2s");
	assert_rc(check_on(spec, TK_FAIL_ERROR, &d), -ECONNREFUSED);
	assert_rc(check_on(spec, TK_FAIL_OPEN, &d), 0);
	assert_true(d.degraded && d.allowed);
}

static void *work(void *arg)
{
	struct tk_limiter *l = arg;
	struct tk_decision d;
	size_t i;

	while (!atomic_load(&stop) && (i = atomic_load(&n_ev)) < EVENTS_MAX) {
		ev[i].start = redis_kit_mono_ms();
		ev[i].rc = tk_limiter_check(l, "steady", 6, 1, &d);
		atomic_store(&n_ev, i + 1);
		sleep_ms(2);
	}
	return NULL;
}

static int promoted(void)
{
	return named_master() == replica.port;
}

static int sees_replica(void)
{
	return sentinel_sees_replica();
}

static int old_master_demoted(void)
{
	return replication_says(&master, "role:slave") &&
	       replication_says(&master, "master_link_status:up");
}

/* After promotion at @t: every check begun SETTLE_MS later passed. */
static void assert_settled(unsigned long long t)
{
	size_t i, n = atomic_load(&n_ev), after = 0, late = 0;

	for (i = 0; i < n; i++) {
		if (ev[i].start < t + SETTLE_MS)
			continue;
		after++;
		if (ev[i].rc == -ETIMEDOUT)
			late++;
		else if (ev[i].rc != 0)
			fail_msg("check %zu, %llu ms after promotion: %s", i,
				 ev[i].start - t, tk_strerrorname(ev[i].rc));
	}
	assert_true(after >= AFTER_N);
	assert_true(late * 100 <= after);
	/* A measure for the record, not a bound. */
	for (i = 0; i < n && (ev[i].start < t || ev[i].rc); i++)
		;
	if (i < n)
		print_message("# first success %lld ms after the sentinel "
			      "named the new master; %zu checks after the "
			      "settling time, %zu late\n",
			      (long long)ev[i].start - (long long)t, after,
			      late);
}

/* A fresh key's checks on the new master: exactly its limit admitted,
 * and its state there. */
static void assert_exact(struct tk_limiter *l)
{
	struct tk_decision d;
	long long before = redis_kit_cmd(&replica, NULL, 0, "DBSIZE");
	int i, admitted = 0, rc;

	assert_true(before >= 0);
	for (i = 0; i < 30; i++) {
		do /* a reply late on a shared machine: not a decision */
			rc = tk_limiter_check(l, "fresh", 5, 1, &d);
		while (rc == -ETIMEDOUT);
		assert_rc(rc, 0);
		admitted += d.allowed;
	}
	assert_int_equal(admitted, 20);
	assert_true(redis_kit_cmd(&replica, NULL, 0, "DBSIZE") == before + 1);
}

static void test_failover(void **state)
{
	struct tk_limiter *l, *exact, *idle;
	struct tk_store *st, *st_exact, *st_idle;
	struct tk_decision d;
	unsigned long long t, t_open;
	struct tk_stats stats;
	char spec[160], base[96];
	pthread_t th;

	(void)state;
	need_servers();
	wait_until(replica_up, "replica linked to the master");
	wait_until(sees_replica, "the sentinel knows the replica");
	assert_int_equal(named_master(), master.port);
	snprintf(base, sizeof(base), "redis+sentinel://127.0.0.1:%d/m",
		 sentinel.port);
	snprintf(spec, sizeof(spec), "%s?timeout=200ms", base);
	t_open = redis_kit_mono_ms();
	l = limiter(&st, spec, "gcra:1000000/1s", TK_FAIL_ERROR);
	/* A refill of one per 10 min (6/1h): exactly 20 of 30 quick checks. */
	exact = limiter(&st_exact, redis_kit_slow(base),
			"token-bucket:capacity=20,refill=6/1h", TK_FAIL_ERROR);
	idle = limiter(&st_idle, redis_kit_slow(base), "gcra:1000000/1s",
		       TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "steady", 6, 1, &d), 0);
	assert_rc(tk_limiter_check(idle, "idle", 4, 1, &d), 0);
	assert_int_equal(pthread_create(&th, NULL, work, l), 0);
	sleep_ms(300);
	redis_kit_kill(&master);
	wait_until(promoted, "the sentinel names the replica as master");
	t = redis_kit_mono_ms();
	while (redis_kit_mono_ms() < t + SETTLE_MS ||
	       atomic_load(&n_ev) < AFTER_N + 1)
		sleep_ms(50);
	/* AFTER_N checks begun after the settling time. */
	while (1) {
		size_t i, n = atomic_load(&n_ev), after = 0;

		for (i = 0; i < n; i++)
			after += ev[i].start >= t + SETTLE_MS;
		if (after >= AFTER_N || n == EVENTS_MAX)
			break;
		sleep_ms(50);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	assert_settled(t);
	/* The sentinels asked again after the failover, but at most once
	 * per 100 ms, however often the checks failed meanwhile. */
	assert_rc(tk_store_stats(st, &stats, sizeof(stats)), 0);
	assert_true(stats.redis_refreshes >= 2);
	if (stats.redis_refreshes > (redis_kit_mono_ms() - t_open) / 100 + 2)
		fail_msg("%llu refreshes in %llu ms",
			 (unsigned long long)stats.redis_refreshes,
			 redis_kit_mono_ms() - t_open);
	assert_exact(exact);
	/* The old master back, made a replica: READONLY for a store that
	 * last used it, which asks the sentinels again. */
	assert_int_equal(redis_kit_start(&master, NULL), 0);
	wait_until(old_master_demoted, "the old master a replica");
	assert_rc(tk_limiter_check(idle, "idle", 4, 1, &d), 0);
	tk_limiter_close(l);
	tk_limiter_close(exact);
	tk_limiter_close(idle);
	tk_store_close(st);
	tk_store_close(st_exact);
	tk_store_close(st_idle);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_unknown_master),
		cmocka_unit_test(test_failover),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
