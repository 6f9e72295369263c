/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * spec.h - a Redis store's spec, parsed (spec.c): where the server is,
 * how to authenticate, and the store's options.
 */
#ifndef TK_REDIS_SPEC_H
#define TK_REDIS_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "atomic.h"

#define TK__REDIS_HOST_MAX 255
#define TK__REDIS_PATH_MAX 107 /* sun_path less its NUL */
#define TK__REDIS_AUTH_MAX 255
#define TK__REDIS_KEY_PREFIX_MAX 255
#define TK__REDIS_DEFAULT_PORT 6379
#define TK__REDIS_SENTINEL_PORT 26379
#define TK__REDIS_MASTER_NAME_MAX 255
#define TK__REDIS_SEEDS_MAX 16
#define TK__REDIS_DEFAULT_TIMEOUT (UINT64_C(100) * 1000000) /* ns */

/*
 * A store's counters (tk_store_stats()), this process's, shared by the
 * connections to all its servers.  Relaxed adds: each is a count of its
 * own, read one by one, ordering nothing.
 */
struct tk__redis_stats {
	tk_atomic_u64 checks;	     /* checks decided (not peeks) */
	tk_atomic_u64 denies;	     /* of those, not admitted */
	tk_atomic_u64 round_trips;   /* commands or pipelines sent */
	tk_atomic_u64 connects;	     /* connections made */
	tk_atomic_u64 reconnects;    /* of those, replacing a dropped one */
	tk_atomic_u64 connections;   /* open now */
	tk_atomic_u64 refreshes;     /* slot maps read, sentinels asked */
	tk_atomic_u64 timeouts;	     /* connects and replies too late */
	tk_atomic_u64 conn_errors;   /* refused, reset or closed */
	tk_atomic_u64 redirects;     /* MOVED and ASK */
	tk_atomic_u64 error_replies; /* other error replies (see conn.c) */
};

#define TK__REDIS_COUNT(sp, field, n)                                          \
	do {                                                                   \
		if ((sp)->stats)                                               \
			tk_atomic_add_u64(&(sp)->stats->field, (n),            \
					  TK_MO_RELAXED);                      \
	} while (0)

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
	unsigned int max_connections; /* per server and process; 0: none */
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
	/* redis+sentinel://: the seeds are the sentinels, asked for the
	 * master of master_name; sentinel_password= authenticates to them
	 * (the user and password, to the data nodes). */
	int sentinel;
	char master_name[TK__REDIS_MASTER_NAME_MAX + 1];
	char sentinel_password[TK__REDIS_AUTH_MAX + 1];
	int has_sentinel_password;
	/* Not parsed: the store's counters (NULL: none), which the nodes of
	 * a cluster share through their copies of the spec. */
	struct tk__redis_stats *stats;
};

/*
 * Parse @spec ("redis://...", "redis+unix://...", "redis+cluster://...",
 * "redis+sentinel://..." or "rediss://...").  Returns 0, -EINVAL with a message
 * in @why (never quoting the password), or -ENOTSUP with one for a form this
 * build lacks (rediss:// without hiredis_ssl).
 */
int tk__redis_spec_parse(const char *spec, struct tk__redis_spec *out,
			 char *why, size_t why_len);

#endif /* TK_REDIS_SPEC_H */
