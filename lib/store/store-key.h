/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-key.h - the store key: how the limiter names a state to a store,
 * and how a store that needs its parts reads them back.
 *
 * The limiter joins its prefix, the policy's tag and the caller's key
 * into the one byte string every store receives (apply, apply_multi,
 * apply_batch, reset):
 *
 *   a single policy:           [hi][lo][prefix][tag][key]
 *   dimension i of composite:  [0x80 | hi][lo][prefix][i][tag][key]
 *
 * - hi, lo: the prefix's length, big-endian; at most TK_PREFIX_MAX (256),
 *   so hi is 0 or 1 and its top bits are free: 0x80 marks a dimension's
 *   key, 0x40 a tag.  The length is spelled so that no two (prefix, key)
 *   pairs give the same bytes: "a" and "b:c" differ from "a:b" and "c".
 * - i: the dimension's index, one byte (below TK__MULTI_MAX), so that
 *   each dimension of one key keeps a state of its own.
 * - tag: with 0x40, [n][n bytes] naming the state's algorithm and layout
 *   (struct tk__policy, algo.h): a policy that replaced another on the
 *   same keys finds only the states it can read as its own, and starts
 *   the others afresh, never reading them.  Gcra has no tag.
 * - key: the caller's key as given, 1 to TK_KEY_MAX bytes.
 *
 * The memory store and zones hash the bytes whole.  The Redis store moves
 * a dimension's index and tag out of its hash tag, so that every
 * dimension of one key lands in one slot of a cluster (lib/redis/keys.c).
 */
#ifndef TK_STORE_KEY_H
#define TK_STORE_KEY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <throttlekit.h>

#define TK__STORE_KEY_SINGLE (-1) /* no dimension: a single policy's key */
#define TK__STORE_KEY_DIM 0x80	  /* in the first byte: a dimension's key */
#define TK__STORE_KEY_TAG 0x40	  /* in the first byte: a tag follows */
#define TK__STORE_KEY_TAG_MAX 26  /* bytes of a tag, its length included */
#define TK__STORE_KEY_MAX                                                      \
	(3 + TK_PREFIX_MAX + TK__STORE_KEY_TAG_MAX + TK_KEY_MAX) /* bytes */

/* The length of the store key of @key_len bytes under @dim and a tag of
 * @tag_len bytes. */
static inline size_t tk__store_key_size(size_t prefix_len, int dim,
					size_t tag_len, size_t key_len)
{
	return 2 + prefix_len + (dim == TK__STORE_KEY_SINGLE ? 0 : 1) +
	       tag_len + key_len;
}

/*
 * The bytes of a store key before the caller's key, into @buf (which
 * holds tk__store_key_size(@prefix_len, @dim, @tag_len, 0) bytes): their
 * number.  @tag: [n][n bytes], @tag_len = n + 1, or 0 for none.
 */
static inline size_t tk__store_key_head(unsigned char *buf, const char *prefix,
					size_t prefix_len, int dim,
					const unsigned char *tag,
					size_t tag_len)
{
	size_t n = 0;

	buf[n++] = (unsigned char)((prefix_len >> 8) |
				   (dim == TK__STORE_KEY_SINGLE
					    ? 0
					    : TK__STORE_KEY_DIM) |
				   (tag_len ? TK__STORE_KEY_TAG : 0));
	buf[n++] = (unsigned char)prefix_len;
	if (prefix_len) { /* most limiters have none: no call for it */
		memcpy(buf + n, prefix, prefix_len);
		n += prefix_len;
	}
	if (dim != TK__STORE_KEY_SINGLE)
		buf[n++] = (unsigned char)dim;
	if (tag_len) {
		memcpy(buf + n, tag, tag_len);
		n += tag_len;
	}
	return n;
}

/* The whole store key into @buf: its length. */
static inline size_t tk__store_key_encode(unsigned char *buf,
					  const char *prefix, size_t prefix_len,
					  int dim, const unsigned char *tag,
					  size_t tag_len, const char *key,
					  size_t key_len)
{
	size_t n =
		tk__store_key_head(buf, prefix, prefix_len, dim, tag, tag_len);

	memcpy(buf + n, key, key_len);
	return n + key_len;
}

/*
 * A store key's head (the bytes before the caller's key), as a single
 * policy's checks hand it to a store's fast path with the caller's key
 * apart (try_check()): so that the store can hash the two without their
 * bytes ever being joined in memory first (tk__keyhash_join()).
 */
struct tk__store_head {
	unsigned __int128 w; /* its first 16 bytes, little-endian, 0 above */
	size_t len;	     /* bytes */
	unsigned char bytes[2 + TK_PREFIX_MAX + TK__STORE_KEY_TAG_MAX];
};

/* Set @h to the head of a key under @prefix, @dim and @tag (as
 * tk__store_key_head()). */
static inline void tk__store_head_set(struct tk__store_head *h,
				      const char *prefix, size_t prefix_len,
				      int dim, const unsigned char *tag,
				      size_t tag_len)
{
	size_t i;

	h->len = tk__store_key_head(h->bytes, prefix, prefix_len, dim, tag,
				    tag_len);
	h->w = 0;
	for (i = 0; i < h->len && i < 16; i++)
		h->w |= (unsigned __int128)h->bytes[i] << (8 * i);
}

/*
 * The store key of @head and the caller's @key into @buf: its length.
 * Most keys' head is 2 bytes and the key short: those without a call to
 * memcpy(), the key in two overlapping word moves.
 */
static inline size_t tk__store_key_join(unsigned char *buf,
					const struct tk__store_head *head,
					const char *key, size_t key_len)
{
	unsigned char *dst = buf + head->len;
	uint64_t a, b;
	uint32_t c, d;

	if (head->len == 2)
		memcpy(buf, head->bytes, 2);
	else
		memcpy(buf, head->bytes, head->len);
	if (key_len >= 8 && key_len <= 16) {
		memcpy(&a, key, 8);
		memcpy(&b, key + key_len - 8, 8);
		memcpy(dst, &a, 8);
		memcpy(dst + key_len - 8, &b, 8);
	} else if (key_len >= 4 && key_len < 8) {
		memcpy(&c, key, 4);
		memcpy(&d, key + key_len - 4, 4);
		memcpy(dst, &c, 4);
		memcpy(dst + key_len - 4, &d, 4);
	} else {
		memcpy(dst, key, key_len);
	}
	return head->len + key_len;
}

/* What a store reads back of a store key. */
struct tk__store_key_parts {
	int dim; /* the dimension's index, or TK__STORE_KEY_SINGLE */
	/* A dimension's key: the offset of its index, the length and prefix
	 * before it, its tag and the caller's key (at @key_at) after it.  A
	 * single key: its length, in both. */
	size_t dim_at;
	size_t key_at;
};

/*
 * The parts of @key (@len bytes): 0, or -EINVAL for fewer than 2 bytes or
 * a dimension's key too short to hold its index and tag.  A single key is
 * taken as a whole, as the stores hash it, and not checked further.
 */
static inline int tk__store_key_decode(const unsigned char *key, size_t len,
				       struct tk__store_key_parts *out)
{
	out->dim = TK__STORE_KEY_SINGLE;
	out->dim_at = len;
	out->key_at = len;
	if (len < 2)
		return -EINVAL;
	if (!(key[0] & TK__STORE_KEY_DIM))
		return 0;
	out->dim_at = 2 + ((size_t)(key[0] & 1) << 8 | key[1]);
	if (out->dim_at >= len)
		return -EINVAL;
	out->dim = key[out->dim_at];
	out->key_at = out->dim_at + 1;
	if (key[0] & TK__STORE_KEY_TAG) {
		if (out->key_at >= len)
			return -EINVAL;
		out->key_at += 1 + (size_t)key[out->key_at];
		if (out->key_at > len)
			return -EINVAL;
	}
	return 0;
}

#endif /* TK_STORE_KEY_H */
