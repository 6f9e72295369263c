/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_keyhash.c - the stores' key hash (lib/hash/keyhash.c): AES-128 against
 * FIPS-197, AES-CMAC against RFC 4493 (subkeys and all four examples)
 * and against OpenSSL's CMAC for the short lengths a store key has, each
 * by both implementations (AES-NI and the software AES) and by the
 * stores' inlined AES-NI path (keyhash.h); all of them against each
 * other for every length 0..100 under
 * random secrets, reading only the key's bytes; the length boundary
 * between CMAC and SipHash-1-3; the secret's effect; and the other kind
 * of key, SipHash-1-3 of every length (stores without AES-NI).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "hash/siphash.h"
#include "test-hooks.h"
#include "hash/keyhash.h"

/* RFC 4493 section 4: the key and the 64-byte message of its examples. */
static const unsigned char rfc_key[16] = {
	0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
	0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
};
static const unsigned char rfc_msg[64] = {
	0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e,
	0x11, 0x73, 0x93, 0x17, 0x2a, 0xae, 0x2d, 0x8a, 0x57, 0x1e, 0x03,
	0xac, 0x9c, 0x9e, 0xb7, 0x6f, 0xac, 0x45, 0xaf, 0x8e, 0x51, 0x30,
	0xc8, 0x1c, 0x46, 0xa3, 0x5c, 0xe4, 0x11, 0xe5, 0xfb, 0xc1, 0x19,
	0x1a, 0x0a, 0x52, 0xef, 0xf6, 0x9f, 0x24, 0x45, 0xdf, 0x4f, 0x9b,
	0x17, 0xad, 0x2b, 0x41, 0x7b, 0xe6, 0x6c, 0x37, 0x10,
};

/* Hex to bytes; the tests' vectors are written as in their sources. */
static void unhex(unsigned char *out, const char *hex)
{
	unsigned int b;
	size_t i;

	for (i = 0; hex[2 * i]; i++) {
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &b), 1);
		out[i] = (unsigned char)b;
	}
}

static void assert_hex(const unsigned char *got, const char *hex)
{
	unsigned char want[16];

	assert_int_equal(strlen(hex), 32);
	unhex(want, hex);
	assert_memory_equal(got, want, 16);
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Both implementations of one secret: [0] software, [1] AES-NI if any. */
static int setup_both(struct tk__keyhash_key k[2], const void *secret)
{
	tk__keyhash_setup(&k[0], secret, TK__KEYHASH_CMAC);
	k[0].hw = 0;
	tk__keyhash_setup(&k[1], secret, TK__KEYHASH_CMAC);
	return k[1].hw ? 2 : 1;
}

static int have_aesni(void)
{
#if defined(__x86_64__)
	return __builtin_cpu_supports("aes") &&
	       __builtin_cpu_supports("sse4.1");
#else
	return 0;
#endif
}

/* Setup chooses AES-NI exactly when the CPU has it. */
static void test_choice(void **state)
{
	struct tk__keyhash_key k;

	(void)state;
	tk__keyhash_setup(&k, rfc_key, TK__KEYHASH_CMAC);
	assert_int_equal(k.hw, have_aesni());
	assert_int_equal((uintptr_t)k.rk % 16, 0);
}

/* FIPS-197 appendix C.1 and appendix B. */
static void test_fips197(void **state)
{
	struct tk__keyhash_key k[2];
	unsigned char key[16], in[16], out[16];
	int n, i;

	(void)state;
	unhex(key, "000102030405060708090a0b0c0d0e0f");
	unhex(in, "00112233445566778899aabbccddeeff");
	n = setup_both(k, key);
	for (i = 0; i < n; i++) {
		memset(out, 0, sizeof(out));
		tk__aes128(&k[i], in, out);
		assert_hex(out, "69c4e0d86a7b0430d8cdb78070b4c55a");
	}
	unhex(in, "3243f6a8885a308d313198a2e0370734");
	n = setup_both(k, rfc_key);
	for (i = 0; i < n; i++) {
		tk__aes128(&k[i], in, out);
		assert_hex(out, "3925841d02dc09fbdc118597196a0b32");
	}
	/* The last round key of C.1, which the expansion must reach. */
	tk__keyhash_setup(&k[0], key, TK__KEYHASH_CMAC);
	assert_hex(k[0].rk[10], "13111d7fe3944a17f307a78b4d2b30c5");
}

/* RFC 4493 section 4: subkeys and examples 1 to 4 (0, 16, 40, 64). */
static void test_rfc4493(void **state)
{
	static const struct {
		size_t len;
		const char *tag;
	} ex[] = {
		{ 0, "bb1d6929e95937287fa37d129b756746" },
		{ 16, "070a16b46b4d4144f79bdd9dd04a287c" },
		{ 40, "dfa66747de9ae63030ca32611497c827" },
		{ 64, "51f0bebf7e3b9d92fc49741779363cfe" },
	};
	struct tk__keyhash_key k[2];
	unsigned char tag[16];
	size_t j;
	int n, i;

	(void)state;
	n = setup_both(k, rfc_key);
	assert_hex(k[0].k1, "fbeed618357133667c85e08f7236a8de");
	assert_hex(k[0].k2, "f7ddac306ae266ccf90bc11ee46d513b");
	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(ex) / sizeof(ex[0]); j++) {
			memset(tag, 0, sizeof(tag));
			tk__aes_cmac(&k[i], rfc_msg, ex[j].len, tag);
			assert_hex(tag, ex[j].tag);
		}
	/* Examples 1 and 2 are store-key lengths: the hash is their tag. */
	for (i = 0; i < n; i++) {
		assert_int_equal(tk__keyhash(&k[i], rfc_msg, 0),
				 UINT64_C(0x283759e929691dbb));
		assert_int_equal(tk__keyhash(&k[i], rfc_msg, 16),
				 UINT64_C(0x44414d6bb4160a07));
	}
}

/*
 * Key 00..0f, message 00..len-1: tags computed with OpenSSL
 * (`openssl mac -cipher AES-128-CBC -macopt hexkey:... CMAC`), for the
 * lengths of every branch of the short-key block load and of two blocks.
 */
static void test_openssl_cmac(void **state)
{
	static const struct {
		size_t len;
		const char *tag;
	} ref[] = {
		{ 1, "d78a1663af870e5aeb4d44875eeffdf3" },
		{ 7, "f232f3ce26f52b8674534b4a48d89e17" },
		{ 8, "42802eb1931f0032afe984443738cd31" },
		{ 12, "18c28d89fc1f033869ad6a84f57d123e" },
		{ 15, "40fb69919e3fc3f445a34234d650a72b" },
		{ 17, "dbab59423fbec5a7be32c48ce1a80e33" },
		{ 20, "980ae87b5f4c9c5214f5b6a8455e4c2d" },
		{ 31, "16063169661097122fa09c7325f236c3" },
		{ 32, "73dbfaf8321b282a162d2bac929fe7e7" },
	};
	struct tk__keyhash_key k[2];
	unsigned char key[16], msg[32], tag[16];
	size_t j;
	int n, i;

	(void)state;
	for (j = 0; j < 32; j++)
		msg[j] = (unsigned char)j;
	memcpy(key, msg, 16);
	n = setup_both(k, key);
	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(ref) / sizeof(ref[0]); j++) {
			tk__aes_cmac(&k[i], msg, ref[j].len, tag);
			assert_hex(tag, ref[j].tag);
			unhex(tag, ref[j].tag);
			assert_int_equal(tk__keyhash(&k[i], msg, ref[j].len),
					 le64(tag));
			assert_int_equal(
				tk__keyhash_fast(&k[i], msg, ref[j].len),
				le64(tag));
		}
}

/* splitmix64: a fixed sequence of random-looking secrets and keys. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void fill_random(uint64_t *s, unsigned char *p, size_t len)
{
	uint64_t r = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			r = next_random(s);
		p[i] = (unsigned char)(r >> (8 * (i % 8)));
	}
}

/*
 * AES-NI and the software AES give the same hash of every length 0..100
 * under random secrets, and the CMAC tags agree in all 16 bytes.  The key
 * sits right after, then right before, an inaccessible page, so a read
 * outside its bytes would fault.
 */
static void test_hw_equals_sw(void **state)
{
	struct tk__keyhash_key k[2];
	unsigned char secret[16], msg[100], ta[16], tb[16], *map, *lo, *hi;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	uint64_t s = 42;
	int round;

	(void)state;
	if (!have_aesni())
		skip();
	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map, page, PROT_NONE), 0);
	assert_int_equal(mprotect(map + 2 * page, page, PROT_NONE), 0);
	lo = map + page;
	for (round = 0; round < 64; round++) {
		fill_random(&s, secret, sizeof(secret));
		assert_int_equal(setup_both(k, secret), 2);
		for (len = 0; len <= sizeof(msg); len++) {
			fill_random(&s, msg, len);
			hi = map + 2 * page - len;
			memcpy(lo, msg, len);
			memcpy(hi, msg, len);
			assert_int_equal(tk__keyhash(&k[1], hi, len),
					 tk__keyhash(&k[0], msg, len));
			assert_int_equal(tk__keyhash(&k[1], lo, len),
					 tk__keyhash(&k[0], msg, len));
			assert_int_equal(tk__keyhash_fast(&k[1], hi, len),
					 tk__keyhash(&k[0], msg, len));
			assert_int_equal(tk__keyhash_fast(&k[1], lo, len),
					 tk__keyhash(&k[0], msg, len));
			tk__aes_cmac(&k[0], msg, len, ta);
			tk__aes_cmac(&k[1], hi, len, tb);
			assert_memory_equal(ta, tb, 16);
		}
	}
	munmap(map, 3 * page);
}

/*
 * Up to 32 bytes the hash is CMAC's first 8 bytes; from 33 it is
 * SipHash-1-3 under AES_K("tk keyhash sip13"), not CMAC.
 */
static void test_length_boundary(void **state)
{
	static const unsigned char label[16] = "tk keyhash sip13";
	struct tk__keyhash_key k[2];
	unsigned char secret[16], msg[100], tag[16], kp[16];
	uint64_t s = 7;
	size_t len;
	int n, i;

	(void)state;
	fill_random(&s, secret, sizeof(secret));
	fill_random(&s, msg, sizeof(msg));
	n = setup_both(k, secret);
	tk__aes128(&k[0], label, kp);
	assert_int_equal(k[0].sip[0], le64(kp));
	assert_int_equal(k[0].sip[1], le64(kp + 8));
	for (i = 0; i < n; i++)
		for (len = 0; len <= sizeof(msg); len++) {
			tk__aes_cmac(&k[i], msg, len, tag);
			if (len <= TK__KEYHASH_CMAC_MAX) {
				assert_int_equal(tk__keyhash(&k[i], msg, len),
						 le64(tag));
				continue;
			}
			assert_int_equal(tk__keyhash(&k[i], msg, len),
					 tk__siphash13(k[i].sip, msg, len));
			assert_int_not_equal(tk__keyhash(&k[i], msg, len),
					     le64(tag));
		}
	/* The SipHash key is not the secret itself. */
	assert_memory_not_equal(k[0].sip, secret, 16);
}

/* Secrets one bit apart give different hashes of every key. */
static void test_secret_matters(void **state)
{
	struct tk__keyhash_key a[2], b[2];
	unsigned char secret[16], msg[100];
	uint64_t s = 99;
	size_t len;
	int n, i, bit;

	(void)state;
	fill_random(&s, msg, sizeof(msg));
	for (bit = 0; bit < 128; bit += 9) {
		fill_random(&s, secret, sizeof(secret));
		n = setup_both(a, secret);
		secret[bit / 8] ^= (unsigned char)(1 << (bit % 8));
		setup_both(b, secret);
		for (i = 0; i < n; i++)
			for (len = 0; len <= sizeof(msg); len++)
				assert_int_not_equal(
					tk__keyhash(&a[i], msg, len),
					tk__keyhash(&b[i], msg, len));
	}
}

/*
 * A SipHash-1-3 key (a store without AES-NI): every length, by the
 * inlined path and the out-of-line one, is SipHash-1-3 under the secret
 * read as two little-endian words, with no AES set up; and the hook that
 * hides AES-NI makes a CMAC key use the software AES.
 */
static void test_sip13_kind(void **state)
{
	struct tk__keyhash_key k, c;
	unsigned char secret[16], msg[100], zero[16] = { 0 };
	uint64_t s = 1234, sip[2];
	size_t len;

	(void)state;
	fill_random(&s, secret, sizeof(secret));
	fill_random(&s, msg, sizeof(msg));
	sip[0] = le64(secret);
	sip[1] = le64(secret + 8);
	tk__keyhash_setup(&k, secret, TK__KEYHASH_SIP13);
	assert_int_equal(k.kind, TK__KEYHASH_SIP13);
	assert_int_equal(k.hw, 0);
	assert_memory_equal(k.rk[0], zero, 16);
	for (len = 0; len <= sizeof(msg); len++) {
		assert_int_equal(tk__keyhash(&k, msg, len),
				 tk__siphash13(sip, msg, len));
		assert_int_equal(tk__keyhash_fast(&k, msg, len),
				 tk__siphash13(sip, msg, len));
	}
	tk__keyhash_no_aesni = 1;
	assert_int_equal(tk__keyhash_aesni(), 0);
	tk__keyhash_setup(&c, secret, TK__KEYHASH_CMAC);
	tk__keyhash_no_aesni = 0;
	assert_int_equal(c.kind, TK__KEYHASH_CMAC);
	assert_int_equal(c.hw, 0);
	assert_int_equal(tk__keyhash_aesni(), have_aesni());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_fips197),
		cmocka_unit_test(test_rfc4493),
		cmocka_unit_test(test_openssl_cmac),
		cmocka_unit_test(test_hw_equals_sw),
		cmocka_unit_test(test_length_boundary),
		cmocka_unit_test(test_secret_matters),
		cmocka_unit_test(test_sip13_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
