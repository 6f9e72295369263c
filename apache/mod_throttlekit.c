/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mod_throttlekit.c - the module record and its process hooks.
 *
 * Process model (prefork and event alike):
 *   - pre_config starts a new registry for the generation being read;
 *   - post_config, in the parent and only on the second pass (the first
 *     one only checks the configuration), creates every zone, owned by
 *     the server's User and Group when the parent is root, so that the
 *     children, which run as User, can open it by name.  An existing
 *     zone is kept as it is and its counts go on: zones outlive graceful
 *     restarts and full stop/start alike, and nothing here or in a child
 *     ever removes one (throttlectl destroy does);
 *   - child_init opens each store and one limiter per rule in the child;
 *     the parent never opens a store to use it (config.c opens and
 *     closes a Redis store to check its spec, which connects nothing),
 *     so it holds no mapping, no Redis connection and starts no library
 *     thread.  A Redis store (nothing
 *     to create) connects on a child's first check, one connection per
 *     thread, and a server that is down fails checks, which the rules
 *     answer by their fail= policy, never the start.
 * A restart unloads and reloads the module and the library with it; the
 * library is pinned (RTLD_NODELETE) because its SIGBUS guard, once
 * installed in a process, must stay mapped.  What the server must
 * remember across generations (when it started, which zones it made)
 * lives in ap_retained_data.
 *
 * The SIGBUS guard: the library installs it when this parent first maps
 * a zone, the MPM installs its own fatal-signal handler over it, and the
 * children inherit that; the library installs its guard again when a
 * child opens its stores in child_init, chaining to the MPM's handler.
 */
#include "mod_throttlekit.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "apr_strings.h"
#include "ap_mpm.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "unixd.h"

#define RETAINED_KEY "mod_throttlekit-retained"

/* Kept across generations, in the process pool. */
struct retained {
	unsigned int generation; /* post_config passes that configured */
	apr_time_t started;
};

static struct retained *retained;

/* Trust and ownership options shared by the parent and the children;
 * none for a Redis store. */
static void zone_options(const struct tk_mod_store *s, struct tk_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	if (!s->zone)
		return;
	o->zone_capacity = s->capacity;
	o->zone_mode = s->mode;
	/* A root parent gives the zone to User/Group, and trusts it when it
	 * finds it owned by them (the children made it, or an earlier run). */
	if (ap_unixd_config.user_id != geteuid() && geteuid() == 0) {
		o->flags |= TK_OPT_ZONE_UID | TK_OPT_ZONE_GID;
		o->zone_uid = ap_unixd_config.user_id;
		o->zone_gid = ap_unixd_config.group_id;
	}
}

static void pin_library(server_rec *s)
{
	Dl_info info;

	if (dladdr((void *)tk_version, &info) && info.dli_fname &&
	    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
		return;
	ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
		     "could not pin libthrottlekit in memory: %s", dlerror());
}

static int create_zone(server_rec *srv, struct tk_mod_store *s)
{
	struct tk_options o;
	struct tk_zone_info info;
	char why[256];
	int rc;

	zone_options(s, &o);
	rc = tk_zone_create(s->zone, &o);
	if (rc == 0) {
		ap_log_error(APLOG_MARK, APLOG_INFO, 0, srv,
			     "ThrottleStore %s: created zone %s", s->name,
			     s->zone);
		return OK;
	}
	if (rc == -EEXIST)
		rc = tk_zone_info_opts(s->zone, &o, &info, sizeof(info));
	if (rc == 0) {
		if (s->capacity && s->capacity != info.capacity)
			/* APR's formatter knows no "ll": its own macro. */
			ap_log_error(APLOG_MARK, APLOG_WARNING, 0, srv,
				     "%s:%u: ThrottleStore %s: zone %s exists "
				     "with capacity %" APR_UINT64_T_FMT
				     ", not %" APR_UINT64_T_FMT "; it is used "
				     "as it is (remove it with throttlectl "
				     "destroy while the server is stopped to "
				     "resize it)",
				     s->file, s->line, s->name, s->zone,
				     (apr_uint64_t)info.capacity,
				     (apr_uint64_t)s->capacity);
		return OK;
	}
	why[0] = '\0';
	if (rc == -EACCES)
		tk_zone_access(s->zone, &o, why, sizeof(why));
	ap_log_error(APLOG_MARK, APLOG_EMERG, 0, srv,
		     "%s:%u: ThrottleStore %s: cannot create or attach zone "
		     "%s: %s%s%s",
		     s->file, s->line, s->name, s->zone, tk_strerror(rc),
		     why[0] ? ": " : "", why);
	return HTTP_INTERNAL_SERVER_ERROR;
}

/*
 * The last generation's rules, for the next one to compare with: in a
 * pool of the process pool (which outlives generations), each generation's
 * replacing the one before.
 */
#define RULES_KEY "mod_throttlekit-rules"

struct known_rule {
	const char *prefix; /* what child_init makes the key prefix of */
	const char *store;
	const char *canonical;
};

struct known_rules {
	apr_pool_t *pool;
	apr_hash_t *rules; /* rule name -> struct known_rule */
};

/* What keys keep when rule @r replaces @was: tk_policy_change(3)'s
 * answer (0 for another store or key prefix), or -1 if nothing changed. */
static int change_of(const struct tk_mod_rule *r, const struct known_rule *was)
{
	struct tk_policy *old;
	int same_keys, kept;

	same_keys = strcmp(was->prefix, r->algorithm) == 0 &&
		    strcmp(was->store, r->store->name) == 0;
	if (same_keys && strcmp(was->canonical, r->canonical) == 0)
		return -1;
	if (!same_keys || tk_policy_parse(&old, was->canonical, NULL) != 0)
		return 0;
	kept = tk_policy_change(old, r->policy);
	tk_policy_free(old);
	return kept < 0 ? 0 : kept;
}

/*
 * Log each rule whose policy changed since the last generation, once (the
 * parent, at a restart), with what its keys keep (tk_limiter_open(3),
 * "Changing a policy"); then remember this generation's.
 */
static void log_changes(server_rec *s, struct tk_mod_registry *reg)
{
	struct known_rules *known = NULL, *now;
	struct known_rule *was, *k;
	apr_pool_t *pool;
	const char *what;
	int i, kept;

	apr_pool_userdata_get((void **)&known, RULES_KEY, s->process->pool);
	apr_pool_create(&pool, s->process->pool);
	now = apr_pcalloc(pool, sizeof(*now));
	now->pool = pool;
	now->rules = apr_hash_make(pool);
	for (i = 0; i < reg->rules->nelts; i++) {
		struct tk_mod_rule *r =
			APR_ARRAY_IDX(reg->rules, i, struct tk_mod_rule *);

		k = apr_palloc(pool, sizeof(*k));
		k->prefix = apr_pstrdup(pool, r->algorithm);
		k->store = apr_pstrdup(pool, r->store->name);
		k->canonical = apr_pstrdup(pool, r->canonical);
		apr_hash_set(now->rules, apr_pstrdup(pool, r->name),
			     APR_HASH_KEY_STRING, k);
		was = known ? apr_hash_get(known->rules, r->name,
					   APR_HASH_KEY_STRING)
			    : NULL;
		if (!was || (kept = change_of(r, was)) < 0)
			continue;
		what = kept == (1 << r->dims) - 1 ? "every key keeps its count"
		       : kept == 0 ? "every key starts afresh, once"
				   : "some of its dimensions start each key "
				     "afresh, once, the others keep their "
				     "counts";
		ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
			     "ThrottleRule %s: policy changed from %s to %s; "
			     "%s (see tk_limiter_open(3))",
			     r->name, was->canonical, r->canonical, what);
	}
	apr_pool_userdata_set(now, RULES_KEY, NULL, s->process->pool);
	if (known)
		apr_pool_destroy(known->pool);
}

static int pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
	(void)plog;
	(void)ptemp;
	tk_mod_registry_reset(pconf);
	return OK;
}

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
		       server_rec *s)
{
	struct tk_mod_registry *reg = tk_mod_registry();
	int i, rc;

	(void)pconf;
	(void)plog;
	(void)ptemp;
	/* The first pass only checks the configuration. */
	if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG)
		return OK;
	retained = ap_retained_data_get(RETAINED_KEY);
	if (!retained) {
		retained = ap_retained_data_create(RETAINED_KEY,
						   sizeof(*retained));
		retained->started = apr_time_now();
	}
	retained->generation++;
	log_changes(s, reg);
	if (!reg->stores->nelts)
		return OK;
	pin_library(s);
	for (i = 0; i < reg->stores->nelts; i++) {
		struct tk_mod_store *st =
			APR_ARRAY_IDX(reg->stores, i, struct tk_mod_store *);

		if (st->zone && (rc = create_zone(s, st)) != OK)
			return rc;
	}
	return OK;
}

/*
 * Stores and limiters are never closed: they live until the child exits,
 * and closing one while a worker thread of the event MPM may still be in
 * a check would unmap the zone under it.
 */
static void child_init(apr_pool_t *pchild, server_rec *srv)
{
	struct tk_mod_registry *reg = tk_mod_registry();
	struct tk_options o;
	struct tk_stats st;
	int i;

	(void)pchild;
	for (i = 0; i < reg->stores->nelts; i++) {
		struct tk_mod_store *s =
			APR_ARRAY_IDX(reg->stores, i, struct tk_mod_store *);

		zone_options(s, &o);
		if (s->zone)
			o.flags |= TK_OPT_ZONE_NO_CREATE;
		/* A store that fails gives one that answers with its error,
		 * which the rules' fail policies decide, and retries. */
		o.flags |= TK_OPT_RETRY_OPEN;
		s->open_rc = tk_store_open(&s->handle, s->spec, &o);
		if (s->open_rc == 0)
			s->open_rc = tk_store_stats(s->handle, &st, sizeof(st));
		if (s->open_rc)
			ap_log_error(APLOG_MARK, APLOG_ERR, 0, srv,
				     "ThrottleStore %s: cannot open %s: %s; "
				     "its rules answer by their fail policy%s",
				     s->name, s->shown, tk_strerror(s->open_rc),
				     s->handle ? " until it opens (tried "
						 "again every second)"
					       : "");
	}
	for (i = 0; i < reg->rules->nelts; i++) {
		struct tk_mod_rule *r =
			APR_ARRAY_IDX(reg->rules, i, struct tk_mod_rule *);

		if (!r->store->handle) {
			r->open_rc = r->store->open_rc;
			continue;
		}
		memset(&o, 0, sizeof(o));
		o.size = sizeof(o);
		o.store = r->store->handle;
		o.fail = r->fail;
		/* Rules never share keys.  A rule whose policy changes over a
		 * restart meets the states it can read (counts kept) and no
		 * other (a fresh budget, once): tk_limiter_open(3), logged by
		 * log_changes(). */
		o.prefix =
			apr_psprintf(pchild, "%s|%s|", r->name, r->algorithm);
		r->open_rc =
			tk_limiter_open(&r->limiter, r->canonical, NULL, &o);
		if (r->open_rc)
			ap_log_error(APLOG_MARK, APLOG_ERR, 0, srv,
				     "ThrottleRule %s: cannot open: %s",
				     r->name, tk_strerror(r->open_rc));
	}
}

/*
 * Where rules are checked:
 *   - header_parser, first, for the main request and each internal
 *     redirect (a RewriteRule): the early rules of the place asked, before
 *     any authentication work, so that a refused client costs little;
 *   - the handler phase, really first, for every request that is served
 *     (main requests, internal redirects, fast redirects, subrequests that
 *     run): the rules of the place the request ends up that were not
 *     counted yet, and the late ones, whose keys need authentication.
 *     mod_dir's DirectoryIndex probes candidates with subrequests that are
 *     never run, then swaps the chosen one's configuration into the
 *     request in its fixups: only a later hook sees the final place, and
 *     a probed file never counts.
 *   - log_transaction, once per client request, with its final status:
 *     the count= rules it passed consume if that status is in their set.
 * request.c counts each rule once per client request, and never in a
 * request made to answer an error (an ErrorDocument).
 */
static int check(request_rec *r, int late)
{
	struct tk_mod_dir *d;

	d = ap_get_module_config(r->per_dir_config, &throttlekit_module);
	if (!d->rules || !d->rules->nelts) {
		/* An ErrorDocument or redirect keeps the verdict for the log.
		 */
		tk_mod_request_status(r);
		return DECLINED;
	}
	return tk_mod_request(r, d->rules, late);
}

static int header_parser(request_rec *r)
{
	return check(r, 0);
}

static int late_check(request_rec *r)
{
	return check(r, 1);
}

/* Every client request ends here once, with its final status. */
static int log_transaction(request_rec *r)
{
	tk_mod_request_done(r);
	return DECLINED;
}

static int status_handler(request_rec *r)
{
	if (!r->handler || strcmp(r->handler, TK_MOD_HANDLER) != 0)
		return DECLINED;
	return tk_mod_status_handler(r, retained ? retained->generation : 0,
				     retained ? retained->started : 0);
}

static void register_hooks(apr_pool_t *p)
{
	(void)p;
	ap_hook_pre_config(pre_config, NULL, NULL, APR_HOOK_MIDDLE);
	ap_hook_post_config(post_config, NULL, NULL, APR_HOOK_MIDDLE);
	ap_hook_child_init(child_init, NULL, NULL, APR_HOOK_MIDDLE);
	ap_hook_header_parser(header_parser, NULL, NULL, APR_HOOK_FIRST);
	ap_hook_handler(late_check, NULL, NULL, APR_HOOK_REALLY_FIRST);
	ap_hook_handler(status_handler, NULL, NULL, APR_HOOK_MIDDLE);
	ap_hook_log_transaction(log_transaction, NULL, NULL, APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(throttlekit) = { STANDARD20_MODULE_STUFF,
				   tk_mod_dir_create,
				   tk_mod_dir_merge,
				   NULL,
				   NULL,
				   tk_mod_cmds,
				   register_hooks,
#if defined(AP_MODULE_FLAG_ALWAYS_MERGE)
				   AP_MODULE_FLAG_NONE
#endif
};
