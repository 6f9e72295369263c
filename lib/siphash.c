/*
 * siphash.c - SipHash-2-4, a keyed hash for untrusted keys.
 *
 * Keys come from clients (IP addresses, API tokens), so a public hash
 * function would let an attacker aim every key at one bucket.  Each store
 * draws its own 128-bit secret from getrandom(2).  Reference: Aumasson and
 * Bernstein, "SipHash: a fast short-input PRF" (2012); the test vectors of
 * that paper are checked in tests/unit/test_siphash.c.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
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

uint64_t tk__siphash(const uint64_t key[2], const void *data, size_t len)
{
	const unsigned char *in = data;
	uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ key[0];
	uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ key[1];
	uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ key[0];
	uint64_t v3 = UINT64_C(0x7465646279746573) ^ key[1];
	uint64_t m, b = (uint64_t)len << 56;
	size_t i, tail = len & 7;

	for (i = 0; i + 8 <= len; i += 8) {
		m = load_le64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (m = 0; tail > 0; tail--)
		m |= (uint64_t)in[i + tail - 1] << (8 * (tail - 1));
	b |= m;
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
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
