/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keys.c - the Redis keys of a check: a store key as the Redis store
 * names it, the request a check becomes, and the hash slot it runs in.
 *
 * The Redis key is the spec's key_prefix, then "{", the store key, "}".
 * A composite's dimension has its index and its policy's tag inside the
 * store key (store-key.h); they move after the "}", and the tag's flag
 * leaves the first byte, so that every dimension of one key shares the
 * hash tag and a composite is one script on one node of a cluster.  What
 * follows the "}" reads from the end: a last byte below 0x80 is the
 * index (0 to 7) alone; else it is 0x80 | n, after the index and the
 * tag's n bytes.  So no two keys meet.
 */
#include "algo/policy.h"
#include "store/store-ops.h"
#include "store/store-key.h"
#include "redis/store.h"

#include <errno.h>
#include <string.h>

int tk__redis_key(const struct tk__redis_store *s, const unsigned char *key,
		  size_t len, char *buf, size_t *out)
{
	struct tk__store_key_parts k;
	size_t n = s->spec.key_prefix_len;
	int rc;

	if (len < 2 || len + 2 > TK__REDIS_KEY_MAX - n)
		return -ENAMETOOLONG;
	rc = tk__store_key_decode(key, len, &k);
	if (rc)
		return rc;
	memcpy(buf, s->spec.key_prefix, n);
	buf[n++] = '{';
	if (k.dim == TK__STORE_KEY_SINGLE) {
		memcpy(buf + n, key, len);
		n += len;
		buf[n++] = '}';
		*out = n;
		return 0;
	}
	/* The hash tag: the head without its tag flag, and the key. */
	memcpy(buf + n, key, k.dim_at);
	buf[n] = (char)(key[0] & ~TK__STORE_KEY_TAG);
	n += k.dim_at;
	memcpy(buf + n, key + k.key_at, len - k.key_at);
	n += len - k.key_at;
	buf[n++] = '}';
	buf[n++] = (char)k.dim;
	if (k.key_at > k.dim_at + 1) { /* the tag's bytes, its length last */
		memcpy(buf + n, key + k.dim_at + 2, k.key_at - k.dim_at - 2);
		n += k.key_at - k.dim_at - 2;
		buf[n++] = (char)(0x80 | key[k.dim_at + 1]);
	}
	*out = n;
	return 0;
}

/* The fields of @q but its keys, which are filled next. */
static void req_init(struct tk__redis_req *q, size_t n, enum tk__composite kind,
		     uint64_t now, uint64_t *decide_at, uint64_t cost)
{
	q->n = n;
	q->kind = kind;
	q->now = now;
	q->local = now;
	q->decide_at = decide_at;
	q->cost = cost;
	q->on_server = 0;
	q->t = NULL;
	q->m = NULL;
}

int tk__redis_req_single(const struct tk__redis_store *s,
			 const unsigned char *key, size_t len, uint64_t now,
			 const struct tk__transform *t, struct tk__redis_req *q)
{
	req_init(q, 1, TK__ALL, now, t->now, t->cost);
	q->stats = s->spec.stats;
	q->pol[0] = t->policy;
	q->t = t;
	return tk__redis_key(s, key, len, q->key[0], &q->klen[0]);
}

int tk__redis_req_multi(const struct tk__redis_store *s, uint64_t now,
			const struct tk__multi *m, struct tk__redis_req *q)
{
	size_t i;
	int rc = 0;

	if (m->n > TK__MULTI_MAX)
		return -EINVAL;
	req_init(q, m->n, m->kind, now, m->now, m->cost);
	q->stats = s->spec.stats;
	q->m = m;
	for (i = 0; i < m->n && rc == 0; i++) {
		q->pol[i] = m->policy[i];
		rc = tk__redis_key(s, m->key[i], m->len[i], q->key[i],
				   &q->klen[i]);
	}
	return rc;
}

int tk__redis_req_slot(const struct tk__redis_store *s,
		       const struct tk__redis_req *q, unsigned int *slot)
{
	int occ = tk__redis_occ_route(q->pol, q->n);
	size_t i;

	*slot = 0;
	if (occ < 0)
		return occ;
	/* One script runs on one node: a check over keys of several slots
	 * (a group of several keys) is one script per slot (xslot.c); one
	 * transaction cannot be split so. */
	for (i = 0; s->spec.cluster && i < q->n; i++)
		if (i == 0)
			*slot = tk__redis_slot(q->key[0], q->klen[0]);
		else if (tk__redis_slot(q->key[i], q->klen[i]) != *slot)
			return occ ? -ENOTSUP : TK__REDIS_XSLOT;
	return occ ? TK__REDIS_OCC : 0;
}
