/*
 * store.h - what store.c shares with pipeline.c and
 * xslot.c: the store, one check as the script and the client both
 * see it, the steps of a check that a pipeline or a cross-slot check
 * runs apart (build the command, name the script, judge the reply), and
 * the routing of a call to a cluster's nodes.
 */
#ifndef TK_REDIS_STORE_H
#define TK_REDIS_STORE_H

#include "internal.h"
#include "redis/cluster.h"
#include "redis/conn.h"
#include "redis/scripts.h"
#include "store-key.h"

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
	/*
	 * server_time=1: the server's clock less the limiter's, as last
	 * seen (TIME, or the time a script decided at), with its lowest bit
	 * set; 0 while none was seen.  Relaxed: a stale estimate costs a
	 * second round trip, never a decision (see store.c).
	 */
	tk_atomic_u64 skew;
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
};

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

/*
 * The hash slot @q runs in (0 off a cluster): 0, TK__REDIS_XSLOT for
 * keys of several slots of a cluster (a check of them is
 * tk__redis_xslot()'s), or -ENOTSUP for a policy the script lacks.
 */
int tk__redis_req_slot(const struct tk__redis_store *s,
		       const struct tk__redis_req *q, unsigned int *slot);
/* @q alone, as apply() runs it: routed, redirects followed; keys of
 * several slots by tk__redis_xslot() (a peek of them: -ENOTSUP). */
int tk__redis_step(struct tk__redis_store *s, struct tk__redis_req *q,
		   uint32_t flags);

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
/*
 * Name the script in @call as @c's server runs it (FCALL or EVALSHA),
 * loading it first if @c has not (a new connection, or one that met
 * NOSCRIPT): 0, or the load's error.
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
 * After NOSCRIPT (-ENOENT) on @c: the script is loaded again by the next
 * tk__redis_call_target().
 */
void tk__redis_script_lost(struct tk__redis_conn *c);
/* The script's reply @r to @q, judged as apply() does: its result. */
int tk__redis_call_verdict(const struct tk__redis_req *q, const void *r);
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

/*
 * xslot.c: a check over keys of several slots of a cluster, one
 * script per slot (see there).  As apply_multi().
 */
int tk__redis_xslot(struct tk__redis_store *s, struct tk__redis_req *q);

/* pipeline.c: the store's apply_batch(). */
void tk__redis_apply_batch(struct tk_store *base, uint64_t now,
			   struct tk__batch_item *items, size_t n);

#endif /* TK_REDIS_STORE_H */
