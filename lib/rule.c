/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rule.c - the rule directory from the library's side: a limiter's
 * registration (tk_options.rule), the list operators read
 * (tk_zone_rules()) and the reset of one client of a rule by what an
 * operator knows (tk_zone_reset_client()): the rule's name and the
 * client's address or key, the rest composed as the rule's binding
 * composes it.
 */
#include "error.h"
#include "options.h"
#include "rule.h"
#include "../shm/rules.h"
#include "../shm/zone.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy @src into @dst of @size bytes: -ENAMETOOLONG if it does not fit. */
static int copy(char *dst, size_t size, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src ? src : "", n + 1);
	return 0;
}

static int rule_of(const struct tk_options *o, const struct tk_policy *p,
		   struct tk__rule *r)
{
	int rc, n;

	memset(r, 0, sizeof(*r));
	if (!o->rule[0] || o->rule_v6_prefix > 128 || o->rule_v4_prefix > 32)
		return -EINVAL;
	rc = copy(r->name, sizeof(r->name), o->rule);
	rc = rc ?: copy(r->prefix, sizeof(r->prefix), o->prefix);
	rc = rc ?: copy(r->addr, sizeof(r->addr), o->rule_address);
	rc = rc ?: copy(r->key, sizeof(r->key), o->rule_key);
	if (rc)
		return rc;
	n = tk_policy_format(p, r->policy, sizeof(r->policy));
	if (n < 0 || (size_t)n >= sizeof(r->policy))
		return n < 0 ? n : -ENAMETOOLONG;
	r->flags = (o->rule_address ? TKZ_RULE_ADDRESS : 0) |
		   (o->rule_key ? TKZ_RULE_KEY : 0);
	r->v6 = o->rule_v6_prefix ? o->rule_v6_prefix : 64;
	r->v4 = o->rule_v4_prefix ? o->rule_v4_prefix : 32;
	return 0;
}

int tk__rule_register(struct tk_store *s, const struct tk_options *o,
		      const struct tk_policy *p)
{
	struct tk__rule r;
	int rc;

	if (!o->rule)
		return 0;
	rc = rule_of(o, p, &r);
	if (rc || !s->ops->rule_register)
		return rc;
	rc = s->ops->rule_register(s, &r);
	/* Only the caller's errors fail the open; a full or busy directory
	 * leaves the rule uncounted. */
	return rc >= 0 ? rc + 1 : rc == -ENAMETOOLONG ? rc : 0;
}

struct rules_call {
	struct tk__zone *z;
	int (*fn)(void *ctx, const struct tk_zone_rule *r);
	void *ctx;
};

static void public_of(const struct tk__rule *in, struct tk_zone_rule *out)
{
	memset(out, 0, sizeof(*out));
	strcpy(out->name, in->name);
	strcpy(out->policy, in->policy);
	strcpy(out->prefix, in->prefix);
	strcpy(out->address, in->addr);
	strcpy(out->key, in->key);
	out->has_address = !!(in->flags & TKZ_RULE_ADDRESS);
	out->has_key = !!(in->flags & TKZ_RULE_KEY);
	out->v6_prefix = in->v6;
	out->v4_prefix = in->v4;
	out->checks = in->checks;
	out->denies = in->denies;
}

_Static_assert(sizeof(((struct tk_zone_rule *)0)->policy) ==
			       TKZ_RULE_POLICY_MAX + 1 &&
		       sizeof(((struct tk_zone_rule *)0)->name) ==
			       TKZ_RULE_NAME_MAX + 1 &&
		       sizeof(((struct tk_zone_rule *)0)->key) ==
			       TKZ_RULE_TAG_MAX + 1,
	       "the public rule holds an entry's text");

static int each_rule(void *ctx)
{
	struct rules_call *c = ctx;
	struct tk_zone_rule pub;
	struct tk__rule r;
	unsigned int i;
	int rc;

	for (i = 0; i < TKZ_RULES; i++) {
		if (tk__rules_read(c->z, i, &r) != 0)
			continue;
		public_of(&r, &pub);
		rc = c->fn(c->ctx, &pub);
		if (rc)
			return rc;
	}
	return 0;
}

TK_API int tk_zone_rules(const char *name, const struct tk_options *opts,
			 int (*fn)(void *ctx, const struct tk_zone_rule *r),
			 void *ctx)
{
	struct rules_call c = { NULL, fn, ctx };
	int rc;

	if (!fn)
		return -EINVAL;
	rc = tk__zone_attach_admin(&c.z, name, opts);
	if (rc)
		return tk__rc(rc);
	rc = tk__zone_run(c.z, each_rule, &c);
	tk__zone_detach(c.z);
	/* @fn's own non-zero result passes as it is. */
	return rc;
}

struct find_call {
	const char *name;
	struct tk_zone_rule *out;
	int found;
};

static int find_rule(void *ctx, const struct tk_zone_rule *r)
{
	struct find_call *f = ctx;

	if (strcmp(r->name, f->name) != 0)
		return 0;
	*f->out = *r;
	f->found = 1;
	return 1;
}

/* Reset @key under @policy (and prefix) of rule @r on zone @name. */
static int reset_under(const char *name, const struct tk_options *opts,
		       const struct tk_zone_rule *r, const char *policy,
		       const char *key)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	char *spec;
	int rc;

	if (opts)
		tk__options_read(&o, opts);
	o.prefix = r->prefix;
	o.rule = NULL;
	o.store = NULL;
	o.fail = TK_FAIL_ERROR;
	o.flags |= TK_OPT_ZONE_NO_CREATE;
	spec = malloc(strlen(name) + sizeof("shm:"));
	if (!spec)
		return -ENOMEM;
	sprintf(spec, "shm:%s", name);
	rc = tk_limiter_open(&l, policy, spec, &o);
	free(spec);
	if (rc)
		return rc;
	rc = tk_limiter_reset(l, key, strlen(key));
	tk_limiter_close(l);
	return rc;
}

/*
 * Reset @key of rule @r: the states of its own checks, and, for a simple
 * policy, those a group check keeps (a dimension's key, as all() keeps
 * it: tk_limiter_check_group()).
 */
static int reset_key(const char *name, const struct tk_options *opts,
		     const struct tk_zone_rule *r, const char *key)
{
	char group[2 * sizeof(r->policy) + 8];
	struct tk_policy *p;
	int rc, simple;

	rc = tk_policy_parse(&p, r->policy, NULL);
	if (rc)
		return -EPROTO; /* the zone holds a policy we cannot read */
	simple = tk_policy_dimensions(p) == 1;
	tk_policy_free(p);
	rc = reset_under(name, opts, r, r->policy, key);
	if (rc == 0 && simple) {
		snprintf(group, sizeof(group), "all(%s,%s)", r->policy,
			 r->policy);
		rc = reset_under(name, opts, r, group, key);
	}
	return rc;
}

TK_API int tk_zone_reset_client(const char *name, const struct tk_options *opts,
				const char *rule, const char *client)
{
	struct tk_zone_rule r;
	struct find_call f = { rule, &r, 0 };
	char net[64], key[TK_KEY_MAX + sizeof(r.key) + 1];
	int rc, n = 0, addr;

	if (!name || !rule || !client || !*client)
		return -EINVAL;
	rc = tk_zone_rules(name, opts, find_rule, &f);
	if (rc < 0)
		return rc;
	if (!f.found)
		return -ESRCH;
	rc = 0;
	addr = r.has_address && tk_client_key(client, r.v6_prefix, r.v4_prefix,
					      net, sizeof(net)) > 0;
	if (!addr && !r.has_key)
		return -EINVAL;
	if (addr) {
		snprintf(key, sizeof(key), "%s%s", r.address, net);
		rc = reset_key(name, opts, &r, key);
		n++;
	}
	if (rc == 0 && r.has_key) {
		if (strlen(r.key) + strlen(client) > TK_KEY_MAX)
			return -ENAMETOOLONG;
		snprintf(key, sizeof(key), "%s%s", r.key, client);
		rc = reset_key(name, opts, &r, key);
		n++;
	}
	return rc ? tk__rc(rc) : n;
}
