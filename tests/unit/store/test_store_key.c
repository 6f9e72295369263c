/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_key.c - the store key codec (lib/store/store-key.h) writes the
 * bytes its comment defines, reads back what it wrote, and refuses a
 * dimension's key too short to hold its index.  The limiter composes
 * every store key with it and the Redis store reads them with it, so a
 * change of format shows here first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "store/store-key.h"

static size_t encode(unsigned char *buf, const char *prefix, int dim,
		     const char *key)
{
	size_t n = tk__store_key_encode(buf, prefix, strlen(prefix), dim, NULL,
					0, key, strlen(key));

	assert_int_equal(
		n, tk__store_key_size(strlen(prefix), dim, 0, strlen(key)));
	return n;
}

static void test_bytes(void **state)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	size_t n;

	(void)state;
	n = encode(buf, "", TK__STORE_KEY_SINGLE, "k");
	assert_int_equal(n, 3);
	assert_memory_equal(buf, "\x00\x00k", 3);
	n = encode(buf, "ab", TK__STORE_KEY_SINGLE, "key");
	assert_int_equal(n, 7);
	assert_memory_equal(buf,
			    "\x00\x02"
			    "abkey",
			    7);
	n = encode(buf, "ab", 3, "key");
	assert_int_equal(n, 8);
	assert_memory_equal(buf,
			    "\x80\x02"
			    "ab\x03key",
			    8);
}

/* A prefix of 256 bytes sets the length's high byte beside the flag. */
static void test_long_prefix(void **state)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	char prefix[TK_PREFIX_MAX + 1];
	struct tk__store_key_parts k;
	size_t n;

	(void)state;
	memset(prefix, 'p', TK_PREFIX_MAX);
	prefix[TK_PREFIX_MAX] = '\0';
	n = encode(buf, prefix, 7, "key");
	assert_int_equal(buf[0], 0x80 | (TK_PREFIX_MAX >> 8));
	assert_int_equal(buf[1], TK_PREFIX_MAX & 0xff);
	assert_int_equal(tk__store_key_decode(buf, n, &k), 0);
	assert_int_equal(k.dim, 7);
	assert_int_equal(k.dim_at, 2 + TK_PREFIX_MAX);
	assert_memory_equal(buf + k.dim_at + 1, "key", 3);
}

static void test_decode(void **state)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	struct tk__store_key_parts k;
	size_t n;

	(void)state;
	n = encode(buf, "ab", TK__STORE_KEY_SINGLE, "key");
	assert_int_equal(tk__store_key_decode(buf, n, &k), 0);
	assert_int_equal(k.dim, TK__STORE_KEY_SINGLE);
	assert_int_equal(k.dim_at, n);
	n = encode(buf, "", 0, "k");
	assert_int_equal(tk__store_key_decode(buf, n, &k), 0);
	assert_int_equal(k.dim, 0);
	assert_int_equal(k.dim_at, 2);
	/* The index is the last byte a dimension's key may lack. */
	assert_int_equal(tk__store_key_decode(buf, 2, &k), -EINVAL);
	assert_int_equal(tk__store_key_decode(buf, 1, &k), -EINVAL);
}

/*
 * A tag sets its flag and sits after the index (or the prefix), and a
 * dimension's key decodes with the caller's key after it; a tag cut short
 * is refused.
 */
static void test_tag(void **state)
{
	static const unsigned char tag[] = { 3, 5, 0, 9 };
	unsigned char buf[TK__STORE_KEY_MAX];
	struct tk__store_key_parts k;
	size_t n;

	(void)state;
	n = tk__store_key_encode(buf, "ab", 2, TK__STORE_KEY_SINGLE, tag,
				 sizeof(tag), "key", 3);
	assert_int_equal(
		n, tk__store_key_size(2, TK__STORE_KEY_SINGLE, sizeof(tag), 3));
	assert_memory_equal(buf,
			    "\x40\x02"
			    "ab\x03\x05\x00\x09"
			    "key",
			    n);
	n = tk__store_key_encode(buf, "ab", 2, 1, tag, sizeof(tag), "key", 3);
	assert_int_equal(n, tk__store_key_size(2, 1, sizeof(tag), 3));
	assert_memory_equal(buf,
			    "\xc0\x02"
			    "ab\x01\x03\x05\x00\x09"
			    "key",
			    n);
	assert_int_equal(tk__store_key_decode(buf, n, &k), 0);
	assert_int_equal(k.dim, 1);
	assert_int_equal(k.dim_at, 4);
	assert_int_equal(k.key_at, 9);
	assert_int_equal(tk__store_key_decode(buf, 9, &k), 0);
	assert_int_equal(tk__store_key_decode(buf, 8, &k), -EINVAL);
	assert_int_equal(tk__store_key_decode(buf, 5, &k), -EINVAL);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(test_tag),
	cmocka_unit_test(test_bytes),
	cmocka_unit_test(test_long_prefix),
	cmocka_unit_test(test_decode),
};

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
