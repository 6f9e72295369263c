/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.h - connections to a Redis server (conn.c): one per thread from a
 * pool, commands and pipelines with every failure a typed errno, and one
 * deadline per call of the store.  Only the files of lib/redis/ include
 * hiredis.
 */
#ifndef TK_REDIS_CONN_H
#define TK_REDIS_CONN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "redis/spec.h"
#include "status.h"

/* One thread's connection; see conn.c. */
struct tk__redis_conn;

struct tk__redis_pool {
	const struct tk__redis_spec *spec;
	void *tls;	   /* rediss://: the hiredis_ssl context; else NULL */
	tk_atomic_ptr all; /* every conn this pool made, a push-only list */
	pthread_key_t key; /* this thread's conn (no max_connections=) */
	/* max_connections= (cap.c): under lock, conns made; freed is
	 * signalled when a call gives one back. */
	pthread_mutex_t lock;
	pthread_cond_t freed;
	unsigned int made;
	int cap_ready; /* lock and freed initialized */
};

/*
 * 0, -ENOMEM, or for rediss:// -EINVAL with a message in @why (a CA,
 * certificate or key hiredis_ssl cannot load); @why may be NULL.
 */
int tk__redis_pool_init(struct tk__redis_pool *pool,
			const struct tk__redis_spec *spec, char *why,
			size_t why_len);
/* Frees every connection; no thread may use the pool any more. */
void tk__redis_pool_destroy(struct tk__redis_pool *pool);

/*
 * This thread's connection, connected (AUTH and SELECT done; one the
 * server closed since its last use is replaced), or a negative errno:
 * -ETIMEDOUT, -ECONNREFUSED (also while backing off after failed connects),
 * -EMFILE (no descriptor for the socket), -EACCES (authentication),
 * -ENXIO (SELECT refused), -ENOMEM, -EPROTO.
 */
int tk__redis_conn_get(struct tk__redis_pool *pool,
		       struct tk__redis_conn **out);

/*
 * Run one command; on success *reply is a hiredis reply of a type other
 * than ERROR (free it with tk__redis_reply_free()).  An error reply is
 * mapped: NOSCRIPT and "Function not found" -ENOENT (the caller loads
 * the script), an unknown command -ENOSYS and an existing library -EEXIST
 * (the caller picks its engine), OOM -ENOMEM, READONLY (a replica)
 * -EROFS, NOAUTH/WRONGPASS/NOPERM -EACCES, others ("TKPROTO" too)
 * -EPROTO.
 * An I/O failure (-ETIMEDOUT, -ECONNRESET, ...) discards the connection
 * (the next call connects at once: no backoff); a command that failed
 * before a byte of it left is first sent once more on a new connection.
 */
int tk__redis_command(struct tk__redis_conn *c, int argc, const char **argv,
		      const size_t *lens, void **reply);

/*
 * One deadline for a call of the store on this thread: the spec's
 * timeout plus its connect_timeout from now, which every connect and
 * command until tk__redis_deadline_end() waits at most what is left of
 * (then -ETIMEDOUT).  A call within a call keeps the outer deadline.
 * Returns what tk__redis_deadline_end() takes back.
 */
uint64_t tk__redis_deadline_begin(const struct tk__redis_spec *spec);
void tk__redis_deadline_end(uint64_t was);
/* The ns left before this thread's call's deadline; UINT64_MAX: none. */
uint64_t tk__redis_deadline_left(void);

/*
 * Pipelining: queue a command (nothing is sent), send every queued one,
 * read the next reply, as tk__redis_command() answers it.  @deadline
 * (monotonic ns, 0: none) shortens the spec's timeout for this read, as
 * the call's deadline does (at least 1 ms is left to read what came).  A
 * failure drops the connection; the replies still expected then answer
 * its error.
 */
int tk__redis_append(struct tk__redis_conn *c, int argc, const char **argv,
		     const size_t *lens);
int tk__redis_flush(struct tk__redis_conn *c);
/*
 * tk__redis_flush(), and *@unsent set when it failed before a byte left:
 * no queued command reached the server, so sending them again on a new
 * connection runs each once.
 */
int tk__redis_flush_unsent(struct tk__redis_conn *c, int *unsent);
int tk__redis_next_reply(struct tk__redis_conn *c, uint64_t deadline,
			 void **reply);

/*
 * Cluster redirections, as tk__redis_command() answers them: MOVED and
 * ASK leave their target ("HOST:PORT") in tk__redis_conn_redirect();
 * TRYAGAIN (keys of one slot half migrated) and CLUSTERDOWN are -EAGAIN.
 * The first two are internal (status.h): the store never returns them.
 */
const char *tk__redis_conn_redirect(struct tk__redis_conn *c);

/*
 * The pool's list: a conn no thread uses, claimed (in_use set), or with
 * @create and none free a new one; NULL: none (or no memory).  Given
 * back with tk__redis_conn_give_back().
 */
struct tk__redis_conn *tk__redis_conn_claim(struct tk__redis_pool *pool,
					    int create);
void tk__redis_conn_give_back(void *conn);

/* cap.c: max_connections=. */

int tk__redis_cap_init(struct tk__redis_pool *pool);
void tk__redis_cap_destroy(struct tk__redis_pool *pool);
/*
 * A conn of @pool for this thread's call: the one it holds already, a
 * free one, a new one while fewer than max_connections exist, or the
 * first given back before the call's deadline.  0, -ETIMEDOUT (the
 * deadline passed while waiting), -ENOMEM.
 */
int tk__redis_cap_take(struct tk__redis_pool *pool,
		       struct tk__redis_conn **out);
/* The end of a call (tk__redis_deadline_end()): its conns given back. */
void tk__redis_cap_release(void);

/* A reply of tk__redis_command() or tk__redis_next_reply(), freed. */
void tk__redis_reply_free(void *reply);

/* How a connection's server runs the check script; reset on reconnect. */
struct tk__redis_engine {
	int kind;     /* TK__ENGINE_*: unknown until the first check */
	char sha[41]; /* EVALSHA: the script's SHA-1 ("": not loaded) */
	int fast;     /* TK__FAST_*: fast.lua's library on this server */
};

#define TK__FAST_TRY 0	/* FCALL, not known to work yet */
#define TK__FAST_LOAD 1 /* FUNCTION LOAD before the next FCALL */
#define TK__FAST_OFF 2	/* refused or no Functions: check.lua only */

#define TK__ENGINE_UNKNOWN 0  /* FCALL, not known to work yet */
#define TK__ENGINE_FUNCTION 1 /* Redis 7 Functions: FCALL */
#define TK__ENGINE_EVALSHA 2  /* older servers */
#define TK__ENGINE_LOAD 3     /* FUNCTION LOAD before the next FCALL */

struct tk__redis_engine *tk__redis_conn_engine(struct tk__redis_conn *c);
/* The spec @c connects with: the store's, or a cluster node's. */
const struct tk__redis_spec *tk__redis_conn_spec(struct tk__redis_conn *c);

#endif /* TK_REDIS_CONN_H */
