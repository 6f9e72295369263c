/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keyhash.h - tk__keyhash() with its commonest cases inlined: a key of 8
 * to 16 bytes hashed with AES-NI, and a store that hashes with
 * SipHash-1-3 (no AES-NI) calling it directly.  The stores' hot paths
 * call this; the result is tk__keyhash()'s, bit for bit
 * (tests/unit/test_keyhash.c).
 *
 * The caller is compiled for the baseline CPU, so the AES rounds are
 * written as assembly (the assembler knows AESENC whatever the compiler's
 * target) and run only when setup found AES-NI (k->hw).  Only a CMAC key
 * has k->hw, so the AES-NI case costs one test of it (and the length's);
 * a SipHash-1-3 key costs one more test before the call.
 */
#ifndef TK_KEYHASH_H
#define TK_KEYHASH_H

#include "internal.h"

#include <endian.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

/* One AES round of @x with round key @r (16-byte aligned, in memory). */
#define TK__AESENC(x, r) __asm__("aesenc %1, %0" : "+x"(x) : "m"(r))
#define TK__AESENCLAST(x, r) __asm__("aesenclast %1, %0" : "+x"(x) : "m"(r))

static inline __attribute__((always_inline)) uint64_t
tk__keyhash_fast(const struct tk__keyhash_key *k, const void *data, size_t len)
{
	const __m128i *rk = (const __m128i *)(const void *)k->rk;
	const unsigned char *p = data, *sub;
	uint64_t lo, hi;
	__m128i x;

	if (!k->hw || len < 8 || len > 16) {
		if (k->kind == TK__KEYHASH_SIP13)
			return tk__siphash13(k->sip, data, len);
		return tk__keyhash(k, data, len);
	}
	/* CMAC's one block: 8 bytes, then the last len - 8 shifted down,
	 * padded with 10* and masked with K2 when short, K1 when whole. */
	memcpy(&lo, p, 8);
	memcpy(&hi, p + len - 8, 8);
	hi = le64toh(hi) >> (128 - 8 * len) % 64;
	if (len == 8)
		hi = 0;
	if (len < 16)
		hi |= UINT64_C(0x80) << (8 * len - 64);
	x = _mm_set_epi64x((long long)hi, (long long)le64toh(lo));
	sub = len == 16 ? k->k1 : k->k2;
	x = _mm_xor_si128(x,
			  _mm_load_si128((const __m128i *)(const void *)sub));
	x = _mm_xor_si128(x, _mm_load_si128(&rk[0]));
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
	return (uint64_t)_mm_cvtsi128_si64(x);
}
#else
static inline uint64_t tk__keyhash_fast(const struct tk__keyhash_key *k,
					const void *data, size_t len)
{
	if (k->kind == TK__KEYHASH_SIP13)
		return tk__siphash13(k->sip, data, len);
	return tk__keyhash(k, data, len);
}
#endif

#endif /* TK_KEYHASH_H */
