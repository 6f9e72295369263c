/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fast.c - one sliding log's or sliding window's check by fast.lua,
 * which reads the state at the stamps or buckets a decision needs
 * instead of whole (issue #25: a 4.6 KB log, or a ring of 100 buckets,
 * cost the server more than the rest of a check), and answers the
 * decision's fields instead of the state.
 *
 * fast.lua is a second function library (its own name and hash,
 * engine.c), called first and loaded only on "function not found", as
 * check.lua; it shares check.lua's state, so composites, groups,
 * refunds and peeks (which stay check.lua's and GET's) read what it
 * writes.  Where it cannot run (a server without Functions, a user whose
 * ACL refuses FUNCTION LOAD of a library no one loaded), or where it
 * answers 3 (a state it does not read: the text of earlier versions, a
 * log not as the library writes it, a ring after a clock stepped back),
 * check.lua decides, as before.
 *
 * The verdict (verdict.c, tk__redis_fast_verdict()): the reply names the live
 * stamps' count C, the first live stamp F and, on a denial, the stamp K a retry
 * waits for.  The client builds the smallest log with those (F up to K's place,
 * then K), checks it is live at the script's NOW, and runs the algorithm on it:
 * its decision (remaining, retry_after, reset_at) is the memory store's on the
 * whole log, bit for bit, since the algorithm reads no other stamp, and the
 * script's ADMITTED must agree.  The stamps it never sends are not checked
 * (check.lua's path sends and checks every one).  A sliding window's
 * reply names the counts of its view (counted in full, and the bucket
 * half out), from which the client builds a ring of two buckets
 * (tk__redis_ring_reply()): the algorithm reads nothing else.
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

#define SLOW_REPLY 3 /* fast.lua: check.lua must decide */
/* check.lua's arguments of a sliding log that fast.lua does not read */
#define LOG_UNREAD 4

int tk__redis_call_fast(const struct tk__redis_req *q)
{
	const struct tk__spelling *sp;

	if (q->n != 1 || (q->pol[0]->alg != &tk__sliding_log &&
			  q->pol[0]->alg != &tk__sliding_window))
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

int tk__redis_eval_fast(struct tk__redis_store *s, struct tk__redis_conn *c,
			const struct tk__redis_req *q,
			struct tk__redis_call *call, redisReply **r, int asking)
{
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	int rc, tries,
		unread = q->pol[0]->alg == &tk__sliding_log ? LOG_UNREAD : 0;

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
		rc = tk__redis_command(c, call->argc - unread, call->argv,
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
