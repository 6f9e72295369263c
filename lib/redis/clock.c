/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c - server_time=1: the server's clock, read by TIME and estimated
 * between reads.
 *
 * A check whose arguments need no time reads TIME in the script (one
 * round trip).  A window or a tick needs the time: the arguments are
 * computed at the server's time as estimated, and the script decides at
 * its TIME if that lies in their span, else answers TIME and the check
 * is sent again at it (store.c, check()): one round trip, two at a
 * window's edge or after a clock moved.  Without an estimate yet (the
 * first check of the store), TIME is read first.  A peek (peek.c) sends
 * TIME in one pipeline with its read.
 */
#include "clock.h"
#include "redis/store.h"

#include <errno.h>

#include <hiredis/hiredis.h>

int tk__redis_time_of(const redisReply *r, uint64_t *now)
{
	uint64_t sec, usec;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    tk__redis_parse_u64(r->element[0]->str, r->element[0]->len, &sec) ||
	    tk__redis_parse_u64(r->element[1]->str, r->element[1]->len,
				&usec) ||
	    usec >= 1000000 || sec >= TK__NOW_LIMIT / 1000000000 - 1)
		return -EPROTO;
	*now = sec * 1000000000 + usec * 1000;
	return 0;
}

void tk__redis_learn(struct tk__redis_store *s, uint64_t server, uint64_t local)
{
	tk_atomic_store_u64(&s->skew, (server - local) | 1, TK_MO_RELAXED);
}

int tk__redis_estimate(struct tk__redis_store *s, struct tk__redis_req *q)
{
	uint64_t skew = tk_atomic_load_u64(&s->skew, TK_MO_RELAXED);
	uint64_t at = q->local + skew;

	if (!skew || at >= TK__NOW_LIMIT)
		return -ENOENT;
	q->now = at;
	*q->decide_at = at;
	q->on_server = 1;
	return 0;
}

int tk__redis_call_retry(struct tk__redis_store *s, struct tk__redis_req *q,
			 const void *reply)
{
	const redisReply *r = reply, *e;
	uint64_t at;

	if (!q->on_server || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
		return 0;
	e = r->element[r->elements - 1];
	if (e->type != REDIS_REPLY_STRING ||
	    tk__redis_parse_u64(e->str, e->len, &at) || at >= TK__NOW_LIMIT)
		return 0;
	tk__redis_learn(s, at, q->local);
	if (r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[0]->integer != 2)
		return 0;
	/* TIME left the span the arguments hold in: at TIME, as sent. */
	q->now = at;
	*q->decide_at = at;
	q->on_server = 0;
	return 1;
}

/* The server's clock, in ns: TIME's seconds and microseconds. */
int tk__redis_server_now(struct tk__redis_conn *c, uint64_t *now)
{
	const char *argv[1] = { "TIME" };
	size_t lens[1] = { 4 };
	redisReply *r;
	int rc;

	rc = tk__redis_command(c, 1, argv, lens, (void **)&r);
	if (rc)
		return rc;
	rc = tk__redis_time_of(r, now);
	tk__redis_reply_free(r);
	return rc;
}

int tk__redis_server_clock(struct tk__redis_store *s, struct tk__redis_conn *c,
			   struct tk__redis_req *q)
{
	size_t i;
	int rc, needs = 0;

	for (i = 0; i < q->n; i++)
		needs |= tk__redis_needs_now(q->pol[i]);
	if (!needs) {
		q->on_server = 1;
		return 0;
	}
	if (tk__redis_estimate(s, q) == 0)
		return 0;
	rc = tk__redis_server_now(c, &q->now);
	if (rc == 0) {
		tk__redis_learn(s, q->now, q->local);
		*q->decide_at = q->now;
	}
	return rc;
}
