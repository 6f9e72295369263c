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
 * The verdict (verdict.c, tk__redis_log_verdict()): the reply names the live
 * stamps' count C, the first live stamp F and, on a denial, the stamp K a retry
 * waits for.  The client builds the smallest log with those (F up to K's place,
 * then K), checks it is live at the script's NOW, and runs the algorithm on it:
 * its decision (remaining, retry_after, reset_at) is the memory store's on the
 * whole log, bit for bit, since the algorithm reads no other stamp, and the
 * script's ADMITTED must agree.  The stamps it never sends are not checked
 * (check.lua's path sends and checks every one).
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
#define FAST_ARGS 4  /* check.lua's arguments fast.lua does not read */

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
