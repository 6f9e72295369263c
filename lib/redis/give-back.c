/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * give-back.c - units a check consumed given back later, by a process
 * that does not hold the states the check spelled: the two tiers' unused
 * credit (lib/store/store-tier.c), which the check of a lease took.
 *
 * The refund script (check.lua) takes only the "written since" branch
 * here: its POST names just what that branch compares (a window's policy
 * and start; a sliding window's S, w and the tick of the check's bucket;
 * a log's limit) and counts nothing, so no state the library writes is
 * ever equal to it (a state left counting nothing is deleted), and the
 * compare-and-restore branch never runs.  So the units come back only
 * where the cross-slot refund rules make that exact: from the same
 * window, bucket or stamps, and only if they still hold that many.
 */
#include "redis/scripts.h"
#include "redis/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* @p's POST for a check at @at of arguments @args (tk__redis_check_args())
 * into @buf: its length, or 0 for an algorithm whose units cannot be
 * given back so. */
static size_t post_of(const struct tk__policy *p, uint64_t at, char args[7][24],
		      char *buf, size_t cap)
{
	size_t n = 0, i, slot;
	int m;

	switch (p->alg->id) {
	case TK__ALG_FIXED_WINDOW:
	case TK__ALG_QUOTA:
		m = snprintf(buf, cap, "%u:%s:%s:%s:0", (unsigned)p->alg->id,
			     args[0], args[1], args[2]);
		return m > 0 && (size_t)m < cap ? (size_t)m : 0;
	case TK__ALG_SLIDING_LOG:
		if (p->limit > 0xffff)
			return 0;
		buf[0] = (char)133; /* 0x80 + 5, then L in 2 bytes */
		buf[1] = (char)(p->limit >> 8);
		buf[2] = (char)(p->limit & 0xff);
		return 3;
	case TK__ALG_SLIDING_WINDOW:
		slot = (size_t)(at / p->u.sliding.width %
				(p->u.sliding.buckets + 1));
		m = snprintf(buf, cap, "4:%s:%s", args[1], args[0]);
		for (i = 0;
		     m > 0 && (size_t)m < cap && i <= p->u.sliding.buckets;
		     i++) {
			n = (size_t)m;
			m += snprintf(buf + n, cap - n, ":%s:0",
				      i == slot ? args[2] : "0");
		}
		return m > 0 && (size_t)m < cap ? (size_t)m : 0;
	default:
		return 0;
	}
}

int tk__redis_give_back(struct tk_store *s, const unsigned char *key,
			size_t len, const struct tk__policy *p, uint64_t at,
			uint64_t units)
{
	struct tk__spelling sp = { .now = at };
	char args[7][24], post[4096];
	int done = 0, rc;

	if (tk__redis_check_args(p, at, units, args))
		return -ENOTSUP;
	sp.post_len[0] = post_of(p, at, args, post, sizeof(post));
	if (!sp.post_len[0])
		return -ENOTSUP;
	sp.post[0] = post;
	rc = s->ops->refund(s, 1, &key, &len, &p, &sp, units, &done);
	return rc < 0 ? rc : done;
}
