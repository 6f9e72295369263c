/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * floor.c - the physical floor of one check, and the harness loop.
 *
 * A check must at least read the clock and change one word of shared
 * state atomically.  The floor does exactly that and nothing else: it
 * reads CLOCK_REALTIME with clock_gettime() (what the library's system
 * clock calls, minus the library's own wrapper), then moves the key's
 * word with one compare-and-swap, as a GCRA check moves a TAT:
 * word' = max(word, now) + 1.  There is one word per key, 8 bytes apart
 * (the densest any table can be), in a MAP_SHARED mapping that fork()
 * children share, so a key set of a million keys pays the cache misses of
 * 8 MB of state.  The key index maps to its word directly: no hashing, no
 * probing, no comparison of key bytes.  The harness part of the loop
 * (stream and key bytes) is the same as every engine's.
 */
#include "baselines.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "shared words need lock-free CAS");

struct bench_floor {
	_Atomic uint64_t *words; /* ns-like counters, one per key */
	size_t bytes;
};

int bench_floor_open(struct bench_floor **out, uint32_t nkeys)
{
	struct bench_floor *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->bytes = (size_t)nkeys * sizeof(uint64_t);
	f->words = mmap(NULL, f->bytes, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f->words == MAP_FAILED) {
		free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

void bench_floor_close(struct bench_floor *f)
{
	if (!f)
		return;
	munmap((void *)f->words, f->bytes);
	free(f);
}

size_t bench_floor_bytes(const struct bench_floor *f)
{
	return f->bytes;
}

static inline void floor_cas(struct bench_floor *f, uint32_t idx, uint64_t now)
{
	_Atomic uint64_t *w = &f->words[idx];
	uint64_t old = atomic_load_explicit(w, memory_order_relaxed), next;

	/* Relaxed: the floor orders nothing; the library's CAS is a full
	 * barrier anyway (lock cmpxchg), as this one is on x86. */
	do
		next = (old > now ? old : now) + 1;
	while (!atomic_compare_exchange_weak_explicit(
		w, &old, next, memory_order_relaxed, memory_order_relaxed));
}

uint64_t bench_floor_run(void *p, struct bench_cursor *c, uint64_t n)
{
	struct bench_floor *f = p;
	char key[BENCH_KEY_LEN];
	uint64_t i;
	uint32_t idx;

	for (i = 0; i < n; i++) {
		idx = bench_next(c);
		bench_key(key, idx);
		bench_sink(key);
		floor_cas(f, idx, bench_realtime());
	}
	c->admitted += n;
	return n;
}

uint64_t bench_floor_run_batch(struct bench_floor *f, struct bench_cursor *c,
			       uint64_t n, unsigned int batch)
{
	char key[BENCH_KEY_LEN];
	uint64_t i, now = 0;
	uint32_t idx;

	for (i = 0; i < n; i++) {
		if (i % batch == 0)
			now = bench_realtime();
		idx = bench_next(c);
		bench_key(key, idx);
		bench_sink(key);
		floor_cas(f, idx, now);
	}
	c->admitted += n;
	return n;
}

uint64_t bench_harness_run(void *p, struct bench_cursor *c, uint64_t n)
{
	char key[BENCH_KEY_LEN];
	uint64_t i;

	(void)p;
	for (i = 0; i < n; i++) {
		bench_key(key, bench_next(c));
		bench_sink(key);
	}
	c->admitted += n;
	return n;
}
