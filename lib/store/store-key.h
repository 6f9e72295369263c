/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-key.h - the store key: how the limiter names a state to a store,
 * and how a store that needs its parts reads them back.
 *
 * The limiter joins its prefix and the caller's key into the one byte
 * string every store receives (apply, apply_multi, apply_batch, reset):
 *
 *   a single policy:           [hi][lo][prefix][key]
 *   dimension i of composite:  [0x80 | hi][lo][prefix][i][key]
 *
 * - hi, lo: the prefix's length, big-endian; at most TK_PREFIX_MAX, so
 *   the top bit of hi is free to mark a dimension's key.  The length is
 *   spelled so that no two (prefix, key) pairs give the same bytes: "a"
 *   and "b:c" differ from "a:b" and "c".
 * - i: the dimension's index, one byte (below TK__MULTI_MAX), so that
 *   each dimension of one key keeps a state of its own.
 * - key: the caller's key as given, 1 to TK_KEY_MAX bytes.
 *
 * The memory store and zones hash the bytes whole.  The Redis store moves
 * a dimension's index out of its hash tag, so that every dimension of one
 * key lands in one slot of a cluster (lib/redis/keys.c).
 */
#ifndef TK_STORE_KEY_H
#define TK_STORE_KEY_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <throttlekit.h>

#define TK__STORE_KEY_SINGLE (-1) /* no dimension: a single policy's key */
#define TK__STORE_KEY_DIM 0x80	  /* in the first byte: a dimension's key */
#define TK__STORE_KEY_MAX (3 + TK_PREFIX_MAX + TK_KEY_MAX) /* bytes */

/* The length of the store key of @key_len bytes under @dim. */
static inline size_t tk__store_key_size(size_t prefix_len, int dim,
					size_t key_len)
{
	return 2 + prefix_len + (dim == TK__STORE_KEY_SINGLE ? 0 : 1) + key_len;
}

/*
 * The bytes of a store key before the caller's key, into @buf (which
 * holds tk__store_key_size(@prefix_len, @dim, 0) bytes): their number.
 */
static inline size_t tk__store_key_head(unsigned char *buf, const char *prefix,
					size_t prefix_len, int dim)
{
	size_t n = 0;

	buf[n++] = (unsigned char)((prefix_len >> 8) |
				   (dim == TK__STORE_KEY_SINGLE
					    ? 0
					    : TK__STORE_KEY_DIM));
	buf[n++] = (unsigned char)prefix_len;
	if (prefix_len) { /* most limiters have none: no call for it */
		memcpy(buf + n, prefix, prefix_len);
		n += prefix_len;
	}
	if (dim != TK__STORE_KEY_SINGLE)
		buf[n++] = (unsigned char)dim;
	return n;
}

/* The whole store key into @buf: its length. */
static inline size_t tk__store_key_encode(unsigned char *buf,
					  const char *prefix, size_t prefix_len,
					  int dim, const char *key,
					  size_t key_len)
{
	size_t n = tk__store_key_head(buf, prefix, prefix_len, dim);

	memcpy(buf + n, key, key_len);
	return n + key_len;
}

/* What a store reads back of a store key. */
struct tk__store_key_parts {
	int dim; /* the dimension's index, or TK__STORE_KEY_SINGLE */
	/* A dimension's key: the offset of its index, the length and prefix
	 * before it, the caller's key after it.  A single key: its length. */
	size_t dim_at;
};

/*
 * The parts of @key (@len bytes): 0, or -EINVAL for fewer than 2 bytes or
 * a dimension's key too short to hold its index.  A single key is taken
 * as a whole, as the stores hash it, and not checked further.
 */
static inline int tk__store_key_decode(const unsigned char *key, size_t len,
				       struct tk__store_key_parts *out)
{
	out->dim = TK__STORE_KEY_SINGLE;
	out->dim_at = len;
	if (len < 2)
		return -EINVAL;
	if (!(key[0] & TK__STORE_KEY_DIM))
		return 0;
	out->dim_at = 2 + ((size_t)(key[0] & ~TK__STORE_KEY_DIM) << 8 | key[1]);
	if (out->dim_at >= len)
		return -EINVAL;
	out->dim = key[out->dim_at];
	return 0;
}

#endif /* TK_STORE_KEY_H */
