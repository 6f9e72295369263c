/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mod_throttlekit.h - shared declarations of the Apache httpd module.
 *
 * The module is a thin translation between httpd's world (directives,
 * request_rec, MPM processes) and the public API of libthrottlekit; it
 * holds no rate-limiting logic of its own.
 *
 * Lifetime of the objects below:
 *   - stores and rules are parsed into the configuration pool (pconf) of
 *     one generation, in the order the directives appear, and registered
 *     in one table per generation (tk_mod_registry());
 *   - zones are created by the parent in post_config and outlive the
 *     server; the parent itself never opens a store to use it (only to
 *     check a Redis spec, see config.c), so it starts no library thread,
 *     holds no mapping and no Redis connection;
 *   - every child opens each store and a limiter per rule in child_init;
 *     they live until the child exits.  A Redis store connects on its
 *     first check, one connection per thread of the child.
 */
#ifndef MOD_THROTTLEKIT_H
#define MOD_THROTTLEKIT_H

#include <stdint.h>

#include "httpd.h"
#include "http_config.h"
#include "ap_expr.h"
#include "apr_thread_mutex.h"

#include <throttlekit.h>

#define TK_MOD_HANDLER "throttlekit-status"
#define TK_MOD_ENV "THROTTLE_STATUS"
/* What precedes a client's address, and a key= value, in a rule's keys. */
#define TK_MOD_ADDRESS_KEY "a:"
#define TK_MOD_KEY_KEY "k:"

/*
 * At most one error log line per store in this time about the failures
 * its rules' fail policies absorbed, per child process (a line says how
 * many since the one before, so none goes unaccounted).
 */
#define TK_MOD_FAILURE_LOG_INTERVAL apr_time_from_sec(10)

/*
 * The checks of one store that failed in this child process and were
 * answered by the rules' fail policies: for the error log (one line per
 * TK_MOD_FAILURE_LOG_INTERVAL) and the status page.  Made in child_init;
 * the counts and times are read and written with mu held.
 */
struct tk_mod_failures {
#if APR_HAS_THREADS
	apr_thread_mutex_t *mu; /* the event MPM's threads share a store */
#endif
	/*
	 * 1 while the store's last check failed (apr_atomic): a check that
	 * works clears it, so the status page says what holds now.
	 */
	apr_uint32_t failing;
	apr_uint64_t checks; /* failed checks since the child began */
	apr_uint64_t admitted, refused; /* of those, by fail=open, =closed */
	/* Of those, since the last log line. */
	apr_uint64_t checks_new, admitted_new, refused_new;
	int last_rc;	      /* the last failure's error */
	apr_time_t last_at;   /* when it happened; 0: never */
	apr_time_t logged_at; /* the last log line; 0: none yet */
};

/* A ThrottleStore. */
struct tk_mod_store {
	const char *name;
	const char *spec;  /* "shm:NAME", "redis://...", "redis+unix://..." */
	const char *shown; /* spec, a Redis password as "***" */
	/*
	 * What follows "shm:", NULL for Redis; from check_config on, the
	 * library's name of the zone: a bare NAME becomes its path in the
	 * server's zone directory (own_dir).
	 */
	const char *zone;
	int own_dir;
	uint64_t capacity; /* slots; 0: the library's default */
	unsigned int mode; /* file mode; 0: the library's default */
	/* owner= and group=: the zone's owner and group instead of User and
	 * Group (a root parent's default). */
	int has_owner, has_group;
	apr_uid_t owner;
	apr_gid_t group;
	const char *file; /* where it was declared */
	unsigned int line;
	int index; /* in the registry's stores */
	/*
	 * In a child, once opened: the store, or a failed one that answers
	 * by the rules' fail policies until it opens (TK_OPT_RETRY_OPEN).
	 */
	struct tk_store *handle;
	int open_rc; /* in a child: tk_store_open()'s result */
	struct tk_mod_failures *failures; /* in a child */
};

/* A ThrottleRule. */
struct tk_mod_rule {
	const char *name;
	const char *policy_text; /* as written */
	char *canonical;	 /* tk_policy_format() */
	struct tk_policy *policy;
	size_t dims;
	int composite_any; /* any(): cannot join a group check */
	int leaky;	   /* a simple leaky: policy (a shaper) */
	/* Of tk_policy_info(): "all", "any" or the algorithm's name. */
	const char *algorithm;
	struct tk_mod_store *store;
	ap_expr_info_t *key; /* NULL: the client's address */
	const char *key_text;
	int status;		/* HTTP status of a denial */
	unsigned int headers;	/* TK_HTTP_* flags */
	int headers_on_success; /* headers= was given */
	unsigned int fail;	/* TK_FAIL_OPEN or TK_FAIL_CLOSED */
	int dry_run;
	apr_interval_time_t delay; /* us; 0: no delay= */
	/*
	 * Checked after authentication (the handler phase) rather than in
	 * header_parser: phase=late, or a key= that reads what access and
	 * authentication set (REMOTE_USER, AUTH_TYPE, notes, environment).
	 */
	int late;
	int phase_set; /* phase= was given */
	/*
	 * Named in some Throttle of the server configuration beside another
	 * rule it is checked with (same store, both enforced or both
	 * dry-run).  A simple policy's group states are not those of
	 * tk_limiter_check(), and a rule counts in one bucket per key, so
	 * such a rule takes the group check everywhere, and any other
	 * simple rule the plain check, a third of the cost.
	 */
	int grouped;
	/*
	 * count=: the statuses whose responses consume; 0 for every other.
	 * Such a rule only peeks before the handler (a client over the limit
	 * is refused) and consumes once the final status is known
	 * (log_transaction); it is never checked in a group.
	 */
	unsigned char *count; /* by status, 100..599; NULL: no count= */
	const char *file;
	unsigned int line;
	int index;		    /* in the registry's rules */
	struct tk_limiter *limiter; /* in a child, once opened */
	int open_rc;
};

/* All stores and rules of one configuration generation. */
struct tk_mod_registry {
	const char *zone_dir;	    /* ThrottleZoneDir; NULL: the default */
	apr_array_header_t *stores; /* of struct tk_mod_store * */
	apr_array_header_t *rules;  /* of struct tk_mod_rule * */
};

/* Per-directory configuration: the rules of Throttle. */
struct tk_mod_dir {
	apr_array_header_t *rules; /* of struct tk_mod_rule *; NULL: unset */
};

extern module AP_MODULE_DECLARE_DATA throttlekit_module;
extern const command_rec tk_mod_cmds[];

/* config.c */
struct tk_mod_registry *tk_mod_registry(void);
void tk_mod_registry_reset(apr_pool_t *pconf);
void *tk_mod_dir_create(apr_pool_t *p, char *dir);
void *tk_mod_dir_merge(apr_pool_t *p, void *base, void *add);

/*
 * request.c: decide a request under those of @rules (struct tk_mod_rule *)
 * that its client request has not counted yet: the early ones in
 * header_parser (@late 0), all of them in the handler phase (@late 1).
 * Returns DECLINED (admitted) or the HTTP status of a refusal.
 */
int tk_mod_request(request_rec *r, apr_array_header_t *rules, int late);
/* request.c: set THROTTLE_STATUS of @r from its client request's verdict. */
void tk_mod_request_status(request_rec *r);
/*
 * request.c: consume, once the response of client request @r is done,
 * for the count= rules it passed whose statuses include its final one.
 */
void tk_mod_request_done(request_rec *r);

/* failures.c: the failure counts of one store in a child (child_init). */
struct tk_mod_failures *tk_mod_failures_make(apr_pool_t *pchild);
/*
 * failures.c: a check on @s failed with @rc (0: an error the library did
 * not name) and was answered by a fail policy: @outcome 1 admitted, 0
 * refused, -1 neither (a count= rule's consumption after the response).
 * Counted, and logged at once the first time, then at most once per
 * TK_MOD_FAILURE_LOG_INTERVAL.  Any thread of a child.
 */
void tk_mod_failure(server_rec *srv, struct tk_mod_store *s, int rc,
		    int outcome);
/* failures.c: a check on @s worked; logs the end of a run of failures. */
void tk_mod_failure_over(server_rec *srv, struct tk_mod_store *s);
/* failures.c: a copy of @s's failure counts (zero outside a child). */
void tk_mod_failures_get(struct tk_mod_store *s, struct tk_mod_failures *out);

/* mod_throttlekit.c: the trust and ownership options of store @s. */
void tk_mod_zone_options(const struct tk_mod_store *s, struct tk_options *o);

/* status.c: the throttlekit-status handler. */
int tk_mod_status_handler(request_rec *r, unsigned int generation,
			  apr_time_t started);

#endif /* MOD_THROTTLEKIT_H */
