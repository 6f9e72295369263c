/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verdict.c - the client's side of a check: the algorithms run on the
 * states the server read, and the script's verdict checked against them.
 *
 * The script returns the states it read and wrote.  The client runs the
 * limiter's transition (the algorithms themselves) on the states read:
 * it fills the decision, and it must reach the same verdict and the same
 * new states as the script, or the call fails with -EPROTO; so a Redis
 * decision is the memory store's, bit for bit, by construction.
 *
 * fast.lua (fast.c) returns no state but the fields a sliding log's or
 * sliding window's decision reads; the algorithm runs on the smallest
 * state with those.
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "clock.h"
#include "redis/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

int tk__redis_transition(const struct tk__redis_req *q,
			 const uint64_t *const *old, uint64_t *const *next,
			 int *persist)
{
	uint64_t expires[TK__MULTI_MAX];
	size_t i;
	int rc;

	for (i = 0; i < q->n; i++)
		persist[i] = 0;
	if (q->t) {
		rc = q->t->fn(q->t->ctx, old[0], next[0], &expires[0]);
		persist[0] = rc == TK__PERSIST;
		return rc;
	}
	rc = q->m->fn(q->m->ctx, old, next, persist, expires);
	if (rc != TK__PERSIST)
		for (i = 0; i < q->n; i++)
			persist[i] = 0;
	return rc;
}

int tk__redis_bufs_init(struct tk__redis_bufs *b, const struct tk__redis_req *q)
{
	size_t i, total = 0, at = 0;
	uint64_t *w = b->local;

	for (i = 0; i < q->n; i++)
		total += q->pol[i]->state_words;
	b->heap = NULL;
	if (3 * total > sizeof(b->local) / sizeof(b->local[0])) {
		w = b->heap = calloc(3 * total, sizeof(*w));
		if (!w)
			return -ENOMEM;
	} else {
		memset(b->local, 0, sizeof(b->local));
	}
	for (i = 0; i < q->n; i++) {
		b->old[i] = NULL;
		b->was[i] = w + at;
		b->next[i] = w + total + at;
		b->made[i] = w + 2 * total + at;
		at += q->pol[i]->state_words;
	}
	return 0;
}

int tk__redis_take_old(struct tk__redis_bufs *b, const struct tk__redis_req *q,
		       size_t i, const redisReply *r)
{
	b->old[i] = NULL;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	b->old[i] = b->was[i];
	if (r->type != REDIS_REPLY_STRING)
		return -EPROTO;
	return tk__redis_decode(q->pol[i], r->str, r->len, b->was[i],
				q->pol[i]->state_words);
}

/* The script's verdict, checked against the algorithms' own. */
static int verdict(const redisReply *r, const struct tk__redis_req *q,
		   struct tk__redis_bufs *b)
{
	int persist[TK__MULTI_MAX], wrote[TK__MULTI_MAX], rc = 0, admitted;
	const redisReply *e;
	size_t i, n = q->n;
	uint64_t at;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 + 2 * n ||
	    r->element[0]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	admitted = r->element[0]->integer == 1;
	e = r->element[1 + 2 * n];
	if (e->type != REDIS_REPLY_STRING ||
	    tk__redis_parse_u64(e->str, e->len, &at) || at >= TK__NOW_LIMIT ||
	    (!q->on_server && at != q->now))
		return -EPROTO;
	/* The algorithms decide at the time the script decided at. */
	*q->decide_at = at;
	for (i = 0; rc == 0 && i < n; i++) {
		rc = tk__redis_take_old(b, q, i, r->element[1 + i]);
		e = r->element[1 + n + i];
		wrote[i] = e->type != REDIS_REPLY_NIL;
		if (rc == 0 && wrote[i])
			rc = e->type == REDIS_REPLY_STRING
				     ? tk__redis_decode(q->pol[i], e->str,
							e->len, b->made[i],
							q->pol[i]->state_words)
				     : -EPROTO;
	}
	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		memset(b->next[i], 0,
		       q->pol[i]->state_words * sizeof(b->next[i][0]));
	rc = tk__redis_transition(q, b->old, b->next, persist);
	if (rc < 0)
		return rc;
	if ((rc == TK__PERSIST) != admitted)
		return -EPROTO;
	for (i = 0; i < n; i++)
		if (persist[i] != wrote[i] ||
		    (wrote[i] &&
		     memcmp(b->next[i], b->made[i],
			    q->pol[i]->state_words * sizeof(b->next[i][0]))))
			return -EPROTO;
	return rc;
}

int tk__redis_spelled(struct tk__spelling *sp, size_t i, const char *pre,
		      size_t pre_len, const char *post, size_t post_len)
{
	free(sp->pre[i]);
	free(sp->post[i]);
	sp->pre[i] = pre ? malloc(pre_len + 1) : NULL;
	sp->post[i] = post ? malloc(post_len + 1) : NULL;
	if ((pre && !sp->pre[i]) || (post && !sp->post[i]))
		return -ENOMEM;
	if (pre)
		memcpy(sp->pre[i], pre, pre_len);
	if (post)
		memcpy(sp->post[i], post, post_len);
	sp->pre_len[i] = pre_len;
	sp->post_len[i] = post_len;
	return 0;
}

/* A reservation's states as the script spelled them (lib/reserve.c). */
static int spell(const struct tk__redis_req *q, const redisReply *r)
{
	struct tk__spelling *sp = q->t ? q->t->spelling : q->m->spelling;
	const redisReply *a, *b;
	size_t i;
	int rc = 0;

	if (!sp)
		return 0;
	sp->now = *q->decide_at;
	for (i = 0; rc == 0 && i < q->n; i++) {
		a = r->element[1 + i];
		b = r->element[1 + q->n + i];
		rc = tk__redis_spelled(
			sp, i, a->type == REDIS_REPLY_STRING ? a->str : NULL,
			a->len, b->type == REDIS_REPLY_STRING ? b->str : NULL,
			b->len);
	}
	return rc;
}

/* An element of an expanded reply: @len bytes at @s, or nil for NULL. */
static redisReply *element(const char *s, size_t len)
{
	redisReply *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->type = s ? REDIS_REPLY_STRING : REDIS_REPLY_NIL;
	if (s) {
		e->str = malloc(len + 1);
		if (!e->str) {
			free(e);
			return NULL;
		}
		memcpy(e->str, s, len);
		e->str[len] = '\0';
		e->len = len;
	}
	return e;
}

/*
 * check.lua's fast paths answer one string, cheaper for the server to
 * send than an array: a byte ADMITTED (0 or 1), the bytes of OLD and of
 * NEW (0: none; a state the fast paths take is never empty), then OLD,
 * NEW and NOW.  hiredis frees what is built here with free().
 */
int tk__redis_reply_expand(void **reply)
{
	redisReply *r = *reply, *a;
	const unsigned char *b = (const unsigned char *)r->str;
	size_t i, at;

	if (r->type != REDIS_REPLY_STRING)
		return 0;
	if (r->len < 4 || b[0] > 1 || 3 + (size_t)b[1] + b[2] >= r->len ||
	    (b[2] && !b[0]))
		return -EPROTO;
	a = calloc(1, sizeof(*a));
	if (a)
		a->element = calloc(4, sizeof(*a->element));
	if (!a || !a->element) {
		free(a);
		return -ENOMEM;
	}
	a->type = REDIS_REPLY_ARRAY;
	a->elements = 4;
	at = 3 + (size_t)b[1] + b[2];
	a->element[0] = calloc(1, sizeof(*a->element[0]));
	a->element[1] = element(b[1] ? r->str + 3 : NULL, b[1]);
	a->element[2] = element(b[2] ? r->str + 3 + b[1] : NULL, b[2]);
	a->element[3] = element(r->str + at, r->len - at);
	for (i = 0; i < 4; i++)
		if (!a->element[i]) {
			freeReplyObject(a);
			return -ENOMEM;
		}
	a->element[0]->type = REDIS_REPLY_INTEGER;
	a->element[0]->integer = b[0];
	freeReplyObject(r);
	*reply = a;
	return 0;
}

void tk__redis_count(const struct tk__redis_req *q, int rc)
{
	if (rc >= 0 && q->stats) {
		tk_atomic_add_u64(&q->stats->checks, 1, TK_MO_RELAXED);
		if (rc != TK__PERSIST)
			tk_atomic_add_u64(&q->stats->denies, 1, TK_MO_RELAXED);
	}
}

int tk__redis_call_verdict(const struct tk__redis_req *q, const void *r)
{
	struct tk__redis_bufs b;
	int rc = tk__redis_bufs_init(&b, q);

	if (rc == 0)
		rc = verdict(r, q, &b);
	if (rc >= 0 && spell(q, r))
		rc = -ENOMEM;
	free(b.heap);
	tk__redis_count(q, rc);
	return rc;
}

/*
 * fast.lua's answer (fast.c): a byte ADMITTED, C in 2 bytes, F and K in
 * 9 bytes each (hi, lo as a log's stamps), then NOW in decimal.
 */
#define E9 UINT64_C(1000000000)
#define REPLY_HEAD 21

/* A stamp as fast.lua sends it (hi, lo in 5 and 4 bytes): 0 or -EPROTO. */
static int stamp_of(const unsigned char *b, uint64_t *t)
{
	uint64_t hi = 0, lo = 0;
	int i;

	for (i = 0; i < 5; i++)
		hi = hi << 8 | b[i];
	for (i = 5; i < 9; i++)
		lo = lo << 8 | b[i];
	if (lo >= E9 || hi > TK__NOW_LIMIT / E9 ||
	    hi * E9 + lo >= TK__NOW_LIMIT)
		return -EPROTO;
	*t = hi * E9 + lo;
	return 0;
}

/*
 * The smallest log with the reply's C, F and K into @w ({n, T1, ...}):
 * F up to the k-th stamp, K from it on (k = C + COST - L on a denial).
 * 0, or -EPROTO for fields no log of @q's policy live at @at has.
 */
static int smallest_log(const struct tk__redis_req *q, const unsigned char *b,
			uint64_t at, uint64_t *w)
{
	const struct tk__policy *p = q->pol[0];
	uint64_t count = (uint64_t)b[1] << 8 | b[2], f, k, kth, i;

	if (count > p->limit || stamp_of(b + 3, &f) || stamp_of(b + 12, &k))
		return -EPROTO;
	kth = count + q->cost > p->limit ? count + q->cost - p->limit
					 : count + 1;
	/* F must be live; K, when a retry waits for it, not before F. */
	if (count && (f + p->u.window.window <= at || (kth <= count && k < f)))
		return -EPROTO;
	w[0] = count;
	for (i = 1; i <= count; i++)
		w[i] = i < kth ? f : k;
	return 0;
}

/* NOW at the end of fast.lua's reply @r, its head @head bytes: 0 or
 * -EPROTO. */
static int reply_now(const struct tk__redis_req *q, const redisReply *r,
		     size_t head, uint64_t *at)
{
	if (r->type != REDIS_REPLY_STRING || r->len <= head ||
	    (unsigned char)r->str[0] > 1 ||
	    tk__redis_parse_u64(r->str + head, r->len - head, at) ||
	    *at >= TK__NOW_LIMIT || (!q->on_server && *at != q->now))
		return -EPROTO;
	return 0;
}

int tk__redis_log_reply(const struct tk__redis_req *q, const void *reply,
			uint64_t *words, uint64_t *at)
{
	const redisReply *r = reply;
	int rc = reply_now(q, r, REPLY_HEAD, at);

	return rc ? rc
		  : smallest_log(q, (const unsigned char *)r->str, *at, words);
}

/*
 * A sliding window's answer: a byte ADMITTED, the counts FULL and OLD in
 * 7 bytes each, then NOW in decimal.
 */
#define RING_HEAD 15
#define COUNT_MAX (UINT64_C(1) << 48) /* fast.lua's bound on a ring's total */

static uint64_t count_of(const unsigned char *b)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < 7; i++)
		n = n << 8 | b[i];
	return n;
}

int tk__redis_ring_reply(const struct tk__redis_req *q, const void *reply,
			 uint64_t *words, uint64_t *at)
{
	const redisReply *r = reply;
	const struct tk__policy *p = q->pol[0];
	const unsigned char *b = (const unsigned char *)r->str;
	uint64_t full, old, c, s = p->u.sliding.buckets;
	int rc = reply_now(q, r, RING_HEAD, at);

	if (rc)
		return rc;
	full = count_of(b + 1);
	old = count_of(b + 8);
	c = *at / p->u.sliding.width;
	/* What a ring fast.lua takes sums to: below 2^48, and no bucket
	 * half out before tick S. */
	if (full + old >= COUNT_MAX || (old && c < s))
		return -EPROTO;
	memset(words, 0, p->state_words * sizeof(*words));
	words[2 * (c % (s + 1))] = c;
	words[2 * (c % (s + 1)) + 1] = full;
	if (old) {
		words[2 * ((c + 1) % (s + 1))] = c - s;
		words[2 * ((c + 1) % (s + 1)) + 1] = old;
	}
	return 0;
}

/* Reads fast.lua's reply into the smallest state and NOW. */
typedef int (*reply_fn)(const struct tk__redis_req *, const void *, uint64_t *,
			uint64_t *);

/* fast.lua's answer @r to @q: the algorithm on the smallest state. */
static int judge(const struct tk__redis_req *q, const redisReply *r,
		 struct tk__redis_bufs *b)
{
	int persist[TK__MULTI_MAX], rc;
	reply_fn read = q->pol[0]->alg == &tk__sliding_window
				? tk__redis_ring_reply
				: tk__redis_log_reply;
	uint64_t at;

	rc = read(q, r, b->was[0], &at);
	if (rc)
		return rc;
	/* The algorithm decides at the time the script decided at. */
	*q->decide_at = at;
	b->old[0] = b->was[0];
	rc = tk__redis_transition(q, b->old, b->next, persist);
	if (rc >= 0 && (rc == TK__PERSIST) != (r->str[0] == 1))
		return -EPROTO;
	return rc;
}

int tk__redis_fast_verdict(const struct tk__redis_req *q, const void *r)
{
	struct tk__redis_bufs b;
	int rc = tk__redis_bufs_init(&b, q);

	if (rc == 0)
		rc = judge(q, r, &b);
	free(b.heap);
	tk__redis_count(q, rc);
	return rc;
}
