/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fast.c - one sliding log's check by fast.lua, which reads the log at
 * the stamps a decision needs instead of whole (issue #25: a 4.6 KB log
 * cost the server more than the rest of a check), and answers the
 * decision's fields instead of the log.
 *
 * fast.lua is a second function library (its own name and hash,
 * engine.c), called first and loaded only on "function not found", as
 * check.lua; it shares check.lua's state, so composites, groups,
 * refunds and peeks (which stay check.lua's and GET's) read what it
 * writes.  Where it cannot run (a server without Functions, a user whose
 * ACL refuses FUNCTION LOAD of a library no one loaded), or where it
 * answers 3 (a state it does not read: the text of earlier versions, a
 * log not as the library writes it), check.lua decides, as before.
 *
 * The verdict: the reply names the live stamps' count C, the first live
 * stamp F and, on a denial, the stamp K a retry waits for.  The client
 * builds the smallest log with those (F up to K's place, then K), checks
 * it is live at the script's NOW, and runs the algorithm on it: its
 * decision (remaining, retry_after, reset_at) is the memory store's on
 * the whole log, bit for bit, since the algorithm reads no other stamp,
 * and the script's ADMITTED must agree.  The stamps it never sends are
 * not checked (check.lua's path sends and checks every one).
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "clock.h"
#include "redis/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

const char tk__redis_fast_lua[] =
#include "redis/fast-lua.inc"
	;
/* As check.lua's (scripts.c): it may be loaded before AUTH. */
_Static_assert(sizeof(tk__redis_fast_lua) < 16384 - 256,
	       "the fast script must stay below 16 KB");

#define E9 UINT64_C(1000000000)
#define REPLY_HEAD 21 /* ADMITTED, C in 2 bytes, F and K in 9 each */
#define SLOW_REPLY 3  /* fast.lua: check.lua must decide */
#define FAST_ARGS 4   /* check.lua's arguments fast.lua does not read */

int tk__redis_call_fast(const struct tk__redis_req *q)
{
	const struct tk__spelling *sp;

	if (q->n != 1 || q->pol[0]->alg != &tk__sliding_log)
		return 0;
	/* A reservation keeps the states as spelled: check.lua sends them. */
	sp = q->t ? q->t->spelling : q->m->spelling;
	return !sp && tk__redis_usable(q->pol[0], q->now, q->cost);
}

int tk__redis_fast_load(struct tk__redis_store *s, struct tk__redis_conn *c)
{
	const char *argv[3] = { "FUNCTION", "LOAD", s->fast_library };
	size_t lens[3] = { 8, 4, strlen(s->fast_library) };
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	redisReply *r;
	int rc = tk__redis_command(c, 3, argv, lens, (void **)&r);

	if (rc == 0)
		tk__redis_reply_free(r);
	if (rc == 0 || rc == -EEXIST) {
		e->fast = TK__FAST_TRY;
		return 0;
	}
	/* Refused by an ACL, no Functions, or a library the server will
	 * not take: check.lua still decides every log. */
	if (rc == -EACCES || rc == -ENOSYS || rc == -EPROTO) {
		e->fast = TK__FAST_OFF;
		return TK__REDIS_SLOW;
	}
	return rc;
}

int tk__redis_eval_log(struct tk__redis_store *s, struct tk__redis_conn *c,
		       struct tk__redis_call *call, redisReply **r, int asking)
{
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	int rc, tries;

	for (tries = 0; tries < 3; tries++) {
		if (e->kind == TK__ENGINE_EVALSHA || e->fast == TK__FAST_OFF)
			return TK__REDIS_SLOW;
		if (e->fast == TK__FAST_LOAD) {
			rc = tk__redis_fast_load(s, c);
			if (rc)
				return rc;
		}
		rc = asking ? tk__redis_asking(c) : 0;
		if (rc)
			return rc;
		call->argv[0] = "FCALL";
		call->argv[1] = s->fast_function;
		call->lens[0] = 5;
		call->lens[1] = strlen(s->fast_function);
		rc = tk__redis_command(c, call->argc - FAST_ARGS, call->argv,
				       call->lens, (void **)r);
		if (rc == 0 && (*r)->type == REDIS_REPLY_INTEGER &&
		    (*r)->integer == SLOW_REPLY) {
			tk__redis_reply_free(*r);
			*r = NULL;
			return TK__REDIS_SLOW;
		}
		if (rc != -ENOENT && rc != -ENOSYS)
			return rc;
		if (rc == -ENOSYS) /* FCALL unknown: EVALSHA of check.lua */
			e->kind = TK__ENGINE_EVALSHA;
		else
			e->fast = TK__FAST_LOAD;
	}
	return -EPROTO;
}

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

/*
 * fast.lua's answer: a byte ADMITTED, C, F and K (smallest_log()), then
 * NOW in decimal.
 */
static int judge(const struct tk__redis_req *q, const redisReply *r,
		 struct tk__redis_bufs *b)
{
	const unsigned char *s = (const unsigned char *)r->str;
	int persist[TK__MULTI_MAX], rc;
	uint64_t at;

	if (r->type != REDIS_REPLY_STRING || r->len <= REPLY_HEAD || s[0] > 1 ||
	    tk__redis_parse_u64(r->str + REPLY_HEAD, r->len - REPLY_HEAD,
				&at) ||
	    at >= TK__NOW_LIMIT || (!q->on_server && at != q->now))
		return -EPROTO;
	/* The algorithm decides at the time the script decided at. */
	*q->decide_at = at;
	rc = smallest_log(q, s, at, b->was[0]);
	if (rc)
		return rc;
	b->old[0] = b->was[0];
	rc = tk__redis_transition(q, b->old, b->next, persist);
	if (rc >= 0 && (rc == TK__PERSIST) != (s[0] == 1))
		return -EPROTO;
	return rc;
}

int tk__redis_log_verdict(const struct tk__redis_req *q, const void *r)
{
	struct tk__redis_bufs b;
	int rc = tk__redis_bufs_init(&b, q);

	if (rc == 0)
		rc = judge(q, r, &b);
	free(b.heap);
	tk__redis_count(q, rc);
	return rc;
}
