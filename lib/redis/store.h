/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.h - the Redis store's own parts, which its files share: the
 * store, one check as the script and the client both see it, and the
 * steps of a check, each declared under the file that defines it.  A
 * pipeline (pipeline.c) and a cross-slot check (xslot.c) run the same
 * steps apart: build the command, name the script, judge the reply.
 */
#ifndef TK_REDIS_STORE_H
#define TK_REDIS_STORE_H

#include "algo/policy.h"
#include "store/store-ops.h"
#include "redis/cluster.h"
#include "redis/conn.h"
#include "redis/scripts.h"
#include "store/store-key.h"

#include <hiredis/hiredis.h>

/* A Redis key: the spec's key_prefix, "{", the store key, "}". */
#define TK__REDIS_KEY_MAX (TK__REDIS_KEY_PREFIX_MAX + 2 + TK__STORE_KEY_MAX)

struct tk__redis_store {
	struct tk_store base;
	struct tk__redis_spec spec;
	struct tk__redis_pool pool;	   /* one server, or */
	struct tk__redis_cluster *cluster; /* a cluster's nodes */
	char grace[24];			   /* ns, decimal */
	/* The script as a Functions library, named by a hash of its text so
	 * that versions that differ never replace each other's. */
	char function[32];
	char *library;
	/* fast.lua's library, named the same way (engine.c). */
	char fast_function[32];
	char *fast_library;
	/*
	 * server_time=1: the server's clock less the limiter's, as last
	 * seen (TIME, or the time a script decided at), with its lowest bit
	 * set; 0 while none was seen.  Relaxed: a stale estimate costs a
	 * second round trip, never a decision (see clock.c).
	 */
	tk_atomic_u64 skew;
	struct tk__redis_stats stats; /* tk_store_stats() */
};

/* One apply or apply_multi, as the script and the client both see it. */
struct tk__redis_req {
	size_t n;
	const struct tk__policy *pol[TK__MULTI_MAX];
	char key[TK__MULTI_MAX][TK__REDIS_KEY_MAX];
	size_t klen[TK__MULTI_MAX];
	enum tk__composite kind;
	uint64_t now, cost;  /* ns; units */
	uint64_t local;	     /* the limiter's time, ns */
	uint64_t *decide_at; /* the limiter's time, which fn() reads */
	/* The script reads the server's TIME, and decides at it if that
	 * lies where the arguments, computed at now, hold. */
	int on_server;
	const struct tk__transform *t; /* a single key, or */
	const struct tk__multi *m;     /* several */
	struct tk__redis_stats *stats; /* the store's counters */
};

/* keys.c */

/*
 * The Redis key of store key @key (@len bytes) into @buf, which holds
 * TK__REDIS_KEY_MAX bytes; its length in *@out.  0, -ENAMETOOLONG, or
 * -EINVAL for a dimension's key without its index.
 */
int tk__redis_key(const struct tk__redis_store *s, const unsigned char *key,
		  size_t len, char *buf, size_t *out);
/*
 * @q for apply() of @t on @key (@len bytes), or for apply_multi() of @m,
 * at @now: 0, or -ENAMETOOLONG, -EINVAL.
 */
int tk__redis_req_single(const struct tk__redis_store *s,
			 const unsigned char *key, size_t len, uint64_t now,
			 const struct tk__transform *t,
			 struct tk__redis_req *q);
int tk__redis_req_multi(const struct tk__redis_store *s, uint64_t now,
			const struct tk__multi *m, struct tk__redis_req *q);
/* tk__redis_req_slot(): keys of several slots, one script per slot. */
#define TK__REDIS_XSLOT 1
/* tk__redis_req_slot(): user strategies, one transaction (occ.c). */
#define TK__REDIS_OCC 2

/*
 * The hash slot @q runs in (0 off a cluster): 0, TK__REDIS_XSLOT for
 * keys of several slots of a cluster (a check of them is
 * tk__redis_xslot()'s), TK__REDIS_OCC for user strategies only, in one
 * slot (tk__redis_occ_check()'s), or -ENOTSUP for a policy the script
 * lacks, or user strategies over several slots.
 */
int tk__redis_req_slot(const struct tk__redis_store *s,
		       const struct tk__redis_req *q, unsigned int *slot);

/* store.c */

/* @q alone, as apply() runs it: routed, redirects followed; keys of
 * several slots by tk__redis_xslot() (a peek of them: -ENOTSUP). */
int tk__redis_step(struct tk__redis_store *s, struct tk__redis_req *q,
		   uint32_t flags);

/* call.c */

#define TK__REDIS_ARGS_MAX (3 + 4 + 10 * TK__MULTI_MAX)

/* The check script's command for one check, and the text it points to. */
struct tk__redis_call {
	const char *argv[TK__REDIS_ARGS_MAX];
	size_t lens[TK__REDIS_ARGS_MAX];
	int argc;
	char now[48], n[4], alg[TK__MULTI_MAX][12];
	char arg[TK__MULTI_MAX][7][24];
};

/*
 * The command for @q (its keys are pointed to, not copied) but for the
 * script's name (tk__redis_call_target()).  Returns 0, or the check's own
 * result when it needs no server (-ERANGE: no state could change it).
 */
int tk__redis_call_build(const struct tk__redis_store *s,
			 const struct tk__redis_req *q,
			 struct tk__redis_call *call);

/* engine.c */

/*
 * The Functions library of the check script into @s (its name and its
 * function's, from a hash of the script): 0 or -ENOMEM.
 */
int tk__redis_library_make(struct tk__redis_store *s);
/*
 * FUNCTION LOAD of @s's library on @c, which learns @c's engine: 0 (a
 * server without Functions too: it is left to EVALSHA), or the load's
 * error.
 */
int tk__redis_function_load(struct tk__redis_store *s,
			    struct tk__redis_conn *c);
/*
 * Name the script in @call as @c's server runs it (FCALL or EVALSHA),
 * loading it first only where the script was found missing (see
 * tk__redis_script_lost()): 0, or the load's error.
 */
int tk__redis_call_target(struct tk__redis_store *s, struct tk__redis_conn *c,
			  struct tk__redis_call *call);
/*
 * @call on @c, its script named by tk__redis_call_target(), NOSCRIPT met
 * by loading it again (three tries, then -EPROTO); after ASKING if
 * @asking.  0 and the reply in *@r (the caller frees it), or an errno,
 * TK__REDIS_MOVED, TK__REDIS_ASK.
 */
int tk__redis_eval(struct tk__redis_store *s, struct tk__redis_conn *c,
		   struct tk__redis_call *call, redisReply **r, int asking);
/* ASKING on @c. */
int tk__redis_asking(struct tk__redis_conn *c);
/*
 * After an answer @rc of the script's command on @c: 1 if it did not run
 * for want of the script ("Function not found" or NOSCRIPT, -ENOENT; FCALL
 * unknown, -ENOSYS), which the next tk__redis_call_target() loads; else
 * 0, nothing changed.
 */
int tk__redis_script_lost(struct tk__redis_conn *c, int rc);

/* verdict.c */

/*
 * The words of one step: every key's old state, the limiter's new one and
 * the script's, zeroed (a sliding log writes only the stamps it holds).
 */
struct tk__redis_bufs {
	const uint64_t *old[TK__MULTI_MAX];
	uint64_t *was[TK__MULTI_MAX], *next[TK__MULTI_MAX];
	uint64_t *made[TK__MULTI_MAX];
	uint64_t *heap; /* the caller frees it */
	uint64_t local[3 * 8];
};

/* @b for @q: 0 or -ENOMEM. */
int tk__redis_bufs_init(struct tk__redis_bufs *b,
			const struct tk__redis_req *q);
/* A reply's state of key @i into @b: none, or the words it decodes to. */
int tk__redis_take_old(struct tk__redis_bufs *b, const struct tk__redis_req *q,
		       size_t i, const redisReply *r);
/* The limiter's transition on @old (NULL: none); persist[i] set as it
 * writes key i. */
int tk__redis_transition(const struct tk__redis_req *q,
			 const uint64_t *const *old, uint64_t *const *next,
			 int *persist);
/* Key @i's states, pre and post (NULL: none), copied into @sp: 0 or
 * -ENOMEM. */
int tk__redis_spelled(struct tk__spelling *sp, size_t i, const char *pre,
		      size_t pre_len, const char *post, size_t post_len);
/* A check's result @rc counted in @q's store's stats (a decision). */
void tk__redis_count(const struct tk__redis_req *q, int rc);
/* The script's reply @r to @q, judged as apply() does: its result. */
int tk__redis_call_verdict(const struct tk__redis_req *q, const void *r);
/*
 * A check's reply as the array {ADMITTED, OLD, NEW, NOW} the verdict
 * reads: the one string a fast path of check.lua answers becomes it (in
 * *@reply, the string freed); any other reply is left as it is.  0,
 * -EPROTO for a string that is no such answer, or -ENOMEM.
 */
int tk__redis_reply_expand(void **reply);

/* fast.c */

/*
 * FUNCTION LOAD of fast.lua's library on @c: 0, TK__REDIS_SLOW where it
 * is refused (check.lua decides logs from now on, on this connection), or
 * the command's error.
 */
int tk__redis_fast_load(struct tk__redis_store *s, struct tk__redis_conn *c);
/* Does @q go to fast.lua (one sliding log or window, no reservation)? */
int tk__redis_call_fast(const struct tk__redis_req *q);
/*
 * fast.lua on @c with @call's arguments (check.lua's long form, built
 * for @q), loading its library where the server lost it; after ASKING
 * if @asking.  0 and the reply in *@r (the caller frees it: a string, or
 * {2, NOW} as check.lua's, tk__redis_call_retry()), TK__REDIS_SLOW
 * (check.lua must decide: no Functions, the load refused, or a state
 * fast.lua does not read), or an errno, TK__REDIS_MOVED, TK__REDIS_ASK.
 */
int tk__redis_eval_fast(struct tk__redis_store *s, struct tk__redis_conn *c,
			const struct tk__redis_req *q,
			struct tk__redis_call *call, redisReply **r,
			int asking);
/*
 * fast.lua's reply @r to @q (a string: a byte ADMITTED, the live count C
 * in 2 bytes, the first live stamp F and the stamp K a retry waits for in
 * 9 bytes each, NOW in decimal) as the smallest log with those C, F and K
 * into @words ({n, T1, ...}, @q's policy's state_words) and NOW into
 * *@at; never a word past C + 1.  0, or -EPROTO for a reply no log of
 * @q's policy live at NOW gives.
 */
int tk__redis_log_reply(const struct tk__redis_req *q, const void *r,
			uint64_t *words, uint64_t *at);
/*
 * fast.lua's reply @r to @q, a sliding window's (a byte ADMITTED, the
 * counts FULL and OLD of its view in 7 bytes each, NOW in decimal), as
 * the ring of those two buckets (FULL at NOW's tick c, OLD at c - S) into
 * @words and NOW into *@at.  0, or -EPROTO for counts no ring fast.lua
 * takes sums to.
 */
int tk__redis_ring_reply(const struct tk__redis_req *q, const void *r,
			 uint64_t *words, uint64_t *at);
/* fast.lua's reply @r to @q, judged: the result of @q's check. */
int tk__redis_fast_verdict(const struct tk__redis_req *q, const void *r);

/* clock.c */

/* TIME's reply @r, seconds and microseconds, in ns: 0 or -EPROTO. */
int tk__redis_time_of(const redisReply *r, uint64_t *now);
/*
 * Is @r the script's answer that the server's TIME lay outside the span
 * of @q's arguments?  Then 1, and @q is now the check at that time (the
 * arguments computed from it, sent again); else 0.  Every reply of an
 * on_server request teaches the store the server's clock.
 */
int tk__redis_call_retry(struct tk__redis_store *s, struct tk__redis_req *q,
			 const void *r);
/*
 * server_time=1: @q's time, where its arguments need one: the server's
 * clock as estimated (0), or -ENOENT while there is no estimate.
 */
int tk__redis_estimate(struct tk__redis_store *s, struct tk__redis_req *q);
/* The server said @server when the limiter's clock read @local. */
void tk__redis_learn(struct tk__redis_store *s, uint64_t server,
		     uint64_t local);
/* The server's clock (TIME), in ns. */
int tk__redis_server_now(struct tk__redis_conn *c, uint64_t *now);
/*
 * server_time=1: the time @q's check is sent at: the script's TIME where
 * its arguments need none, else the estimate, else TIME read first on @c.
 */
int tk__redis_server_clock(struct tk__redis_store *s, struct tk__redis_conn *c,
			   struct tk__redis_req *q);

/* peek.c */

/* A peek or forecast of @q on @c (after ASKING if @asking): as apply(). */
int tk__redis_peek(struct tk__redis_store *s, struct tk__redis_conn *c,
		   struct tk__redis_req *q, int asking);

/* route.c */

/* What one node does for a call; @asking: after ASK. */
typedef int tk__redis_on_node_fn(struct tk__redis_store *s,
				 struct tk__redis_conn *c, void *arg,
				 int asking);

/*
 * @fn on the server, or on the master of @slot, following MOVED and ASK.
 * Returns what @fn returns, or -EAGAIN.
 */
int tk__redis_route(struct tk__redis_store *s, unsigned int slot,
		    tk__redis_on_node_fn *fn, void *arg);

/* ping.c: the store's ping(). */
int tk__redis_ping(struct tk_store *base, struct tk_store_ping *out);

/*
 * xslot.c: a check over keys of several slots of a cluster, one
 * script per slot (see there).  As apply_multi().
 */
int tk__redis_xslot(struct tk__redis_store *s, struct tk__redis_req *q);

/* xslot.c: the store's refund() (struct tk__store_ops), one refund
 * script per slot. */
int tk__redis_refund(struct tk_store *base, size_t n,
		     const unsigned char *const *key, const size_t *len,
		     const struct tk__policy *const *pol,
		     const struct tk__spelling *sp, uint64_t cost, int *done);

/* occ.c */

/*
 * How a check of the @n policies @pol runs: 0 by the script,
 * TK__REDIS_OCC as a transaction (user strategies, and dimensions of
 * any built-in algorithm beside them), or -ENOTSUP (a policy neither
 * runs).
 */
int tk__redis_occ_route(const struct tk__policy *const *pol, size_t n);
/*
 * @q, whose policies tk__redis_occ_route() sends to a transaction, on @c:
 * WATCH, MGET, the transition, MULTI, SET, EXEC, tried again while a watched
 * key changes (at most 64 tries, then -EAGAIN); -EAGAIN after ASK.  As apply(),
 * with the transform's @flags (the store counts a TK__T_CHECK).
 */
int tk__redis_occ_check(struct tk__redis_store *s, struct tk__redis_conn *c,
			struct tk__redis_req *q, int asking, uint32_t flags);

/* pipeline.c: the store's apply_batch(). */
void tk__redis_apply_batch(struct tk_store *base, uint64_t now,
			   struct tk__batch_item *items, size_t n);

#endif /* TK_REDIS_STORE_H */
