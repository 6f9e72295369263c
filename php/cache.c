/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c - the per-process stores and limiters.
 *
 * Scripts construct a Limiter per request; opening a store per request
 * would map a zone (or start a memory store) every time.  So each process
 * opens a store once per spec and a library limiter once per set of
 * parameters, and keeps both until it exits; a Limiter object only takes
 * a reference.  Everything is opened lazily, by the first Limiter of the
 * process that uses it: never in MINIT, which php-fpm runs in its master
 * before forking, and never inherited.  A process that finds the cache
 * built by another pid (it was forked after the cache was filled) starts
 * an empty one (a pthread_atfork() handler tells it so) and abandons the
 * inherited entries without closing them:
 * their reclaimer threads, if any, did not survive the fork.  Objects that
 * still reference them keep working on the inherited copies.
 *
 * The limiter cache is bounded: past TKPHP_CACHE_MAX parameter sets (a
 * script that builds policies from user input), limiters are opened per
 * object and closed with their last reference.  Their store is still the
 * cached one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php_throttlekit.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "ext/standard/info.h"
#include "zend_smart_str.h"

#define TKPHP_CACHE_MAX 256
/* The longest rule name a zone's directory holds (tk_options.rule). */
#define TKPHP_RULE_NAME_MAX 127
/* s between two lines about the failures of one store (per process). */
#define TKPHP_LOG_INTERVAL 10

/* One process's cache.  ZTS builds share it between threads, hence the
 * mutex; only constructors, phpinfo() and a check its store failed
 * (tkphp_absorb()) take it, never a check its store answered. */
static struct {
	pthread_mutex_t mu;
	pid_t pid;	    /* the process that filled it; 0: empty */
	HashTable stores;   /* spec -> struct tk_store * */
	HashTable limiters; /* parameters -> struct tkphp_limiter * */
	HashTable failures; /* spec -> struct tkphp_failures * */
} cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void limiter_free(struct tkphp_limiter *l)
{
	tk_limiter_close(l->lim);
	tk_policy_free(l->policy);
	free(l->name);
	free(l->store_spec);
	free(l);
}

void tkphp_limiter_release(struct tkphp_limiter *l)
{
	/* acq_rel: the last owner sees every write of the others. */
	if (l &&
	    atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) == 1)
		limiter_free(l);
}

/*
 * In the child of a fork(): the cache is the parent's.  getpid() would
 * tell as much at every Limiter, but it is a system call, half of what
 * constructing a Limiter costs; this handler marks the cache instead.
 * glibc removes it when the module is unloaded (dlclose).
 */
static void cache_forked(void)
{
	cache.pid = 0;
	/* Another thread (ZTS) may have held it across the fork. */
	pthread_mutex_init(&cache.mu, NULL);
}

void tkphp_cache_minit(void)
{
	pthread_atfork(NULL, NULL, cache_forked);
}

/* Called with cache.mu held. */
static void cache_attach(void)
{
	if (cache.pid != 0)
		return;
	/* Inherited entries (if any) are abandoned, see the file comment. */
	zend_hash_init(&cache.stores, 8, NULL, NULL, 1);
	zend_hash_init(&cache.limiters, 8, NULL, NULL, 1);
	zend_hash_init(&cache.failures, 8, NULL, NULL, 1);
	cache.pid = getpid();
}

/* The uid named by throttlekit.zone_owner: a user name or a number. */
static int zone_owner_uid(const char *owner, int64_t *uid)
{
	struct passwd pw, *res = NULL;
	char buf[1024], *end;
	unsigned long n;

	if (getpwnam_r(owner, &pw, buf, sizeof(buf), &res) == 0 && res) {
		*uid = res->pw_uid;
		return 0;
	}
	errno = 0;
	n = strtoul(owner, &end, 10);
	if (*owner && !*end && errno == 0 && n < UINT32_MAX) {
		*uid = (int64_t)n;
		return 0;
	}
	return -EINVAL;
}

static bool is_zone(const char *spec)
{
	return strncmp(spec, "shm:", 4) == 0;
}

/* The store options of @p into @o, or -EINVAL with the reason in @why. */
static int store_options(struct tk_options *o, const struct tkphp_params *p,
			 char *why, size_t len)
{
	const char *owner = TKPHP_G(zone_owner);

	*o = (struct tk_options)TK_OPTIONS_INIT;
	if (!is_zone(ZSTR_VAL(p->store))) {
		o->max_keys = p->capacity;
		return 0;
	}
	o->zone_capacity = p->capacity;
	if (owner && *owner) {
		if (zone_owner_uid(owner, &o->zone_uid)) {
			snprintf(why, len,
				 "throttlekit.zone_owner \"%s\" is no user",
				 owner);
			return -EINVAL;
		}
		o->flags |= TK_OPT_ZONE_UID;
	}
	return 0;
}

/*
 * A bare zone name in throttlekit.zone_dir, the pool's own directory
 * (throttlekit(7), "Servers: a directory of their own"); any other spec
 * as it is.  NULL if the path does not fit.
 */
static const char *zone_spec(const char *spec, char *buf, size_t len)
{
	const char *dir = TKPHP_G(zone_dir);
	int n;

	if (!is_zone(spec) || spec[4] == '/' || !dir || !*dir)
		return spec;
	n = snprintf(buf, len, "shm:%s/%s", dir, spec + 4);
	return n > 0 && (size_t)n < len ? buf : NULL;
}

/* Open the store of @p, with the message of a failure in @why. */
static int store_open(struct tk_store **out, const struct tkphp_params *p,
		      char *why, size_t len)
{
	struct tk_options o;
	char path[PATH_MAX + 8];
	const char *spec = zone_spec(ZSTR_VAL(p->store), path, sizeof(path));
	size_t n;
	int rc;

	*why = '\0';
	if (!spec) {
		snprintf(why, len, "throttlekit.zone_dir is too long");
		return -ENAMETOOLONG;
	}
	rc = store_options(&o, p, why, len);
	if (rc)
		return rc;
	rc = tk_store_open(out, spec, &o);
	if (rc == -EACCES && is_zone(spec)) {
		tk_zone_access(spec + 4, &o, why, len);
		n = strlen(why);
		snprintf(why + n, len - n,
			 " (throttlekit.zone_owner names the user whose zones "
			 "to trust, and gives a zone root creates to that "
			 "user)");
	} else if ((rc == -ENOTSUP || rc == -EINVAL) &&
		   (strncmp(spec, "redis", 5) == 0 ||
		    strncmp(spec, "postgresql://", 13) == 0 ||
		    (is_zone(spec) && strstr(spec, "+redis"))) &&
		   tk_store_validate(spec, why, len) == rc && *why) {
		/* A server's spec, or two tiers (a zone in front of Redis):
		 * the library's reason, the byte and what was expected
		 * there, or what this build lacks. */
	} else if (rc == -ENOTSUP) {
		snprintf(why, len,
			 "this libthrottlekit lacks the store's backend");
	} else if (rc == -EINVAL) {
		snprintf(why, len,
			 "expected \"memory\", \"shm:NAME\" (NAME: 1 to 200 "
			 "of [A-Za-z0-9._-]; or an absolute path ending in "
			 "one; a zone capacity that is a power of two), "
			 "\"redis://[USER[:PASSWORD]@]HOST[:PORT]"
			 "[/DB][?OPTIONS]\" or \"redis+unix://[USER[:PASSWORD]"
			 "@]/PATH[?OPTIONS]\" (OPTIONS: timeout=, "
			 "connect_timeout=, key_prefix=, server_time=1), "
			 "\"shm:NAME[?lease=N&lease_max=N]+redis://...\" "
			 "(two tiers: the zone in front of Redis) or "
			 "\"postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB"
			 "[?OPTIONS]\" (see tk_store_open(3))");
	}
	return rc;
}

/* The cached store of @p, opened if need be.  Called with cache.mu held. */
static int store_get(struct tk_store **out, const struct tkphp_params *p,
		     char *why, size_t len)
{
	struct tk_store *s;
	int rc;

	s = zend_hash_find_ptr(&cache.stores, p->store);
	if (!s) {
		rc = store_open(&s, p, why, len);
		if (rc)
			return rc;
		zend_hash_str_add_ptr(&cache.stores, ZSTR_VAL(p->store),
				      ZSTR_LEN(p->store), s);
	}
	*out = s;
	return 0;
}

static void cache_key(smart_str *k, const struct tkphp_params *p)
{
	smart_str_append(k, p->policy);
	smart_str_appendc(k, '\0');
	smart_str_append(k, p->store);
	smart_str_appendc(k, '\0');
	if (p->prefix)
		smart_str_append(k, p->prefix);
	smart_str_appendc(k, '\0');
	smart_str_append_unsigned(k, p->fail);
	smart_str_appendc(k, '\0');
	smart_str_append_unsigned(k, (zend_ulong)p->timeout);
	smart_str_appendc(k, '\0');
	smart_str_append_unsigned(k, (zend_ulong)p->capacity);
	smart_str_0(k);
}

static struct tkphp_limiter *limiter_new(const struct tkphp_params *p,
					 struct tk_policy *pol)
{
	struct tkphp_limiter *l = calloc(1, sizeof(*l));
	size_t n = p->prefix ? ZSTR_LEN(p->prefix) : 0;
	char shown[512];

	if (!l)
		return NULL;
	l->policy = pol;
	/* The policy's name in the RateLimit fields: the prefix without
	 * its separator ("api:" names "api"), or "default". */
	while (n > 0 && strchr(":._/-", ZSTR_VAL(p->prefix)[n - 1]))
		n--;
	l->name = n ? strndup(ZSTR_VAL(p->prefix), n) : strdup("default");
	/* Only for messages, so without the password. */
	l->store_spec =
		strdup(tkphp_redact(ZSTR_VAL(p->store), shown, sizeof(shown)));
	l->timeout = p->timeout;
	atomic_init(&l->refs, 1);
	if (!l->name || !l->store_spec) {
		l->policy = NULL;
		limiter_free(l);
		return NULL;
	}
	return l;
}

/* The failure counters of @p's store.  Called with cache.mu held. */
static struct tkphp_failures *failures_of(const struct tkphp_params *p,
					  const char *shown)
{
	struct tkphp_failures *f;

	f = zend_hash_find_ptr(&cache.failures, p->store);
	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	snprintf(f->spec, sizeof(f->spec), "%s", shown);
	zend_hash_str_add_ptr(&cache.failures, ZSTR_VAL(p->store),
			      ZSTR_LEN(p->store), f);
	return f;
}

static uint64_t ns_of(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* The log line about @f, which failed with @rc.  Called with cache.mu
 * held. */
static void failure_line(char *line, size_t len, const struct tkphp_failures *f,
			 int rc, uint64_t now)
{
	const char *why = rc == f->open_rc ? f->open_why : "";
	char since[64];

	if (f->logged_at)
		snprintf(since, sizeof(since), "in the last %" PRIu64 " s",
			 (now - f->logged_at) / 1000000000u);
	else
		snprintf(since, sizeof(since), "first failure");
	snprintf(line, len,
		 "throttlekit: store \"%s\" failed: %s (%s)%s%s; checks "
		 "answered by the fail policy (%s): %" PRIu64
		 " admitted by fail=open, %" PRIu64
		 " denied by fail=closed; %" PRIu64
		 " in all in process %d (at most a line per store every %d s)",
		 f->spec, tk_strerror(rc), tk_strerrorname(rc),
		 *why ? ": " : "", why, since, f->admitted_new, f->denied_new,
		 f->admitted + f->denied, (int)getpid(), TKPHP_LOG_INTERVAL);
}

/*
 * A store error @rc of a check of @l: under fail "open" or "closed" the
 * library's degraded decision in *@d, counted and logged (the first
 * failure at once, then a line per store every TKPHP_LOG_INTERVAL
 * seconds at most, with what it absorbed since), and 0.  Otherwise @rc.
 */
int tkphp_absorb(struct tkphp_limiter *l, int rc, struct tk_decision *d)
{
	struct tkphp_failures *f = l->failures;
	struct timespec rt, mono;
	char line[1600];
	bool log = false;
	uint64_t now;

	if (rc == 0 || l->fail == TK_FAIL_ERROR || tk_error_is_caller(rc))
		return rc;
	clock_gettime(CLOCK_REALTIME, &rt);
	if (tk_decision_degraded(l->policy, l->fail, ns_of(&rt), d))
		return rc;
	if (!f)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	now = ns_of(&mono);
	pthread_mutex_lock(&cache.mu);
	if (l->fail == TK_FAIL_OPEN) {
		f->admitted++;
		f->admitted_new++;
	} else {
		f->denied++;
		f->denied_new++;
	}
	f->last_rc = rc;
	f->failed_at = ns_of(&rt);
	if (!f->logged_at ||
	    now - f->logged_at >= TKPHP_LOG_INTERVAL * 1000000000ull) {
		failure_line(line, sizeof(line), f, rc, now);
		f->admitted_new = f->denied_new = 0;
		f->logged_at = now ? now : 1;
		log = true;
	}
	pthread_mutex_unlock(&cache.mu);
	/* The error log (php-fpm's, with catch_workers_output, or error_log),
	 * not a PHP warning: an error handler could turn that into an
	 * exception, which the fail policy promises not to throw. */
	if (log)
		php_log_err_with_severity(line, LOG_WARNING);
	return 0;
}

/*
 * Composites are checked as groups of one (see limiter.c): all() and
 * any() alone in a group decide and count as tk_limiter_check() does.
 */
static size_t group_dims_of(const struct tk_policy *pol)
{
	size_t n = tk_policy_dimensions(pol);

	return n >= 2 && n <= TK_GROUP_DIMENSIONS_MAX ? n : 0;
}

/*
 * Open a limiter of @p on its cached store.  A store that cannot be
 * opened is the library's to answer under fail "open" or "closed": the
 * limiter then opens the spec itself, on a store of its own that answers
 * by the fail policy until it opens (tk_limiter_open(3)).
 */
static int limiter_open(struct tkphp_limiter **out,
			const struct tkphp_params *p)
{
	struct tk_options o;
	struct tk_parse_error perr = { 0 };
	struct tk_policy *pol = NULL;
	struct tkphp_limiter *l;
	struct tk_store *s = NULL;
	const char *spec = NULL;
	char why[768], what[600], shown[512];
	int rc;

	rc = tk_policy_parse(&pol, ZSTR_VAL(p->policy), &perr);
	if (rc) {
		snprintf(what, sizeof(what), "invalid policy \"%s\"",
			 ZSTR_VAL(p->policy));
		/* The message names the position: "expected X at position N".
		 */
		tkphp_throw(rc, what, rc == -EINVAL ? perr.message : NULL);
		return rc;
	}
	rc = store_get(&s, p, why, sizeof(why));
	if (rc && (tk_error_is_caller(rc) || p->fail == TK_FAIL_ERROR)) {
		tk_policy_free(pol);
		snprintf(
			what, sizeof(what), "store \"%s\"",
			tkphp_redact(ZSTR_VAL(p->store), shown, sizeof(shown)));
		tkphp_throw(rc, what, why);
		return rc;
	}
	l = limiter_new(p, pol);
	if (!l) {
		tk_policy_free(pol);
		tkphp_throw(-ENOMEM, "limiter", NULL);
		return -ENOMEM;
	}
	l->group_dims = group_dims_of(pol);
	l->fail = p->fail;
	l->failures = failures_of(p, l->store_spec);
	store_options(&o, p, why, sizeof(why));
	if (rc) {
		l->own_store = true;
		spec = ZSTR_VAL(p->store);
		/* As tk_limiter_open() does under "open" and "closed". */
		o.flags |= TK_OPT_RETRY_OPEN;
		if (l->failures) {
			l->failures->open_rc = rc;
			snprintf(l->failures->open_why,
				 sizeof(l->failures->open_why), "%s", why);
		}
	} else {
		o.store = s;
	}
	o.prefix = p->prefix ? ZSTR_VAL(p->prefix) : NULL;
	o.fail = TK_FAIL_ERROR;
	/* A zone's rule directory names the policy as its RateLimit fields
	 * do, and counts its checks; a client is a key as the script gives
	 * it (throttlectl reset --rule NAME --client KEY).  A name too long
	 * for the directory leaves the policy uncounted. */
	if (strlen(l->name) <= TKPHP_RULE_NAME_MAX) {
		o.rule = l->name;
		o.rule_key = "";
	}
	rc = tk_limiter_open(&l->lim, ZSTR_VAL(p->policy), spec, &o);
	if (rc) {
		limiter_free(l);
		tkphp_throw(rc, "limiter",
			    rc == -ENAMETOOLONG ? "prefix longer than 256 bytes"
						: NULL);
		return rc;
	}
	*out = l;
	return 0;
}

int tkphp_limiter_get(struct tkphp_limiter **out, const struct tkphp_params *p)
{
	struct tkphp_limiter *l;
	smart_str k = { 0 };
	int rc = 0;

	cache_key(&k, p);
	pthread_mutex_lock(&cache.mu);
	cache_attach();
	l = zend_hash_find_ptr(&cache.limiters, k.s);
	if (!l) {
		rc = limiter_open(&l, p);
		/* Only a limiter on a cached store is worth keeping. */
		if (rc == 0 && !l->own_store &&
		    zend_hash_num_elements(&cache.limiters) < TKPHP_CACHE_MAX) {
			l->cached = true;
			zend_hash_str_add_ptr(&cache.limiters, ZSTR_VAL(k.s),
					      ZSTR_LEN(k.s), l);
		} else if (rc == 0) {
			/* The caller's reference is the only one. */
			*out = l;
			goto out;
		}
	}
	if (rc == 0) {
		atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
		*out = l;
	}
out:
	pthread_mutex_unlock(&cache.mu);
	smart_str_free(&k);
	return rc;
}

/* phpinfo(): what the fail policy absorbed.  Called with cache.mu held. */
static void failures_info(void)
{
	struct tkphp_failures *f;
	struct timespec rt;
	char name[600], row[1200];
	const char *why;

	clock_gettime(CLOCK_REALTIME, &rt);
	ZEND_HASH_FOREACH_PTR(&cache.failures, f)
	{
		if (!f->admitted && !f->denied)
			continue;
		why = f->last_rc == f->open_rc ? f->open_why : "";
		snprintf(name, sizeof(name), "failures of \"%s\"", f->spec);
		snprintf(row, sizeof(row),
			 "%" PRIu64
			 " checks answered by the fail policy (%" PRIu64
			 " admitted, %" PRIu64 " denied); the last %" PRIu64
			 " s ago: %s (%s)%s%s",
			 f->admitted + f->denied, f->admitted, f->denied,
			 (ns_of(&rt) - f->failed_at) / 1000000000u,
			 tk_strerror(f->last_rc), tk_strerrorname(f->last_rc),
			 *why ? ": " : "", why);
		php_info_print_table_row(2, name, row);
	}
	ZEND_HASH_FOREACH_END();
}

void tkphp_cache_info(void)
{
	struct tk_store *s;
	struct tk_stats st;
	zend_string *spec;
	char row[128], shown[512];

	pthread_mutex_lock(&cache.mu);
	if (cache.pid != getpid()) {
		php_info_print_table_row(2, "stores in use (this process)",
					 "none");
		goto out;
	}
	ZEND_HASH_FOREACH_STR_KEY_PTR(&cache.stores, spec, s)
	{
		if (tk_store_stats(s, &st, sizeof(st)) == 0)
			snprintf(row, sizeof(row), "%" PRIu64 " keys", st.keys);
		else
			snprintf(row, sizeof(row), "failed");
		php_info_print_table_row(
			2, tkphp_redact(ZSTR_VAL(spec), shown, sizeof(shown)),
			row);
	}
	ZEND_HASH_FOREACH_END();
	snprintf(row, sizeof(row), "%u",
		 zend_hash_num_elements(&cache.limiters));
	php_info_print_table_row(2, "cached limiters (this process)", row);
	failures_info();
out:
	pthread_mutex_unlock(&cache.mu);
}

void tkphp_cache_shutdown(void)
{
	struct tkphp_failures *f;
	struct tkphp_limiter *l;
	struct tk_store *s;

	pthread_mutex_lock(&cache.mu);
	if (cache.pid == getpid()) {
		ZEND_HASH_FOREACH_PTR(&cache.limiters, l)
		{
			tkphp_limiter_release(l);
		}
		ZEND_HASH_FOREACH_END();
		/* Limiters first: they use the stores. */
		ZEND_HASH_FOREACH_PTR(&cache.stores, s)
		{
			tk_store_close(s);
		}
		ZEND_HASH_FOREACH_END();
		ZEND_HASH_FOREACH_PTR(&cache.failures, f)
		{
			free(f);
		}
		ZEND_HASH_FOREACH_END();
		zend_hash_destroy(&cache.limiters);
		zend_hash_destroy(&cache.stores);
		zend_hash_destroy(&cache.failures);
		cache.pid = 0;
	}
	pthread_mutex_unlock(&cache.mu);
}
