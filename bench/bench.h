/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench.h - what tk-bench and its baselines share.
 *
 * Every engine (the library, the floor, the mutex table, the per-process
 * tables) runs the same loop: take the next key index from a precomputed
 * stream, write the key's bytes ("k:" and 8 hex digits) into a buffer,
 * check it.  The loop itself, without the check, is the "harness" row of
 * the results, so its cost can be subtracted by eye.  Engines time
 * nothing themselves: the driver reads CLOCK_MONOTONIC around batches of
 * BENCH_CALLS checks, never around one call.
 *
 * The baselines run the library's GCRA (lib/algo/gcra.c) in integers: a key's
 * state is its theoretical arrival time (TAT, ns since the epoch; 0 for a
 * key never seen), and a request of one unit is admitted iff
 * max(TAT, now) + T <= now + tau.
 */
#ifndef TK_BENCH_H
#define TK_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define BENCH_KEY_LEN 10 /* bytes: "k:" and 8 hex digits */
#define BENCH_CALLS 256	 /* checks between two readings of the timer */

/* A request stream: key indices in request order, read cyclically. */
struct bench_stream {
	const uint32_t *idx;
	uint64_t mask;	/* length - 1; the length is a power of two */
	uint32_t nkeys; /* indices are below this */
};

/* One worker's position in a stream, and what its checks answered. */
struct bench_cursor {
	const struct bench_stream *s;
	uint64_t pos;
	uint64_t admitted; /* checks that were allowed */
	uint64_t errors;   /* checks that returned an error */
	int first_error;   /* the first such error (negative errno), or 0 */
};

/*
 * An engine's inner loop: run exactly @n checks from @c's stream and
 * return @n.  @w is the engine's per-worker handle.
 */
typedef uint64_t (*bench_run_fn)(void *w, struct bench_cursor *c, uint64_t n);

/*
 * The bytes of key @idx ("k:" and 8 hex digits, BENCH_KEY_LEN of them, no
 * NUL), computed without a loop or a table so that the harness stays
 * cheap: spread the 8 nibbles over 8 bytes, turn each into its ASCII
 * digit ('0' + n, plus 39 more for n >= 10), most significant first.
 */
static inline void bench_key(char *buf, uint32_t idx)
{
	uint64_t v = idx, ten;

	v = (v | v << 16) & UINT64_C(0x0000ffff0000ffff);
	v = (v | v << 8) & UINT64_C(0x00ff00ff00ff00ff);
	v = (v | v << 4) & UINT64_C(0x0f0f0f0f0f0f0f0f);
	ten = ((v + UINT64_C(0x0606060606060606)) >> 4) &
	      UINT64_C(0x0101010101010101);
	v = __builtin_bswap64(v + UINT64_C(0x3030303030303030) + ten * 39);
	buf[0] = 'k';
	buf[1] = ':';
	memcpy(buf + 2, &v, 8);
}

/* The next key index of @c's stream. */
static inline uint32_t bench_next(struct bench_cursor *c)
{
	return c->s->idx[c->pos++ & c->s->mask];
}

/* Keep the compiler from dropping the writes to a key nobody reads. */
static inline void bench_sink(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* The clock the library reads (CLOCK_REALTIME), in ns since the epoch. */
static inline uint64_t bench_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timer around batches, ns. */
static inline uint64_t bench_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* GCRA parameters: gcra:L/P,burst=B is t = floor(P / L), tau = t * B. */
struct bench_gcra {
	uint64_t t;   /* ns per unit */
	uint64_t tau; /* ns of burst tolerance */
};

/*
 * One GCRA check of one unit at @now on @tat.  Returns 1 and sets *@next
 * if admitted; 0 (nothing to write) if denied.
 */
static inline int bench_gcra_step(const struct bench_gcra *g, uint64_t tat,
				  uint64_t now, uint64_t *next)
{
	uint64_t n = (tat > now ? tat : now) + g->t;

	if (n > now + g->tau)
		return 0;
	*next = n;
	return 1;
}

/* The baselines' key hash: two 8-byte loads and a 64-bit mix (keys of at
 * most 16 bytes; nginx hashes its keys with a CRC32, about as cheap). */
static inline uint64_t bench_hash(const char *key, size_t len)
{
	uint64_t a = 0, b = 0, h;
	size_t i = 0;

	if (len >= 8) {
		memcpy(&a, key, 8); /* one load */
		i = 8;
	}
	for (; i < len && i < 8; i++)
		a |= (uint64_t)(unsigned char)key[i] << (8 * i);
	for (; i < len && i < 16; i++)
		b |= (uint64_t)(unsigned char)key[i] << (8 * (i - 8));
	h = a * UINT64_C(0x9e3779b97f4a7c15) ^
	    (b + len) * UINT64_C(0xc2b2ae3d27d4eb4f);
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	return h ? h : 1; /* 0 marks an empty slot */
}

#endif /* TK_BENCH_H */
