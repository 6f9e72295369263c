/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_siphash.c - SipHash-2-4 against the vectors of its paper
 * (key 00..0f, message 00..len-1), SipHash-1-3 against vectors of the
 * same form (every tail length 0..16, and 63 bytes) computed with an
 * independent implementation of the paper's algorithm, against a plain
 * byte-at-a-time transcription of the paper's algorithm with c = 1,
 * d = 3 (the library reads whole words, also in the tail), and the
 * keyed property we rely on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "hash/siphash.h"

static const uint64_t ref_key[2] = { UINT64_C(0x0706050403020100),
				     UINT64_C(0x0f0e0d0c0b0a0908) };

/*
 * Lengths 0 and 1, every tail path of the word reads (3, 4, 7, 8, 12 and
 * 63 bytes) and the paper's worked example (15 bytes).
 */
static const struct {
	size_t len;
	uint64_t hash;
} paper[] = {
	{ 0, UINT64_C(0x726fdb47dd0e0e31) },
	{ 1, UINT64_C(0x74f839c593dc67fd) },
	{ 3, UINT64_C(0x85676696d7fb7e2d) },
	{ 4, UINT64_C(0xcf2794e0277187b7) },
	{ 7, UINT64_C(0xab0200f58b01d137) },
	{ 8, UINT64_C(0x93f5f5799a932462) },
	{ 12, UINT64_C(0x751e8fbc860ee5fb) },
	{ 15, UINT64_C(0xa129ca6149be45e5) },
	{ 63, UINT64_C(0x958a324ceb064572) },
};

static void test_paper_vectors(void **state)
{
	unsigned char msg[64];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)i;
	for (i = 0; i < sizeof(paper) / sizeof(paper[0]); i++)
		assert_int_equal(tk__siphash(ref_key, msg, paper[i].len),
				 paper[i].hash);
}

/*
 * SipHash-1-3, key 00..0f, message 00..len-1: every tail length of the
 * word reads and two whole words, and 63 bytes.  Computed outside this
 * test with a separate implementation (c = 1 compression and d = 3
 * finalisation rounds of the paper's SipRound), which also reproduces
 * the paper's SipHash-2-4 vectors above.
 */
static const struct {
	size_t len;
	uint64_t hash;
} vectors13[] = {
	{ 0, UINT64_C(0xabac0158050fc4dc) },
	{ 1, UINT64_C(0xc9f49bf37d57ca93) },
	{ 2, UINT64_C(0x82cb9b024dc7d44d) },
	{ 3, UINT64_C(0x8bf80ab8e7ddf7fb) },
	{ 4, UINT64_C(0xcf75576088d38328) },
	{ 5, UINT64_C(0xdef9d52f49533b67) },
	{ 6, UINT64_C(0xc50d2b50c59f22a7) },
	{ 7, UINT64_C(0xd3927d989bb11140) },
	{ 8, UINT64_C(0x369095118d299a8e) },
	{ 9, UINT64_C(0x25a48eb36c063de4) },
	{ 10, UINT64_C(0x79de85ee92ff097f) },
	{ 11, UINT64_C(0x70c118c1f94dc352) },
	{ 12, UINT64_C(0x78a384b157b4d9a2) },
	{ 13, UINT64_C(0x306f760c1229ffa7) },
	{ 14, UINT64_C(0x605aa111c0f95d34) },
	{ 15, UINT64_C(0xd320d86d2a519956) },
	{ 16, UINT64_C(0xcc4fdd1a7d908b66) },
	{ 63, UINT64_C(0x9d199062b7bbb3a8) },
};

static void test_siphash13_vectors(void **state)
{
	unsigned char msg[64];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)i;
	for (i = 0; i < sizeof(vectors13) / sizeof(vectors13[0]); i++)
		assert_int_equal(tk__siphash13(ref_key, msg, vectors13[i].len),
				 vectors13[i].hash);
}

static uint64_t plain_rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static void plain_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = plain_rotl(v[1], 13) ^ v[0];
	v[0] = plain_rotl(v[0], 32);
	v[2] += v[3];
	v[3] = plain_rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = plain_rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = plain_rotl(v[1], 17) ^ v[2];
	v[2] = plain_rotl(v[2], 32);
}

/* The paper's definition, one byte at a time: the last word is padded
 * with zeros and carries len mod 256 in its top byte. */
static uint64_t plain_siphash13(const uint64_t k[2], const unsigned char *in,
				size_t len)
{
	uint64_t v[4] = { k[0] ^ UINT64_C(0x736f6d6570736575),
			  k[1] ^ UINT64_C(0x646f72616e646f6d),
			  k[0] ^ UINT64_C(0x6c7967656e657261),
			  k[1] ^ UINT64_C(0x7465646279746573) };
	size_t words = len / 8 + 1, w, j;
	uint64_t m;

	for (w = 0; w < words; w++) {
		m = 0;
		for (j = 0; j < 8; j++) {
			if (w * 8 + j < len)
				m |= (uint64_t)in[w * 8 + j] << (8 * j);
		}
		if (w == words - 1)
			m |= (uint64_t)(len & 0xff) << 56;
		v[3] ^= m;
		plain_round(v);
		v[0] ^= m;
	}
	v[2] ^= 0xff;
	for (j = 0; j < 3; j++)
		plain_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/*
 * Every length from 0 to 64, at every alignment of the buffer, and each
 * message placed at the very end of a heap block so that ASan catches a
 * word read past it.
 */
static void test_siphash13_every_length(void **state)
{
	unsigned char msg[72];
	unsigned char *end;
	uint64_t k[2] = { UINT64_C(0x0123456789abcdef),
			  UINT64_C(0xfedcba9876543210) };
	size_t len, off, i;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 37 + 11);
	for (len = 0; len <= 64; len++) {
		for (off = 0; off < 8; off++) {
			assert_int_equal(
				tk__siphash13(ref_key, msg + off, len),
				plain_siphash13(ref_key, msg + off, len));
			assert_int_equal(tk__siphash13(k, msg + off, len),
					 plain_siphash13(k, msg + off, len));
		}
		end = malloc(len ? len : 1);
		assert_non_null(end);
		memcpy(end, msg, len);
		assert_int_equal(tk__siphash13(k, end, len),
				 plain_siphash13(k, msg, len));
		free(end);
	}
	/* Zero key: the values other SipHash-1-3 implementations test. */
	k[0] = k[1] = 0;
	assert_int_equal(tk__siphash13(k, "", 0), UINT64_C(0xd1fba762150c532c));
	assert_int_equal(tk__siphash13(k, "siphash", 7),
			 UINT64_C(0x8264ceeccb16bcbe));
	/* Not SipHash-2-4 under another name. */
	assert_int_not_equal(tk__siphash13(ref_key, msg, 15),
			     tk__siphash(ref_key, msg, 15));
}

static void test_key_changes_everything(void **state)
{
	uint64_t k2[2] = { ref_key[0] ^ 1, ref_key[1] };
	const char *m = "203.0.113.7";

	(void)state;
	assert_int_not_equal(tk__siphash(ref_key, m, 11),
			     tk__siphash(k2, m, 11));
	assert_int_equal(tk__siphash(ref_key, m, 11),
			 tk__siphash(ref_key, m, 11));
	/* Every length path: 0..7 tail bytes. */
	assert_int_not_equal(tk__siphash(ref_key, m, 10),
			     tk__siphash(ref_key, m, 11));
}

static void test_random_seeds_differ(void **state)
{
	uint64_t a[2], b[2];

	(void)state;
	assert_int_equal(tk__random_bytes(a, sizeof(a)), 0);
	assert_int_equal(tk__random_bytes(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paper_vectors),
		cmocka_unit_test(test_siphash13_vectors),
		cmocka_unit_test(test_siphash13_every_length),
		cmocka_unit_test(test_key_changes_everything),
		cmocka_unit_test(test_random_seeds_differ),
	};

	return cmocka_run_group_tests_name("siphash", tests, NULL, NULL);
}
