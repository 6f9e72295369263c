/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_deadline.c - a check on the Redis store never blocks longer
 * than the spec's timeout plus its connect_timeout, however many round
 * trips it makes: against real redis-servers (tests/kit/redis-kit.c)
 * behind relays that hold each reply 0.6 timeout
 * (tests/kit/turn-proxy.c), so that no one command times out and only
 * the check's one deadline can stop it.
 *
 * What it proves: a first check on a fresh connection (connect, AUTH,
 * SELECT, the script's load, the script: four replies, 2.4 timeouts one
 * by one) ends with -ETIMEDOUT, or the fail policy's answer, having sent
 * no command after the deadline; so does a batch; a check the deadline
 * leaves room for still passes; on a 3-master cluster whose nodes
 * announce the relays, a MOVED then ASK chain and a group over keys of
 * three masters (one script per master, on warm connections) the same.
 * Skipped without redis-server (or redis-cli, for the cluster).
 *
 * The proof is counted, not timed: the relays count round trips, and a
 * command can leave only after the replies before it were held, so by
 * timeout + connect_timeout (1.25 timeouts) at most MAX_TURNS (3) have
 * begun; without the deadline every one of them (four or more) is made,
 * however loaded the machine.  A late return is a separate, loose
 * bound (10 times the deadline), as is an early one (before the first
 * held reply).
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
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "turn-proxy.h"

#define TIMEOUT_MS 500
#define CONNECT_MS 125
#define DELAY_MS (TIMEOUT_MS * 6 / 10)
/* Turns begun by the deadline: the first, and one after each of the
 * replies held before it. */
#define MAX_TURNS (1 + (TIMEOUT_MS + CONNECT_MS) / DELAY_MS)
/* Not a hang: well past the deadline, for a loaded (or sanitized)
 * machine. */
#define LATE_MS (10 * (TIMEOUT_MS + CONNECT_MS))
/* test_room_left: a deadline far from what its replies are held. */
#define ROOM_TIMEOUT_MS 5000
#define ROOM_DELAY_MS 40

_Static_assert(MAX_TURNS == 3, "4 turns: a first check without deadline");
_Static_assert(4 * ROOM_DELAY_MS > CONNECT_MS, "not room by connect alone");

static struct redis_kit kit;
static struct turn_proxy *proxy; /* to kit */
static struct redis_kit nodes[3];
static struct turn_proxy *node_proxy[3]; /* to nodes[i] */
static char cluster_spec[256];		 /* through the relays */
static int cluster_up;

/* Every node announces its relay's port (the bus stays direct), and
 * every node's view says so. */
static int announce_relays(void)
{
	char view[8192], want[32];
	int i, j, tries, seen;

	for (i = 0; i < 3; i++)
		if (redis_kit_cmd(&nodes[i], NULL, 0,
				  "CONFIG SET cluster-announce-bus-port %d",
				  nodes[i].port + 10000) < 0 ||
		    redis_kit_cmd(&nodes[i], NULL, 0,
				  "CONFIG SET cluster-announce-port %d",
				  turn_proxy_port(node_proxy[i])) < 0)
			return -1;
	for (tries = 0; tries < 200; tries++) {
		for (seen = 0, i = 0; i < 3; i++) {
			if (redis_kit_cmd(&nodes[i], view, sizeof(view),
					  "CLUSTER NODES") < 0)
				continue;
			for (j = 0; j < 3; j++) {
				snprintf(want, sizeof(want), ":%d@",
					 turn_proxy_port(node_proxy[j]));
				seen += strstr(view, want) != NULL;
			}
		}
		if (seen == 9)
			return 0;
		usleep(50000);
	}
	return -1;
}

static int group_setup(void **state)
{
	int i;

	(void)state;
	if (!redis_kit_available())
		return 0;
	if (turn_proxy_redis(&kit, "s3cret", &proxy) != 0)
		return -1;
	if (!redis_cluster_available() ||
	    redis_cluster_start(nodes, cluster_spec, sizeof(cluster_spec)))
		return 0;
	cluster_up = 1;
	for (i = 0; i < 3; i++)
		if (turn_proxy_start(&node_proxy[i], nodes[i].port) != 0)
			return -1;
	if (announce_relays())
		return -1;
	snprintf(cluster_spec, sizeof(cluster_spec),
		 "redis+cluster://127.0.0.1:%d,127.0.0.1:%d?timeout=%dms&"
		 "connect_timeout=%dms",
		 turn_proxy_port(node_proxy[0]), turn_proxy_port(node_proxy[1]),
		 TIMEOUT_MS, CONNECT_MS);
	return 0;
}

static int group_teardown(void **state)
{
	int i;

	(void)state;
	turn_proxy_stop(proxy);
	redis_kit_destroy(&kit);
	for (i = 0; cluster_up && i < 3; i++) {
		turn_proxy_stop(node_proxy[i]);
		redis_kit_destroy(&nodes[i]);
	}
	return 0;
}

static void need_server(void)
{
	if (!kit.pid)
		skip();
}

static void need_cluster(void)
{
	if (!cluster_up)
		skip();
}

/* Also starts counting turns afresh. */
static void delay_all(unsigned int ms)
{
	int i;

	if (proxy) {
		turn_proxy_delay_replies(proxy, ms);
		turn_proxy_reset(proxy);
	}
	for (i = 0; cluster_up && i < 3; i++) {
		turn_proxy_delay_replies(node_proxy[i], ms);
		turn_proxy_reset(node_proxy[i]);
	}
}

/* Turns through every relay since delay_all(). */
static unsigned long turns(void)
{
	unsigned long n = proxy ? turn_proxy_turns(proxy) : 0;
	int i;

	for (i = 0; cluster_up && i < 3; i++)
		n += turn_proxy_turns(node_proxy[i]);
	return n;
}

static struct tk_limiter *limiter(const char *policy, const char *spec,
				  unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	o.fail = fail;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(&l, policy, spec, &o), 0);
	return l;
}

/* The password, db 1 (so SELECT), the timeouts, through the relay. */
static const char *server_spec_timeout(const char *prefix, int timeout_ms)
{
	static char buf[256];

	snprintf(buf, sizeof(buf),
		 "redis://:%s@127.0.0.1:%d/1?timeout=%dms&connect_timeout=%dms"
		 "&key_prefix=%s",
		 kit.password, turn_proxy_port(proxy), timeout_ms, CONNECT_MS,
		 prefix);
	return buf;
}

static const char *server_spec(const char *prefix)
{
	return server_spec_timeout(prefix, TIMEOUT_MS);
}

static unsigned long long since(unsigned long long t0)
{
	return redis_kit_mono_ms() - t0;
}

/* A call begun at @t0 that returned after @ms: stopped by the deadline,
 * no command sent after it. */
static void by_deadline(const char *what, unsigned long long ms)
{
	unsigned long n = turns();

	print_message("# %s, replies held %d ms: %llu ms, %lu turns\n", what,
		      DELAY_MS, ms, n);
	assert_true(n >= 1 && n <= MAX_TURNS);
	assert_true(ms >= DELAY_MS && ms < LATE_MS);
}

/* A call begun at @t0 that answered @rc: -ETIMEDOUT, by the deadline. */
static void timed_out(const char *what, unsigned long long t0, int rc)
{
	unsigned long long ms = since(t0);

	by_deadline(what, ms);
	assert_rc(rc, -ETIMEDOUT);
}

/* A first check: connect, AUTH, SELECT, FUNCTION LOAD, FCALL. */
static void test_first_check(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	unsigned long long t0, ms;
	int rc;

	(void)state;
	need_server();
	delay_all(DELAY_MS);
	l = limiter("gcra:5/s", server_spec("f1:"), TK_FAIL_ERROR);
	t0 = redis_kit_mono_ms();
	rc = tk_limiter_check(l, "k", 1, 1, &d);
	timed_out("first check", t0, rc);
	tk_limiter_close(l);

	/* The fail policy answers by the same deadline. */
	delay_all(DELAY_MS);
	l = limiter("gcra:5/s", server_spec("f2:"), TK_FAIL_OPEN);
	t0 = redis_kit_mono_ms();
	rc = tk_limiter_check(l, "k", 1, 1, &d);
	ms = since(t0);
	by_deadline("first check, failing open", ms);
	assert_rc(rc, 0);
	assert_true(d.allowed && d.degraded);
	tk_limiter_close(l);
	delay_all(0);
}

/* A check the deadline leaves room for passes: the same four replies,
 * held longer together than connect_timeout, far within the deadline. */
static void test_room_left(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;

	(void)state;
	need_server();
	delay_all(ROOM_DELAY_MS);
	l = limiter("gcra:5/s", server_spec_timeout("r1:", ROOM_TIMEOUT_MS),
		    TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed && !d.degraded);
	tk_limiter_close(l);
	delay_all(0);
}

/* A batch on a fresh connection: one deadline for the whole call. */
static void test_batch(void **state)
{
	struct tk_request r[8];
	struct tk_decision d[8];
	struct tk_limiter *l;
	unsigned long long t0, ms;
	int rcs[8], i;

	(void)state;
	need_server();
	for (i = 0; i < 8; i++)
		r[i] = (struct tk_request){ "abcdefgh" + i, 1, 1 };
	delay_all(DELAY_MS);
	l = limiter("gcra:5/s", server_spec("b1:"), TK_FAIL_ERROR);
	t0 = redis_kit_mono_ms();
	tk_limiter_check_many(l, r, 8, d, rcs);
	ms = since(t0);
	by_deadline("first batch of 8", ms);
	for (i = 0; i < 8; i++)
		assert_rc(rcs[i], -ETIMEDOUT);
	tk_limiter_close(l);
	delay_all(0);
}

/* The node (0..2) that serves the slot of @key (EXISTS answers there,
 * MOVED elsewhere), and that slot. */
static int owner(const char *key, size_t len, long long *slot)
{
	int i;

	*slot = redis_kit_cmd(&nodes[0], NULL, 0, "CLUSTER KEYSLOT %b", key,
			      len);
	for (i = 0; i < 3; i++)
		if (redis_kit_cmd(&nodes[i], NULL, 0, "EXISTS %b", key, len) ==
		    0)
			return i;
	fail_msg("no owner for a slot");
	return -1;
}

static void node_id(int i, char *id, size_t len)
{
	assert_true(redis_kit_cmd(&nodes[i], id, len, "CLUSTER MYID") >= 0);
	assert_true(strlen(id) == 40);
}

static void setslot(int at, long long slot, const char *how, const char *id)
{
	assert_true(redis_kit_cmd(&nodes[at], NULL, 0,
				  "CLUSTER SETSLOT %lld %s %s", slot, how,
				  id) >= 0);
}

/*
 * The client's map says A; A has given the slot to B (MOVED), and B is
 * moving it to C (ASK): MOVED, ASK, ASKING and the script, each reply
 * held 0.6 timeout.
 */
static void test_cluster_redirects(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char spec[320], id[3][48];
	unsigned long long t0;
	long long slot;
	int a, b, c, i, rc;

	(void)state;
	need_cluster();
	snprintf(spec, sizeof(spec), "%s&key_prefix=mv:", cluster_spec);
	l = limiter("gcra:5/s", spec, TK_FAIL_ERROR);
	/* Warm: the map and A's connection, its script loaded. */
	assert_rc(tk_limiter_check(l, "hop", 3, 1, &d), 0);
	a = owner("hop", 3, &slot);
	b = (a + 1) % 3;
	c = (a + 2) % 3;
	for (i = 0; i < 3; i++)
		node_id(i, id[i], sizeof(id[i]));
	/* The key's state is on A: deleted, so that the slot can move. */
	assert_rc(tk_limiter_reset(l, "hop", 3), 0);
	setslot(b, slot, "IMPORTING", id[a]);
	setslot(a, slot, "MIGRATING", id[b]);
	setslot(b, slot, "NODE", id[b]);
	setslot(a, slot, "NODE", id[b]);
	setslot(c, slot, "NODE", id[b]);
	setslot(c, slot, "IMPORTING", id[b]);
	setslot(b, slot, "MIGRATING", id[c]);
	delay_all(DELAY_MS);
	t0 = redis_kit_mono_ms();
	rc = tk_limiter_check(l, "hop", 3, 1, &d);
	timed_out("MOVED then ASK", t0, rc);
	delay_all(0);
	/* The slot settles on C, whatever the check left there. */
	setslot(c, slot, "NODE", id[c]);
	setslot(b, slot, "NODE", id[c]);
	setslot(a, slot, "NODE", id[c]);
	tk_limiter_close(l);
}

/* A group over keys of the three masters: one script per slot. */
static void test_cluster_xslot(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_key keys[3];
	char spec[320], names[3][16], hashed[3][20];
	unsigned long long t0;
	long long slot;
	int i, found = 0, used[3] = { 0 }, node, rc;

	(void)state;
	need_cluster();
	/* A composite's key is "{" 0x80 0x00 KEY "}" DIM: the slot is the
	 * hash of what is between the braces. */
	for (i = 0; found < 3 && i < 1000; i++) {
		char name[16];
		size_t n = (size_t)snprintf(name, sizeof(name), "x%d", i);

		memcpy(hashed[found], "\x80", 2);
		memcpy(hashed[found] + 2, name, n);
		node = owner(hashed[found], n + 2, &slot);
		if (used[node])
			continue;
		used[node] = 1;
		memcpy(names[found], name, sizeof(name));
		found++;
	}
	assert_int_equal(found, 3);
	for (i = 0; i < 3; i++)
		keys[i] = (struct tk_key){ names[i], strlen(names[i]) };
	snprintf(spec, sizeof(spec), "%s&key_prefix=xs:", cluster_spec);
	l = limiter("all(fixed-window:4/1s,gcra:3/1s,sliding-log:5/2s)", spec,
		    TK_FAIL_ERROR);
	/* Warm: the map, a connection to each master, the script loaded on
	 * each; so each part is one reply, and only one deadline for the
	 * three of them stops the check. */
	assert_rc(tk_limiter_check_keys(l, keys, 3, 1, &d), 0);
	assert_true(d.allowed);
	delay_all(DELAY_MS);
	t0 = redis_kit_mono_ms();
	rc = tk_limiter_check_keys(l, keys, 3, 1, &d);
	timed_out("group over 3 masters", t0, rc);
	delay_all(0);
	tk_limiter_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_check),
		cmocka_unit_test(test_room_left),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_cluster_redirects),
		cmocka_unit_test(test_cluster_xslot),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
