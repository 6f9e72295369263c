/*
 * store-redis.c - the Redis store: state on a Redis server, shared by
 * every host that opens the same spec.
 *
 * A check is one script on the server (EVALSHA of redis-check.lua, loaded
 * with SCRIPT LOAD on first use and again whenever the server answers
 * NOSCRIPT: after a restart, a failover or SCRIPT FLUSH).  The script
 * reads the key's state, decides admission with exact integer arithmetic,
 * writes the new state with a TTL (its expiry plus the grace) and returns
 * the state it read.  The client then runs the algorithm itself on that
 * state: it fills the decision, and it must reach the same verdict and
 * the same new state as the script, or the call fails with -EPROTO; so a
 * Redis decision is the memory store's, bit for bit, by construction.
 *
 * A peek or forecast is a plain GET.  A state is a string of decimal
 * fields, the algorithm's id first (redis-scripts.c): one of another
 * algorithm answers -EPROTO, as on the local stores.
 *
 * Supported so far: single gcra, token-bucket, leaky and fixed-window
 * policies
 * (supports() refuses the rest at tk_limiter_open() with -ENOTSUP), no
 * multi-key steps (composites, groups: -ENOTSUP), no server_time=1.
 */
#include "internal.h"
#include "redis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

/* ns, as the memory store. */
#define DEFAULT_GRACE (UINT64_C(60) * 1000000000)
#define KEY_MAX (TK__REDIS_KEY_PREFIX_MAX + 3 + TK_PREFIX_MAX + 1 + TK_KEY_MAX)

struct redis_store {
	struct tk_store base;
	struct tk__redis_spec spec;
	struct tk__redis_pool pool;
	char grace[24]; /* ns, decimal */
};

/* The Redis key: the spec's key_prefix, then the limiter's key bytes. */
static int redis_key(const struct redis_store *s, const unsigned char *key,
		     size_t len, char *buf, size_t *out)
{
	if (len > KEY_MAX - s->spec.key_prefix_len)
		return -ENAMETOOLONG;
	memcpy(buf, s->spec.key_prefix, s->spec.key_prefix_len);
	memcpy(buf + s->spec.key_prefix_len, key, len);
	*out = s->spec.key_prefix_len + len;
	return 0;
}

/* A reply's state: NULL (none) or @words; -EPROTO if not one of @p's. */
static int old_state(const redisReply *r, const struct tk__policy *p,
		     uint64_t *words, const uint64_t **old)
{
	*old = NULL;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	*old = words;
	if (r->type != REDIS_REPLY_STRING)
		return -EPROTO;
	return tk__redis_decode(p, r->str, r->len, words);
}

static int load_script(struct tk__redis_conn *c)
{
	const char *argv[3] = { "SCRIPT", "LOAD", tk__redis_check_lua };
	size_t lens[3] = { 6, 4, strlen(tk__redis_check_lua) };
	redisReply *r;
	int rc;

	rc = tk__redis_command(c, 3, argv, lens, (void **)&r);
	if (rc)
		return rc;
	if (r->type != REDIS_REPLY_STRING || r->len != 40) {
		tk__redis_reply_free(r);
		return -EPROTO;
	}
	memcpy(tk__redis_conn_sha(c), r->str, 40);
	tk__redis_conn_sha(c)[40] = '\0';
	tk__redis_reply_free(r);
	return 0;
}

/* EVALSHA, loading the script first if this server lacks it. */
static int eval_check(struct tk__redis_conn *c, const char **argv, size_t *lens,
		      int argc, redisReply **r)
{
	int rc = 0, tries;

	for (tries = 0; tries < 2; tries++) {
		if (!tk__redis_conn_sha(c)[0])
			rc = load_script(c);
		if (rc)
			return rc;
		argv[1] = tk__redis_conn_sha(c);
		lens[1] = 40;
		rc = tk__redis_command(c, argc, argv, lens, (void **)r);
		if (rc != -ENOENT)
			return rc;
		tk__redis_conn_sha(c)[0] = '\0'; /* NOSCRIPT */
	}
	return -EPROTO;
}

static int forecast(struct tk__redis_conn *c, const char *key, size_t klen,
		    const struct tk__transform *t)
{
	const char *argv[2] = { "GET", key };
	size_t lens[2] = { 3, klen };
	uint64_t words[2], next[2], expires;
	const uint64_t *old;
	redisReply *r;
	int rc;

	rc = tk__redis_command(c, 2, argv, lens, (void **)&r);
	if (rc)
		return rc;
	rc = old_state(r, t->policy, words, &old);
	tk__redis_reply_free(r);
	return rc ? rc : t->fn(t->ctx, old, next, &expires);
}

/* The script's verdict, checked against the algorithm's own. */
static int verdict(const redisReply *r, const struct tk__transform *t)
{
	uint64_t words[2], made[2], next[2], expires;
	const redisReply *e;
	const uint64_t *old;
	int rc, admitted;

	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[1]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	admitted = r->element[1]->integer == 1;
	if (r->elements != (admitted ? 3u : 2u))
		return -EPROTO;
	rc = old_state(r->element[0], t->policy, words, &old);
	e = admitted ? r->element[2] : NULL;
	if (rc == 0 && e)
		rc = e->type == REDIS_REPLY_STRING
			     ? tk__redis_decode(t->policy, e->str, e->len, made)
			     : -EPROTO;
	if (rc)
		return rc;
	rc = t->fn(t->ctx, old, next, &expires);
	if (rc < 0)
		return rc;
	if ((rc == TK__PERSIST) != admitted ||
	    (admitted && memcmp(next, made, t->words * sizeof(next[0]))))
		return -EPROTO;
	return rc;
}

static int check(struct redis_store *s, struct tk__redis_conn *c,
		 const char *key, size_t klen, uint64_t now,
		 const struct tk__transform *t)
{
	char alg[12], now_s[24], args[4][24];
	const char *argv[11];
	size_t lens[11];
	uint64_t next[2], expires;
	redisReply *r;
	int rc, i;

	/* What no state could change (-ERANGE) costs no round trip. */
	rc = t->fn(t->ctx, NULL, next, &expires);
	if (rc < 0)
		return rc;
	rc = tk__redis_check_args(t->policy, now, t->cost, args);
	if (rc)
		return rc;
	snprintf(alg, sizeof(alg), "%u", t->alg);
	snprintf(now_s, sizeof(now_s), "%llu", (unsigned long long)now);
	argv[0] = "EVALSHA";
	argv[2] = "1";
	argv[3] = key;
	lens[3] = klen;
	argv[4] = alg;
	argv[5] = now_s;
	argv[6] = s->grace;
	for (i = 0; i < 4; i++)
		argv[7 + i] = args[i];
	for (i = 0; i < 11; i++)
		if (i != 1 && i != 3)
			lens[i] = strlen(argv[i]);
	rc = eval_check(c, argv, lens, 11, &r);
	if (rc)
		return rc;
	rc = verdict(r, t);
	tk__redis_reply_free(r);
	return rc;
}

static int redis_apply(struct tk_store *base, const unsigned char *key,
		       size_t len, uint64_t now, const struct tk__transform *t)
{
	struct redis_store *s = (struct redis_store *)base;
	struct tk__redis_conn *c;
	char buf[KEY_MAX];
	size_t klen;
	int rc;

	if (!t->policy || !tk__redis_supported(t->policy) || t->words > 2)
		return -ENOTSUP;
	rc = redis_key(s, key, len, buf, &klen);
	if (rc == 0)
		rc = tk__redis_conn_get(&s->pool, &c);
	if (rc)
		return rc;
	return t->flags & TK__T_CHECK ? check(s, c, buf, klen, now, t)
				      : forecast(c, buf, klen, t);
}

/* Composites and groups are not on Redis yet. */
static int redis_apply_multi(struct tk_store *base, uint64_t now,
			     const struct tk__multi *m)
{
	(void)base;
	(void)now;
	(void)m;
	return -ENOTSUP;
}

static int redis_reset(struct tk_store *base, const unsigned char *key,
		       size_t len)
{
	struct redis_store *s = (struct redis_store *)base;
	struct tk__redis_conn *c;
	const char *argv[2] = { "DEL", NULL };
	size_t lens[2] = { 3, 0 };
	char buf[KEY_MAX];
	redisReply *r;
	int rc;

	rc = redis_key(s, key, len, buf, &lens[1]);
	if (rc == 0)
		rc = tk__redis_conn_get(&s->pool, &c);
	argv[1] = buf;
	if (rc == 0)
		rc = tk__redis_command(c, 2, argv, lens, (void **)&r);
	if (rc == 0)
		tk__redis_reply_free(r);
	return rc;
}

/* The server keeps the keys; this process counts nothing of them yet. */
static void redis_stats(struct tk_store *base, struct tk_stats *out)
{
	(void)base;
	(void)out;
}

static int redis_supports(struct tk_store *base, const struct tk_policy *p)
{
	(void)base;
	return p->kind == TK__SINGLE && tk__redis_supported(&p->dim[0])
		       ? 0
		       : -ENOTSUP;
}

static void redis_close(struct tk_store *base)
{
	struct redis_store *s = (struct redis_store *)base;

	tk__redis_pool_destroy(&s->pool);
	/* The password is not left in freed memory. */
	memset(&s->spec, 0, sizeof(s->spec));
	free(s);
}

static const struct tk__store_ops redis_ops = {
	.name = "redis",
	.apply = redis_apply,
	.apply_multi = redis_apply_multi,
	.reset = redis_reset,
	.stats = redis_stats,
	.supports = redis_supports,
	.close = redis_close,
};

int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o)
{
	struct redis_store *s;
	char why[128];
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = tk__redis_spec_parse(spec, &s->spec, why, sizeof(why));
	/* The server's clock cannot be followed yet: see the man page. */
	if (rc == 0 && s->spec.server_time)
		rc = -ENOTSUP;
	if (rc == 0)
		rc = tk__redis_pool_init(&s->pool, &s->spec);
	if (rc) {
		memset(&s->spec, 0, sizeof(s->spec));
		free(s);
		return rc;
	}
	s->base.ops = &redis_ops;
	s->base.clock = o->clock ? o->clock : tk_clock_system();
	snprintf(s->grace, sizeof(s->grace), "%llu",
		 (unsigned long long)(o->reclaim_grace ? o->reclaim_grace
						       : DEFAULT_GRACE));
	*out = &s->base;
	return 0;
}
