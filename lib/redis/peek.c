/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peek.c - a peek or forecast on the Redis store: a plain MGET of the
 * check's keys, the algorithms run on the states it read, nothing
 * written.  A state is a string of decimal fields, the algorithm's id
 * first (scripts.c): one of another algorithm answers -EPROTO, as on the
 * local stores.
 */
#include "store/store-ops.h"
#include "redis/store.h"

#include <errno.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

/*
 * With server_time=1, TIME goes in the same pipeline as the MGET (one
 * round trip), and the peek is at it.
 */
int tk__redis_peek(struct tk__redis_store *s, struct tk__redis_conn *c,
		   struct tk__redis_req *q, int asking)
{
	const char *argv[1 + TK__MULTI_MAX], *time[1] = { "TIME" };
	const char *ask[1] = { "ASKING" };
	size_t lens[1 + TK__MULTI_MAX], tlen[1] = { 4 }, alen[1] = { 6 }, i;
	int persist[TK__MULTI_MAX], rc = 0, k, got, sent;
	int timed = s->spec.server_time;
	struct tk__redis_bufs b;
	void *rep[3] = { NULL, NULL, NULL };
	redisReply *r;

	argv[0] = "MGET";
	lens[0] = 4;
	for (i = 0; i < q->n; i++) {
		argv[1 + i] = q->key[i];
		lens[1 + i] = q->klen[i];
	}
	rc = tk__redis_bufs_init(&b, q);
	if (rc)
		return rc;
	/* ASKING holds for the next command only: the MGET. */
	if (timed)
		rc = tk__redis_append(c, 1, time, tlen);
	if (rc == 0 && asking)
		rc = tk__redis_append(c, 1, ask, alen);
	if (rc == 0)
		rc = tk__redis_append(c, (int)(1 + q->n), argv, lens);
	if (rc == 0)
		rc = tk__redis_flush(c);
	/* Every reply is read, so that the connection stays in step. */
	for (k = 0, sent = rc == 0; sent && k < timed + asking + 1; k++) {
		got = tk__redis_next_reply(c, 0, &rep[k]);
		rc = rc ? rc : got;
	}
	r = rep[timed + asking];
	if (rc == 0 && timed) {
		rc = tk__redis_time_of(rep[0], &q->now);
		if (rc == 0) {
			tk__redis_learn(s, q->now, q->local);
			*q->decide_at = q->now;
		}
	}
	if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != q->n))
		rc = -EPROTO;
	for (i = 0; rc == 0 && i < q->n; i++)
		rc = tk__redis_take_old(&b, q, i, r->element[i]);
	for (k = 0; k < 3; k++)
		if (rep[k])
			tk__redis_reply_free(rep[k]);
	if (rc == 0)
		rc = tk__redis_transition(q, b.old, b.next, persist);
	free(b.heap);
	return rc;
}
