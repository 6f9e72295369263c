/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz-redis-state.c - libFuzzer harness for the Redis store's decoders:
 * a state as the server spells it (tk__redis_decode(), every encoding:
 * one word, windows, sliding windows' rings (text and binary), sliding
 * logs, with and without stamps dropped ahead), read as the verdict
 * path reads a reply's state (tk__redis_take_old(), into the step's
 * buffers), the decimal fields
 * (tk__redis_parse_u64()), the value as a fast path's one-string
 * reply (tk__redis_reply_expand()), and, under a sliding log or window,
 * as fast.lua's reply (tk__redis_log_reply(), tk__redis_ring_reply():
 * the log or ring it builds is valid).
 *
 * The first byte of an input picks a policy and one of its dimensions,
 * the rest is the value.  A decoder writes only its own buffer (each is
 * allocated to its size, so AddressSanitizer sees a word past it), and
 * a log or a ring it accepts, the algorithm's valid() accepts too (a
 * word the algorithm finds invalid is its to take for none, as on the
 * local stores).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/policy.h"
#include "redis/scripts.h"
#include "redis/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const policies[] = {
	"gcra:5/s",
	"token-bucket:capacity=4,refill=2/s",
	"leaky:10/s,max-queue=1s",
	"fixed-window:5/10s",
	"quota:5/day",
	"sliding-window:10/4s,buckets=4",
	"sliding-window:3/1s,buckets=1",
	"sliding-log:1/10s",
	"sliding-log:3/10s",
	"sliding-log:512/10s",
	"all(gcra:5/s,sliding-log:3/10s,fixed-window:2/1m)",
	"any(sliding-log:2/1s,sliding-log:3/1s,sliding-window:4/1s,buckets=2,"
	"quota:4/1h,leaky:1/s,max-queue=2s,token-bucket:capacity=2,refill=1/s,"
	"gcra:1/s,sliding-log:1/1s)",
};
#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

static struct tk_policy *parsed[N_POLICIES];

static void parse_all(void)
{
	struct tk_parse_error err;
	size_t i;

	for (i = 0; i < N_POLICIES; i++)
		if (!parsed[i] &&
		    tk__policy_parse(&parsed[i], policies[i], &err))
			abort();
}

/* Must the decoder itself hold @p's states to valid()? */
static int checked(const struct tk__policy *p)
{
	return p->alg == &tk__sliding_log || p->alg == &tk__sliding_window;
}

/* @p's decoding of @s: into a buffer of its size exactly. */
static void decode_alone(const struct tk__policy *p, const char *s, size_t len)
{
	uint64_t *w = calloc(p->state_words, sizeof(*w));

	if (!w)
		return;
	if (tk__redis_decode(p, s, len, w, p->state_words) == 0 && checked(p) &&
	    !p->alg->valid(p, p->state_words, w))
		abort();
	free(w);
}

/* @s as the one string a fast path answers: what expands is the array
 * of four the verdict reads, its strings within @s. */
static void expand(const char *s, size_t len)
{
	redisReply *r = calloc(1, sizeof(*r)), *a;
	void *v = r;

	if (!r || !(r->str = malloc(len + 1))) {
		free(r);
		return;
	}
	memcpy(r->str, s, len);
	r->len = len;
	r->type = REDIS_REPLY_STRING;
	if (tk__redis_reply_expand(&v) == 0) {
		a = v;
		if (a->type != REDIS_REPLY_ARRAY || a->elements != 4 ||
		    a->element[1]->len + a->element[2]->len +
				    a->element[3]->len + 3 !=
			    len)
			abort();
	}
	freeReplyObject(v);
}

/* @s as fast.lua's reply to a check of @cost under sliding log or
 * window @p. */
static void fast_reply(const struct tk__policy *p, const char *s, size_t len,
		       uint64_t cost)
{
	uint64_t *w = calloc(p->state_words, sizeof(*w)), at;
	struct tk__redis_req q;
	redisReply r;

	if (!w)
		return;
	memset(&q, 0, sizeof(q));
	memset(&r, 0, sizeof(r));
	q.n = 1;
	q.pol[0] = p;
	q.cost = cost;
	q.on_server = 1;
	r.type = REDIS_REPLY_STRING;
	r.str = (char *)s;
	r.len = len;
	if ((p->alg == &tk__sliding_log
		     ? tk__redis_log_reply(&q, &r, w, &at)
		     : tk__redis_ring_reply(&q, &r, w, &at)) == 0 &&
	    !p->alg->valid(p, p->state_words, w))
		abort();
	free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct tk_policy *pol;
	struct tk__redis_bufs b;
	struct tk__redis_req q;
	redisReply r;
	char *s;
	size_t i, k, len;
	uint64_t v;

	if (size < 1)
		return 0;
	parse_all();
	pol = parsed[data[0] % N_POLICIES];
	k = (size_t)(data[0] / N_POLICIES) % pol->n;
	len = size - 1;
	/* A copy of its own: a read past the value is seen too. */
	s = malloc(len ? len : 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, len);
	if (tk__redis_parse_u64(s, len, &v) == 0 && (len == 0 || len > 20))
		abort();
	decode_alone(&pol->dim[k], s, len);
	expand(s, len);
	if (pol->dim[k].alg == &tk__sliding_log ||
	    pol->dim[k].alg == &tk__sliding_window)
		fast_reply(&pol->dim[k], s, len, 1 + data[0] % 3);
	/* The verdict path: every dimension's buffers, then one state. */
	memset(&q, 0, sizeof(q));
	q.n = pol->n;
	for (i = 0; i < pol->n; i++)
		q.pol[i] = &pol->dim[i];
	if (tk__redis_bufs_init(&b, &q) == 0) {
		memset(&r, 0, sizeof(r));
		r.type = REDIS_REPLY_STRING;
		r.str = s;
		r.len = len;
		if (tk__redis_take_old(&b, &q, k, &r) == 0 &&
		    checked(q.pol[k]) &&
		    !q.pol[k]->alg->valid(q.pol[k], q.pol[k]->state_words,
					  b.old[k]))
			abort();
		free(b.heap);
	}
	free(s);
	return 0;
}
