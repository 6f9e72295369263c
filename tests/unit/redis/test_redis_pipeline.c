/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_pipeline.c - tk_limiter_check_many() on the Redis store:
 * one pipeline per node, against real redis-servers that the test starts
 * (tests/kit/redis-kit.c), with round trips counted by a relay between
 * the library and the server (tests/kit/turn-proxy.c).
 *
 * What it proves: a batch decides exactly as the same checks made one by
 * one (generated timelines, every algorithm, composites); a batch of 64
 * costs one round trip, a single check one, a composite one; a flushed
 * script or library is loaded again and only its requests sent again; a
 * connection killed between batches or cut in the middle of a reply
 * gives typed errors request by request, or the fail policy, then
 * reconnects; a stopped server costs a batch its timeout, not more; on a
 * 3-master cluster a batch costs one round trip per node.  Skipped
 * without redis-server (or redis-cli, for the cluster).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "rnd.h"
#include "turn-proxy.h"
#include "config.h"
#include "redis/cluster.h"

#define T0 (UINT64_C(1700000000) * SEC)
#define BATCH 64

static struct redis_kit kit;
static struct turn_proxy *proxy; /* to kit */

static int group_setup(void **state)
{
	(void)state;
	if (!redis_kit_available())
		return 0;
	if (turn_proxy_redis(&kit, NULL, &proxy) != 0)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	turn_proxy_stop(proxy);
	redis_kit_destroy(&kit);
	return 0;
}

static void need_server(void)
{
	if (!kit.pid)
		skip();
}

/* A limiter on @spec, its own manual clock at T0. */
static struct tk_limiter *limiter(struct tk_clock **c, const char *policy,
				  const char *spec, unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	assert_rc(tk_clock_manual_new(c, T0), 0);
	o.clock = *c;
	o.fail = fail;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(&l, policy, spec, &o), 0);
	return l;
}

static void done(struct tk_limiter *l, struct tk_clock *c)
{
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* "redis://127.0.0.1:@port?key_prefix=@prefix" and @more options (by
 * default, a timeout of 5 s). */
static const char *spec_at(int port, const char *prefix, const char *more)
{
	static char buf[4][256];
	static int next;
	char *b = buf[next++ % 4];

	/* A loaded host: no timeout but the ones a test is about. */
	snprintf(b, sizeof(buf[0]), "redis://127.0.0.1:%d?key_prefix=%s%s",
		 port, prefix, more[0] ? more : "&timeout=5s&server_time=0");
	return b;
}

/* Keys over a few names, so that a batch repeats them; @keys[i] holds
 * request i's text. */
struct batch {
	size_t n;
	char keys[BATCH][16];
	struct tk_request r[BATCH];
};

static void gen_batch(uint64_t *seed, struct batch *b, size_t n,
		      unsigned int names)
{
	size_t i;

	b->n = n;
	for (i = 0; i < n; i++) {
		snprintf(b->keys[i], sizeof(b->keys[i]), "u%u",
			 (unsigned int)rnd_range(seed, 0, names - 1));
		b->r[i].key = b->keys[i];
		b->r[i].key_len = strlen(b->keys[i]);
		switch (rnd_range(seed, 0, 15)) {
		case 0:
			b->r[i].cost = 0; /* -EINVAL */
			break;
		case 1:
			b->r[i].cost = 1000000; /* -ERANGE */
			break;
		case 2:
			b->r[i].key_len = 0; /* -EINVAL */
			break;
		default:
			b->r[i].cost = rnd_range(seed, 1, 3);
		}
	}
}

static unsigned long n_admitted, n_denied, n_failed;

/* @b by check_many on @lb, and one by one on @ls: the same answers. */
static void assert_same_as_sequential(struct tk_limiter *lb,
				      struct tk_limiter *ls,
				      const struct batch *b)
{
	struct tk_decision db[BATCH], ds;
	int rcs[BATCH], rc, want, first = 0;
	char x[160], y[160];
	size_t i;

	memset(db, 0, sizeof(db));
	rc = tk_limiter_check_many(lb, b->r, b->n, db, rcs);
	for (i = 0; i < b->n; i++) {
		memset(&ds, 0, sizeof(ds));
		want = tk_limiter_check(ls, b->r[i].key, b->r[i].key_len,
					b->r[i].cost, &ds);

		if (want && !first)
			first = want;
		n_failed += want != 0;
		n_admitted += want == 0 && ds.allowed;
		n_denied += want == 0 && !ds.allowed;
		if (rcs[i] != want)
			fail_msg("request %zu (%s x%llu): %d (%s), one by one "
				 "%d (%s)",
				 i, b->keys[i],
				 (unsigned long long)b->r[i].cost, rcs[i],
				 tk_strerrorname(rcs[i]), want,
				 tk_strerrorname(want));
		if (want == 0 && memcmp(&db[i], &ds, sizeof(ds)) != 0)
			fail_msg("request %zu (%s x%llu): %s, one by one %s", i,
				 b->keys[i], (unsigned long long)b->r[i].cost,
				 show_decision(&db[i], x, sizeof(x)),
				 show_decision(&ds, y, sizeof(y)));
	}
	assert_rc(rc, first);
}

static const char *const policies[] = {
	"gcra:5/s",
	"token-bucket:capacity=4,refill=3/s",
	"leaky:10/s,max-queue=300ms",
	"fixed-window:6/s",
	"sliding-log:4/s",
	"sliding-window:8/2s,buckets=4",
	"quota:9/1d",
	"all(gcra:5/s,sliding-log:3/500ms)",
	"any(fixed-window:3/s,token-bucket:capacity=2,refill=1/s)",
	"all(leaky:20/s,max-queue=100ms,quota:30/1h,sliding-window:6/1s)",
};

/* A timeline of batches, each checked both ways on one server. */
static void timeline(int port, const char *policy, uint64_t seed)
{
	struct tk_limiter *lb, *ls;
	struct tk_clock *cb, *cs;
	struct batch b;
	char pb[32], ps[32];
	uint64_t step;
	int round;

	snprintf(pb, sizeof(pb), "b%llu:", (unsigned long long)seed);
	snprintf(ps, sizeof(ps), "s%llu:", (unsigned long long)seed);
	lb = limiter(&cb, policy, spec_at(port, pb, ""), TK_FAIL_ERROR);
	ls = limiter(&cs, policy, spec_at(port, ps, ""), TK_FAIL_ERROR);
	for (round = 0; round < 12; round++) {
		gen_batch(&seed, &b, rnd_range(&seed, 1, BATCH), 5);
		assert_same_as_sequential(lb, ls, &b);
		step = rnd_range(&seed, 0, 3) ? rnd_range(&seed, 0, 700 * MS)
					      : 0;
		tk_clock_advance(cb, step);
		tk_clock_advance(cs, step);
	}
	done(lb, cb);
	done(ls, cs);
}

static void test_batch_is_sequential(void **state)
{
	size_t i;
	uint64_t seed;

	(void)state;
	need_server();
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		for (seed = 1; seed <= 3; seed++)
			timeline(kit.port, policies[i], i * 100 + seed);
	/* The timelines met every kind of answer. */
	assert_true(n_admitted > 1000 && n_denied > 1000 && n_failed > 100);
	printf("# %lu admitted, %lu denied, %lu errors alike\n", n_admitted,
	       n_denied, n_failed);
}

/* @n requests of cost 1 on distinct keys "kI" (and some repeated). */
static void plain_batch(struct batch *b, size_t n)
{
	size_t i;

	b->n = n;
	for (i = 0; i < n; i++) {
		snprintf(b->keys[i], sizeof(b->keys[i]), "k%zu", i % 40);
		b->r[i] = (struct tk_request){ b->keys[i], strlen(b->keys[i]),
					       1 };
	}
}

static void test_round_trips(void **state)
{
	struct tk_decision d[BATCH];
	struct tk_limiter *l, *m;
	struct tk_clock *c, *cm;
	struct batch b;
	int rcs[BATCH], i;

	(void)state;
	need_server();
	plain_batch(&b, BATCH);
	/* A new connection to a server without the library: the pipeline,
	 * which finds none, the library loaded, the pipeline again. */
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FUNCTION FLUSH"), 0);
	l = limiter(&c, "gcra:100/s",
		    spec_at(turn_proxy_port(proxy), "rt:", ""), TK_FAIL_ERROR);
	turn_proxy_reset(proxy);
	assert_rc(tk_limiter_check_many(l, b.r, BATCH, d, rcs), 0);
	assert_int_equal(turn_proxy_turns(proxy), 3);
	done(l, c);
	/* One with the library there: the pipeline alone. */
	l = limiter(&c, "gcra:100/s",
		    spec_at(turn_proxy_port(proxy), "rt:", ""), TK_FAIL_ERROR);
	turn_proxy_reset(proxy);
	assert_rc(tk_limiter_check_many(l, b.r, BATCH, d, rcs), 0);
	assert_int_equal(turn_proxy_turns(proxy), 1);
	for (i = 0; i < BATCH; i++)
		assert_true(d[i].allowed);
	/* Then a batch of 64 is one round trip. */
	turn_proxy_reset(proxy);
	assert_rc(tk_limiter_check_many(l, b.r, BATCH, d, rcs), 0);
	assert_int_equal(turn_proxy_turns(proxy), 1);
	/* A single check, one each. */
	turn_proxy_reset(proxy);
	for (i = 0; i < 5; i++)
		assert_rc(tk_limiter_check(l, "one", 3, 1, d), 0);
	assert_int_equal(turn_proxy_turns(proxy), 5);
	/* A composite: one script, one round trip, alone or 64 at once. */
	m = limiter(&cm, "all(gcra:100/s,sliding-log:50/1s,fixed-window:80/s)",
		    spec_at(turn_proxy_port(proxy), "rc:", ""), TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(m, "warm", 4, 1, d), 0);
	turn_proxy_reset(proxy);
	assert_rc(tk_limiter_check(m, "one", 3, 1, d), 0);
	assert_int_equal(turn_proxy_turns(proxy), 1);
	turn_proxy_reset(proxy);
	assert_rc(tk_limiter_check_many(m, b.r, BATCH, d, rcs), 0);
	assert_int_equal(turn_proxy_turns(proxy), 1);
	done(m, cm);
	done(l, c);
}

/*
 * A library or script the server lost before a batch: loaded again, the
 * batch sent again, decisions as one by one.  @flush: the command.
 */
static void flushed(struct redis_kit *k, struct turn_proxy *p,
		    const char *flush, const char *policy)
{
	struct tk_limiter *lb, *ls;
	struct tk_clock *cb, *cs;
	struct tk_decision w;
	struct batch b;
	uint64_t seed = 7;
	int round;

	lb = limiter(&cb, policy, spec_at(turn_proxy_port(p), "fb:", ""),
		     TK_FAIL_ERROR);
	ls = limiter(&cs, policy, spec_at(k->port, "fs:", ""), TK_FAIL_ERROR);
	/* Connected, the script loaded: what a flush then takes away. */
	assert_rc(tk_limiter_check(lb, "warm", 4, 1, &w), 0);
	for (round = 0; round < 4; round++) {
		gen_batch(&seed, &b, BATCH, 6);
		assert_int_equal(redis_kit_cmd(k, NULL, 0, flush), 0);
		turn_proxy_reset(p);
		assert_same_as_sequential(lb, ls, &b);
		/* The lost pipeline, the load, the pipeline again (the one
		 * by one checks reloaded it on their own connection). */
		assert_int_equal(turn_proxy_turns(p), 3);
		tk_clock_advance(cb, 300 * MS);
		tk_clock_advance(cs, 300 * MS);
	}
	done(lb, cb);
	done(ls, cs);
}

static void test_function_flush(void **state)
{
	(void)state;
	need_server();
	flushed(&kit, proxy, "FUNCTION FLUSH", "all(gcra:5/s,quota:40/1h)");
}

/* A server without Functions (renamed away, as before Redis 7). */
static void test_script_flush(void **state)
{
	struct tk_decision d[BATCH];
	struct redis_kit k;
	struct turn_proxy *p;
	struct tk_limiter *l;
	struct tk_clock *c;
	struct batch b;
	int rcs[BATCH], i;

	(void)state;
	need_server();
	memset(&k, 0, sizeof(k));
	k.extra[0] = "--rename-command";
	k.extra[1] = "FUNCTION";
	k.extra[2] = "";
	assert_int_equal(redis_kit_start(&k, NULL), 0);
	assert_int_equal(turn_proxy_start(&p, k.port), 0);
	flushed(&k, p, "SCRIPT FLUSH", "sliding-log:4/s");
	turn_proxy_stop(p);
	redis_kit_destroy(&k);
	/* A batch first on a new connection to a server without FCALL
	 * (before Redis 7): the unknown command, then the batch again by
	 * EVALSHA. */
	memset(&k, 0, sizeof(k));
	k.extra[0] = "--rename-command";
	k.extra[1] = "FCALL";
	k.extra[2] = "";
	assert_int_equal(redis_kit_start(&k, NULL), 0);
	l = limiter(&c, "gcra:100/s", spec_at(k.port, "fe:", ""),
		    TK_FAIL_ERROR);
	plain_batch(&b, BATCH);
	assert_rc(tk_limiter_check_many(l, b.r, BATCH, d, rcs), 0);
	for (i = 0; i < BATCH; i++) {
		assert_rc(rcs[i], 0);
		assert_true(d[i].allowed);
	}
	done(l, c);
	/* And a single check first. */
	l = limiter(&c, "gcra:100/s", spec_at(k.port, "fo:", ""),
		    TK_FAIL_ERROR);
	assert_rc(tk_limiter_check(l, "one", 3, 1, d), 0);
	assert_true(d[0].allowed);
	done(l, c);
	redis_kit_destroy(&k);
}

/* Batch @b until the server answers every request (10 s at most): the
 * last return. */
static int batch_until_up(struct tk_limiter *l, const struct batch *b,
			  struct tk_decision *d, int *rcs)
{
	uint64_t t = redis_kit_mono_ms();
	size_t i;
	int rc;

	do {
		rc = tk_limiter_check_many(l, b->r, b->n, d, rcs);
		for (i = 0; rc == 0 && i < b->n; i++)
			if (d[i].degraded)
				rc = -EAGAIN;
	} while (rc && redis_kit_mono_ms() - t < 10000);
	return rc;
}

static void test_client_kill_between_batches(void **state)
{
	struct tk_decision d[BATCH];
	struct tk_limiter *l;
	struct tk_clock *c;
	struct batch b;
	int rcs[BATCH], i;

	(void)state;
	need_server();
	plain_batch(&b, 10);
	l = limiter(&c, "gcra:5/s", spec_at(kit.port, "kb:", ""),
		    TK_FAIL_ERROR);
	assert_rc(tk_limiter_check_many(l, b.r, b.n, d, rcs), 0);
	assert_true(redis_kit_cmd(&kit, NULL, 0,
				  "CLIENT KILL TYPE normal SKIPME yes") >= 1);
	/* The closed connection is seen before the batch is sent: a new one
	 * carries it, each key's second unit (burst 5: 3 left). */
	assert_rc(tk_limiter_check_many(l, b.r, b.n, d, rcs), 0);
	for (i = 0; i < (int)b.n; i++) {
		assert_rc(rcs[i], 0);
		assert_true(d[i].allowed);
		assert_int_equal(d[i].remaining, 3);
	}
	done(l, c);
}

/*
 * The relay cuts the connection half way through the replies of a
 * pipeline: the requests answered keep their decisions, the others get
 * -ECONNRESET, or the fail policy's answer; then it reconnects.
 */
static void cut_mid_reply(unsigned int fail)
{
	struct tk_decision d[BATCH];
	struct tk_limiter *l;
	struct tk_clock *c;
	struct batch b;
	char prefix[16];
	int rcs[BATCH], i, answered = 0, rc;

	snprintf(prefix, sizeof(prefix), "cut%u:", fail);
	plain_batch(&b, BATCH);
	for (i = 0; i < BATCH; i++) /* distinct keys */
		snprintf(b.keys[i], sizeof(b.keys[i]), "k%d", i);
	l = limiter(&c, "gcra:5/s", spec_at(turn_proxy_port(proxy), prefix, ""),
		    fail);
	assert_rc(tk_limiter_check(l, "warm", 4, 1, d), 0);
	turn_proxy_cut_next_reply(proxy);
	memset(d, 0, sizeof(d));
	rc = tk_limiter_check_many(l, b.r, BATCH, d, rcs);
	assert_rc(rc, fail == TK_FAIL_ERROR ? -ECONNRESET : 0);
	/* A prefix answered by the server, the rest failed. */
	while (answered < BATCH && rcs[answered] == 0 && !d[answered].degraded)
		answered++;
	assert_true(answered > 0 && answered < BATCH);
	for (i = 0; i < BATCH; i++) {
		if (i < answered) {
			assert_true(d[i].allowed);
			assert_int_equal(d[i].remaining, 4);
			continue;
		}
		if (fail == TK_FAIL_ERROR) {
			assert_rc(rcs[i], -ECONNRESET);
			continue;
		}
		assert_rc(rcs[i], 0);
		assert_true(d[i].degraded);
		assert_int_equal(d[i].allowed, fail == TK_FAIL_OPEN);
	}
	assert_rc(batch_until_up(l, &b, d, rcs), 0);
	for (i = 0; i < BATCH; i++)
		assert_false(d[i].degraded);
	done(l, c);
}

static void test_cut_mid_pipeline(void **state)
{
	(void)state;
	need_server();
	cut_mid_reply(TK_FAIL_ERROR);
	cut_mid_reply(TK_FAIL_OPEN);
	cut_mid_reply(TK_FAIL_CLOSED);
}

/* A stopped server: a batch waits about its timeout, not one per
 * request, and answers -ETIMEDOUT or the fail policy. */
static void test_stopped_server(void **state)
{
	static const unsigned int fails[] = { TK_FAIL_ERROR, TK_FAIL_OPEN,
					      TK_FAIL_CLOSED };
	struct tk_decision d[BATCH];
	struct tk_limiter *l[3];
	struct tk_clock *c[3];
	struct redis_kit k;
	struct batch b;
	int rcs[BATCH], i, j, rc;
	uint64_t t;

	(void)state;
	need_server();
	memset(&k, 0, sizeof(k));
	assert_int_equal(redis_kit_start(&k, NULL), 0);
	plain_batch(&b, BATCH);
	for (i = 0; i < 3; i++) {
		l[i] = limiter(&c[i], "gcra:5/s",
			       spec_at(k.port, "st:",
				       "&timeout=100ms&connect_timeout=100ms"),
			       fails[i]);
		assert_rc(tk_limiter_check_many(l[i], b.r, b.n, d, rcs), 0);
	}
	assert_int_equal(kill(k.pid, SIGSTOP), 0);
	for (i = 0; i < 3; i++) {
		t = redis_kit_mono_ms();
		rc = tk_limiter_check_many(l[i], b.r, b.n, d, rcs);
		t = redis_kit_mono_ms() - t;
		/* Its timeout, not before half of it and well before ten
		 * times it: a loaded host may be slow to wake a thread; a
		 * timeout per request would take 64 of them. */
		assert_true(t >= 100 / 2);
		assert_true(t < 10 * (100 + 100));
		assert_rc(rc, fails[i] == TK_FAIL_ERROR ? -ETIMEDOUT : 0);
		for (j = 0; j < BATCH; j++) {
			if (fails[i] == TK_FAIL_ERROR) {
				assert_rc(rcs[j], -ETIMEDOUT);
				continue;
			}
			assert_true(d[j].degraded);
			assert_int_equal(d[j].allowed,
					 fails[i] == TK_FAIL_OPEN);
		}
	}
	assert_int_equal(kill(k.pid, SIGCONT), 0);
	assert_rc(batch_until_up(l[0], &b, d, rcs), 0);
	for (i = 0; i < 3; i++)
		done(l[i], c[i]);
	redis_kit_destroy(&k);
}

/*
 * A cluster whose nodes announce the ports of relays in front of them,
 * so that every byte the library sends a node passes its relay.
 */
static struct redis_kit nodes[3];
static struct turn_proxy *relay[3];

static int announced_everywhere(void)
{
	char cmd[64];
	int i, j, ok = 0;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			/* CLUSTER SLOTS as node i sees node j: a range served
			 * at j's relay port. */
			char out[4096];
			redis_kit_cmd(&nodes[i], out, sizeof(out),
				      "CLUSTER NODES");
			snprintf(cmd, sizeof(cmd), "127.0.0.1:%d@%d",
				 turn_proxy_port(relay[j]),
				 nodes[j].port + 10000);
			ok += strstr(out, cmd) != NULL;
		}
	return ok == 9;
}

static char cluster_spec[160];
static int cluster_up;

/* The cluster and its relays, started by the first test that needs it;
 * skipped without redis-cli. */
static void need_cluster(void)
{
	char seeds[128];
	int i, tries;

	need_server();
	if (cluster_up)
		return;
	if (!redis_cluster_available())
		skip();
	assert_int_equal(redis_cluster_start(nodes, seeds, sizeof(seeds)), 0);
	cluster_up = 1;
	for (i = 0; i < 3; i++) {
		assert_int_equal(turn_proxy_start(&relay[i], nodes[i].port), 0);
		assert_int_equal(
			redis_kit_cmd(&nodes[i], NULL, 0,
				      "CONFIG SET cluster-announce-port "
				      "%d",
				      turn_proxy_port(relay[i])),
			0);
	}
	for (tries = 0; tries < 200 && !announced_everywhere(); tries++)
		usleep(50000);
	assert_true(announced_everywhere());
	snprintf(cluster_spec, sizeof(cluster_spec),
		 "redis+cluster://127.0.0.1:%d,127.0.0.1:%d?key_prefix=",
		 turn_proxy_port(relay[0]), turn_proxy_port(relay[1]));
}

/* The cluster's spec with @prefix and @more options (by default, a
 * timeout of 5 s). */
static const char *cluster_at(const char *prefix, const char *more)
{
	static char buf[2][256];
	static int next;
	char *b = buf[next++ % 2];

	snprintf(b, sizeof(buf[0]), "%s%s%s", cluster_spec, prefix,
		 more[0] ? more : "&timeout=5s&server_time=0");
	return b;
}

static void test_cluster_round_trip_per_node(void **state)
{
	struct tk_limiter *lb, *ls;
	struct tk_clock *cb, *cs;
	struct tk_decision d[BATCH];
	struct batch b;
	uint64_t seed = 11;
	int rcs[BATCH], i, round;

	(void)state;
	need_cluster();
	lb = limiter(&cb, "all(gcra:5/s,sliding-log:4/1s)",
		     cluster_at("cb:", ""), TK_FAIL_ERROR);
	ls = limiter(&cs, "all(gcra:5/s,sliding-log:4/1s)",
		     cluster_at("cs:", ""), TK_FAIL_ERROR);
	/* The map, a connection and the library on every node. */
	plain_batch(&b, BATCH);
	assert_rc(tk_limiter_check_many(lb, b.r, b.n, d, rcs), 0);
	for (i = 0; i < 3; i++)
		turn_proxy_reset(relay[i]);
	assert_rc(tk_limiter_check_many(lb, b.r, b.n, d, rcs), 0);
	/* 40 keys are on every master: one round trip to each. */
	for (i = 0; i < 3; i++)
		assert_int_equal(turn_proxy_turns(relay[i]), 1);
	for (round = 0; round < 8; round++) {
		gen_batch(&seed, &b, BATCH, 12);
		assert_same_as_sequential(lb, ls, &b);
		tk_clock_advance(cb, 200 * MS);
		tk_clock_advance(cs, 200 * MS);
	}
	done(lb, cb);
	done(ls, cs);
}

/* The slot of a limiter's key @key (no limiter prefix, one dimension). */
static unsigned int slot_of(const char *key)
{
	char tag[32];

	tag[0] = tag[1] = '\0'; /* the store key's prefix length */
	snprintf(tag + 2, sizeof(tag) - 2, "%s", key);
	return tk__redis_slot(tag, 2 + strlen(key));
}

/* The node that serves @key's slot now: its index, found by who answers
 * GET of a key in it without redirecting. */
static int owner_of(const char *key)
{
	char name[64];
	size_t len;
	int i;

	len = (size_t)snprintf(name, sizeof(name), "x:{..%s}", key);
	name[3] = name[4] = '\0';
	for (i = 0; i < 3; i++)
		if (redis_kit_cmd(&nodes[i], NULL, 0, "GET %b", name, len) == 0)
			return i;
	return -1;
}

static void node_id(int i, char id[64])
{
	assert_int_equal(redis_kit_cmd(&nodes[i], id, 64, "CLUSTER MYID"), 0);
}

/*
 * Keys whose slots move under the client's map: MOVED (the slot given
 * to another master) and ASK (a slot half migrated) answered request by
 * request, each sent again alone, decisions as one by one.
 */
static void test_cluster_redirects(void **state)
{
	struct tk_limiter *lb, *ls;
	struct tk_clock *cb, *cs;
	char id[3][64];
	unsigned int moved, asked;
	struct batch b;
	int i, from_m, from_a, to, round;

	(void)state;
	need_cluster();
	lb = limiter(&cb, "gcra:5/s", cluster_at("rb:", ""), TK_FAIL_ERROR);
	ls = limiter(&cs, "gcra:5/s", cluster_at("rs:", ""), TK_FAIL_ERROR);
	for (i = 0; i < 3; i++)
		node_id(i, id[i]);
	/* Both limiters learn the map. */
	plain_batch(&b, BATCH);
	assert_same_as_sequential(lb, ls, &b);
	moved = slot_of("moved");
	asked = slot_of("asked");
	from_m = owner_of("moved");
	from_a = owner_of("asked");
	assert_true(from_m >= 0 && from_a >= 0 && moved != asked);
	/* "moved"'s slot, empty, given to the next master. */
	to = (from_m + 1) % 3;
	assert_int_equal(redis_kit_cmd(&nodes[to], NULL, 0,
				       "CLUSTER SETSLOT %u NODE %s", moved,
				       id[to]),
			 0);
	for (i = 0; i < 3; i++)
		redis_kit_cmd(&nodes[i], NULL, 0, "CLUSTER SETSLOT %u NODE %s",
			      moved, id[to]);
	/* "asked"'s slot, empty, migrating to the next master. */
	to = (from_a + 1) % 3;
	assert_int_equal(redis_kit_cmd(&nodes[to], NULL, 0,
				       "CLUSTER SETSLOT %u IMPORTING %s", asked,
				       id[from_a]),
			 0);
	assert_int_equal(redis_kit_cmd(&nodes[from_a], NULL, 0,
				       "CLUSTER SETSLOT %u MIGRATING %s", asked,
				       id[to]),
			 0);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < BATCH; i++)
			snprintf(b.keys[i], sizeof(b.keys[i]), "%s",
				 i % 4 == 0   ? "moved"
				 : i % 4 == 1 ? "asked"
					      : "other");
		for (i = 0; i < BATCH; i++)
			b.r[i] = (struct tk_request){ b.keys[i],
						      strlen(b.keys[i]), 1 };
		b.n = 12;
		assert_same_as_sequential(lb, ls, &b);
		tk_clock_advance(cb, 700 * MS);
		tk_clock_advance(cs, 700 * MS);
	}
	/* The migration done, as redis-cli would finish it. */
	for (i = 0; i < 3; i++)
		redis_kit_cmd(&nodes[i], NULL, 0, "CLUSTER SETSLOT %u NODE %s",
			      asked, id[to]);
	done(lb, cb);
	done(ls, cs);
}

/*
 * Every master stopped: the batch reads all of them before one deadline,
 * so it waits about one timeout, not one per master.
 */
static void test_cluster_stopped(void **state)
{
	struct tk_decision d[BATCH];
	struct tk_limiter *l;
	struct tk_clock *c;
	struct batch b;
	int rcs[BATCH], i;
	uint64_t t;

	(void)state;
	need_cluster();
	l = limiter(&c, "gcra:5/s",
		    cluster_at("st:", "&timeout=2s&connect_timeout=50ms"),
		    TK_FAIL_ERROR);
	plain_batch(&b, BATCH);
	assert_rc(tk_limiter_check_many(l, b.r, b.n, d, rcs), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(kill(nodes[i].pid, SIGSTOP), 0);
	t = redis_kit_mono_ms();
	assert_rc(tk_limiter_check_many(l, b.r, b.n, d, rcs), -ETIMEDOUT);
	t = redis_kit_mono_ms() - t;
	for (i = 0; i < 3; i++)
		assert_int_equal(kill(nodes[i].pid, SIGCONT), 0);
	for (i = 0; i < BATCH; i++)
		assert_rc(rcs[i], -ETIMEDOUT);
	/* One timeout (2 s), with 2 s of room for a loaded host; three (one
	 * node after another) would be 6 s. */
	if (t < 2000 / 2 || t >= 2 * (2000 + 50))
		fail_msg("a batch over 3 stopped masters took %llu ms",
			 (unsigned long long)t);
	assert_rc(batch_until_up(l, &b, d, rcs), 0);
	done(l, c);
}

/*
 * server_time=1: a policy whose arguments need the time reads the
 * server's TIME once for the whole batch, then sends the pipeline; one
 * that does not lets every script read it (one round trip).
 */
static void test_server_time(void **state)
{
	static const char *const policy[2] = { "fixed-window:3/1h",
					       "gcra:3/1h" };
	struct tk_decision d[BATCH];
	struct tk_limiter *l;
	struct tk_clock *c;
	struct batch b;
	int rcs[BATCH], i, k, admitted;

	(void)state;
	need_server();
	for (k = 0; k < 2; k++) {
		l = limiter(&c, policy[k],
			    spec_at(turn_proxy_port(proxy), k ? "tg:" : "tf:",
				    "&server_time=1&timeout=5s"),
			    TK_FAIL_ERROR);
		assert_rc(tk_limiter_check(l, "warm", 4, 1, d), 0);
		plain_batch(&b, 5);
		for (i = 0; i < 5; i++)
			b.r[i].key = "same";
		b.r[0].key_len = b.r[1].key_len = b.r[2].key_len = 4;
		b.r[3].key_len = b.r[4].key_len = 4;
		turn_proxy_reset(proxy);
		assert_rc(tk_limiter_check_many(l, b.r, b.n, d, rcs), 0);
		assert_int_equal(turn_proxy_turns(proxy), k ? 1 : 2);
		for (admitted = 0, i = 0; i < 5; i++) {
			assert_false(d[i].degraded);
			admitted += d[i].allowed;
			/* Decided at the server's time, not the manual T0. */
			assert_true(d[i].reset_at > T0 + 365 * 86400 * SEC);
		}
		assert_int_equal(admitted, 3);
		done(l, c);
	}
}

static int group_teardown_all(void **state)
{
	int i;

	for (i = 0; cluster_up && i < 3; i++) {
		turn_proxy_stop(relay[i]);
		redis_kit_destroy(&nodes[i]);
	}
	return group_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_is_sequential),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_function_flush),
		cmocka_unit_test(test_script_flush),
		cmocka_unit_test(test_client_kill_between_batches),
		cmocka_unit_test(test_cut_mid_pipeline),
		cmocka_unit_test(test_stopped_server),
		cmocka_unit_test(test_server_time),
		cmocka_unit_test(test_cluster_round_trip_per_node),
		cmocka_unit_test(test_cluster_redirects),
		cmocka_unit_test(test_cluster_stopped),
	};

	return cmocka_run_group_tests_name("redis pipelines", tests,
					   group_setup, group_teardown_all);
}
