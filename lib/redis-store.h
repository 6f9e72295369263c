/*
 * redis-store.h - what store-redis.c shares with redis-xslot.c: the
 * store, one check as the script and the client both see it, and the
 * steps a check is made of.  Internal to the Redis store.
 */
#ifndef TK_REDIS_STORE_H
#define TK_REDIS_STORE_H

#include "internal.h"
#include "redis.h"

#include <hiredis/hiredis.h>

#define TK__REDIS_KEY_MAX                                                      \
	(TK__REDIS_KEY_PREFIX_MAX + 2 + 3 + TK_PREFIX_MAX + TK_KEY_MAX)

struct redis_store {
	struct tk_store base;
	struct tk__redis_spec spec;
	struct tk__redis_pool pool;	   /* one server, or */
	struct tk__redis_cluster *cluster; /* a cluster's nodes */
	char grace[24];			   /* ns, decimal */
	/* The script as a Functions library, named by a hash of its text so
	 * that versions that differ never replace each other's. */
	char function[32];
	char *library;
};

/* One apply or apply_multi, as the script and the client both see it. */
struct req {
	size_t n;
	const struct tk__policy *pol[TK__MULTI_MAX];
	char key[TK__MULTI_MAX][TK__REDIS_KEY_MAX];
	size_t klen[TK__MULTI_MAX];
	enum tk__composite kind;
	uint64_t now, cost;
	uint64_t *decide_at; /* the limiter's time, which fn() reads */
	int on_server;	     /* the script reads the server's TIME */
	const struct tk__transform *t; /* a single key, or */
	const struct tk__multi *m;     /* several */
	/* NULL, or where a check that succeeds leaves the script's reply
	 * (the caller frees it) instead of freeing it. */
	redisReply **keep;
};

/* What one node does for a call; @asking: after ASK. */
typedef int tk__redis_on_node_fn(struct redis_store *s,
				 struct tk__redis_conn *c, void *arg,
				 int asking);

/*
 * @fn on the server, or on the master of @slot, following MOVED and ASK
 * (store-redis.c).  Returns what @fn returns, or -EAGAIN.
 */
int tk__redis_route(struct redis_store *s, unsigned int slot,
		    tk__redis_on_node_fn *fn, void *arg);
/* The check script for @q on @c: TK__KEEP, TK__PERSIST or an errno. */
int tk__redis_check(struct redis_store *s, struct tk__redis_conn *c,
		    const struct req *q, int asking);
/* FCALL or EVALSHA of the script with @argv[2...]; fills @argv[0, 1]. */
int tk__redis_eval(struct redis_store *s, struct tk__redis_conn *c,
		   const char **argv, size_t *lens, int argc, redisReply **r,
		   int asking);
/* ASKING on @c. */
int tk__redis_asking(struct tk__redis_conn *c);
/* The server's clock (TIME), in ns. */
int tk__redis_server_now(struct tk__redis_conn *c, uint64_t *now);

/*
 * redis-xslot.c: a check over keys of several slots of a cluster, one
 * script per slot (see there).  As apply_multi().
 */
int tk__redis_xslot(struct redis_store *s, struct req *q);

#endif /* TK_REDIS_STORE_H */
