/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * siphash.c - SipHash, a keyed hash for untrusted keys.
 *
 * Keys come from clients (IP addresses, API tokens), so a public hash
 * function would let an attacker aim every key at one bucket.  Each store
 * draws its own 128-bit secret from getrandom(2).  Reference: Aumasson and
 * Bernstein, "SipHash: a fast short-input PRF" (2012); the test vectors of
 * that paper are checked in tests/unit/hash/test_siphash.c.
 *
 * Two round counts.  tk__siphash is SipHash-2-4, the paper's conservative
 * PRF, for names that leave the process (the Redis scripts).
 * tk__siphash13 is SipHash-1-3, about half the rounds, for the store keys
 * of more than 32 bytes under a key tk__keyhash derives (shorter store
 * keys are hashed with AES-CMAC); why 1-3 is enough where the hash is
 * never revealed: lib/hash/keyhash.c.
 */
#include "hash/siphash.h"
#include "hash/keyhash.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline uint64_t load_le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

/*
 * The last len & 7 bytes of @in as a little-endian word, read a word at
 * a time without reading outside [in, in + len): with a whole word before
 * them, the last 8 bytes shifted down; else two overlapping 4-byte loads
 * (4..7 bytes) or the first, middle and last byte (1..3), whose overlaps
 * OR the same byte into the same place.
 */
static inline uint64_t load_tail(const unsigned char *in, size_t len)
{
	size_t tail = len & 7;
	const unsigned char *p = in + len - tail;

	if (tail == 0)
		return 0;
	if (len >= 8)
		return load_le64(in + len - 8) >> (64 - 8 * tail);
	if (tail >= 4)
		return load_le32(p) | load_le32(p + tail - 4)
					      << (8 * (tail - 4));
	return (uint64_t)p[0] | (uint64_t)p[tail / 2] << (8 * (tail / 2)) |
	       (uint64_t)p[tail - 1] << (8 * (tail - 1));
}

#define SIPROUND                                                               \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = rotl(v1, 13);                                             \
		v1 ^= v0;                                                      \
		v0 = rotl(v0, 32);                                             \
		v2 += v3;                                                      \
		v3 = rotl(v3, 16);                                             \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = rotl(v3, 21);                                             \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = rotl(v1, 17);                                             \
		v1 ^= v2;                                                      \
		v2 = rotl(v2, 32);                                             \
	} while (0)

/* @c compression rounds per word, @d finalisation rounds; inlined twice. */
static inline uint64_t siphash(const uint64_t key[2], const void *data,
			       size_t len, int c, int d)
{
	const unsigned char *in = data;
	uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ key[0];
	uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ key[1];
	uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ key[0];
	uint64_t v3 = UINT64_C(0x7465646279746573) ^ key[1];
	uint64_t m;
	size_t i;
	int r;

	for (i = 0; i + 8 <= len; i += 8) {
		m = load_le64(in + i);
		v3 ^= m;
#pragma GCC unroll 4
		for (r = 0; r < c; r++)
			SIPROUND;
		v0 ^= m;
	}
	m = (uint64_t)len << 56 | load_tail(in, len);
	v3 ^= m;
#pragma GCC unroll 4
	for (r = 0; r < c; r++)
		SIPROUND;
	v0 ^= m;
	v2 ^= 0xff;
/* c and d are constants: unrolled, no loop is left. */
#pragma GCC unroll 4
	for (r = 0; r < d; r++)
		SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/*
 * SipHash-1-3 of a message of @len (at most 16) bytes given as two
 * little-endian words, zero above @len: siphash()'s words, read from
 * registers instead of memory (tk__keyhash_join()).
 */
uint64_t tk__siphash13_words(const uint64_t key[2], uint64_t w0, uint64_t w1,
			     size_t len)
{
	uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ key[0];
	uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ key[1];
	uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ key[0];
	uint64_t v3 = UINT64_C(0x7465646279746573) ^ key[1];
	uint64_t w[3] = { w0, w1, 0 }, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = w[i / 8];
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	m = (uint64_t)len << 56 | w[i / 8];
	v3 ^= m;
	SIPROUND;
	v0 ^= m;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t tk__siphash(const uint64_t key[2], const void *data, size_t len)
{
	return siphash(key, data, len, 2, 4);
}

uint64_t tk__siphash13(const uint64_t key[2], const void *data, size_t len)
{
	return siphash(key, data, len, 1, 3);
}

int tk__random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
