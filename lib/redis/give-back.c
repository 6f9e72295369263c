/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * give-back.c - units a check consumed given back later, by a process
 * that does not hold the states the check spelled: the two tiers' unused
 * credit (lib/store/store-tier.c), which the check of a lease took.
 *
 * The refund script (check.lua) takes only the "written since" branch
 * here: its POST names just what that branch compares (a window's policy
 * and start; a sliding window's S, w and the tick of the check's bucket;
 * a log's limit), in the binary forms the script writes, and counts
 * nothing, so no state the library writes is
 * ever equal to it (a state left counting nothing is deleted), and the
 * compare-and-restore branch never runs.  So the units come back only
 * where the cross-slot refund rules make that exact: from the same
 * window, bucket or stamps, and only if they still hold that many.
 */
#include "redis/scripts.h"
#include "redis/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* @v as the scripts' pairs spell it: hi * 10^9 + lo, big-endian in 5
 * and 4 bytes, at @b. */
static void put_pair(unsigned char *b, uint64_t v)
{
	uint64_t hi = v / 1000000000, lo = v % 1000000000;
	int i;

	for (i = 4; i >= 0; i--, hi >>= 8)
		b[i] = (unsigned char)hi;
	for (i = 8; i >= 5; i--, lo >>= 8)
		b[i] = (unsigned char)lo;
}

/* @p's POST for a check at @at of arguments @args (tk__redis_check_args())
 * into @buf, in the binary forms check.lua writes: its length, or 0 for
 * an algorithm whose units cannot be given back so. */
static size_t post_of(const struct tk__policy *p, uint64_t at, char args[7][24],
		      unsigned char *buf, size_t cap)
{
	size_t n, slot;
	int i;

	switch (p->alg->id) {
	case TK__ALG_FIXED_WINDOW:
	case TK__ALG_QUOTA:
		/* 0x80 + ALG, then POLICY, START, END and a COUNT of 0. */
		memset(buf, 0, 37);
		buf[0] = (unsigned char)(0x80 | p->alg->id);
		for (i = 0; i < 3; i++)
			put_pair(buf + 1 + 9 * i, strtoull(args[i], NULL, 10));
		return 37;
	case TK__ALG_SLIDING_LOG:
		if (p->limit > 0xffff)
			return 0;
		buf[0] = 0x80 | 5; /* then L in 2 bytes */
		buf[1] = (unsigned char)(p->limit >> 8);
		buf[2] = (unsigned char)(p->limit & 0xff);
		return 3;
	case TK__ALG_SLIDING_WINDOW:
		/* 0x84, S, w, then (X, H, T all 0) the ring, of which the
		 * check's bucket holds its tick. */
		n = 28 + 16 * (p->u.sliding.buckets + 1);
		if (n > cap)
			return 0;
		memset(buf, 0, n);
		buf[0] = 0x80 | 4;
		buf[1] = (unsigned char)p->u.sliding.buckets;
		put_pair(buf + 2, p->u.sliding.width);
		slot = (size_t)(at / p->u.sliding.width %
				(p->u.sliding.buckets + 1));
		put_pair(buf + 28 + 16 * slot, strtoull(args[2], NULL, 10));
		return n;
	default:
		return 0;
	}
}

int tk__redis_give_back(struct tk_store *s, const unsigned char *key,
			size_t len, const struct tk__policy *p, uint64_t at,
			uint64_t units)
{
	struct tk__spelling sp = { .now = at };
	char args[7][24];
	unsigned char post[28 + 16 * 256]; /* the longest ring: S of 255 */
	int done = 0, rc;

	if (tk__redis_check_args(p, at, units, args))
		return -ENOTSUP;
	sp.post_len[0] = post_of(p, at, args, post, sizeof(post));
	if (!sp.post_len[0])
		return -ENOTSUP;
	sp.post[0] = (char *)post;
	rc = s->ops->refund(s, 1, &key, &len, &p, &sp, units, &done);
	return rc < 0 ? rc : done;
}
