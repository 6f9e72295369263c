/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keyhash.h - tk__keyhash() with its commonest cases inlined: a key of 8
 * to 16 bytes hashed with AES-NI, and a store that hashes with
 * SipHash-1-3 (no AES-NI) calling it directly.  The stores' hot paths
 * call this; the result is tk__keyhash()'s, bit for bit
 * (tests/unit/hash/test_keyhash.c).
 *
 * The caller is compiled for the baseline CPU, so the AES rounds are
 * written as assembly (the assembler knows AESENC whatever the compiler's
 * target) and run only when setup found AES-NI (k->hw).  Only a CMAC key
 * has k->hw, so the AES-NI case costs one test of it (and the length's);
 * a SipHash-1-3 key costs one more test before the call.
 */
#ifndef TK_KEYHASH_H
#define TK_KEYHASH_H

#include "config.h"

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hash/siphash.h"

/*
 * keyhash.c: the stores' keyed hash of a store key, one of two functions
 * chosen per store (never per key):
 *   TK__KEYHASH_CMAC: keys of at most TK__KEYHASH_CMAC_MAX bytes: the
 *     first 8 bytes of AES-CMAC under the store's 128-bit secret,
 *     little-endian; longer keys: SipHash-1-3 under a key derived from
 *     the secret by AES.  Chosen where the CPU has AES-NI.
 *   TK__KEYHASH_SIP13: SipHash-1-3 of every key under the secret itself
 *     (two little-endian words); no AES at all.  Chosen without AES-NI,
 *     where the software AES would cost 3.6 times as much.
 * The definition and why it resists HashDoS: keyhash.c.
 */
#define TK__KEYHASH_CMAC_MAX 32 /* bytes */
#define TK__KEYHASH_CMAC 0
#define TK__KEYHASH_SIP13 1

/* A secret prepared once per store: never changed after setup. */
struct tk__keyhash_key {
	unsigned char rk[11][16] __attribute__((aligned(16))); /* AES-128 */
	unsigned char k1[16] __attribute__((aligned(16))); /* CMAC subkeys */
	unsigned char k2[16] __attribute__((aligned(16)));
	/* k1 and k2 xor the first round key: a one-block message's two
	 * whitening xors in one, a step less before the first round
	 * (tk__keyhash_block()). */
	unsigned char k1r[16] __attribute__((aligned(16)));
	unsigned char k2r[16] __attribute__((aligned(16)));
	uint64_t sip[2]; /* SipHash-1-3 key: long keys, or all (SIP13) */
	int kind;	 /* TK__KEYHASH_* */
	int hw;		 /* 1: CMAC by AES-NI; 0: software AES, or SIP13 */
};

/*
 * tk__keyhash_aesni() - 1 if this CPU has AES-NI (and the test hook
 * below does not hide it), else 0: which kind a new store chooses.
 *
 * tk__keyhash_setup() - prepare @k of @kind from the 16 bytes at
 * @secret: for CMAC the round keys, CMAC subkeys, the SipHash key and
 * AES-NI if tk__keyhash_aesni() (else the software AES, same bits); for
 * SIP13 the SipHash key only.  tk__keyhash() - the hash of @len bytes at
 * @data under @k.  Pure functions of their arguments (and the CPU, for
 * speed only): safe from any thread; @k is read-only once set up.
 */
int tk__keyhash_aesni(void);
void tk__keyhash_setup(struct tk__keyhash_key *k, const void *secret, int kind);
uint64_t tk__keyhash(const struct tk__keyhash_key *k, const void *data,
		     size_t len);

/*
 * The @len (at most 16) bytes at @p as a little-endian 128-bit integer,
 * zero above them but for @pad (0 or 0x80) in the byte after them (which
 * must be below 16), read without reading outside [p, p + len): with 8
 * bytes or more the second word is the last 8 shifted down, else two
 * overlapping 4-byte loads or the first, middle and last byte.
 */
static inline __attribute__((always_inline)) unsigned __int128
tk__keyhash_load16(const unsigned char *p, size_t len, uint64_t pad)
{
	uint64_t lo, hi = 0;
	uint32_t a, b;

	if (len >= 8) {
		memcpy(&lo, p, 8);
		memcpy(&hi, p + len - 8, 8);
		hi = le64toh(hi) >> (128 - 8 * len) % 64;
		if (len == 8)
			hi = 0;
		hi |= pad << (8 * len - 64) % 64;
		lo = le64toh(lo);
	} else {
		if (len >= 4) {
			memcpy(&a, p, 4);
			memcpy(&b, p + len - 4, 4);
			lo = (uint64_t)le32toh(a) | (uint64_t)le32toh(b)
							    << (8 * (len - 4));
		} else if (len > 0) {
			lo = (uint64_t)p[0] |
			     (uint64_t)p[len / 2] << (8 * (len / 2)) |
			     (uint64_t)p[len - 1] << (8 * (len - 1));
		} else {
			lo = 0;
		}
		lo |= pad << 8 * len;
	}
	return (unsigned __int128)hi << 64 | lo;
}

#if defined(__x86_64__)
#include <emmintrin.h>

/* One AES round of @x with round key @r (16-byte aligned, in memory). */
#define TK__AESENC(x, r) __asm__("aesenc %1, %0" : "+x"(x) : "m"(r))
#define TK__AESENCLAST(x, r) __asm__("aesenclast %1, %0" : "+x"(x) : "m"(r))

/* AES-128's ten rounds of @x, the first round key already xored in. */
static inline __attribute__((always_inline)) __m128i
tk__aes_rounds(__m128i x, const __m128i *rk)
{
	TK__AESENC(x, rk[1]);
	TK__AESENC(x, rk[2]);
	TK__AESENC(x, rk[3]);
	TK__AESENC(x, rk[4]);
	TK__AESENC(x, rk[5]);
	TK__AESENC(x, rk[6]);
	TK__AESENC(x, rk[7]);
	TK__AESENC(x, rk[8]);
	TK__AESENC(x, rk[9]);
	TK__AESENCLAST(x, rk[10]);
	return x;
}

/*
 * CMAC's one block of a message of @len (at most 16) bytes, @m: the
 * bytes, already padded with 10* when short; masked with K2 when short,
 * K1 when whole, and encrypted with AES-NI (k->hw).
 */
static inline __attribute__((always_inline)) uint64_t
tk__keyhash_block(const struct tk__keyhash_key *k, unsigned __int128 m,
		  size_t len)
{
	const __m128i *rk = (const __m128i *)(const void *)k->rk;
	const unsigned char *sub = len == 16 ? k->k1r : k->k2r;
	__m128i x = _mm_set_epi64x((long long)(uint64_t)(m >> 64),
				   (long long)(uint64_t)m);

	/* m ^ K1 (or K2), then AES's first round key: one xor. */
	x = _mm_xor_si128(x,
			  _mm_load_si128((const __m128i *)(const void *)sub));
	x = tk__aes_rounds(x, rk);
	return (uint64_t)_mm_cvtsi128_si64(x);
}

/*
 * CMAC's two blocks of a message of @len (17 to 32) bytes: @m1 the first
 * 16, @m2 the rest, already padded with 10* when short; the first block
 * encrypted, xored into the last (masked with K2 when short, K1 when
 * whole), and that encrypted (AES-NI).
 */
static inline __attribute__((always_inline)) uint64_t
tk__keyhash_blocks2(const struct tk__keyhash_key *k, unsigned __int128 m1,
		    unsigned __int128 m2, size_t len)
{
	const __m128i *rk = (const __m128i *)(const void *)k->rk;
	const unsigned char *sub = len == 32 ? k->k1r : k->k2r;
	__m128i x = _mm_set_epi64x((long long)(uint64_t)(m1 >> 64),
				   (long long)(uint64_t)m1);
	__m128i y = _mm_set_epi64x((long long)(uint64_t)(m2 >> 64),
				   (long long)(uint64_t)m2);

	x = _mm_xor_si128(x, rk[0]);
	x = tk__aes_rounds(x, rk);
	/* The last block, its subkey and the first round key (one xor
	 * prepared, off the chain), then the chain's value. */
	y = _mm_xor_si128(y,
			  _mm_load_si128((const __m128i *)(const void *)sub));
	x = _mm_xor_si128(x, y);
	x = tk__aes_rounds(x, rk);
	return (uint64_t)_mm_cvtsi128_si64(x);
}

static inline __attribute__((always_inline)) uint64_t
tk__keyhash_fast(const struct tk__keyhash_key *k, const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t lo, hi;

	if (!k->hw || len < 8 || len > 16) {
		if (k->kind == TK__KEYHASH_SIP13)
			return tk__siphash13(k->sip, data, len);
		return tk__keyhash(k, data, len);
	}
	/* 8 bytes, then the last len - 8 shifted down, padded when short. */
	memcpy(&lo, p, 8);
	memcpy(&hi, p + len - 8, 8);
	hi = le64toh(hi) >> (128 - 8 * len) % 64;
	if (len == 8)
		hi = 0;
	if (len < 16)
		hi |= UINT64_C(0x80) << (8 * len - 64);
	return tk__keyhash_block(k, (unsigned __int128)hi << 64 | le64toh(lo),
				 len);
}

/*
 * tk__keyhash_join() - the hash of @head_len bytes followed by @len bytes
 * at @tail, tk__keyhash()'s bit for bit, without the two ever being
 * joined in memory: @head is the first bytes as a little-endian integer
 * (its first 16, zero above @head_len).  Sets *@h and returns 1 where it
 * can (AES-NI, at most 16 bytes in all: one CMAC block, built in
 * registers from @head and loads of @tail); else returns 0, and the caller
 * tries tk__keyhash_join2(), else joins the bytes and calls tk__keyhash().
 * Why: a block built in memory by several stores and read back at once by
 * wider loads waits for the stores to retire (a failed store-to-load
 * forward, about 5 ns).
 */
static inline __attribute__((always_inline)) int
tk__keyhash_join(const struct tk__keyhash_key *k, unsigned __int128 head,
		 size_t head_len, const void *tail, size_t len, uint64_t *h)
{
	size_t n = head_len + len;
	unsigned __int128 m;

	if (!k->hw || n > 16 || head_len >= 16)
		return 0;
	/* The tail and its 10* padding (where the block is short), moved
	 * up past the head: by a constant for most keys' head, 2 bytes (no
	 * prefix, no tag). */
	m = tk__keyhash_load16(tail, len, n < 16 ? 0x80 : 0);
	m = head_len == 2 ? m << 16 : m << (8 * head_len);
	*h = tk__keyhash_block(k, head | m, n);
	return 1;
}

/*
 * tk__keyhash_join() of 17 to 32 bytes: CMAC's two blocks, the tail's
 * first 16 - @head_len bytes after the head, then the rest, padded when
 * short.  1 and *@h where it can (AES-NI, a head below 16 bytes, at most
 * 32 in all), else 0.  Apart from tk__keyhash_join(): a caller keeps it
 * off the one-block path, a hot key's, whose code it would otherwise
 * rearrange.
 */
static inline __attribute__((always_inline)) int
tk__keyhash_join2(const struct tk__keyhash_key *k, unsigned __int128 head,
		  size_t head_len, const void *tail, size_t len, uint64_t *h)
{
	size_t n = head_len + len, first = 16 - head_len;
	unsigned __int128 m, m2;

	if (!k->hw || n <= 16 || n > 32 || head_len >= 16)
		return 0;
	m = tk__keyhash_load16(tail, first, 0) << (8 * head_len);
	m2 = tk__keyhash_load16((const unsigned char *)tail + first,
				len - first, n < 32 ? 0x80 : 0);
	*h = tk__keyhash_blocks2(k, head | m, m2, n);
	return 1;
}
#else
static inline uint64_t tk__keyhash_fast(const struct tk__keyhash_key *k,
					const void *data, size_t len)
{
	if (k->kind == TK__KEYHASH_SIP13)
		return tk__siphash13(k->sip, data, len);
	return tk__keyhash(k, data, len);
}

static inline int tk__keyhash_join(const struct tk__keyhash_key *k,
				   unsigned __int128 head, size_t head_len,
				   const void *tail, size_t len, uint64_t *h)
{
	(void)k;
	(void)head;
	(void)head_len;
	(void)tail;
	(void)len;
	(void)h;
	return 0;
}

static inline int tk__keyhash_join2(const struct tk__keyhash_key *k,
				    unsigned __int128 head, size_t head_len,
				    const void *tail, size_t len, uint64_t *h)
{
	return tk__keyhash_join(k, head, head_len, tail, len, h);
}
#endif

/*
 * tk__keyhash_join_sip13() - tk__keyhash_join() for a SipHash-1-3 key (a
 * store without AES-NI): SipHash's two words built in registers the same
 * way, at most 16 bytes in all; else 0.  Apart, so that a caller can keep
 * it out of its hot path, which then carries only the AES-NI case.
 */
static inline __attribute__((always_inline)) int
tk__keyhash_join_sip13(const struct tk__keyhash_key *k, unsigned __int128 head,
		       size_t head_len, const void *tail, size_t len,
		       uint64_t *h)
{
	size_t n = head_len + len;
	unsigned __int128 m;

	if (k->kind != TK__KEYHASH_SIP13 || n > 16 || head_len >= 16)
		return 0;
	m = head | tk__keyhash_load16(tail, len, 0) << (8 * head_len);
	*h = tk__siphash13_words(k->sip, (uint64_t)m, (uint64_t)(m >> 64), n);
	return 1;
}

#endif /* TK_KEYHASH_H */
