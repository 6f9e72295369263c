/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_recent.c - a zone's rings of recent key names (shm/recent.c):
 * writers in several processes leave exactly their records; a writer
 * killed half-way leaves an entry that readers skip and that the writer
 * one lap later takes; a reader copying while a writer laps it skips the
 * entry for its sequence, and a writer storing into an entry taken from
 * it is caught by the sum; a writer late to claim by a lap gives its record
 * up; a thread's events of one key in a row add to one record's count,
 * which only that thread stores, so that a store one lap late is no
 * count of the next record and a fork() child keeps a record of its own;
 * long keys are kept truncated; through a zone,
 * denials and only denials reach the ring of denials, with their prefix
 * and key, checks a sample of them; a thread's new denial records are
 * paced (64 at once, then one a microsecond, a pace of its own), its
 * repeats not; a zone of the previous layout is refused with -EPROTO.
 *
 * White-box (statically linked): the ring's functions and test hooks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ck_pr.h>
#include <throttlekit.h>

#include "workers.h"
#include "../../lib/fork.h"
#include "../../shm/recent.h"
#include "../../shm/zone.h"

#define WRITERS 4
#define N TKZ_RECENT_ENTRIES

static char dir[] = "/tmp/tk-recent-XXXXXX";
static struct tkz_recent_ring *ring; /* MAP_SHARED: children write it */
static int per_writer;

static void fresh_ring(void)
{
	memset(ring, 0, sizeof(*ring));
	tk__recent_write_hook = NULL;
	tk__recent_read_hook = NULL;
}

static void put(const char *key)
{
	tk__recent_put(ring, key, strlen(key));
}

struct seen {
	uint64_t n, by_writer[WRITERS], last_ticket;
	char first[TKZ_RECENT_KEY + 1], last[TKZ_RECENT_KEY + 1];
	int ordered;
};

static int count(void *ctx, const struct tk__recent_rec *r)
{
	struct seen *s = ctx;
	unsigned int w, j;

	if (s->n && r->ticket <= s->last_ticket)
		s->ordered = 0;
	s->last_ticket = r->ticket;
	memcpy(s->last, r->key, r->kept);
	s->last[r->kept] = '\0';
	if (s->n == 0)
		memcpy(s->first, s->last, sizeof(s->first));
	s->n++;
	if (sscanf(s->last, "writer-%u-%u", &w, &j) == 2 && w < WRITERS)
		s->by_writer[w]++;
	return 0;
}

static struct seen read_all(struct tk__recent_skips *sk)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	s.ordered = 1;
	memset(sk, 0, sizeof(*sk));
	assert_int_equal(tk__recent_read(ring, sk, count, &s), 0);
	return s;
}

static void writer(int i)
{
	char key[64];
	int j;

	for (j = 0; j < per_writer; j++) {
		snprintf(key, sizeof(key), "writer-%d-%d", i, j);
		put(key);
	}
}

/* Processes writing at once: every record there, exactly once. */
static void test_concurrent_writers(void **state)
{
	struct tk__recent_skips sk;
	struct seen s;
	uint64_t n;
	int i;

	(void)state;
	fresh_ring();
	per_writer = N / WRITERS;
	kit_run_workers(WRITERS, writer);
	s = read_all(&sk);
	assert_int_equal(s.n, N);
	for (i = 0; i < WRITERS; i++)
		assert_int_equal(s.by_writer[i], N / WRITERS);
	assert_true(s.ordered);
	assert_int_equal(sk.busy + sk.torn + sk.bad + sk.lapped, 0);
	/*
	 * Many laps: the last N tickets, each whole or refused by its sum.
	 * A writer descheduled for a lap between its ticket and its stores
	 * may store over the later ticket's record (test_lapped_writer makes
	 * it happen); each writer has one put in flight, so at most WRITERS
	 * records are lost so, and a reader after every writer has exited
	 * finds no entry claimed, torn or of a later lap.
	 */
	fresh_ring();
	per_writer = 3 * N;
	kit_run_workers(WRITERS, writer);
	s = read_all(&sk);
	assert_int_equal(sk.busy + sk.torn + sk.lapped, 0);
	assert_in_range(sk.bad, 0, WRITERS);
	assert_int_equal(s.n + sk.bad, N);
	assert_true(s.ordered);
	for (i = 0, n = 0; i < WRITERS; i++)
		n += s.by_writer[i];
	assert_int_equal(n, s.n);
	if (sk.bad == 0)
		assert_int_equal(s.last_ticket, (uint64_t)WRITERS * 3 * N - 1);
}

static void die(struct tkz_recent_entry *e)
{
	(void)e;
	kill(getpid(), SIGKILL);
}

/* A writer killed between its claim and its publication. */
static void test_killed_writer(void **state)
{
	struct tk__recent_skips sk;
	struct seen s;
	pid_t pid;
	int st, i;
	char key[32];

	(void)state;
	fresh_ring();
	put("before-0");
	put("before-1");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tk__recent_write_hook = die;
		put("a key long enough to die half-way through it");
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(ck_pr_load_64(&ring->head.v), 3);
	assert_int_equal(ring->e[2].seq & 1, 1);
	s = read_all(&sk);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.last, "before-1");
	assert_int_equal(sk.busy, 1);
	assert_int_equal(sk.torn + sk.bad + sk.lapped, 0);
	/* The next writers go on; one lap later the entry is taken. */
	put("after");
	s = read_all(&sk);
	assert_int_equal(s.n, 3);
	assert_int_equal(sk.busy, 1);
	for (i = 0; i < N - 1; i++) {
		snprintf(key, sizeof(key), "lap-%d", i);
		put(key);
	}
	assert_int_equal(ring->e[2].seq, 2 * (uint64_t)(N + 2) + 2);
	s = read_all(&sk);
	assert_int_equal(s.n, N);
	assert_int_equal(sk.busy + sk.torn + sk.bad + sk.lapped, 0);
	assert_string_equal(s.last, "lap-510");
}

static void intrude(struct tkz_recent_entry *e)
{
	(void)e;
	tk__recent_read_hook = NULL;
	put("an intruder of a lap later, as long as the other");
}

/* A writer of the next lap takes the entry while a reader copies it. */
static void test_reader_rechecks(void **state)
{
	struct tk__recent_skips sk;
	struct seen s;
	char key[64];
	int i;

	(void)state;
	fresh_ring();
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "a key of the first lap, %d", i);
		put(key);
	}
	tk__recent_read_hook = intrude;
	s = read_all(&sk);
	/* Ticket 0's entry moved under the copy: skipped for it. */
	assert_int_equal(sk.torn, 1);
	assert_int_equal(sk.bad + sk.busy + sk.lapped, 0);
	assert_int_equal(s.n, N - 1);
	assert_string_equal(s.first, "a key of the first lap, 1");
	s = read_all(&sk);
	assert_int_equal(s.n, N);
	assert_string_equal(s.last,
			    "an intruder of a lap later, as long as the other");
}

static void lap(struct tkz_recent_entry *e)
{
	(void)e;
	tk__recent_write_hook = NULL;
	/* The tickets of a whole lap taken, then the one after. */
	ck_pr_faa_64(&ring->head.v, N - 1);
	put("the later writer, whose record this entry is now");
}

/* A writer delayed a whole lap stores into the entry a later one took. */
static void test_lapped_writer(void **state)
{
	struct tk__recent_skips sk;
	struct seen s;

	(void)state;
	fresh_ring();
	put("first");
	tk__recent_write_hook = lap;
	put("the delayed writer, which stores after it lost its entry");
	assert_int_equal(ck_pr_load_64(&ring->head.v), N + 2);
	s = read_all(&sk);
	/* Only what was written whole: the lap's tickets were never
	 * claimed, and the entry both wrote fails its sum. */
	assert_int_equal(s.n, 0);
	assert_int_equal(sk.bad, 1);
	assert_int_equal(sk.torn, 0);
	assert_int_equal(sk.busy, N - 1);
}

/* A writer that took its ticket a lap ago claims after a later ticket
 * published in its entry: it gives its record up. */
static void test_late_claim(void **state)
{
	struct tk__recent_skips sk;
	struct seen s;
	char key[32];
	int i;

	(void)state;
	fresh_ring();
	for (i = 0; i <= N; i++) {
		snprintf(key, sizeof(key), "on time %d", i);
		put(key);
	}
	/* Ticket 0 again, as a writer stopped since it took it would. */
	ck_pr_store_64(&ring->head.v, 0);
	put("late by a lap");
	ck_pr_store_64(&ring->head.v, N + 1);
	assert_int_equal(ring->e[0].seq, 2 * (uint64_t)N + 2);
	s = read_all(&sk);
	assert_int_equal(s.n, N);
	snprintf(key, sizeof(key), "on time %d", N);
	assert_string_equal(s.last, key);
	assert_int_equal(sk.busy + sk.torn + sk.bad + sk.lapped, 0);
}

struct counts {
	uint64_t records, a, b, other;
};

/* A record of @count events of the @len bytes at @key, into @c. */
static void add_count(struct counts *c, const void *key, size_t len,
		      uint64_t count)
{
	const char *k = key;

	c->records++;
	if (len == 1 && k[0] == 'a')
		c->a += count;
	else if (len == 1 && k[0] == 'b')
		c->b += count;
	else
		c->other += count;
}

static int add_counts(void *ctx, const struct tk__recent_rec *r)
{
	add_count(ctx, r->key, r->kept, r->count);
	return 0;
}

/* The records of the test's ring, counted. */
static struct counts ring_counts(void)
{
	struct counts c;

	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__recent_read(ring, NULL, add_counts, &c), 0);
	return c;
}

/* @key's id for tk__recent_repeat(): any hash of its bytes will do. */
static uint64_t id_of(const char *key)
{
	uint64_t h = 1469598103934665603u;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 1099511628211u;
	return h;
}

/* An event of @key as a zone's denial records it: a repeat of this
 * thread's last record, or a record. */
static void note(const char *key)
{
	size_t len = strlen(key);

	if (!tk__recent_repeat(ring, id_of(key), len))
		tk__recent_first(ring, id_of(key), key, len);
}

static void repeater(int i)
{
	int j;

	for (j = 0; j < per_writer; j++)
		note(i % 2 ? "a" : "b");
}

/* A thread's events of one key in a row: one record, counted. */
static void test_repeats(void **state)
{
	struct counts c;
	char key[32];
	int i;

	(void)state;
	fresh_ring();
	for (i = 0; i < 100; i++)
		note("a");
	c = ring_counts();
	assert_int_equal(c.records, 1);
	assert_int_equal(c.a, 100);
	/* A repeat is of the last record's ring, id and length, all three. */
	assert_false(tk__recent_repeat(ring, id_of("b"), 1));
	assert_false(tk__recent_repeat(ring, id_of("a"), 2));
	assert_false(tk__recent_repeat(ring + 1, id_of("a"), 1));
	note("b");
	note("a");
	c = ring_counts();
	assert_int_equal(c.records, 3);
	assert_int_equal(c.a, 101);
	assert_int_equal(c.b, 1);
	/* Its entry taken by a lap of others: a new record, not theirs. */
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "other %d", i);
		put(key);
	}
	assert_false(tk__recent_repeat(ring, id_of("a"), 1));
	/* Its repeats in a later lap: the count of that lap's record. */
	for (i = 0; i < 5; i++)
		note("a");
	c = ring_counts();
	assert_int_equal(c.a, 5);
	assert_int_equal(c.other, N - 1);
	/* Processes repeating at once, some of them one key: all counted. */
	fresh_ring();
	per_writer = 1000;
	kit_run_workers(WRITERS, repeater);
	c = ring_counts();
	assert_int_equal(c.a + c.b, (uint64_t)WRITERS * 1000);
	assert_int_equal(c.a, (uint64_t)WRITERS / 2 * 1000);
	assert_true(c.records <= WRITERS);
}

/*
 * A record's count is its writer's alone: a count stored one lap late,
 * into an entry a later ticket took, is not that record's; and a fork()
 * child counts its repeats in a record of its own, not in the one it
 * inherited the memory of.
 */
static void test_repeat_owner(void **state)
{
	struct counts c;
	pid_t pid;
	int i, st;

	(void)state;
	tk__rcu_setup(); /* the fork generation, as a zone store has it */
	fresh_ring();
	for (i = 0; i < 3; i++)
		note("a");
	for (i = 0; i < N; i++)
		put("other");
	/* The repeat's store of "a"'s writer, one lap late (lap 0, ticket
	 * 0's entry, now ticket N's). */
	ck_pr_store_64(&ring->e[0].count, 3);
	c = ring_counts();
	assert_int_equal(c.records, N);
	assert_int_equal(c.a, 0);
	assert_int_equal(c.other, N);

	fresh_ring();
	for (i = 0; i < 5; i++)
		note("a");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (i = 0; i < 3; i++)
			note("a");
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	note("a");
	note("a");
	c = ring_counts();
	assert_int_equal(c.records, 2);
	assert_int_equal(c.a, 10);
}

static int keep_one(void *ctx, const struct tk__recent_rec *r)
{
	memcpy(ctx, r, sizeof(*r));
	return 0;
}

/* Keys longer than the entry keep their first bytes and full length. */
static void test_truncation(void **state)
{
	unsigned char key[300];
	struct tk__recent_rec r;
	size_t i, len[] = { 1, TKZ_RECENT_KEY, TKZ_RECENT_KEY + 1, 300 };

	(void)state;
	for (i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
		fresh_ring();
		tk__recent_put(ring, key, len[i]);
		memset(&r, 0, sizeof(r));
		assert_int_equal(tk__recent_read(ring, NULL, keep_one, &r), 0);
		assert_int_equal(r.len, len[i]);
		assert_int_equal(r.kept, len[i] < TKZ_RECENT_KEY
						 ? len[i]
						 : TKZ_RECENT_KEY);
		assert_memory_equal(r.key, key, r.kept);
	}
}

struct zone_seen {
	uint64_t denied, denials, sampled, other;
	char prefix[64], key[64];
};

static int zone_count(void *ctx, const struct tk_zone_recent *r)
{
	struct zone_seen *s = ctx;

	if (r->denied) {
		s->denied += r->count;
		s->denials++;
		snprintf(s->prefix, sizeof(s->prefix), "%.*s",
			 (int)r->prefix_len, r->prefix);
		snprintf(s->key, sizeof(s->key), "%.*s", (int)r->key_len,
			 r->key);
	} else {
		s->sampled += r->count;
	}
	if (r->truncated || r->dimension != -1)
		s->other++;
	return 0;
}

/* Through a zone: denials, only they, in one ring; samples in the other. */
static void test_zone_records(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct zone_seen s;
	struct tk_limiter *l;
	struct tk_decision d;
	int i, denied = 0;

	(void)state;
	o.prefix = "per_ip|gcra|";
	assert_int_equal(tk_limiter_open(&l, "gcra:5/1h", "shm:z", &o), 0);
	/* Allowed checks of many keys: samples, but no denial. */
	for (i = 0; i < 20 * 127; i++) {
		char key[16];
		int n = snprintf(key, sizeof(key), "a:%d", i);

		assert_int_equal(tk_limiter_check(l, key, (size_t)n, 1, &d), 0);
		assert_true(d.allowed);
	}
	for (i = 0; i < 12; i++) {
		assert_int_equal(tk_limiter_check(l, "hot", 3, 1, &d), 0);
		denied += !d.allowed;
	}
	assert_int_equal(denied, 7);
	memset(&s, 0, sizeof(s));
	assert_int_equal(tk_zone_recent("z", zone_count, &s), 0);
	/* Seven denials in a row of one thread: one record. */
	assert_int_equal(s.denied, 7);
	assert_int_equal(s.denials, 1);
	assert_string_equal(s.prefix, "per_ip|gcra|");
	assert_string_equal(s.key, "hot");
	/* A gap between samples is 1 to 127 checks. */
	assert_true(s.sampled >= 20);
	assert_true(s.sampled <= TKZ_RECENT_ENTRIES);
	assert_int_equal(s.other, 0);
	tk_limiter_close(l);
}

/* A zone's denial records, into a struct counts. */
static int add_denials(void *ctx, const struct tk_zone_recent *r)
{
	if (r->denied)
		add_count(ctx, r->key, r->key_len, r->count);
	return 0;
}

/*
 * Denials through every path that decides them (GCRA's and a window's
 * direct paths, the store's apply, a composite's multi-key update, which
 * records its first dimension's key): a thread's run of one key's denials
 * is one record, two keys in turn a record each time, and every denial
 * is counted to its own key.
 */
static void test_zone_denials(void **state)
{
	static const char *const policies[] = {
		"gcra:2/1h", "sliding-window:2/1h", "fixed-window:2/1h",
		"sliding-log:2/1h", "all(gcra:2/1h,sliding-window:2/1h)"
	};
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct counts c;
	size_t i;
	int j;

	(void)state;
	o.prefix = "p|";
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		tk_zone_destroy("d");
		assert_int_equal(tk_limiter_open(&l, policies[i], "shm:d", &o),
				 0);
		for (j = 0; j < 4; j++) {
			assert_int_equal(tk_limiter_check(l, j % 2 ? "a" : "b",
							  1, 1, &d),
					 0);
			assert_true(d.allowed);
		}
		for (j = 0; j < 10; j++) {
			assert_int_equal(tk_limiter_check(l, "a", 1, 1, &d), 0);
			assert_false(d.allowed);
		}
		for (j = 0; j < 6; j++) {
			assert_int_equal(tk_limiter_check(l, j % 2 ? "a" : "b",
							  1, 1, &d),
					 0);
			assert_false(d.allowed);
		}
		memset(&c, 0, sizeof(c));
		assert_int_equal(tk_zone_recent("d", add_denials, &c), 0);
		print_message("%s: %llu records\n", policies[i],
			      (unsigned long long)c.records);
		assert_int_equal(c.a, 13);
		assert_int_equal(c.b, 3);
		assert_int_equal(c.other, 0);
		assert_int_equal(c.records, 7);
		tk_limiter_close(l);
	}
	tk_zone_destroy("d");
}

/* A zone's denial records, and the events they stand for. */
struct paced {
	uint64_t records, events;
};

static int add_paced(void *ctx, const struct tk_zone_recent *r)
{
	struct paced *p = ctx;

	if (r->denied) {
		p->records++;
		p->events += r->count;
	}
	return 0;
}

static struct paced paced_now(void)
{
	struct paced p = { 0, 0 };

	assert_int_equal(tk_zone_recent("pace", add_paced, &p), 0);
	return p;
}

/* @n checks of the keys <c><first> to <c><first + n - 1>, in turn, each
 * expected to be @allowed or not: the checks that were not. */
static int check_keys(struct tk_limiter *l, char c, int first, int n,
		      int allowed)
{
	struct tk_decision d;
	char key[16];
	int i, len, wrong = 0;

	for (i = first; i < first + n; i++) {
		len = snprintf(key, sizeof(key), "%c%d", c, i);
		if (tk_limiter_check(l, key, (size_t)len, 1, &d) != 0 ||
		    d.allowed != allowed)
			wrong++;
	}
	return wrong;
}

static void deny_keys(struct tk_limiter *l, int first, int n)
{
	assert_int_equal(check_keys(l, 'k', first, n, 0), 0);
}

/* Another thread's ten keys, each admitted and then denied. */
static void *other_thread(void *l)
{
	int wrong = check_keys(l, 'x', 0, 10, 1) + check_keys(l, 'x', 0, 10, 0);

	return (void *)(intptr_t)wrong;
}

/*
 * A flood of denials of distinct keys, through each path that records a
 * denial (GCRA's direct path, a window's, the store's apply, a
 * composite's): a thread makes 64 new records at once, then one per
 * microsecond of its checks' clock; repeats of its last record are
 * counted and take none of that pace; a denial left unrecorded ends the
 * last record's run; another thread has a pace of its own; a clock more
 * than a burst behind the pace (another clock's) starts it afresh; the
 * zone's counters count every denial.
 */
static void test_denial_pace(void **state)
{
	static const char *const policies[] = {
		"gcra:1/1h", "sliding-window:1/1h", "sliding-log:1/1h",
		"all(gcra:1/1h,sliding-window:1/1h)"
	};
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_clock *clk;
	struct tk_limiter *l;
	struct paced p;
	pthread_t th;
	void *wrong;
	uint64_t t0;
	size_t i;
	int j;

	(void)state;
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		/* Each policy 1000 s after the last: whatever this thread's
		 * pace was, a burst again. */
		t0 = UINT64_C(1000000000000) * (i + 1);
		tk_zone_destroy("pace");
		assert_int_equal(tk_clock_manual_new(&clk, t0), 0);
		o.clock = clk;
		assert_int_equal(
			tk_limiter_open(&l, policies[i], "shm:pace", &o), 0);
		assert_int_equal(check_keys(l, 'k', 0, 200, 1), 0);
		/* Six denials of k0: one record, and none of the pace. */
		for (j = 0; j < 6; j++)
			deny_keys(l, 0, 1);
		p = paced_now();
		assert_int_equal(p.records, 1);
		assert_int_equal(p.events, 6);
		deny_keys(l, 1, 199);
		p = paced_now();
		assert_int_equal(p.records, 64);
		assert_int_equal(p.events, 69);
		/* Another thread, the same instant: a burst of its own. */
		assert_int_equal(pthread_create(&th, NULL, other_thread, l), 0);
		assert_int_equal(pthread_join(th, &wrong), 0);
		assert_int_equal((intptr_t)wrong, 0);
		p = paced_now();
		assert_int_equal(p.records, 74);
		/* k63 made this thread's last record, then k64 to k199 went
		 * unrecorded: k63 again is no repeat, and the pace holds it. */
		deny_keys(l, 63, 1);
		p = paced_now();
		assert_int_equal(p.records, 74);
		assert_int_equal(p.events, 79);
		/* 10 us later: 10 more, then none. */
		assert_int_equal(tk_clock_advance(clk, 10000), 0);
		deny_keys(l, 0, 12);
		p = paced_now();
		assert_int_equal(p.records, 84);
		/* 1 ns back: the pace 1 ns more than a burst and a gap ahead,
		 * another clock's time: a record again. */
		assert_int_equal(tk_clock_set(clk, t0 + 10000 - 1), 0);
		deny_keys(l, 20, 1);
		p = paced_now();
		assert_int_equal(p.records, 85);
		assert_int_equal(p.events, 90);
		/* Every denial counted, recorded or not. */
		assert_int_equal(tk_zone_info("pace", &info, sizeof(info)), 0);
		assert_int_equal(info.denies, 6 + 199 + 10 + 1 + 12 + 1);
		tk_limiter_close(l);
		tk_clock_free(clk);
	}
	tk_zone_destroy("pace");
}

/* A zone as the previous layout made it: refused, typed. */
static void test_old_layout(void **state)
{
	struct tk_zone_info info;
	struct tkz_header h;
	char path[256];
	int fd;

	(void)state;
	assert_int_equal(tk_zone_create("old", NULL), 0);
	kit_zone_path(path, sizeof(path), "old");
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	h.version = 8;
	h.segment_size -= TKZ_RECENT_SIZE;
	h.check = tk__zone_header_check(&h);
	assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	assert_int_equal(ftruncate(fd, (off_t)h.segment_size), 0);
	close(fd);
	assert_int_equal(tk_zone_info("old", &info, sizeof(info)), -EPROTO);
	assert_int_equal(tk_zone_recent("old", zone_count, &info), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_writers),
		cmocka_unit_test(test_killed_writer),
		cmocka_unit_test(test_reader_rechecks),
		cmocka_unit_test(test_lapped_writer),
		cmocka_unit_test(test_late_claim),
		cmocka_unit_test(test_repeats),
		cmocka_unit_test(test_repeat_owner),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_zone_records),
		cmocka_unit_test(test_zone_denials),
		cmocka_unit_test(test_denial_pace),
		cmocka_unit_test(test_old_layout),
	};

	ring = mmap(NULL, sizeof(*ring), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED || !kit_shared() || kit_zone_dir(dir) != 0)
		return 1;
	return cmocka_run_group_tests_name("recent", tests, NULL,
					   kit_zone_dir_remove);
}
