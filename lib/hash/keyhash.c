/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keyhash.c - the stores' keyed hash of a store key (tk__keyhash).
 *
 * Definition.  One of two functions under a store's 128-bit secret K
 * (16 bytes), chosen once per store (struct tk__keyhash_key's kind):
 *
 * TK__KEYHASH_CMAC:
 *   keys of 0..32 bytes:  the first 8 bytes of AES-CMAC_K(key), read as a
 *                         little-endian 64-bit integer;
 *   keys of 33 bytes or more: SipHash-1-3 under K' = the first 16 bytes
 *                         of AES_K("tk keyhash sip13") as two little-
 *                         endian words (lib/hash/siphash.c).
 * TK__KEYHASH_SIP13:
 *   every key:            SipHash-1-3 under K as two little-endian words.
 *
 * The choice.  CMAC is the cheaper one only with AES-NI: a key of 8 to 16
 * bytes costs 36 instructions inlined against SipHash-1-3's 119, but the
 * software AES below costs about 1,400 a block, which made a hot zone
 * check 3.6 times as long as with SipHash-1-3.  So a store chooses CMAC
 * exactly when the CPU has AES-NI (tk__keyhash_aesni()), never anything
 * slower than SipHash-1-3:
 *   - a memory store is private to its process: its own CPU decides;
 *   - a zone is shared by the processes of one host: its creator decides
 *     and records the choice in the header (TKZ_FLAG_SIPHASH, shm/layout.h),
 *     and every process that attaches prepares the recorded kind, whatever
 *     its own CPU has, so that all of them agree on every fingerprint.  A
 *     process without AES-NI on a CMAC zone (in practice never: one host,
 *     one CPU model) hashes with the software AES: right, only slower.
 *
 * AES-CMAC is NIST SP 800-38B (also RFC 4493): subkeys K1, K2 derived
 * from L = AES_K(0^128); a message of n blocks is CBC-encrypted under K
 * with a zero IV, its last block XORed with K1 if it is complete, else
 * padded with 10* and XORed with K2.  A store key is 2 header bytes and
 * the user's key, typically 10 to 20 bytes: one or two AES encryptions.
 * With AES-NI (chosen once, when the key is prepared) a key of at most 16
 * bytes costs one block load, one XOR and the ten rounds from the round
 * keys in memory.  Without it, a portable AES-128 (FIPS-197) in this
 * file, with the S-box as a table of bytes, gives the same bits;
 * tests/unit/hash/test_keyhash.c checks both against the FIPS-197 and RFC 4493
 * vectors and against each other.
 *
 * Why this is HashDoS-resistant.  The hash must keep an attacker who
 * picks keys (IP addresses, API tokens) from making two keys collide or
 * from aiming keys at one place of a table.  Assume AES-128 is a
 * pseudorandom permutation (the standard assumption, no attack better
 * than generic is published).  Then AES-CMAC is a pseudorandom function:
 * to anyone without K, an adversary making q queries of at most m blocks
 * tells CMAC_K from a random function with advantage at most about
 * (m q)^2 / 2^128 beyond the PRP advantage (Iwata and Kurosawa, OMAC,
 * FSE 2003; the SP 800-38B bound).  Truncation to 64 bits keeps that.
 * So for keys of at most 32 bytes, the 64-bit hashes of distinct keys
 * are, up to that advantage, independent and uniform, whatever the keys.
 * In particular:
 *   - A zone's fingerprint is 56 bits of the hash (TKZ_FP_KEY,
 *     shm/layout.h), and a key's identity in its window.  To make a chosen
 *     victim key share a fingerprint
 *     with a key of his, an attacker who cannot see hashes (he sees at
 *     most their side effects: a shared limit, an eviction, a refusal, a
 *     time) must try about 2^56 keys, each tried key succeeding with
 *     probability 2^-56 independently of all others (and to share the
 *     victim's slot the key must land in one of its two windows too).
 *     The birthday bound (about 2^28 keys for one collision) applies
 *     only among keys he inserts himself, and a collision between two of
 *     his own keys only merges two of his own limits: it buys nothing
 *     against anyone else.
 *   - Positions (a multiply-fold of the whole 64-bit hash, shm/zone.h)
 *     and the memory store's buckets are as uniform as the hash: aiming
 *     many keys at one window or chain means guessing outputs of a PRF.
 *   - The hash never leaves the process in a readable form: a zone's
 *     secret is readable exactly by those who can read its slots, and a
 *     memory store's secret never leaves its process.
 * Keys longer than 32 bytes go to SipHash-1-3 under K' = AES_K(c) for
 * the constant c above.  With AES_K replaced by a random permutation P
 * (the PRP step), K' = P(c) is uniform and no output reveals it: the only
 * AES input an attacker controls is the first block of a key of 17 to 32
 * bytes, and if that block is c, K' becomes a chaining value that CMAC
 * encrypts again, masked by the last block and a secret subkey; every
 * other AES input is masked by a secret (a subkey or a chaining value).
 * So up to terms of about (q m)^2 / 2^128, K' is a fresh secret key
 * independent of every CMAC output, and the two domains, separated by
 * length, are independent.  SipHash-1-3 has no published attack better
 * than generic under a secret key (it is the table hash of Rust, Python
 * and Ruby); for such keys the argument above holds with SipHash-1-3 as
 * the assumed PRF.
 *
 * Under TK__KEYHASH_SIP13 the same holds with SipHash-1-3 under K as the
 * assumed PRF for every key (no AES is computed).
 *
 * Timing: AES-NI runs in constant time.  The software AES reads its
 * S-box at data-dependent indexes, so on CPUs without AES-NI a cache-
 * timing observer on the same host could learn about K; such an observer
 * usually can read the zone's secret, or the memory store's, anyway.
 */
#include "hash/siphash.h"
#include "hash/keyhash.h"
#include "test-hooks.h"

#include <endian.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define KEYHASH_X86 1
#else
#define KEYHASH_X86 0
#endif

static const unsigned char sbox[256] = {
	0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b,
	0xfe, 0xd7, 0xab, 0x76, 0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0,
	0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0, 0xb7, 0xfd, 0x93, 0x26,
	0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
	0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2,
	0xeb, 0x27, 0xb2, 0x75, 0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0,
	0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84, 0x53, 0xd1, 0x00, 0xed,
	0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
	0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f,
	0x50, 0x3c, 0x9f, 0xa8, 0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5,
	0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2, 0xcd, 0x0c, 0x13, 0xec,
	0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
	0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14,
	0xde, 0x5e, 0x0b, 0xdb, 0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c,
	0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79, 0xe7, 0xc8, 0x37, 0x6d,
	0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
	0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f,
	0x4b, 0xbd, 0x8b, 0x8a, 0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e,
	0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e, 0xe1, 0xf8, 0x98, 0x11,
	0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
	0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f,
	0xb0, 0x54, 0xbb, 0x16,
};

/* The constant block whose encryption is the SipHash key K'. */
static const unsigned char sip_label[16] = "tk keyhash sip13";

static inline unsigned char xtime(unsigned char x)
{
	return (unsigned char)((x << 1) ^ ((x >> 7) * 0x1b));
}

/*
 * FIPS-197 key expansion: round key r is bytes 16r..16r+15 of the
 * expanded key, in the order AES-NI takes them too.
 */
static void expand_key(unsigned char rk[11][16], const unsigned char key[16])
{
	unsigned char *w = &rk[0][0], t[4], u, rcon = 1;
	int i;

	memcpy(w, key, 16);
	for (i = 16; i < 176; i += 4) {
		memcpy(t, w + i - 4, 4);
		if (i % 16 == 0) {
			u = t[0];
			t[0] = (unsigned char)(sbox[t[1]] ^ rcon);
			t[1] = sbox[t[2]];
			t[2] = sbox[t[3]];
			t[3] = sbox[u];
			rcon = xtime(rcon);
		}
		w[i] = w[i - 16] ^ t[0];
		w[i + 1] = w[i - 15] ^ t[1];
		w[i + 2] = w[i - 14] ^ t[2];
		w[i + 3] = w[i - 13] ^ t[3];
	}
}

static inline uint32_t load_le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint32_t rotr32(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

/*
 * SubBytes and ShiftRows for column @c of the state @s (a column a word,
 * row r in bits 8r..8r+7): row r turns left by r, so it comes from
 * column c + r.
 */
static inline uint32_t sub_shift(const uint32_t s[4], int c)
{
	return (uint32_t)sbox[s[c] & 0xff] |
	       (uint32_t)sbox[s[(c + 1) & 3] >> 8 & 0xff] << 8 |
	       (uint32_t)sbox[s[(c + 2) & 3] >> 16 & 0xff] << 16 |
	       (uint32_t)sbox[s[(c + 3) & 3] >> 24] << 24;
}

/*
 * MixColumns of one column: row r gets 2 a_r + 3 a_r+1 + a_r+2 + a_r+3,
 * that is 2 (a_r + a_r+1) plus the other three rows, the doubling done
 * on all four bytes at once (xtime: shift, and 0x1b where a bit fell
 * out).
 */
static inline uint32_t mix_column(uint32_t a)
{
	uint32_t u = a ^ rotr32(a, 8);

	u = (u & 0x7f7f7f7f) << 1 ^ ((u >> 7) & 0x01010101) * 0x1b;
	return u ^ rotr32(a, 8) ^ rotr32(a, 16) ^ rotr32(a, 24);
}

/*
 * One AES-128 encryption (FIPS-197 section 5.1) with the S-box as a
 * table of bytes; the state is four little-endian column words.
 */
static void aes_sw(const unsigned char rk[11][16], const unsigned char in[16],
		   unsigned char out[16])
{
	uint32_t s[4], t[4], v;
	int r, c;

#pragma GCC unroll 4
	for (c = 0; c < 4; c++)
		s[c] = load_le32(in + 4 * c) ^ load_le32(rk[0] + 4 * c);
	for (r = 1; r < 10; r++) {
#pragma GCC unroll 4
		for (c = 0; c < 4; c++)
			t[c] = sub_shift(s, c);
#pragma GCC unroll 4
		for (c = 0; c < 4; c++)
			s[c] = mix_column(t[c]) ^ load_le32(rk[r] + 4 * c);
	}
#pragma GCC unroll 4
	for (c = 0; c < 4; c++) {
		v = htole32(sub_shift(s, c) ^ load_le32(rk[10] + 4 * c));
		memcpy(out + 4 * c, &v, sizeof(v));
	}
}

/* CMAC's doubling in GF(2^128): a big-endian shift, 0x87 folded in. */
static void gf_double(unsigned char out[16], const unsigned char in[16])
{
	unsigned char carry = in[0] >> 7;
	int i;

	for (i = 0; i < 15; i++)
		out[i] = (unsigned char)(in[i] << 1 | in[i + 1] >> 7);
	out[15] = (unsigned char)(in[15] << 1 ^ carry * 0x87);
}

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void cmac_sw(const struct tk__keyhash_key *k, const unsigned char *p,
		    size_t len, unsigned char tag[16])
{
	unsigned char x[16] = { 0 }, last[16] = { 0 };
	const unsigned char *sub = k->k1;
	int i;

	for (; len > 16; p += 16, len -= 16) {
		for (i = 0; i < 16; i++)
			x[i] ^= p[i];
		aes_sw(k->rk, x, x);
	}
	if (len > 0)
		memcpy(last, p, len);
	if (len < 16) {
		last[len] = 0x80;
		sub = k->k2;
	}
	for (i = 0; i < 16; i++)
		x[i] ^= last[i] ^ sub[i];
	aes_sw(k->rk, x, tag);
}

static uint64_t keyhash_sw(const struct tk__keyhash_key *k,
			   const unsigned char *p, size_t len)
{
	unsigned char tag[16];

	cmac_sw(k, p, len, tag);
	return load_le64(tag);
}

#if KEYHASH_X86
#define TARGET_AES __attribute__((target("aes,sse4.1")))

/* AES-128 of @x under the round keys in memory. */
static inline __attribute__((always_inline)) TARGET_AES __m128i
aes_hw(const struct tk__keyhash_key *k, __m128i x)
{
	const __m128i *rk = (const __m128i *)(const void *)k->rk;

	x = _mm_xor_si128(x, _mm_load_si128(&rk[0]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[1]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[2]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[3]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[4]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[5]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[6]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[7]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[8]));
	x = _mm_aesenc_si128(x, _mm_load_si128(&rk[9]));
	return _mm_aesenclast_si128(x, _mm_load_si128(&rk[10]));
}

/* The last 0..16 bytes of a message as CMAC's last block: padded with
 * 10* when short; reads only [p, p + n). */
static inline __attribute__((always_inline)) TARGET_AES __m128i
last_block(const unsigned char *p, size_t n)
{
	unsigned __int128 m = tk__keyhash_load16(p, n, n < 16 ? 0x80 : 0);

	return _mm_set_epi64x((long long)(uint64_t)(m >> 64),
			      (long long)(uint64_t)m);
}

static inline __attribute__((always_inline)) TARGET_AES __m128i
cmac_hw(const struct tk__keyhash_key *k, const unsigned char *p, size_t len)
{
	__m128i x = _mm_setzero_si128();
	const unsigned char *sub;

	for (; len > 16; p += 16, len -= 16)
		x = aes_hw(k, _mm_xor_si128(
				      x, _mm_loadu_si128((const __m128i *)p)));
	sub = len == 16 ? k->k1 : k->k2;
	x = _mm_xor_si128(x, last_block(p, len));
	x = _mm_xor_si128(x,
			  _mm_load_si128((const __m128i *)(const void *)sub));
	return aes_hw(k, x);
}

/* The first test gives the compiler a copy of CMAC without its loop. */
static TARGET_AES uint64_t keyhash_hw(const struct tk__keyhash_key *k,
				      const unsigned char *p, size_t len)
{
	if (len <= 16)
		return (uint64_t)_mm_cvtsi128_si64(cmac_hw(k, p, len));
	if (len <= TK__KEYHASH_CMAC_MAX)
		return (uint64_t)_mm_cvtsi128_si64(cmac_hw(k, p, len));
	return tk__siphash13(k->sip, p, len);
}

#if TK_TEST_HOOKS /* tk__aes128(), tk__aes_cmac() */
static TARGET_AES void aes_hw_block(const struct tk__keyhash_key *k,
				    const unsigned char in[16],
				    unsigned char out[16])
{
	_mm_storeu_si128((__m128i *)out,
			 aes_hw(k, _mm_loadu_si128((const __m128i *)in)));
}

static TARGET_AES void cmac_hw_tag(const struct tk__keyhash_key *k,
				   const unsigned char *p, size_t len,
				   unsigned char tag[16])
{
	_mm_storeu_si128((__m128i *)tag, cmac_hw(k, p, len));
}
#endif

static int have_aesni(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("aes") &&
	       __builtin_cpu_supports("sse4.1");
}
#else
static int have_aesni(void)
{
	return 0;
}
#endif

#if TK_TEST_HOOKS /* test-hooks.h */
int tk__keyhash_no_aesni;
#endif

int tk__keyhash_aesni(void)
{
	return !tk__keyhash_no_aesni && have_aesni();
}

void tk__keyhash_setup(struct tk__keyhash_key *k, const void *secret, int kind)
{
	unsigned char l[16] = { 0 }, kp[16];
	int i;

	memset(k, 0, sizeof(*k));
	if (kind == TK__KEYHASH_SIP13) {
		k->kind = TK__KEYHASH_SIP13;
		k->sip[0] = load_le64(secret);
		k->sip[1] = load_le64((const unsigned char *)secret + 8);
		return;
	}
	expand_key(k->rk, secret);
	aes_sw(k->rk, l, l);
	gf_double(k->k1, l);
	gf_double(k->k2, k->k1);
	for (i = 0; i < 16; i++) {
		k->k1r[i] = k->k1[i] ^ k->rk[0][i];
		k->k2r[i] = k->k2[i] ^ k->rk[0][i];
	}
	aes_sw(k->rk, sip_label, kp);
	k->sip[0] = load_le64(kp);
	k->sip[1] = load_le64(kp + 8);
	k->kind = TK__KEYHASH_CMAC;
	k->hw = tk__keyhash_aesni();
	explicit_bzero(l, sizeof(l));
	explicit_bzero(kp, sizeof(kp));
}

uint64_t tk__keyhash(const struct tk__keyhash_key *k, const void *data,
		     size_t len)
{
#if KEYHASH_X86
	if (k->hw)
		return keyhash_hw(k, data, len);
#endif
	if (k->kind == TK__KEYHASH_SIP13 || len > TK__KEYHASH_CMAC_MAX)
		return tk__siphash13(k->sip, data, len);
	return keyhash_sw(k, data, len);
}

#if TK_TEST_HOOKS /* test-hooks.h */
void tk__aes128(const struct tk__keyhash_key *k, const unsigned char in[16],
		unsigned char out[16])
{
#if KEYHASH_X86
	if (k->hw) {
		aes_hw_block(k, in, out);
		return;
	}
#endif
	aes_sw(k->rk, in, out);
}

void tk__aes_cmac(const struct tk__keyhash_key *k, const void *data, size_t len,
		  unsigned char tag[16])
{
#if KEYHASH_X86
	if (k->hw) {
		cmac_hw_tag(k, data, len, tag);
		return;
	}
#endif
	cmac_sw(k, data, len, tag);
}
#endif
