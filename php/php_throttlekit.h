/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * php_throttlekit.h - the PHP extension "throttlekit": shared declarations.
 *
 * The extension is a thin layer over libthrottlekit: it turns zvals and
 * INI settings into library calls and decisions into objects, and holds no
 * rate-limit logic.  Its one piece of state is a per-process cache of
 * stores and limiters (cache.c), built lazily in the process that checks,
 * never in the php-fpm master.
 */
#ifndef PHP_THROTTLEKIT_H
#define PHP_THROTTLEKIT_H

#include <stdatomic.h>
#include <throttlekit.h>

#include "php.h"
#include "zend_exceptions.h"

#define PHP_THROTTLEKIT_VERSION TK_VERSION_STRING
/* SPDX identifier of the license, shown by phpinfo(). */
#define PHP_THROTTLEKIT_LICENSE "BSD-2-Clause"

extern zend_module_entry throttlekit_module_entry;
#define phpext_throttlekit_ptr &throttlekit_module_entry

/* What a check does when its store fails (the "fail" option). */
#define TKPHP_FAIL_UNSET (-1)

/*
 * What fail "open" and "closed" absorbed on one store spec in this
 * process, for the error log and phpinfo().  Guarded by the cache's mutex
 * (cache.c); kept until the process exits.
 */
struct tkphp_failures {
	char spec[512];			   /* as messages show it */
	uint64_t admitted, denied;	   /* checks answered, in all */
	uint64_t admitted_new, denied_new; /* of them, not yet logged */
	uint64_t logged_at; /* ns, CLOCK_MONOTONIC: the last line; 0: none */
	uint64_t failed_at; /* ns since the epoch: the last failure */
	int last_rc;	    /* its error */
	int open_rc;	    /* the error the store could not be opened with */
	char open_why[512]; /* and why */
};

/*
 * A limiter as PHP code sees it: a library limiter and what Decision
 * objects need from it.  Cached ones (cache.c) live until the process
 * exits; others are freed with their last reference.
 */
struct tkphp_limiter {
	struct tk_limiter *lim;
	struct tk_policy *policy; /* parsed once, for the header fields */
	char *name;		  /* the policy's name in RateLimit fields */
	char *store_spec;	  /* for messages: without the password */
	/*
	 * On a store of its own, because the cached one could not be opened:
	 * the library answers by the fail policy and opens it when it can.
	 * Never cached, so that a later Limiter tries the cached store again.
	 */
	bool own_store;
	/* all() composites: dimensions, checked as a group for their
	 * per-dimension decisions (the RateLimit fields need them); else 0. */
	size_t group_dims;
	uint64_t timeout; /* ns; 0: wait() sleeps as long as the policy says */
	/*
	 * The fail policy: the library limiter runs under TK_FAIL_ERROR, so
	 * that each error comes back with its code, and tkphp_absorb()
	 * answers it by this one and logs it.
	 */
	unsigned int fail;
	struct tkphp_failures *failures; /* NULL: not counted (no memory) */
	_Atomic uint32_t refs; /* Limiter, Decision objects and the cache */
	bool cached;
};

/* Limiter parameters, validated, as the cache's key. */
struct tkphp_params {
	zend_string *policy;
	zend_string *store;
	zend_string *prefix; /* NULL: none */
	unsigned int fail;
	uint64_t timeout;
	uint64_t capacity; /* 0: the store's default */
};

/* The classes. */
extern zend_class_entry *tkphp_limiter_ce;
extern zend_class_entry *tkphp_decision_ce;
extern zend_class_entry *tkphp_exception_ce;
extern zend_class_entry *tkphp_store_exception_ce;

/* INI settings, read at the first use in a request. */
ZEND_BEGIN_MODULE_GLOBALS(throttlekit)
char *default_store;
char *fail;
char *zone_owner;
char *zone_dir; /* where shm:NAME zones are; "": /dev/shm */
ZEND_END_MODULE_GLOBALS(throttlekit)

ZEND_EXTERN_MODULE_GLOBALS(throttlekit)
#define TKPHP_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(throttlekit, v)

/* cache.c: the per-process stores and limiters. */
int tkphp_limiter_get(struct tkphp_limiter **out, const struct tkphp_params *p);
void tkphp_limiter_release(struct tkphp_limiter *l);
int tkphp_absorb(struct tkphp_limiter *l, int rc, struct tk_decision *d);
void tkphp_cache_minit(void);
void tkphp_cache_info(void);
void tkphp_cache_shutdown(void);

/*
 * default-store.c: the store spec of a Limiter built without one:
 * throttlekit.default_store, else the php-fpm pool's zone, else "memory".
 * Call during a request.
 */
const char *tkphp_default_store(void);

/* limiter.c, decision.c: class registration. */
void tkphp_limiter_minit(void);
void tkphp_decision_minit(void);
void tkphp_decision_new(zval *rv, struct tkphp_limiter *l,
			const struct tk_decision *d,
			const struct tk_decision *dims);

/* throttlekit.c: @spec as messages show it, by tk_spec_redact(); returns
 * @buf. */
const char *tkphp_redact(const char *spec, char *buf, size_t len);

/* Throw the exception for library error @rc about @what. */
void tkphp_throw(int rc, const char *what, const char *detail);

#endif /* PHP_THROTTLEKIT_H */
