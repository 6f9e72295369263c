/*
 * conn.h - the parts of the Redis store (redis:// specs).
 *
 * spec.c parses a spec, conn.c keeps one hiredis connection
 * per thread and maps every failure to a typed errno, scripts.c
 * holds the server-side transitions, store.c binds them to the
 * store interface, pipeline.c sends a batch of checks as one
 * pipeline per node.  Only these files include hiredis.
 */
#ifndef TK_REDIS_H
#define TK_REDIS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"

#define TK__REDIS_HOST_MAX 255
#define TK__REDIS_PATH_MAX 107 /* sun_path less its NUL */
#define TK__REDIS_AUTH_MAX 255
#define TK__REDIS_KEY_PREFIX_MAX 255
#define TK__REDIS_DEFAULT_PORT 6379
#define TK__REDIS_SEEDS_MAX 16
#define TK__REDIS_DEFAULT_TIMEOUT (UINT64_C(100) * 1000000) /* ns */

/* A parsed spec.  The password is kept only here and in AUTH commands. */
struct tk__redis_spec {
	int unix_socket;		       /* redis+unix:// */
	char host[TK__REDIS_HOST_MAX + 1];     /* TCP: name or address */
	int port;			       /* TCP */
	char path[TK__REDIS_PATH_MAX + 1];     /* unix socket */
	char user[TK__REDIS_AUTH_MAX + 1];     /* "": none */
	char password[TK__REDIS_AUTH_MAX + 1]; /* "": no AUTH */
	int has_password;		       /* AUTH even if empty */
	long db;			       /* SELECT, 0: none */
	uint64_t timeout;		       /* ns per command */
	uint64_t connect_timeout;	       /* ns per connect */
	int server_time;		       /* server_time=1 */
	char key_prefix[TK__REDIS_KEY_PREFIX_MAX + 1];
	size_t key_prefix_len;
	int tls; /* rediss:// (builds with hiredis_ssl only) */
	/* rediss://: tls_ca=, tls_cert=, tls_key= ("": none; the system's
	 * CAs verify the server without tls_ca). */
	char tls_ca[TK__REDIS_PATH_MAX + 1];
	char tls_cert[TK__REDIS_PATH_MAX + 1];
	char tls_key[TK__REDIS_PATH_MAX + 1];
	int cluster;  /* redis+cluster://: host and port are the first seed */
	size_t seeds; /* redis+cluster://: seed nodes in seed[] */
	struct {
		char host[TK__REDIS_HOST_MAX + 1];
		int port;
	} seed[TK__REDIS_SEEDS_MAX];
};

/*
 * Parse @spec ("redis://...", "redis+unix://...", "redis+cluster://..."
 * or "rediss://...").  Returns 0, -EINVAL with a message in @why (never
 * quoting the password), or -ENOTSUP with one for a form this build
 * lacks (rediss:// without hiredis_ssl).
 */
int tk__redis_spec_parse(const char *spec, struct tk__redis_spec *out,
			 char *why, size_t why_len);

/* One thread's connection; see conn.c. */
struct tk__redis_conn;

struct tk__redis_pool {
	const struct tk__redis_spec *spec;
	void *tls;	   /* rediss://: the hiredis_ssl context; else NULL */
	tk_atomic_ptr all; /* every conn this pool made, a push-only list */
	pthread_key_t key; /* this thread's conn */
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
 * This thread's connection, connected (AUTH and SELECT done), or a
 * negative errno: -ETIMEDOUT, -ECONNREFUSED (also while backing off after
 * failed connects), -EACCES (authentication), -ENOMEM, -EPROTO.
 */
int tk__redis_conn_get(struct tk__redis_pool *pool,
		       struct tk__redis_conn **out);

/*
 * Run one command; on success *reply is a hiredis reply of a type other
 * than ERROR (free it with tk__redis_reply_free()).  An error reply is
 * mapped: NOSCRIPT and "Function not found" -ENOENT (the caller loads
 * the script), an unknown command -ENOSYS and an existing library -EEXIST
 * (the caller picks its engine), OOM -ENOMEM, NOAUTH/WRONGPASS/NOPERM
 * -EACCES, others ("TKPROTO" too) -EPROTO.
 * An I/O failure (-ETIMEDOUT, -ECONNRESET, ...) discards the connection.
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
int tk__redis_next_reply(struct tk__redis_conn *c, uint64_t deadline,
			 void **reply);

/*
 * Cluster redirections, as tk__redis_command() answers them: MOVED and
 * ASK leave their target ("HOST:PORT") in tk__redis_conn_redirect();
 * TRYAGAIN (keys of one slot half migrated) and CLUSTERDOWN are -EAGAIN.
 * Internal codes: the store never returns the first two.
 */
#define TK__REDIS_MOVED (-EREMCHG)
#define TK__REDIS_ASK (-EXFULL)
const char *tk__redis_conn_redirect(struct tk__redis_conn *c);

/* cluster.c: the hash slot of a key, as Redis computes it. */
unsigned int tk__redis_slot(const char *key, size_t len);

/* cluster.c: the slot map and a pool per node of a cluster spec. */
struct tk__redis_cluster;
/* @spec must outlive the cluster; nothing is sent before the first use. */
int tk__redis_cluster_init(struct tk__redis_cluster **out,
			   const struct tk__redis_spec *spec);
void tk__redis_cluster_destroy(struct tk__redis_cluster *cl);
/*
 * This thread's connection to the master of @slot (the map discovered by
 * CLUSTER SLOTS first if the slot is not known): the errors of
 * tk__redis_conn_get(), and -EAGAIN while no master serves the slot.
 */
int tk__redis_cluster_conn(struct tk__redis_cluster *cl, unsigned int slot,
			   struct tk__redis_conn **out);
/* The same in two steps: the index of @slot's master, then this
 * thread's connection to it. */
int tk__redis_cluster_node(struct tk__redis_cluster *cl, unsigned int slot);
int tk__redis_cluster_node_conn(struct tk__redis_cluster *cl, int node,
				struct tk__redis_conn **out);
/*
 * After TK__REDIS_MOVED (@moved: the map is corrected) or TK__REDIS_ASK
 * on @c: this thread's connection to the node named.
 */
int tk__redis_cluster_follow(struct tk__redis_cluster *cl, unsigned int slot,
			     struct tk__redis_conn *c, int moved,
			     struct tk__redis_conn **out);
/* After TK__REDIS_MOVED on @c: the map corrected, nothing connected. */
int tk__redis_cluster_moved(struct tk__redis_cluster *cl, unsigned int slot,
			    struct tk__redis_conn *c);
void tk__redis_reply_free(void *reply);

/* How a connection's server runs the check script; reset on reconnect. */
struct tk__redis_engine {
	int kind;     /* TK__ENGINE_*: unknown until the first check */
	char sha[41]; /* EVALSHA: the script's SHA-1 ("": not loaded) */
};

#define TK__ENGINE_UNKNOWN 0
#define TK__ENGINE_FUNCTION 1 /* Redis 7 Functions: FCALL */
#define TK__ENGINE_EVALSHA 2  /* older servers */

struct tk__redis_engine *tk__redis_conn_engine(struct tk__redis_conn *c);
/* The spec @c connects with: the store's, or a cluster node's. */
const struct tk__redis_spec *tk__redis_conn_spec(struct tk__redis_conn *c);

/* scripts.c: the check script and its arguments. */
struct tk__policy;
extern const char tk__redis_check_lua[];
/* Does the check script know @p's algorithm? */
int tk__redis_supported(const struct tk__policy *p);
/* A decimal uint64 of s[0, len), nothing else; -EPROTO otherwise. */
int tk__redis_parse_u64(const char *s, size_t len, uint64_t *word);
/* Do @p's script arguments depend on the time (a window, a tick)? */
int tk__redis_needs_now(const struct tk__policy *p);
/*
 * The times [*lo, *hi) at which @p's script arguments are those at @now
 * (now's window, or its sliding window's tick; all of them for a policy
 * whose arguments need no time).
 */
void tk__redis_span(const struct tk__policy *p, uint64_t now, uint64_t *lo,
		    uint64_t *hi);
/* Can @p ever admit @cost (is it not -ERANGE)?  The script's USABLE. */
int tk__redis_usable(const struct tk__policy *p, uint64_t now, uint64_t cost);
/*
 * A dimension's seven arguments after ALG USABLE for @cost units of @p at
 * @now, as decimal strings (see check.lua); @cost must be one @p
 * admits (no -ERANGE).  Returns 0 or -ENOTSUP.
 */
int tk__redis_check_args(const struct tk__policy *p, uint64_t now,
			 uint64_t cost, char args[7][24]);
/*
 * A state as the server spells it (@len bytes at @s) into @p's
 * p->state_words words; -EPROTO for one of another algorithm or policy,
 * or not the library's.
 */
int tk__redis_decode(const struct tk__policy *p, const char *s, size_t len,
		     uint64_t *words);

#endif /* TK_REDIS_H */
