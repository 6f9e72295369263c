/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_failover.c - a Redis Cluster failover under a long-lived
 * process, on real servers (tests/kit/redis-kit.c): 3 masters and 3
 * replicas, cluster-node-timeout 2000, a spec whose only seed is the
 * master that dies, timeout=200ms.
 *
 * Three threads check continuously: single checks (one key on the master
 * that dies, one elsewhere), batches (tk_limiter_check_many(): a
 * pipeline per node) and groups over two masters (tk_limiter_check_group():
 * the cross-slot path).  The master is killed (kill -9); once a survivor's
 * CLUSTER NODES shows its replica promoted:
 * - each thread succeeds within 3 s (the design: 1 s; a shared machine);
 * - every check begun 1 s after the promotion succeeds (a reply later than
 * the 200 ms timeout, on a shared machine, aside: -ETIMEDOUT, at most 1% of a
 * thread's checks; any other error fails);
 * - on stores left unused since the kill, the first check of each kind
 *   passes: a connect that fails refreshes the map and goes to the new
 *   master within the same call.
 * The old master then restarts and rejoins as a replica: checks still
 * succeed (no READONLY, -EROFS or -EPROTO), and no replica was ever sent
 * FCALL, EVALSHA or FUNCTION LOAD (their commandstats show none rejected),
 * and the nodes answered at most one CLUSTER SLOTS per 100 ms.
 *
 * Then a manual failover (CLUSTER FAILOVER) back to the old master: no
 * connection fails, only MOVED tells, and one MOVED refreshes the map.
 * Last, a takeover under a store that never connected to the demoted
 * node: its first command there meets READONLY, which refreshes the map
 * and goes to the new master.
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

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

#define EVENTS_MAX 100000
#define RECOVER_MS 3000 /* promised: 1000 ms */
/* Checks begun this long after the promotion all succeed (the issue's
 * "within 1 s"). */
#define SETTLE_MS 1000

static struct redis_kit nodes[6];

enum { SINGLE, BATCH, GROUP, WORKERS };

static const char *const worker_name[WORKERS] = { "single", "batch", "group" };

struct event {
	unsigned long long start, end; /* ms, monotonic */
	int rc;
	int victim; /* it touched the master that dies */
};

struct worker {
	pthread_t thread;
	int kind;
	struct tk_store *st; /* its own: each path must recover alone */
	struct tk_limiter *l, *g[2];
	const char *victim_key, *other_key;
	const char *group_key[2];
	struct event *ev;
	size_t n;
};

static atomic_int stop;

static int teardown(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 6; i++)
		redis_kit_destroy(&nodes[i]);
	return 0;
}

/* How many FCALLs @k refused (MOVED, READONLY): INFO commandstats. */
static long fcall_rejected(const struct redis_kit *k)
{
	char info[16384], *at;

	if (redis_kit_cmd(k, info, sizeof(info), "INFO commandstats") != 0)
		return -1;
	at = strstr(info, "cmdstat_fcall:");
	if (!at)
		return 0;
	at = strstr(at, "rejected_calls=");
	return at ? atol(at + 15) : 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int check_once(struct worker *w, size_t j, int *victim)
{
	struct tk_request r[4];
	struct tk_decision d[4];
	struct tk_key keys[2];
	int rcs[4], rc, i;

	switch (w->kind) {
	case SINGLE:
		*victim = j % 2 == 0;
		return tk_limiter_check(
			w->l, *victim ? w->victim_key : w->other_key,
			strlen(*victim ? w->victim_key : w->other_key), 1, d);
	case BATCH:
		*victim = 1;
		/* All on the victim: only their own failures can tell this
		 * store that the map is stale. */
		for (i = 0; i < 4; i++) {
			r[i].key = w->victim_key;
			r[i].key_len = strlen(r[i].key);
			r[i].cost = 1;
		}
		rc = tk_limiter_check_many(w->l, r, 4, d, rcs);
		for (i = 0; rc == 0 && i < 4; i++)
			rc = rcs[i];
		return rc;
	default:
		*victim = 1;
		for (i = 0; i < 2; i++) {
			keys[i].key = w->group_key[i];
			keys[i].key_len = strlen(w->group_key[i]);
		}
		return tk_limiter_check_group(w->g, keys, 2, 1, d, NULL, 0);
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct event *e;

	while (!atomic_load(&stop) && w->n < EVENTS_MAX) {
		e = &w->ev[w->n];
		e->start = redis_kit_mono_ms();
		e->rc = check_once(w, w->n, &e->victim);
		e->end = redis_kit_mono_ms();
		w->n++;
		sleep_ms(2);
	}
	return NULL;
}

/*
 * The Redis key of @key's state: "{" 0 0 KEY "}" for a simple policy's
 * check, "{" 0x80 0 KEY "}" 0 in a group (lib/redis/keys.c).
 */
static size_t redis_key(const char *key, int group, char *buf)
{
	size_t k = strlen(key), n;

	memcpy(buf, group ? "{\x80\0" : "{\0\0", 3);
	memcpy(buf + 3, key, k);
	buf[3 + k] = '}';
	n = 4 + k;
	if (group)
		buf[n++] = '\0';
	return n;
}

/* Does @k serve the slot of @key's state?  (Else it answers MOVED.) */
static int serves(const struct redis_kit *k, const char *key, int group)
{
	char buf[64];
	size_t len = redis_key(key, group, buf);

	return redis_kit_cmd(k, NULL, 0, "EXISTS %b", buf, len) >= 0;
}

/* A key named STEM<i> that @k serves (@on) or not. */
static void pick(const struct redis_kit *k, const char *stem, int group, int on,
		 char *out)
{
	int i;

	for (i = 0; i < 1000; i++) {
		snprintf(out, 16, "%s%d", stem, i);
		if (serves(k, out, group) == on)
			return;
	}
	fail_msg("no key for %s", stem);
}

/* The rejected FCALL, EVALSHA or FUNCTION commands of @k (INFO). */
static long rejected_scripts(const struct redis_kit *k)
{
	char info[16384], *line, *r;
	long n = 0;

	if (redis_kit_cmd(k, info, sizeof(info), "INFO commandstats") != 0)
		return -1;
	for (line = strtok(info, "\r\n"); line; line = strtok(NULL, "\r\n")) {
		if (strncmp(line, "cmdstat_fcall", 13) &&
		    strncmp(line, "cmdstat_evalsha", 15) &&
		    strncmp(line, "cmdstat_function", 16))
			continue;
		r = strstr(line, "rejected_calls=");
		if (r)
			n += atol(r + 15);
		/* A replica runs scripts' effects, never FCALL itself. */
		if (strncmp(line, "cmdstat_fcall:", 14) == 0)
			n += atol(strstr(line, "calls=") + 6);
	}
	return n;
}

/* How many CLUSTER SLOTS @k answered (INFO commandstats). */
static long slot_maps(const struct redis_kit *k)
{
	char info[16384], *at;

	if (redis_kit_cmd(k, info, sizeof(info), "INFO commandstats") != 0)
		return 0;
	at = strstr(info, "cmdstat_cluster|slots:calls=");
	return at ? atol(at + 28) : 0;
}

/* Wait (20 ms polls, @max_ms at most) until @role(@k) as @from sees it. */
static unsigned long long wait_role(const struct redis_kit *from,
				    const struct redis_kit *k, int role,
				    unsigned long long max_ms)
{
	unsigned long long t0 = redis_kit_mono_ms(), t;

	for (;;) {
		t = redis_kit_mono_ms();
		if (redis_cluster_role(from, k) == role)
			return t;
		if (t - t0 > max_ms)
			fail_msg("node %d not '%c' after %llu ms", k->port,
				 role, max_ms);
		sleep_ms(20);
	}
}

/* A worker's events judged against the promotion at @promoted (ms). */
static void judge(const struct worker *w, unsigned long long killed,
		  unsigned long long promoted)
{
	const struct event *first = NULL, *e;
	size_t i, before = 0, between = 0, slow = 0;

	for (i = 0; i < w->n; i++) {
		e = &w->ev[i];
		if (e->start >= killed && e->start < promoted && e->rc)
			before++;
		if (e->start < promoted || !e->victim)
			continue;
		if (!first && e->rc == 0)
			first = e;
		else if (!first)
			between++;
	}
	if (!first)
		fail_msg("%s: no success after the promotion",
			 worker_name[w->kind]);
	print_message("# %s: %zu failures from kill to promotion, %zu after "
		      "it, first success %llu ms after the promotion\n",
		      worker_name[w->kind], before, between,
		      first->end - promoted);
	if (first->end - promoted > RECOVER_MS)
		fail_msg("%s: first success %llu ms after the promotion",
			 worker_name[w->kind], first->end - promoted);
	for (i = 0; i < w->n; i++) {
		e = &w->ev[i];
		/* Until the survivors have all seen the promotion, one may
		 * still answer CLUSTERDOWN (-EAGAIN) for another slot: the
		 * promise is every check from a second after it on. */
		if (!e->rc || e->start < promoted + SETTLE_MS)
			continue;
		/* A reply later than 200 ms on a loaded machine says nothing
		 * of the failover; a few are allowed, no other error. */
		if (e->rc == -ETIMEDOUT && ++slow * 100 <= w->n)
			continue;
		fail_msg("%s: check begun %lld ms after the promotion failed "
			 "after %llu ms: %s (%s)",
			 worker_name[w->kind], (long long)(e->start - promoted),
			 e->end - e->start, tk_strerrorname(e->rc),
			 e->victim ? "the victim's slot" : "another");
	}
	if (slow)
		print_message("# %s: %zu timeouts after the recovery\n",
			      worker_name[w->kind], slow);
}

static char vkey[16], okey[16], gkey[2][16];
/* The master killed, its replica promoted, a master that stays. */
static int victim = -1, heir = -1, survivor = -1;

/* A worker of @kind on a store of its own, its keys checked once. */
static void worker_open(struct worker *w, int kind, const char *spec)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision d;
	struct tk_key keys[2];
	int i;

	w->kind = kind;
	assert_rc(tk_store_open(&w->st, spec, NULL), 0);
	o.store = w->st;
	assert_rc(tk_limiter_open(&w->l, "gcra:1000000/1s", NULL, &o), 0);
	assert_rc(tk_limiter_open(&w->g[0], "gcra:1000000/1s", NULL, &o), 0);
	assert_rc(
		tk_limiter_open(&w->g[1], "fixed-window:1000000/1s", NULL, &o),
		0);
	w->victim_key = vkey;
	w->other_key = okey;
	for (i = 0; i < 2; i++) {
		w->group_key[i] = gkey[i];
		keys[i].key = gkey[i];
		keys[i].key_len = strlen(gkey[i]);
	}
	w->ev = calloc(EVENTS_MAX, sizeof(w->ev[0]));
	assert_non_null(w->ev);
	assert_rc(tk_limiter_check(w->l, vkey, strlen(vkey), 1, &d), 0);
	assert_rc(tk_limiter_check(w->l, okey, strlen(okey), 1, &d), 0);
	assert_rc(tk_limiter_check_group(w->g, keys, 2, 1, &d, NULL, 0), 0);
}

static void worker_close(struct worker *w)
{
	tk_limiter_close(w->l);
	tk_limiter_close(w->g[0]);
	tk_limiter_close(w->g[1]);
	free(w->ev);
	tk_store_close(w->st);
}

static void test_failover(void **state)
{
	struct worker w[WORKERS], quiet[WORKERS];
	char spec[128];
	unsigned long long opened, killed, promoted, rejoined;
	long maps = 0;
	int i, on_victim, port;
	char info[4096], want[48];

	(void)state;
	if (!redis_cluster_available())
		skip();
	assert_int_equal(redis_cluster_start_replicas(nodes, 2000), 0);
	/* The victim, a master; its replica, the heir; a surviving master
	 * to ask. */
	for (i = 0; i < 6; i++)
		if (redis_cluster_role(&nodes[0], &nodes[i]) == 'M') {
			if (victim < 0)
				victim = i;
			else if (survivor < 0)
				survivor = i;
		}
	assert_true(victim >= 0 && survivor >= 0);
	snprintf(want, sizeof(want), "master_port:%d\r", nodes[victim].port);
	for (i = 0; i < 6; i++)
		if (redis_kit_cmd(&nodes[i], info, sizeof(info),
				  "INFO replication") == 0 &&
		    strstr(info, want))
			heir = i;
	assert_true(heir >= 0);

	pick(&nodes[victim], "v", 0, 1, vkey);
	pick(&nodes[victim], "o", 0, 0, okey);
	pick(&nodes[victim], "g", 1, 1, gkey[0]);
	pick(&nodes[victim], "h", 1, 0, gkey[1]);
	memset(w, 0, sizeof(w));
	memset(quiet, 0, sizeof(quiet));
	/* The seed is the victim alone: the map must come from others. */
	port = nodes[victim].port;
	snprintf(spec, sizeof(spec),
		 "redis+cluster://127.0.0.1:%d?timeout=200ms", port);
	opened = redis_kit_mono_ms();
	for (i = 0; i < WORKERS; i++) {
		worker_open(&w[i], i, spec);
		worker_open(&quiet[i], i, spec);
	}

	atomic_store(&stop, 0);
	for (i = 0; i < WORKERS; i++)
		assert_int_equal(
			pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
	sleep_ms(500);
	killed = redis_kit_mono_ms();
	redis_kit_kill(&nodes[victim]);
	promoted = wait_role(&nodes[survivor], &nodes[heir], 'M', 30000);
	print_message("# promotion seen %llu ms after the kill\n",
		      promoted - killed);
	/* A store not used since the kill: its first check of each kind
	 * finds the dead node, refreshes its map and passes on the new
	 * master, in that same call (nothing was sent).  After the gap of
	 * refreshes, and once the other nodes have heard. */
	sleep_ms(200);
	for (i = 0; i < WORKERS; i++) {
		port = check_once(&quiet[i], 0, &on_victim);
		if (port)
			fail_msg("%s: the first check after the promotion "
				 "failed: %s",
				 worker_name[i], tk_strerrorname(port));
	}
	sleep_ms(RECOVER_MS + 1000);

	/* The old master comes back, as a replica of its heir. */
	assert_int_equal(redis_kit_start(&nodes[victim], NULL), 0);
	rejoined = wait_role(&nodes[survivor], &nodes[victim], 'S', 20000);
	for (i = 0; i < 500; i++) {
		if (redis_kit_cmd(&nodes[victim], info, sizeof(info),
				  "INFO replication") == 0 &&
		    strstr(info, "master_link_status:up"))
			break;
		sleep_ms(20);
	}
	print_message("# old master a replica %llu ms after the promotion\n",
		      rejoined - promoted);
	sleep_ms(1500);
	atomic_store(&stop, 1);
	for (i = 0; i < WORKERS; i++)
		pthread_join(w[i].thread, NULL);

	for (i = 0; i < WORKERS; i++) {
		assert_true(w[i].n < EVENTS_MAX);
		judge(&w[i], killed, promoted);
	}
	/* At most one refresh per 100 ms per store, though every check
	 * failed for seconds: what the nodes alive answered (the victim's
	 * count died with it), with room for a slow machine. */
	for (i = 0; i < 6; i++)
		maps += slot_maps(&nodes[i]);
	print_message("# %ld CLUSTER SLOTS in %llu ms\n", maps,
		      redis_kit_mono_ms() - opened);
	if (maps > (long)(WORKERS * (redis_kit_mono_ms() - opened) / 100) + 10)
		fail_msg("%ld CLUSTER SLOTS in %llu ms", maps,
			 redis_kit_mono_ms() - opened);
	for (i = 0; i < 6; i++)
		if (redis_cluster_role(&nodes[survivor], &nodes[i]) == 'S' &&
		    rejected_scripts(&nodes[i]) != 0)
			fail_msg("replica %d was sent scripts (%ld)",
				 nodes[i].port, rejected_scripts(&nodes[i]));
	for (i = 0; i < WORKERS; i++) {
		worker_close(&w[i]);
		worker_close(&quiet[i]);
	}
}

/*
 * A manual failover (CLUSTER FAILOVER on the old master, now a replica):
 * nothing fails, so only MOVED tells.  One MOVED refreshes the whole map:
 * checks of 64 keys of the demoted master's slots, one after the other,
 * pass, and it refused at most a few of them (each would meet MOVED
 * if the map were corrected slot by slot).
 *
 * A store refreshes at most once per 100 ms (REFRESH_GAP in
 * lib/redis/cluster.c): a MOVED within that time of the last refresh
 * corrects its slot only, and the 64 checks may all fit in that time.
 * So the switch comes more than the gap after the store's last refresh
 * (its first check's), however fast the failover.
 */
static void test_manual_failover(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char spec[128], key[64][16], stem[8];
	long before, moved;
	int i;

	(void)state;
	if (victim < 0 || heir < 0 || !nodes[victim].pid)
		skip(); /* test_failover did not leave its cluster */
	snprintf(spec, sizeof(spec),
		 "redis+cluster://127.0.0.1:%d?timeout=200ms",
		 nodes[survivor].port);
	assert_rc(tk_limiter_open(&l, "gcra:1000000/1s", spec, NULL), 0);
	for (i = 0; i < 64; i++) {
		snprintf(stem, sizeof(stem), "m%d_", i);
		pick(&nodes[heir], stem, 0, 1, key[i]);
		assert_rc(tk_limiter_check(l, key[i], strlen(key[i]), 1, &d),
			  0);
	}
	before = fcall_rejected(&nodes[heir]);
	sleep_ms(250); /* the gap of refreshes: see above */
	assert_int_equal(
		redis_kit_cmd(&nodes[victim], NULL, 0, "CLUSTER FAILOVER"), 0);
	wait_role(&nodes[survivor], &nodes[victim], 'M', 20000);
	wait_role(&nodes[survivor], &nodes[heir], 'S', 20000);
	for (i = 0; i < 64; i++)
		assert_rc(tk_limiter_check(l, key[i], strlen(key[i]), 1, &d),
			  0);
	moved = fcall_rejected(&nodes[heir]) - before;
	print_message("# %ld MOVED for 64 keys after the switch\n", moved);
	if (moved > 4)
		fail_msg("%ld MOVED for 64 keys: the map was not refreshed",
			 moved);
	tk_limiter_close(l);
}

/* The index of the node that serves slot 0, as @from's CLUSTER NODES
 * says (its line's slots begin at 0). */
static int slot0_master(const struct redis_kit *from)
{
	char text[8192], *at, *line;
	int i, port;

	assert_int_equal(
		redis_kit_cmd(from, text, sizeof(text), "CLUSTER NODES"), 0);
	at = strstr(text, " connected 0-");
	if (!at)
		at = strstr(text, " connected 0\n");
	assert_non_null(at);
	*at = '\0';
	line = strrchr(text, '\n');
	line = strstr(line ? line : text, " 127.0.0.1:");
	assert_non_null(line);
	port = atoi(line + 11);
	for (i = 0; i < 6; i++)
		if (nodes[i].port == port)
			return i;
	fail_msg("no node on port %d", port);
	return -1;
}

/*
 * A node demoted while a store's map still names it, the store never
 * connected to it: a ping (slot 0's master, which loads the library on
 * a new connection) meets READONLY there, which did not run; the map is
 * refreshed and the ping answers from the new master.
 */
static void test_demoted_ping(void **state)
{
	struct tk_store_ping out;
	struct tk_store *st;
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_options o = TK_OPTIONS_INIT;
	char spec[128], want[48], info[4096], key[16];
	int i, old, seed = -1, next = -1;

	(void)state;
	if (victim < 0 || !nodes[victim].pid)
		skip(); /* test_failover did not leave its cluster */
	old = slot0_master(&nodes[survivor]);
	snprintf(want, sizeof(want), "master_port:%d\r", nodes[old].port);
	for (i = 0; i < 6; i++) {
		if (i != old && seed < 0 &&
		    redis_cluster_role(&nodes[survivor], &nodes[i]) == 'M')
			seed = i;
		if (redis_kit_cmd(&nodes[i], info, sizeof(info),
				  "INFO replication") == 0 &&
		    strstr(info, want) && strstr(info, "master_link_status:up"))
			next = i;
	}
	assert_true(seed >= 0 && next >= 0);
	snprintf(spec, sizeof(spec),
		 "redis+cluster://127.0.0.1:%d?timeout=200ms",
		 nodes[seed].port);
	assert_rc(tk_store_open(&st, spec, NULL), 0);
	o.store = st;
	assert_rc(tk_limiter_open(&l, "gcra:1000000/1s", NULL, &o), 0);
	/* The whole map learnt, no connection to slot 0's master. */
	pick(&nodes[seed], "p", 0, 1, key);
	assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
	assert_int_equal(redis_kit_cmd(&nodes[next], NULL, 0,
				       "CLUSTER FAILOVER TAKEOVER"),
			 0);
	/* No vote: this shard may have failed over moments ago. */
	wait_role(&nodes[survivor], &nodes[next], 'M', 20000);
	wait_role(&nodes[survivor], &nodes[old], 'S', 20000);
	memset(&out, 0, sizeof(out));
	assert_rc(tk_store_ping(st, &out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "127.0.0.1:%d", nodes[next].port);
	assert_string_equal(out.server, want);
	tk_limiter_close(l);
	tk_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_manual_failover),
		cmocka_unit_test(test_demoted_ping),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
