/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_keyhash_join.c - the hash of a store key handed in two parts
 * (tk__keyhash_join(), lib/hash/keyhash.h: the head as a 128-bit integer,
 * the caller's key as it is) against the hash of the same bytes joined in
 * memory (tk__keyhash() and tk__keyhash_fast(), what the stores hashed
 * before): the same 64 bits for random secrets, heads of 0 to 284 bytes
 * and keys of 0 to 1024, across the 4-, 8- and 16-byte boundaries, for
 * each kind of key (AES-NI CMAC, software CMAC, SipHash-1-3), reading
 * only the key's bytes; the in-register path (CMAC's one or two blocks,
 * SipHash's two words) taken exactly where it is documented to be; and the
 * limiter's head (store-key.h) spelled as tk__store_key_encode() spells it.
 * Zones written before must find their keys: a differing bit would be a key
 * never found again.
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
#include "hash/keyhash.h"
#include "store/store-key.h"
#include "rnd.h"

#define HEAD_MAX (2 + TK_PREFIX_MAX + TK__STORE_KEY_TAG_MAX)

static void fill_random(uint64_t *s, unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)rnd_next(s);
}

/* The first 16 bytes of @p (@len of them) as a little-endian integer,
 * byte by byte: the head as the test spells it, apart from store-key.h. */
static unsigned __int128 head_word(const unsigned char *p, size_t len)
{
	unsigned __int128 w = 0;
	size_t i;

	for (i = 0; i < len && i < 16; i++)
		w |= (unsigned __int128)p[i] << (8 * i);
	return w;
}

static const size_t head_lens[] = { 0,	1,  2,	3,  4,	5,  6,	     7,	 8,
				    9,	10, 11, 12, 13, 14, 15,	     16, 17,
				    18, 20, 24, 31, 33, 40, HEAD_MAX };
static const size_t tail_lens[] = { 0,	1,  2,	3,  4,	5,  6,	7,   8,	  9,
				    10, 11, 12, 13, 14, 15, 16, 17,  18,  20,
				    24, 30, 31, 32, 33, 40, 64, 100, 1024 };

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Every (head, key) pair of the lengths above, the key right after and
 * right before an inaccessible page: the joined hash equals tk__keyhash()
 * and tk__keyhash_fast() of the joined bytes wherever it answers.  Returns
 * how many it answered; *@wrong_path counts answers given (or refused)
 * against the documented rule: a head below 16 bytes, and AES-NI with at
 * most 32 bytes in all (one or two CMAC blocks) or SipHash-1-3 with at
 * most 16.
 */
static size_t compare_all(const struct tk__keyhash_key *k, uint64_t *s,
			  unsigned char *lo, unsigned char *page_end,
			  size_t *wrong_path)
{
	static unsigned char joined[HEAD_MAX + TK_KEY_MAX];
	unsigned char *tail[2];
	size_t hi, ti, hl, tl, n, answered = 0;
	uint64_t h, want;
	int side, ok;

	for (hi = 0; hi < N_ELEMS(head_lens); hi++) {
		for (ti = 0; ti < N_ELEMS(tail_lens); ti++) {
			hl = head_lens[hi];
			tl = tail_lens[ti];
			n = hl + tl;
			fill_random(s, joined, n);
			want = tk__keyhash(k, joined, n);
			assert_int_equal(tk__keyhash_fast(k, joined, n), want);
			tail[0] = lo;
			tail[1] = page_end - tl;
			for (side = 0; side < 2; side++) {
				memcpy(tail[side], joined + hl, tl);
				h = ~want;
				ok = tk__keyhash_join(k, head_word(joined, hl),
						      hl, tail[side], tl, &h);
				/* Two blocks where one is not. */
				if (!ok)
					ok = tk__keyhash_join2(
						k, head_word(joined, hl), hl,
						tail[side], tl, &h);
				/* Never both: one kind of key each. */
				ok += tk__keyhash_join_sip13(
					k, head_word(joined, hl), hl,
					tail[side], tl, &h);
				if (ok != (hl < 16 &&
					   ((k->hw && n <= 32) ||
					    (k->kind == TK__KEYHASH_SIP13 &&
					     n <= 16))))
					(*wrong_path)++;
				if (!ok)
					continue;
				answered++;
				if (h != want)
					fail_msg("head %zu key %zu side %d: "
						 "%016llx, joined %016llx",
						 hl, tl, side,
						 (unsigned long long)h,
						 (unsigned long long)want);
			}
		}
	}
	return answered;
}

static void test_join_equals_joined(void **state)
{
	struct tk__keyhash_key k;
	unsigned char secret[16], *map;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), answered = 0, wrong = 0;
	size_t hw_answered = 0, sip_answered = 0;
	uint64_t s = 31;
	int round, kind;

	(void)state;
	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map, page, PROT_NONE), 0);
	assert_int_equal(mprotect(map + 2 * page, page, PROT_NONE), 0);
	for (round = 0; round < 24; round++) {
		fill_random(&s, secret, sizeof(secret));
		for (kind = 0; kind < 3; kind++) {
			tk__keyhash_setup(&k, secret,
					  kind == 2 ? TK__KEYHASH_SIP13
						    : TK__KEYHASH_CMAC);
			if (kind == 1)
				k.hw = 0; /* the software AES */
			answered = compare_all(&k, &s, map + page,
					       map + 2 * page, &wrong);
			if (k.hw)
				hw_answered += answered;
			else if (kind == 2)
				sip_answered += answered;
			else
				assert_int_equal(answered, 0);
		}
	}
	assert_int_equal(wrong, 0);
	assert_true(sip_answered > 0);
#if defined(__x86_64__)
	if (__builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1"))
		assert_true(hw_answered > 0);
#endif
	munmap(map, 3 * page);
}

/*
 * The limiter's head (tk__store_head_set()) for prefixes of 0 to 256
 * bytes, with and without a tag: its bytes are tk__store_key_encode()'s
 * up to the key, its word their first 16, and the key joined to it is
 * the encoded key, whose hash the joined hash is.
 */
static void test_store_head(void **state)
{
	static const unsigned char tag[] = { 3, 'w', 'i', 'n' };
	static unsigned char enc[TK__STORE_KEY_MAX], buf[TK__STORE_KEY_MAX];
	struct tk__store_head head;
	struct tk__keyhash_key k;
	unsigned char secret[16];
	char prefix[TK_PREFIX_MAX], key[40];
	size_t pl, kl, n, tl;
	uint64_t s = 5, h;
	int t;

	(void)state;
	fill_random(&s, secret, sizeof(secret));
	tk__keyhash_setup(&k, secret, TK__KEYHASH_CMAC);
	fill_random(&s, (unsigned char *)prefix, sizeof(prefix));
	for (pl = 0; pl <= TK_PREFIX_MAX; pl += pl < 20 ? 1 : 59) {
		for (t = 0; t < 2; t++) {
			tl = t ? sizeof(tag) : 0;
			tk__store_head_set(&head, prefix, pl,
					   TK__STORE_KEY_SINGLE, tag, tl);
			assert_int_equal(head.len, 2 + pl + tl);
			assert_true(head.w == head_word(head.bytes, head.len));
			for (kl = 1; kl <= sizeof(key); kl++) {
				fill_random(&s, (unsigned char *)key, kl);
				n = tk__store_key_encode(enc, prefix, pl,
							 TK__STORE_KEY_SINGLE,
							 tag, tl, key, kl);
				assert_int_equal(
					tk__store_key_join(buf, &head, key, kl),
					n);
				assert_memory_equal(buf, enc, n);
				if (tk__keyhash_join(&k, head.w, head.len, key,
						     kl, &h))
					assert_int_equal(
						h, tk__keyhash(&k, enc, n));
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_equals_joined),
		cmocka_unit_test(test_store_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
