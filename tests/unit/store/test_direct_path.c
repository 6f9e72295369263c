/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_direct_path.c - a zone's direct path for GCRA and the token bucket
 * (try_check() in lib/store/store-slot.c, shm/word.h) decides exactly as the
 * generic apply() with its transition callback.
 *
 * Two zones start as byte-identical copies of one file (one fixed secret, so
 * one slot per key in each).  The same generated timeline runs through
 * limiters on each: direct-path limiters on one zone, limiters forced to
 * the generic path (tk__limiter_generic()) on the other.  The timeline
 * moves the clock both ways, lets sweeps fall due, floods a small zone
 * with keys so that they are evicted, resets keys, and writes slots by
 * hand as a corrupt or crashed zone would leave them: a TAT no check
 * writes, an insert (INS) or collided insert (COL) of the key, another
 * algorithm's shape, "no state yet".  After every step the two zones'
 * slot tables are byte-identical and every check answered the same code
 * and decision; at the end the whole files (counters, sweep cursors,
 * tickets, the ring of recent denials, unpaced; not the sampled checks)
 * and the corrupt counts are equal too.
 *
 * test_window_direct.c runs the same on window policies (DIRECT_*).
 *
 * White-box: linked statically for tk__limiter_generic().
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store-ops.h"
#include "test-hooks.h"

#include "asserts.h"
#include "rnd.h"
#include "workers.h"
#include "../../shm/recent.h"
#include "../../shm/slot.h"
#include "../../shm/zone.h"

#define T0 UINT64_C(1700000000000000000)
#define NOW_END ((UINT64_C(1) << 63) - 1) /* the latest clock reading */
#define CAP 64 /* slots: a pool of flood keys must evict */
#define STEPS 6000
#define HOT_KEYS 6
#define FLOOD_KEYS 200
#define NPOL 4

static char dir[] = "/tmp/tk-direct-XXXXXX";

#ifndef DIRECT_POLICIES
/* GCRA with and without a burst, the token bucket under a longer
 * prefix, and GCRA with another tolerance on the first one's keys: near
 * 2^63 ns one writes TATs the other does not validate. */
#define DIRECT_POLICIES                                                        \
	"gcra:10/1s", "gcra:5/1h,burst=3",                                     \
		"token-bucket:capacity=4,refill=2/1s", "gcra:100/1m,burst=7"
#define DIRECT_LIMITS 10, 3, 4, 7
#define DIRECT_RACE_POLICY "gcra:1000/1h"
#define DIRECT_RACE_CHECKS 3000
#define DIRECT_RACE_LIMIT 1000
#define DIRECT_EXTRA_TESTS
#define DIRECT_BLOCKS 0	  /* no state in a block */
#define DIRECT_TAKEN(n) 1 /* (the direct checks are not counted) */
#define DIRECT_RESET()
#define DIRECT_MAX_KEYS                                                        \
	(CAP * 2 / 5) /* CAP slots: the memory store evicts too */
#endif
static const char *const policies[NPOL] = { DIRECT_POLICIES };
static const char *const prefixes[NPOL] = { NULL, "p1", "prefix-2", NULL };

struct side {
	const char *name;
	struct tk_store *s;
	struct tk_limiter *l[NPOL];
	int fd;
};

static void copy_file(const char *from, const char *to)
{
	char a[512], b[512], buf[65536];
	ssize_t n;
	int in, out;

	kit_zone_path(a, sizeof(a), from);
	kit_zone_path(b, sizeof(b), to);
	in = open(a, O_RDONLY);
	out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

/*
 * Give zone @name the secret {@a, @b}: where keys land follows from it,
 * so a timeline on a zone of a random secret meets a rare arrangement
 * (a class's turn that frees a block, then finds the class full) only
 * in some runs.  Fixed, every run meets what the last one met.
 */
static void set_secret(const char *name, uint64_t a, uint64_t b)
{
	struct tkz_header h;
	int fd = kit_zone_open(name);

	assert_int_equal(pread(fd, &h, sizeof(h), 0), sizeof(h));
	h.seed[0] = a;
	h.seed[1] = b;
	h.check = tk__zone_header_check(&h);
	assert_int_equal(pwrite(fd, &h, 128, 0), 128);
	close(fd);
}

static void open_side(struct side *sd, const char *name, struct tk_clock *c,
		      int generic)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char spec[64], path[512];
	int i;

	sd->name = name;
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER | TK_OPT_ZONE_NO_CREATE;
	o.max_keys = DIRECT_MAX_KEYS;
	o.reclaim_grace = 2 * SEC;
	snprintf(spec, sizeof(spec), name ? "shm:%s" : "memory", name);
	assert_rc(tk_store_open(&sd->s, spec, &o), 0);
	for (i = 0; i < NPOL; i++) {
		struct tk_options lo = TK_OPTIONS_INIT;

		lo.clock = c;
		lo.store = sd->s;
		lo.prefix = prefixes[i];
		assert_rc(tk_limiter_open(&sd->l[i], policies[i], NULL, &lo),
			  0);
		if (generic)
			tk__limiter_generic(sd->l[i]);
	}
	sd->fd = -1;
	if (!name)
		return;
	kit_zone_path(path, sizeof(path), name);
	sd->fd = open(path, O_RDWR);
	assert_true(sd->fd >= 0);
}

static void close_side(struct side *sd, uint64_t *corrupt)
{
	struct tk_stats st;
	int i;

	assert_rc(tk_store_stats(sd->s, &st, sizeof(st)), 0);
	*corrupt = st.corrupt;
	for (i = 0; i < NPOL; i++)
		tk_limiter_close(sd->l[i]);
	tk_store_close(sd->s);
	if (sd->fd >= 0)
		close(sd->fd);
}

static void read_slots(const struct side *sd, uint64_t w[CAP][2])
{
	assert_int_equal(pread(sd->fd, w, CAP * 16, 4096), CAP * 16);
}

static void write_word(const struct side *sd, int slot, int word, uint64_t v)
{
	assert_int_equal(pwrite(sd->fd, &v, 8, 4096 + slot * 16 + word * 8), 8);
}

/* The same damage to the same MEM slot of both zones. */
static void inject(const struct side *a, const struct side *b, uint64_t *rs,
		   uint64_t now)
{
	uint64_t w[CAP][2], v;
	int mem[CAP], n = 0, i, slot, word = 1;

	read_slots(a, w);
	for (i = 0; i < CAP; i++)
		if (w[i][0] >> 62 == 2)
			mem[n++] = i;
	if (n == 0)
		return;
	slot = mem[rnd_range(rs, 0, (uint64_t)n - 1)];
	switch (rnd_range(rs, 0, 5)) {
	case 0: /* a TAT beyond 2^63 + tau: no check writes it */
		v = (UINT64_C(1) << 63) | (UINT64_C(1) << 62);
		break;
	case 1: /* an insert of the key under way (or left by the dead) */
		word = 0;
		v = (w[slot][0] & ~(UINT64_C(3) << 62)) | (UINT64_C(1) << 62);
		break;
	case 2: /* a collided insert: garbage */
		word = 0;
		v = w[slot][0] | (UINT64_C(3) << 62);
		break;
	case 3: /* another algorithm's state (fixed window, id 3) */
		word = 0;
		v = (w[slot][0] & ~(UINT64_C(7) << 57)) | (UINT64_C(3) << 57);
		break;
	case 4: /* a valid TAT ahead of now */
		v = now + rnd_range(rs, 0, 10 * SEC);
		break;
	default: /* "no state yet" */
		v = 0;
		break;
	}
	write_word(a, slot, word, v);
	write_word(b, slot, word, v);
}

static void same_slots(const struct side *a, const struct side *b, int step)
{
	uint64_t wa[CAP][2], wb[CAP][2];
	int i;

	read_slots(a, wa);
	read_slots(b, wb);
	for (i = 0; i < CAP; i++)
		if (wa[i][0] != wb[i][0] || wa[i][1] != wb[i][1])
			fail_msg("step %d: slot %d is {%#llx, %#llx} direct, "
				 "{%#llx, %#llx} generic",
				 step, i, (unsigned long long)wa[i][0],
				 (unsigned long long)wa[i][1],
				 (unsigned long long)wb[i][0],
				 (unsigned long long)wb[i][1]);
}

/* The files of zones @x and @y are equal, but for the ring of sampled
 * checks (shm/recent.h), just before the rule directory that ends the
 * file: its samples fall where this thread's countdown has them, on
 * either side. */
/* The next @left bytes of @fa and @fb are equal. */
static void same_bytes(int fa, int fb, off_t left)
{
	char ba[4096], bb[4096];
	ssize_t n, m;

	do {
		n = read(fa, ba,
			 left < (off_t)sizeof(ba) ? (size_t)left : sizeof(ba));
		m = read(fb, bb, (size_t)n);
		assert_int_equal(n, m);
		assert_true(n >= 0);
		assert_memory_equal(ba, bb, (size_t)n);
		left -= n;
	} while (n > 0);
	assert_int_equal(left, 0);
}

static void same_files(const char *x, const char *y)
{
	char a[512], b[512];
	off_t left, rules;
	int fa, fb;

	kit_zone_path(a, sizeof(a), x);
	kit_zone_path(b, sizeof(b), y);
	fa = open(a, O_RDONLY);
	fb = open(b, O_RDONLY);
	assert_true(fa >= 0 && fb >= 0);
	left = lseek(fa, 0, SEEK_END);
	assert_int_equal(lseek(fb, 0, SEEK_END), left);
	rules = left - (off_t)(TKZ_RULES * TKZ_RULE_SIZE);
	left = rules - (off_t)sizeof(struct tkz_recent_ring);
	assert_int_equal(lseek(fa, 0, SEEK_SET), 0);
	assert_int_equal(lseek(fb, 0, SEEK_SET), 0);
	same_bytes(fa, fb, left);
	assert_int_equal(lseek(fa, rules, SEEK_SET), rules);
	assert_int_equal(lseek(fb, rules, SEEK_SET), rules);
	same_bytes(fa, fb, (off_t)(TKZ_RULES * TKZ_RULE_SIZE));
	close(fa);
	close(fb);
}

struct tally {
	unsigned long checks, allowed, denied, errors[3]; /* ERANGE, EPROTO,
							     other */
};

/* One check of @key through policy @i on both sides, compared. */
static void check_both(const struct side *a, const struct side *b, int i,
		       const char *key, uint64_t cost, int step,
		       struct tally *t)
{
	struct tk_decision da, db;
	int ra, rb;

	memset(&da, 0xa5, sizeof(da));
	memset(&db, 0xa5, sizeof(db));
	ra = tk_limiter_check(a->l[i], key, strlen(key), cost, &da);
	rb = tk_limiter_check(b->l[i], key, strlen(key), cost, &db);
	if (ra != rb)
		fail_msg("step %d: %s on %s: %d direct, %d generic", step,
			 policies[i], key, ra, rb);
	t->checks++;
	if (ra == -ERANGE)
		t->errors[0]++;
	else if (ra == -EPROTO)
		t->errors[1]++;
	else if (ra)
		t->errors[2]++;
	if (ra)
		return;
	if (da.allowed != db.allowed || da.limit != db.limit ||
	    da.remaining != db.remaining || da.reset_at != db.reset_at ||
	    da.retry_after != db.retry_after || da.delay != db.delay ||
	    da.degraded != db.degraded)
		fail_msg("step %d: %s on %s: direct {%d %llu %llu %llu %llu}, "
			 "generic {%d %llu %llu %llu %llu}",
			 step, policies[i], key, da.allowed,
			 (unsigned long long)da.limit,
			 (unsigned long long)da.remaining,
			 (unsigned long long)da.reset_at,
			 (unsigned long long)da.retry_after, db.allowed,
			 (unsigned long long)db.limit,
			 (unsigned long long)db.remaining,
			 (unsigned long long)db.reset_at,
			 (unsigned long long)db.retry_after);
	if (da.allowed)
		t->allowed++;
	else
		t->denied++;
}

/*
 * Every key's slot made another algorithm's (the inject() of case 3 on
 * all of them), then every hot key checked under every policy: both
 * sides refuse the same keys with -EPROTO.  The random timeline may miss
 * that outcome: where keys land depends on the zone's random secret.
 */
static void other_algorithm(const struct side *a, const struct side *b,
			    struct tally *t)
{
	uint64_t w[CAP][2], v;
	char key[32];
	int i, k;

	read_slots(a, w);
	for (i = 0; i < CAP; i++) {
		if (w[i][0] >> 62 != 2)
			continue;
		v = (w[i][0] & ~(UINT64_C(7) << 57)) | (UINT64_C(3) << 57);
		write_word(a, i, 0, v);
		write_word(b, i, 0, v);
	}
	for (i = 0; i < NPOL; i++)
		for (k = 0; k < HOT_KEYS; k++) {
			snprintf(key, sizeof(key), "hot-%d", k);
			check_both(a, b, i, key, 1, STEPS, t);
		}
}

/* @zone: on two zones whose secret is @zone (else on two memory stores,
 * without the steps that write zone files). */
static void timeline(uint64_t seed, uint64_t zone)
{
	static const uint64_t limits[NPOL] = { DIRECT_LIMITS };
	struct tk_options o = TK_OPTIONS_INIT;
	struct side a, b;
	struct tally t = { 0, 0, 0, { 0, 0, 0 } };
	struct tk_clock *c;
	uint64_t rs = seed, now = T0, r, ca, cb;
	char key[32];
	int step, i;

	o.zone_capacity = CAP;
	o.reclaim_grace = 2 * SEC;
	tk_zone_destroy("direct");
	tk_zone_destroy("generic");
	if (zone) {
		assert_rc(tk_zone_create("direct", &o), 0);
		set_secret("direct", zone, 0x5eed);
		copy_file("direct", "generic");
	}
	assert_rc(tk_clock_manual_new(&c, now), 0);
	DIRECT_RESET();
	open_side(&a, zone ? "direct" : NULL, c, 0);
	open_side(&b, zone ? "generic" : NULL, c, 1);
	for (step = 0; step < STEPS; step++) {
		/* The last fifth of the timeline runs at the clock's end. */
		if (step == STEPS / 5 * 4)
			now = NOW_END - 10 * SEC;
		if (now > NOW_END)
			now = NOW_END;
		r = rnd_range(&rs, 0, 99);
		if (r < 8) {
			static const uint64_t jumps[] = { 0, 1000, SEC / 10,
							  SEC + SEC / 2,
							  5 * SEC };

			now += rnd_range(&rs, 0, jumps[rnd_range(&rs, 0, 4)]);
		} else if (r < 10) {
			now -= rnd_range(&rs, 0, 2 * SEC); /* a step back */
		} else if (r < 12) {
			if (zone)
				inject(&a, &b, &rs, now);
		} else if (r < 13) {
			if (!zone)
				continue;
			assert_rc(tk_zone_sweep("direct", now), 0);
			assert_rc(tk_zone_sweep("generic", now), 0);
		} else if (r < 14) {
			i = (int)rnd_range(&rs, 0, NPOL - 1);
			snprintf(key, sizeof(key), "hot-%d",
				 (int)rnd_range(&rs, 0, HOT_KEYS - 1));
			assert_rc(tk_limiter_reset(a.l[i], key, strlen(key)),
				  0);
			assert_rc(tk_limiter_reset(b.l[i], key, strlen(key)),
				  0);
		} else {
			i = (int)rnd_range(&rs, 0, NPOL - 1);
			if (rnd_range(&rs, 0, 4))
				snprintf(key, sizeof(key), "hot-%d",
					 (int)rnd_range(&rs, 0, HOT_KEYS - 1));
			else
				snprintf(
					key, sizeof(key), "flood-%d",
					(int)rnd_range(&rs, 0, FLOOD_KEYS - 1));
			check_both(&a, &b, i, key,
				   rnd_range(&rs, 0, 5)
					   ? 1
					   : rnd_range(&rs, 1, limits[i] + 1),
				   step, &t);
		}
		if (now > NOW_END)
			now = NOW_END;
		assert_rc(tk_clock_set(c, now), 0);
		if (zone)
			same_slots(&a, &b, step);
	}
	if (zone)
		other_algorithm(&a, &b, &t);
	close_side(&a, &ca);
	close_side(&b, &cb);
	if (ca != cb)
		fail_msg("%llu corrupt states direct, %llu generic",
			 (unsigned long long)ca, (unsigned long long)cb);
	/* Most checks of the direct side took the direct path. */
	assert_true(DIRECT_TAKEN(t.checks));
	/* The timeline reached every outcome. */
	assert_true(t.allowed > 300 && t.denied > 300);
	/* Windows meet corrupt states only where a zone's damage hits a
	 * packed word (a broken block reference is no state): not always. */
	assert_true(t.errors[0] > 0 && (ca > 0 || DIRECT_BLOCKS));
	/* Blocks fill a zone this small: both sides refuse alike. */
	assert_true(t.errors[2] == 0 || DIRECT_BLOCKS);
	tk_clock_free(c);
	if (!zone)
		return;
	same_files("direct", "generic");
	assert_true(t.errors[1] > 0);
	assert_rc(tk_zone_destroy("direct"), 0);
	assert_rc(tk_zone_destroy("generic"), 0);
}

static void test_same_as_generic(void **state)
{
	/* {timeline, secret}.  The last: the window timeline where a
	 * direct check's claim found the class full after its turn freed
	 * a block, then handed the check to the apply, which claimed again
	 * (one "full" verdict more than the generic side's). */
	static const uint64_t seeds[][2] = { { 1, 1 },
					     { 2, 2 },
					     { 0x5eed, 0x5eed },
					     { 20261125, 20261125 },
					     { 2, 109 } };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		timeline(seeds[i][0], seeds[i][1]);
}

/* The memory store's direct path (the same, on a private table)
 * likewise, on decisions: eviction, expiry and clock steps,
 * single-threaded. */
static void test_memory_same_as_generic(void **state)
{
	static const uint64_t seeds[] = { 3, 0xfeed, 777 };
	size_t i;

	(void)state;
	/* One secret for both stores: they place, sweep and evict keys
	 * alike, as two copies of one zone do. */
	tk__memory_secret[0] = 0x1234;
	tk__memory_secret[1] = 0x5678;
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		timeline(seeds[i], 0);
	tk__memory_secret[0] = tk__memory_secret[1] = 0;
}

/*
 * Both again with every table "far" (lib/store/slot-store.h): the key hashed
 * and its slot prefetched before the clock is read.
 */
static void test_far_same_as_generic(void **state)
{
	tk__slot_near_test = 1; /* no table is near */
	timeline(0xfa4, 0xfa4);
	timeline(20261126, 20261126);
	timeline(20261126, 20261161); /* as test_same_as_generic's last */
	tk__memory_secret[0] = 0x1234;
	tk__memory_secret[1] = 0x5678;
	timeline(0xfa5, 0);
	tk__memory_secret[0] = tk__memory_secret[1] = 0;
	tk__slot_near_test = 0;
	(void)state;
}

/*
 * Contended: two threads check one hot key through the direct path while
 * a third forces the generic path on the same store (a zone, memory); every
 * admission is counted once (exactness), whichever path made it.
 */
/* Checks of new keys by a flooding thread: its table grows under the
 * others (a memory store). */
#define DIRECT_FLOOD 60000

struct race {
	struct tk_limiter *l;
	int flood; /* 1: checks DIRECT_FLOOD new keys, not "hot" */
	int admitted;
};

static void *race_worker(void *arg)
{
	struct race *r = arg;
	struct tk_decision d;
	char key[32];
	int i, n;

	for (i = 0; i < (r->flood ? DIRECT_FLOOD : DIRECT_RACE_CHECKS); i++) {
		n = r->flood ? snprintf(key, sizeof(key), "f%d", i)
			     : snprintf(key, sizeof(key), "hot");
		if (tk_limiter_check(r->l, key, (size_t)n, 1, &d) != 0)
			return NULL; /* admitted stays short: fails below */
		if (!r->flood)
			r->admitted += d.allowed;
	}
	return NULL;
}

/* On store @spec, policy @policy, three threads admit @limit of "hot" in
 * all: the thread @generic the long way, the thread @flood checking new
 * keys instead (-1: none). */
static void race_on(const char *spec, const char *policy, int generic,
		    int flood, int limit)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct race r[3];
	pthread_t th[3];
	struct tk_clock *c;
	struct tk_store *s;
	int i, total = 0;

	tk_zone_destroy("race");
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	o.zone_capacity = CAP;
	assert_rc(tk_store_open(&s, spec, &o), 0);
	for (i = 0; i < 3; i++) {
		struct tk_options lo = TK_OPTIONS_INIT;

		lo.clock = c;
		lo.store = s;
		assert_rc(tk_limiter_open(&r[i].l, policy, NULL, &lo), 0);
		if (i == generic)
			tk__limiter_generic(r[i].l);
		r[i].flood = i == flood;
		r[i].admitted = 0;
	}
	for (i = 0; i < 3; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, race_worker, &r[i]), 0);
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		total += r[i].admitted;
	}
	assert_int_equal(total, limit);
	for (i = 0; i < 3; i++)
		tk_limiter_close(r[i].l);
	tk_store_close(s);
	tk_clock_free(c);
	tk_zone_destroy("race");
}

static void contended(const char *spec)
{
	race_on(spec, DIRECT_RACE_POLICY, 2, -1, DIRECT_RACE_LIMIT);
}

static void test_contended_exact(void **state)
{
	(void)state;
	contended("shm:race");
	contended("memory");
}

static int setup(void **state)
{
	(void)state;
	/* One thread checks both zones in turn: paced, its denial records
	 * would fall on whichever side had the pace's credit. */
	tk__deny_unpaced = 1;
	return kit_zone_dir(dir);
}

#if !DIRECT_BLOCKS
/*
 * A known key is decided in place whichever of its candidates holds it
 * (tk__zone_word_find() probes the first before working out the
 * others): 400 keys in 1024 slots take many keys' first candidates, so
 * that others sit in a later one of the same window.  None of their
 * second checks goes to apply().  (Window B, a key's candidates 16 to
 * 31, is reached only where window A is full: too rare at a load that
 * evicts nothing to be counted on here; test_same_as_generic's floods
 * run keys there.)
 */
static void test_every_candidate(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_clock *c;
	char key[16];
	int i;

	(void)state;
	tk_zone_destroy("cand");
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.zone_capacity = 1024;
	assert_rc(tk_limiter_open(&l, "gcra:10/1s", "shm:cand", &o), 0);
	for (i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
		assert_true(d.allowed);
	}
	tk__check_applied = 0;
	for (i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
		assert_true(d.allowed && d.remaining == 8);
	}
	assert_int_equal(tk__check_applied, 0);
	tk_limiter_close(l);
	/* On the system clock, whose checks take tk_limiter_check()'s lean
	 * entry, tk__limiter_generic() still sends every check to apply(). */
	assert_rc(tk_limiter_open(&l, "gcra:10/1s", "shm:cand", NULL), 0);
	tk__limiter_generic(l);
	assert_rc(tk_limiter_check(l, "key-0", 5, 1, &d), 0);
	assert_int_equal(tk__check_applied, 1);
	tk_limiter_close(l);
	tk_clock_free(c);
	tk_zone_destroy("cand");
}
#undef DIRECT_EXTRA_TESTS
#define DIRECT_EXTRA_TESTS cmocka_unit_test(test_every_candidate),
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_generic),
		cmocka_unit_test(test_memory_same_as_generic),
		cmocka_unit_test(test_far_same_as_generic),
		cmocka_unit_test(test_contended_exact), DIRECT_EXTRA_TESTS
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
