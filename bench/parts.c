/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parts.c - what the parts of a zone check cost, measured side by side
 * (`make bench-parts`): one thread, one hot key and 100k keys, 7
 * interleaved rounds, the median ns per check of each of
 *
 *   floor   the clock read and an 8-byte CAS of the key's word: tk-bench's
 *           floor (key index -> word, no hashing)
 *   slot    the clock read and a 16-byte CAS of the key's 16-byte slot
 *           (identity and state changed together, as a table that keeps
 *           a key's fingerprint next to its state must)
 *   keyed   the same, with the slot chosen by the stores' keyed hash of
 *           the 12-byte store key (tk__keyhash_fast(), under a random
 *           secret, as a zone hashes) after the clock read, as a check
 *           on a table that fits a core's cache does
 *   prefetch  the same, hashing first and prefetching the slot before
 *           the clock read, as a check on a larger table does
 *           (lib/store/slot-store.h): the miss overlaps the clock read
 *   sip13   "keyed" with SipHash-1-3 as the keyed hash (what a CPU
 *           without AES-NI hashes with)
 *   zone    tk_limiter_check() on a zone (GCRA, allow path) of 2^16
 *           slots for the hot key (a near table, as tk-bench's) and of
 *           2^18 for 100k keys (a far one)
 *   mutex   tk-bench's mutex table (baselines/), one shard: the clock
 *           read, its unkeyed hash, a process-shared robust mutex, the
 *           probe and the bare GCRA step (no decision to report, no
 *           counters, no expiry)
 *   mutex-keyed  the same with the stores' keyed hash: what the mutex
 *           table would cost if it resisted hash flooding as a zone does
 *
 * with each one's ratio to the floor.  Every loop writes the key's bytes
 * as tk-bench's harness does.  The better of "keyed" and "prefetch" is
 * the least a table of 16-byte slots under a keyed hash can cost a
 * check, whatever else it does: its ratio bounds what the zone can reach
 * on this machine.  Linked statically, for the internal hash.
 */
#define _GNU_SOURCE
#include "hash/siphash.h"
#include "hash/keyhash.h"

#include <throttlekit.h>

#include "../bench/bench.h"
#include "../bench/baselines/table.h"

#include <ck_pr.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 7
#define CHECKS 2000000
#define STREAM (1u << 20)
#define SLOT_BITS 18 /* 2^18 slots: a zone's capacity for 100k keys */

struct slot {
	_Alignas(16) uint64_t w[2];
};

static uint64_t *words;
static struct slot *slots;
static struct tk__keyhash_key kh;
static struct tk_limiter *zone_near, *zone_far;
static uint32_t *stream;
static struct {
	pthread_mutex_t mu; /* process-shared, robust, as the baseline's */
	struct bt_entry e[1u << SLOT_BITS];
} * mt;
static const struct bench_gcra mt_gcra = { 1, UINT64_C(1) << 62 };

/* The store key of index @i: two head bytes and the 10 key bytes. */
static inline void store_key(unsigned char *buf, uint32_t i)
{
	buf[0] = 0;
	buf[1] = 0;
	bench_key((char *)buf + 2, i);
}

static inline void cas8(uint64_t *w, uint64_t now)
{
	uint64_t old = ck_pr_load_64(w), next;

	do
		next = (old > now ? old : now) + 1;
	while (!ck_pr_cas_64_value(w, old, next, &old));
}

static inline void cas16(struct slot *s, uint64_t now)
{
	uint64_t old[2] = { ck_pr_load_64(&s->w[0]), ck_pr_load_64(&s->w[1]) };
	uint64_t next[2];

	do {
		next[0] = old[0] | 1;
		next[1] = (old[1] > now ? old[1] : now) + 1;
	} while (!ck_pr_cas_64_2_value(s->w, old, next, old));
}

enum part {
	FLOOR,
	SLOT,
	KEYED,
	PREFETCH,
	SIP13,
	ZONE,
	MUTEX,
	MUTEX_KEYED,
	PARTS
};
static const char *const part_name[PARTS] = { "floor",	  "slot",	"keyed",
					      "prefetch", "sip13",	"zone",
					      "mutex",	  "mutex-keyed" };

/* The mutex table's check of @key (10 bytes) hashed to @h at @now. */
static int mutex_check(const unsigned char *key, uint64_t h, uint64_t now)
{
	int rc;

	if (pthread_mutex_lock(&mt->mu) == EOWNERDEAD)
		pthread_mutex_consistent(&mt->mu);
	rc = bt_check(mt->e, (1u << SLOT_BITS) - 1, h, (const char *)key, 10,
		      now, &mt_gcra);
	pthread_mutex_unlock(&mt->mu);
	return rc;
}

static uint64_t run(enum part p, uint32_t mask)
{
	unsigned char key[12];
	struct tk_decision d;
	uint64_t i, ok = 0, h, now;
	uint32_t idx;

	for (i = 0; i < CHECKS; i++) {
		idx = stream[i & (STREAM - 1)] & mask;
		store_key(key, idx);
		bench_sink(key);
		switch (p) {
		case FLOOR:
			cas8(&words[idx], bench_realtime());
			break;
		case SLOT:
			cas16(&slots[idx], bench_realtime());
			break;
		case KEYED:
			now = bench_realtime();
			h = tk__keyhash_fast(&kh, key, sizeof(key));
			cas16(&slots[h & ((1u << SLOT_BITS) - 1)], now);
			break;
		case PREFETCH:
			h = tk__keyhash_fast(&kh, key, sizeof(key));
			__builtin_prefetch(&slots[h & ((1u << SLOT_BITS) - 1)],
					   1);
			cas16(&slots[h & ((1u << SLOT_BITS) - 1)],
			      bench_realtime());
			break;
		case SIP13:
			now = bench_realtime();
			h = tk__siphash13(kh.sip, key, sizeof(key));
			cas16(&slots[h & ((1u << SLOT_BITS) - 1)], now);
			break;
		case MUTEX:
			now = bench_realtime();
			h = bench_hash((char *)key + 2, 10);
			ok += mutex_check(key + 2, h, now) == 1;
			break;
		case MUTEX_KEYED:
			now = bench_realtime();
			h = tk__keyhash_fast(&kh, key, sizeof(key));
			ok += mutex_check(key + 2, h | 1, now) == 1;
			break;
		default:
			ok += tk_limiter_check(mask ? zone_far : zone_near,
					       (char *)key + 2, 10, 1,
					       &d) == 0 &&
			      d.allowed;
			break;
		}
	}
	return ok;
}

static double round_ns(enum part p, uint32_t mask)
{
	uint64_t t0 = bench_mono(), ok = run(p, mask);

	if (p >= ZONE && ok != CHECKS) {
		fprintf(stderr, "parts: %s admitted %llu of %d\n", part_name[p],
			(unsigned long long)ok, CHECKS);
		exit(1);
	}
	return (double)(bench_mono() - t0) / CHECKS;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *shared(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("parts: mmap");
		exit(1);
	}
	return p;
}

static struct tk_limiter *open_zone(unsigned int slot_bits)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	char spec[64];
	int rc;

	o.zone_capacity = UINT64_C(1) << slot_bits;
	snprintf(spec, sizeof(spec), "shm:parts-%ld-%u", (long)getpid(),
		 slot_bits);
	rc = tk_limiter_open(&l, "gcra:1000000000/1s,burst=1000000000", spec,
			     &o);
	if (rc) {
		fprintf(stderr, "parts: tk_limiter_open: %s\n",
			tk_strerror(rc));
		exit(1);
	}
	tk_zone_destroy(spec + 4);
	return l;
}

int main(void)
{
	static const struct {
		const char *name;
		uint32_t mask; /* key indices: & mask, below 100k */
	} sets[] = { { "hot key", 0 }, { "100k keys", UINT32_MAX } };
	double ns[PARTS][ROUNDS], med[PARTS];
	unsigned char secret[16];
	uint64_t seed = 42;
	size_t s;
	int p, r;

	pthread_mutexattr_t a;

	words = shared(sizeof(uint64_t) << SLOT_BITS);
	mt = shared(sizeof(*mt));
	pthread_mutexattr_init(&a);
	if (pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) ||
	    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) ||
	    pthread_mutex_init(&mt->mu, &a)) {
		fprintf(stderr, "parts: no robust process-shared mutex\n");
		return 1;
	}
	pthread_mutexattr_destroy(&a);
	slots = shared(sizeof(struct slot) << SLOT_BITS);
	stream = malloc(STREAM * sizeof(*stream));
	if (!stream)
		return 1;
	for (r = 0; r < (int)STREAM; r++) {
		seed = seed * UINT64_C(6364136223846793005) +
		       1442695040888963407;
		stream[r] = (uint32_t)((seed >> 33) % 100000);
	}
	for (r = 0; r < 16; r++)
		secret[r] =
			(unsigned char)(seed >> (r % 8 * 8)) ^ (unsigned char)r;
	tk__keyhash_setup(&kh, secret, TK__KEYHASH_CMAC);
	zone_near = open_zone(16);
	zone_far = open_zone(SLOT_BITS);
	printf("# parts of a check, ns (median of %d rounds of %d checks), "
	       "one thread; key hash: %s\n",
	       ROUNDS, CHECKS, kh.hw ? "AES-CMAC, AES-NI" : "software");
	for (s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		for (p = 0; p < PARTS; p++)
			run((enum part)p, sets[s].mask); /* warm up, fill */
		for (r = 0; r < ROUNDS; r++)
			for (p = 0; p < PARTS; p++)
				ns[p][r] = round_ns((enum part)p, sets[s].mask);
		for (p = 0; p < PARTS; p++) {
			qsort(ns[p], ROUNDS, sizeof(double), cmp);
			med[p] = ns[p][ROUNDS / 2];
		}
		printf("%-10s", sets[s].name);
		for (p = 0; p < PARTS; p++)
			printf("  %s %6.1f (%.2fx)", part_name[p], med[p],
			       med[p] / med[FLOOR]);
		printf("\n");
	}
	tk_limiter_close(zone_near);
	tk_limiter_close(zone_far);
	return 0;
}
