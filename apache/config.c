/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.c - the directives ThrottleStore, ThrottleRule and Throttle.
 *
 * Everything that can be wrong in a configuration is found here, while
 * httpd reads it, so that "apache2 -t" reports it with the file and line
 * (httpd prefixes a directive's error with both): a policy that does not
 * parse, a store spec this build cannot open (a Redis or PostgreSQL spec
 * the library refuses, rediss:// too), a rule naming an unknown
 * store, a Throttle naming an unknown rule or rules that cannot be
 * checked together.  Only what needs the running system (creating a zone)
 * is left to post_config.
 *
 * Stores and rules are global to the server (like nginx's zones): they
 * are declared in the main server configuration and registered in one
 * table per configuration generation, which children inherit.  A rule
 * must be declared before a Throttle names it, and a store before a rule
 * names it, so that each error points at the line that caused it.
 */
#include "mod_throttlekit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_user.h"
#include "http_core.h"
#include "http_log.h"

/*
 * The registry of the generation being configured.  A restart reloads
 * the module, so this pointer belongs to the pconf of this generation;
 * pre_config makes a new one.
 */
static struct tk_mod_registry *registry;

void tk_mod_registry_reset(apr_pool_t *pconf)
{
	registry = apr_pcalloc(pconf, sizeof(*registry));
	registry->stores = apr_array_make(pconf, 4, sizeof(void *));
	registry->rules = apr_array_make(pconf, 8, sizeof(void *));
}

struct tk_mod_registry *tk_mod_registry(void)
{
	return registry;
}

static struct tk_mod_store *find_store(const char *name)
{
	int i;

	for (i = 0; i < registry->stores->nelts; i++) {
		struct tk_mod_store *s = APR_ARRAY_IDX(registry->stores, i,
						       struct tk_mod_store *);
		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

static struct tk_mod_rule *find_rule(const char *name)
{
	int i;

	for (i = 0; i < registry->rules->nelts; i++) {
		struct tk_mod_rule *r =
			APR_ARRAY_IDX(registry->rules, i, struct tk_mod_rule *);
		if (strcmp(r->name, name) == 0)
			return r;
	}
	return NULL;
}

/* Names of stores and rules: what a structured-field string and a key
 * prefix can both carry without escaping. */
static int valid_name(const char *s)
{
	if (!*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!apr_isalnum(*s) && *s != '_' && *s != '-' && *s != '.')
			return 0;
	return 1;
}

/* "word=value": the value if @arg starts with @word and '=', else NULL. */
static const char *option(const char *arg, const char *word)
{
	size_t n = strlen(word);

	return strncmp(arg, word, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

static const char *parse_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (!apr_isdigit(*v))
		return "not a number";
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end)
		return "not a number";
	*out = x;
	return NULL;
}

/*
 * The start of a declaration, "WHAT NAME SECOND [options]": sets @name
 * and @second, or returns the error; @taken says a name is in use.
 */
static const char *declaration(cmd_parms *cmd, const char *usage,
			       const char **args, const char **name,
			       const char **second, int (*taken)(const char *))
{
	const char *err, *what = cmd->directive->directive;

	if ((err = ap_check_cmd_context(cmd, GLOBAL_ONLY)) != NULL)
		return err;
	*name = ap_getword_conf(cmd->pool, args);
	*second = ap_getword_conf(cmd->pool, args);
	if (!**name || !**second)
		return usage;
	if (!valid_name(*name))
		return apr_psprintf(cmd->pool,
				    "%s: bad name \"%s\" (1 to 64 of A-Z a-z "
				    "0-9 _ - .)",
				    what, *name);
	if (taken(*name))
		return apr_psprintf(cmd->pool, "%s %s: declared twice", what,
				    *name);
	return NULL;
}

/* The "word" and "word=value" options after a declaration's two words. */
static const char *options(cmd_parms *cmd, const char **args, void *obj,
			   const char *(*fn)(cmd_parms *, void *, const char *))
{
	const char *w, *err;

	while (*(w = ap_getword_conf(cmd->pool, args)) != '\0')
		if ((err = fn(cmd, obj, w)) != NULL)
			return err;
	return NULL;
}

static int store_taken(const char *name)
{
	return find_store(name) != NULL;
}

static int rule_taken(const char *name)
{
	return find_rule(name) != NULL;
}

/* @spec as messages and the status page show it (tk_spec_redact()). */
static const char *shown_spec(apr_pool_t *p, const char *spec)
{
	int n = tk_spec_redact(spec, NULL, 0);
	char *buf;

	if (n < 0)
		return "(a store spec)";
	buf = apr_palloc(p, (apr_size_t)n + 1);
	tk_spec_redact(spec, buf, (size_t)n + 1);
	return buf;
}

/*
 * A server's spec (Redis, PostgreSQL) is parsed by the library, which has
 * no other way to judge one than opening it: the store is closed at once,
 * and neither store connects nor starts anything until its first check,
 * so the parent keeps nothing of it (a PostgreSQL spec loads libpq into
 * the parent, which the children then share).  Children open it again
 * (child_init).
 */
static const char *server_spec(cmd_parms *cmd, struct tk_mod_store *s)
{
	struct tk_store *st = NULL;
	char why[256];
	int rc;

	rc = tk_store_open(&st, s->spec, NULL);
	tk_store_close(st);
	if (rc == 0)
		return NULL;
	/* The library's reason: the byte and what was expected there, or
	 * what this build lacks (hiredis; hiredis_ssl for rediss://; libpq).
	 */
	if (tk_store_validate(s->spec, why, sizeof(why)) != rc)
		why[0] = '\0';
	return apr_psprintf(cmd->pool, "ThrottleStore %s: %s: %s%s%s%s",
			    s->name, s->shown, tk_strerror(rc),
			    why[0] ? " (" : "", why, why[0] ? ")" : "");
}

/*
 * Two tiers (shm:NAME+redis://...): parsed only, for opening would create
 * the zone in the parent, as its user; each child opens it (and the first
 * creates the zone, as User).
 */
static const char *tier_spec(cmd_parms *cmd, struct tk_mod_store *s)
{
	char why[256];
	int rc = tk_store_validate(s->spec, why, sizeof(why));

	if (rc == 0)
		return NULL;
	return apr_psprintf(cmd->pool, "ThrottleStore %s: %s: %s (%s)", s->name,
			    s->shown, tk_strerror(rc), why);
}

static const char *store_spec(cmd_parms *cmd, struct tk_mod_store *s)
{
	char why[256];
	int rc;

	s->shown = shown_spec(cmd->pool, s->spec);
	/* No zone's name holds "+redis://" or the like (tk_store_open(3)). */
	if (strncmp(s->spec, "shm:", 4) == 0 && strstr(s->spec, "+redis") &&
	    tk_zone_access(s->spec + 4, NULL, NULL, 0) == -EINVAL)
		return tier_spec(cmd, s);
	if (strncmp(s->spec, "redis", 5) == 0 ||
	    strncmp(s->spec, "postgresql://", 13) == 0)
		return server_spec(cmd, s);
	if (strcmp(s->spec, "memory") == 0)
		return apr_psprintf(cmd->pool,
				    "ThrottleStore %s: a memory store would "
				    "count in each child alone; use shm:NAME, "
				    "redis://... or postgresql://...",
				    s->name);
	if (strncmp(s->spec, "shm:", 4) != 0)
		return apr_psprintf(cmd->pool,
				    "ThrottleStore %s: unknown store spec "
				    "\"%s\" (expected shm:NAME, redis://..., "
				    "redis+unix://... or postgresql://...)",
				    s->name, s->shown);
	s->zone = s->spec + 4;
	/* Refuses a bad name (or a file that is no zone) without creating
	 * anything; any other answer is for post_config to judge. */
	rc = tk_zone_access(s->zone, NULL, why, sizeof(why));
	if (rc == -EINVAL)
		return apr_psprintf(cmd->pool, "ThrottleStore %s: %s: %s",
				    s->name, s->shown, why);
	return NULL;
}

/* owner=USER, group=GROUP: NULL if @w is neither, "" once set. */
static const char *ownership(cmd_parms *cmd, struct tk_mod_store *s,
			     const char *w)
{
	const char *u = option(w, "owner"), *g = option(w, "group");
	apr_gid_t unused;
	apr_status_t rv;

	if (!u && !g)
		return NULL;
	rv = u ? apr_uid_get(&s->owner, &unused, u, cmd->temp_pool)
	       : apr_gid_get(&s->group, g, cmd->temp_pool);
	if (!*(u ? u : g) || rv != APR_SUCCESS)
		return apr_psprintf(cmd->pool,
				    "ThrottleStore %s: %s: no such %s", s->name,
				    w, u ? "user" : "group");
	*(u ? &s->has_owner : &s->has_group) = 1;
	return "";
}

static const char *store_option(cmd_parms *cmd, void *obj, const char *w)
{
	struct tk_mod_store *s = obj;
	const char *v, *err;
	char *end;
	unsigned long m;

	if (!s->zone && (option(w, "capacity") || option(w, "mode") ||
			 option(w, "owner") || option(w, "group")))
		return apr_psprintf(cmd->pool,
				    "ThrottleStore %s: %s is for a zone "
				    "(shm:NAME), not a server's store",
				    s->name, w);
	if ((err = ownership(cmd, s, w)) != NULL)
		return *err ? err : NULL;
	if ((v = option(w, "capacity")) != NULL) {
		if ((err = parse_u64(v, &s->capacity)) != NULL ||
		    s->capacity < 64 || s->capacity > (UINT64_C(1) << 32) ||
		    (s->capacity & (s->capacity - 1)))
			return apr_psprintf(cmd->pool,
					    "ThrottleStore %s: capacity=%s: "
					    "expected a power of two from 64 "
					    "to 4294967296",
					    s->name, v);
		return NULL;
	}
	if ((v = option(w, "mode")) != NULL) {
		m = strtoul(v, &end, 8);
		if (!*v || *end || m > 0777 || (m & 0002) || !(m & 0600))
			return apr_psprintf(cmd->pool,
					    "ThrottleStore %s: mode=%s: "
					    "expected an octal file mode, "
					    "readable and writable by its "
					    "owner and not writable by others",
					    s->name, v);
		s->mode = (unsigned int)m;
		return NULL;
	}
	return apr_psprintf(cmd->pool, "ThrottleStore %s: unknown option %s",
			    s->name, w);
}

static const char *cmd_store(cmd_parms *cmd, void *dummy, const char *args)
{
	struct tk_mod_store *s;
	const char *err;

	(void)dummy;
	s = apr_pcalloc(cmd->pool, sizeof(*s));
	if ((err = declaration(cmd,
			       "ThrottleStore: expected NAME SPEC "
			       "[capacity=N] [mode=OCTAL] [owner=USER] "
			       "[group=GROUP]",
			       &args, &s->name, &s->spec, store_taken)) ||
	    (err = store_spec(cmd, s)) ||
	    (err = options(cmd, &args, s, store_option)))
		return err;
	s->file = cmd->directive->filename;
	s->line = cmd->directive->line_num;
	s->index = registry->stores->nelts;
	APR_ARRAY_PUSH(registry->stores, struct tk_mod_store *) = s;
	return NULL;
}

/*
 * ThrottleZoneDir DIR: where the zones of shm:NAME stores are.  Absolute,
 * so that the library (which follows no link) and throttlectl name the
 * same files; checked when the server starts (check_config).
 */
static const char *cmd_zone_dir(cmd_parms *cmd, void *dummy, const char *arg)
{
	const char *err;

	(void)dummy;
	if ((err = ap_check_cmd_context(cmd, GLOBAL_ONLY)) != NULL)
		return err;
	if (registry->zone_dir)
		return "ThrottleZoneDir: given twice";
	if (arg[0] != '/' || strlen(arg) < 2 || arg[strlen(arg) - 1] == '/')
		return apr_psprintf(cmd->pool,
				    "ThrottleZoneDir %s: expected an absolute "
				    "directory, without a trailing /",
				    arg);
	registry->zone_dir = arg;
	return NULL;
}

static apr_status_t policy_cleanup(void *p)
{
	tk_policy_free(p);
	return APR_SUCCESS;
}

static const char *rule_policy(cmd_parms *cmd, struct tk_mod_rule *r)
{
	struct tk_policy_info info;
	struct tk_parse_error pe;
	size_t i;
	int rc, n;

	memset(&pe, 0, sizeof(pe));
	rc = tk_policy_parse(&r->policy, r->policy_text, &pe);
	if (rc == -EINVAL)
		return apr_psprintf(cmd->pool,
				    "ThrottleRule %s: bad policy \"%s\": %s",
				    r->name, r->policy_text, pe.message);
	if (rc)
		return apr_psprintf(cmd->pool, "ThrottleRule %s: %s", r->name,
				    tk_strerror(rc));
	apr_pool_cleanup_register(cmd->pool, r->policy, policy_cleanup,
				  apr_pool_cleanup_null);
	n = tk_policy_format(r->policy, NULL, 0);
	if (n < 0)
		return apr_psprintf(cmd->pool, "ThrottleRule %s: %s", r->name,
				    tk_strerror(n));
	r->canonical = apr_palloc(cmd->pool, (apr_size_t)n + 1);
	tk_policy_format(r->policy, r->canonical, (size_t)n + 1);
	r->dims = tk_policy_dimensions(r->policy);
	for (i = 0; i < r->dims; i++) {
		tk_policy_info(r->policy, i, &info, sizeof(info));
		if (info.shaper && r->dims > 1)
			return apr_psprintf(
				cmd->pool,
				"ThrottleRule %s: a shaper (leaky:) "
				"must be a rule's whole policy",
				r->name);
		r->leaky = info.shaper;
		r->composite_any = strcmp(info.composite, "any") == 0;
		/* The key prefix names the algorithm (child_init). */
		r->algorithm = apr_pstrdup(cmd->pool, info.composite[0]
							      ? info.composite
							      : info.algorithm);
	}
	return NULL;
}

/* "count=S[,S...]": HTTP statuses, 100 to 599. */
static const char *parse_count(cmd_parms *cmd, struct tk_mod_rule *r,
			       const char *v)
{
	const char *p = v;
	uint64_t st;
	char *word;

	r->count = apr_pcalloc(cmd->pool, 600);
	while (*p) {
		word = ap_getword(cmd->temp_pool, &p, ',');
		if (parse_u64(word, &st) != NULL || st < 100 || st > 599)
			return "expected HTTP statuses, as count=401,403";
		r->count[st] = 1;
	}
	return NULL;
}

static const char *rule_option(cmd_parms *cmd, void *obj, const char *w)
{
	struct tk_mod_rule *r = obj;
	const char *v, *err = NULL;
	uint64_t ns;

	if ((v = option(w, "store")) != NULL) {
		if ((r->store = find_store(v)) == NULL)
			err = "no ThrottleStore of that name before this line";
	} else if ((v = option(w, "key")) != NULL) {
		r->key_text = v;
		r->key = ap_expr_parse_cmd(cmd, v,
					   AP_EXPR_FLAG_STRING_RESULT |
						   AP_EXPR_FLAG_DONT_VARY,
					   &err, NULL);
	} else if ((v = option(w, "status")) != NULL) {
		if (strcmp(v, "429") == 0)
			r->status = HTTP_TOO_MANY_REQUESTS;
		else if (strcmp(v, "503") == 0)
			r->status = HTTP_SERVICE_UNAVAILABLE;
		else
			err = "expected 429 or 503";
	} else if ((v = option(w, "headers")) != NULL) {
		r->headers_on_success = 1;
		if (strcmp(v, "ietf") == 0)
			r->headers = TK_HTTP_IETF;
		else if (strcmp(v, "legacy") == 0)
			r->headers = TK_HTTP_LEGACY;
		else if (strcmp(v, "both") == 0)
			r->headers = TK_HTTP_IETF | TK_HTTP_LEGACY;
		else if (strcmp(v, "none") == 0)
			r->headers = 0;
		else
			err = "expected ietf, legacy, both or none";
	} else if ((v = option(w, "fail")) != NULL) {
		/* A request is never answered with the store's error. */
		if (tk_fail_parse(v, strlen(v), &r->fail) != 0 ||
		    r->fail == TK_FAIL_ERROR) {
			r->fail = TK_FAIL_OPEN;
			err = "expected open or closed";
		}
	} else if ((v = option(w, "delay")) != NULL) {
		/* The policy's own syntax: "1m" is a minute in both. */
		if (tk_duration_parse(v, strlen(v), &ns) != 0 || ns == 0 ||
		    ns / 1000 > (uint64_t)APR_INT64_MAX - 1)
			err = "expected a positive duration as policies "
			      "write one (e.g. 500ms, 2s, 1m)";
		else
			r->delay = (apr_interval_time_t)((ns + 999) / 1000);
	} else if ((v = option(w, "count")) != NULL) {
		err = parse_count(cmd, r, v);
	} else if ((v = option(w, "phase")) != NULL) {
		if (strcmp(v, "early") == 0)
			r->late = 0;
		else if (strcmp(v, "late") == 0)
			r->late = 1;
		else
			err = "expected early or late";
		r->phase_set = 1;
	} else if (strcmp(w, "dry-run") == 0) {
		r->dry_run = 1;
	} else {
		return apr_psprintf(cmd->pool,
				    "ThrottleRule %s: unknown "
				    "option %s",
				    r->name, w);
	}
	if (err)
		return apr_psprintf(cmd->pool, "ThrottleRule %s: %s: %s",
				    r->name, w, err);
	return NULL;
}

/*
 * Whether a key expression reads what access control and authentication
 * set: the user (REMOTE_USER), the scheme (AUTH_TYPE), notes and the
 * request's environment (auth modules publish there, e.g. AUTHENTICATE_*
 * of mod_authnz_ldap), which header_parser would see empty or unset.
 * A plain scan of the text: a false match only checks the rule later.
 */
static int key_needs_auth(const char *text)
{
	static const char *const words[] = { "REMOTE_USER", "AUTH_TYPE",
					     "%{ENV:", "note", "env" };
	size_t i, n;
	const char *p;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		n = strlen(words[i]);
		for (p = text; *p; p++) {
			if (strncasecmp(p, words[i], n) != 0)
				continue;
			if (words[i][0] == '%' || apr_isupper(words[i][0]))
				return 1;
			/* A function: note(...), env(...), reqenv(...). */
			p += n;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '(' || *p == '\'' || *p == '"')
				return 1;
			p--;
		}
	}
	return 0;
}

/* Defaults, and the checks that need all of a rule's options. */
static const char *rule_finish(cmd_parms *cmd, struct tk_mod_rule *r)
{
	if (!r->phase_set && r->key_text)
		r->late = key_needs_auth(r->key_text);
	if (!r->store) {
		if (registry->stores->nelts != 1)
			return apr_psprintf(cmd->pool,
					    "ThrottleRule %s: store=NAME is "
					    "needed unless exactly one "
					    "ThrottleStore comes before",
					    r->name);
		r->store = APR_ARRAY_IDX(registry->stores, 0,
					 struct tk_mod_store *);
	}
	if (r->leaky && !r->delay)
		return apr_psprintf(cmd->pool,
				    "ThrottleRule %s: a shaper (leaky:) "
				    "delays requests: give delay=DURATION, the "
				    "longest a request may wait",
				    r->name);
	if (r->count && (r->leaky || r->dims != 1))
		return apr_psprintf(cmd->pool,
				    "ThrottleRule %s: count= needs a simple "
				    "policy that is no shaper",
				    r->name);
	if (!r->leaky && r->delay)
		return apr_psprintf(cmd->pool,
				    "ThrottleRule %s: delay= needs a shaper "
				    "policy (leaky:R/P,max-queue=Q)",
				    r->name);
	return NULL;
}

static const char *cmd_rule(cmd_parms *cmd, void *dummy, const char *args)
{
	struct tk_mod_rule *r;
	const char *err;

	(void)dummy;
	r = apr_pcalloc(cmd->pool, sizeof(*r));
	r->status = HTTP_TOO_MANY_REQUESTS;
	r->headers = TK_HTTP_IETF;
	r->fail = TK_FAIL_OPEN;
	if ((err = declaration(cmd,
			       "ThrottleRule: expected NAME POLICY "
			       "[store=NAME] [key=EXPR] [status=429|503] "
			       "[headers=ietf|legacy|both|none] "
			       "[fail=open|closed] [dry-run] [delay=DURATION] "
			       "[phase=early|late] [count=STATUS,...]",
			       &args, &r->name, &r->policy_text, rule_taken)) ||
	    (err = rule_policy(cmd, r)) ||
	    (err = options(cmd, &args, r, rule_option)) ||
	    (err = rule_finish(cmd, r)))
		return err;
	r->file = cmd->directive->filename;
	r->line = cmd->directive->line_num;
	r->index = registry->rules->nelts;
	APR_ARRAY_PUSH(registry->rules, struct tk_mod_rule *) = r;
	return NULL;
}

/*
 * Rules checked in one call (same store, both enforced or both dry-run)
 * must fit tk_limiter_check_group(): no any() beside another rule, at most
 * TK_GROUP_DIMENSIONS_MAX dimensions together.
 */
static const char *check_groups(cmd_parms *cmd, apr_array_header_t *rules)
{
	int i, j;

	for (i = 0; i < rules->nelts; i++) {
		struct tk_mod_rule *a =
			APR_ARRAY_IDX(rules, i, struct tk_mod_rule *);
		size_t dims = a->dims, n = 1;
		int any = a->composite_any;

		for (j = 0; j < rules->nelts; j++) {
			struct tk_mod_rule *b =
				APR_ARRAY_IDX(rules, j, struct tk_mod_rule *);
			if (j == i || b->store != a->store ||
			    b->dry_run != a->dry_run || a->count || b->count)
				continue;
			dims += b->dims;
			n++;
			any |= b->composite_any;
		}
		if (n > 1 && any)
			return apr_psprintf(cmd->pool,
					    "Throttle: an any() rule cannot be "
					    "checked together with other rules "
					    "of store %s",
					    a->store->name);
		if (dims > TK_GROUP_DIMENSIONS_MAX)
			return apr_psprintf(cmd->pool,
					    "Throttle: the rules of store %s "
					    "have %lu dimensions together, at "
					    "most %d are checked at once",
					    a->store->name, (unsigned long)dims,
					    TK_GROUP_DIMENSIONS_MAX);
	}
	return NULL;
}

/* Marks the rules of @rules that are checked together with another. */
static void mark_grouped(apr_array_header_t *rules)
{
	int i, j;

	for (i = 0; i < rules->nelts; i++) {
		struct tk_mod_rule *a =
			APR_ARRAY_IDX(rules, i, struct tk_mod_rule *);

		for (j = 0; j < rules->nelts; j++) {
			struct tk_mod_rule *b =
				APR_ARRAY_IDX(rules, j, struct tk_mod_rule *);

			if (j != i && b->store == a->store &&
			    b->dry_run == a->dry_run && !a->count && !b->count)
				a->grouped = 1;
		}
	}
}

static const char *cmd_throttle(cmd_parms *cmd, void *conf, const char *args)
{
	struct tk_mod_dir *d = conf;
	const char *w, *err;
	int i;

	d->rules = apr_array_make(cmd->pool, 2, sizeof(void *));
	w = ap_getword_conf(cmd->pool, &args);
	if (!*w)
		return "Throttle: expected RULE [RULE...] or off";
	if (strcasecmp(w, "off") == 0) {
		if (*args)
			return "Throttle off: takes no rules";
		return NULL;
	}
	for (; *w; w = ap_getword_conf(cmd->pool, &args)) {
		struct tk_mod_rule *r = find_rule(w);

		if (!r)
			return apr_psprintf(cmd->pool,
					    "Throttle: no ThrottleRule %s "
					    "(rules must be declared before "
					    "Throttle names them)",
					    w);
		for (i = 0; i < d->rules->nelts; i++)
			if (APR_ARRAY_IDX(d->rules, i, struct tk_mod_rule *) ==
			    r)
				return apr_psprintf(cmd->pool,
						    "Throttle: rule %s named "
						    "twice",
						    w);
		APR_ARRAY_PUSH(d->rules, struct tk_mod_rule *) = r;
	}
	if ((err = check_groups(cmd, d->rules)) != NULL)
		return err;
	/* A .htaccess is read by a child serving requests, whose threads
	 * read the flags: only the server configuration sets them, and a
	 * rule a .htaccess names beside another is then checked apart. */
	if (ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_RUN_MPM)
		mark_grouped(d->rules);
	return NULL;
}

void *tk_mod_dir_create(apr_pool_t *p, char *dir)
{
	(void)dir;
	return apr_pcalloc(p, sizeof(struct tk_mod_dir));
}

/* A Throttle replaces the rules inherited from enclosing sections. */
void *tk_mod_dir_merge(apr_pool_t *p, void *base, void *add)
{
	struct tk_mod_dir *b = base, *a = add;
	struct tk_mod_dir *m = apr_pcalloc(p, sizeof(*m));

	m->rules = a->rules ? a->rules : b->rules;
	return m;
}

const command_rec tk_mod_cmds[] = {
	AP_INIT_RAW_ARGS("ThrottleStore", cmd_store, NULL, RSRC_CONF,
			 "NAME SPEC [capacity=N] [mode=OCTAL] [owner=USER] "
			 "[group=GROUP]: a store shared by all children "
			 "(shm:ZONE, shm:/PATH, redis://..., "
			 "postgresql://...)"),
	AP_INIT_TAKE1("ThrottleZoneDir", cmd_zone_dir, NULL, RSRC_CONF,
		      "DIR: the server's own directory of zones (default: "
		      "throttlekit in DefaultRuntimeDir)"),
	AP_INIT_RAW_ARGS("ThrottleRule", cmd_rule, NULL, RSRC_CONF,
			 "NAME POLICY [store=NAME] [key=EXPR] [status=429|503] "
			 "[headers=ietf|legacy|both|none] [fail=open|closed] "
			 "[dry-run] [delay=DURATION] [phase=early|late] "
			 "[count=STATUS,...]"),
	/*
	 * No override class: many sites grant AllowOverride Limit for
	 * Order and Allow, and a .htaccess must not switch limits off
	 * with it.  AllowOverrideList Throttle is the one way in.
	 */
	AP_INIT_RAW_ARGS("Throttle", cmd_throttle, NULL,
			 RSRC_CONF | ACCESS_CONF,
			 "RULE [RULE...] | off: the rules requests here must "
			 "all pass"),
	{ NULL }
};
