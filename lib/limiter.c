/*
 * limiter.c - the front door: policy + store + clock + key prefix.
 *
 * The limiter reads the clock exactly once per call (a batch included),
 * joins prefix and key in the one place that does so, and hands the
 * store a pure transition built from the policy.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tk_limiter {
	struct tk__policy policy;
	struct tk_store *store;
	struct tk_clock *clock;
	int owns_store;
	size_t prefix_len;
	char prefix[TK_PREFIX_MAX];
};

/*
 * The store key is [prefix length: 2 bytes][prefix][key], so that no two
 * (prefix, key) pairs can produce the same bytes ("a" + "b:c" differs from
 * "a:b" + "c").
 */
#define TK__STORE_KEY_MAX (2 + TK_PREFIX_MAX + TK_KEY_MAX)

static int compose_key(const struct tk_limiter *l, const char *key,
		       size_t key_len, unsigned char *buf, size_t *len)
{
	if (!key || key_len == 0)
		return -EINVAL;
	if (key_len > TK_KEY_MAX)
		return -ENAMETOOLONG;
	buf[0] = (unsigned char)(l->prefix_len >> 8);
	buf[1] = (unsigned char)l->prefix_len;
	memcpy(buf + 2, l->prefix, l->prefix_len);
	memcpy(buf + 2 + l->prefix_len, key, key_len);
	*len = 2 + l->prefix_len + key_len;
	return 0;
}

enum op { OP_CHECK, OP_FORECAST };

struct step {
	const struct tk__policy *policy;
	enum op op;
	uint64_t now;
	uint64_t cost; /* 0 with OP_FORECAST: a peek */
	struct tk_decision d;
};

static int step_fn(void *ctx, const uint64_t *old, uint64_t *next,
		   uint64_t *expires_at)
{
	struct step *s = ctx;
	const struct tk__algorithm *alg = s->policy->alg;

	if (s->op == OP_CHECK)
		return alg->check(s->policy, old, s->now, s->cost, next,
				  expires_at, &s->d);
	return alg->forecast(s->policy, old, s->now, s->cost, &s->d);
}

static int run(struct tk_limiter *l, const char *key, size_t key_len,
	       enum op op, uint64_t now, uint64_t cost, struct tk_decision *out)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	struct step s = {
		.policy = &l->policy, .op = op, .now = now, .cost = cost
	};
	struct tk__transform t = { .fn = step_fn,
				   .ctx = &s,
				   .words = l->policy.state_words };
	size_t len;
	int rc;

	rc = compose_key(l, key, key_len, buf, &len);
	if (rc)
		return rc;
	rc = l->store->ops->apply(l->store, buf, len, now, &t);
	if (rc < 0)
		return rc;
	*out = s.d;
	return 0;
}

TK_API int tk_limiter_open(struct tk_limiter **out, const char *policy,
			   const char *store, const struct tk_options *opts)
{
	struct tk_limiter *l;
	struct tk_options o;
	int rc;

	if (!out || !policy)
		return -EINVAL;
	rc = tk__options_read(&o, opts);
	if (rc)
		return tk__rc(rc);
	if ((store == NULL) == (o.store == NULL))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	rc = tk__policy_parse(&l->policy, policy);
	if (rc)
		goto fail;
	l->clock = o.clock ? o.clock : tk_clock_system();
	if (o.prefix) {
		l->prefix_len = strlen(o.prefix);
		memcpy(l->prefix, o.prefix, l->prefix_len);
	}
	if (o.store) {
		l->store = o.store;
	} else {
		rc = tk_store_open(&l->store, store, &o);
		if (rc)
			goto fail;
		l->owns_store = 1;
	}
	*out = l;
	return 0;
fail:
	free(l);
	return tk__rc(rc);
}

/* One clock reading, one step: the common body of the single calls. */
static int run_now(struct tk_limiter *l, const char *key, size_t key_len,
		   enum op op, uint64_t cost, struct tk_decision *out)
{
	uint64_t now;
	int rc;

	if (!l || !out)
		return -EINVAL;
	rc = tk__clock_read(l->clock, &now);
	if (rc)
		return tk__rc(rc);
	return tk__rc(run(l, key, key_len, op, now, cost, out));
}

TK_API int tk_limiter_check(struct tk_limiter *l, const char *key,
			    size_t key_len, uint64_t cost,
			    struct tk_decision *out)
{
	return cost ? run_now(l, key, key_len, OP_CHECK, cost, out) : -EINVAL;
}

TK_API int tk_limiter_peek(struct tk_limiter *l, const char *key,
			   size_t key_len, struct tk_decision *out)
{
	return run_now(l, key, key_len, OP_FORECAST, 0, out);
}

TK_API int tk_limiter_forecast(struct tk_limiter *l, const char *key,
			       size_t key_len, uint64_t cost,
			       struct tk_decision *out)
{
	return cost ? run_now(l, key, key_len, OP_FORECAST, cost, out)
		    : -EINVAL;
}

TK_API int tk_limiter_check_many(struct tk_limiter *l,
				 const struct tk_request *reqs, size_t n,
				 struct tk_decision *out, int *rcs)
{
	uint64_t now;
	int rc, first = 0;
	size_t i;

	if (!l || (n && (!reqs || !out)))
		return -EINVAL;
	rc = tk__clock_read(l->clock, &now);
	if (rc)
		return tk__rc(rc);
	for (i = 0; i < n; i++) {
		rc = reqs[i].cost == 0
			     ? -EINVAL
			     : run(l, reqs[i].key, reqs[i].key_len, OP_CHECK,
				   now, reqs[i].cost, &out[i]);
		rc = tk__rc(rc);
		if (rcs)
			rcs[i] = rc;
		if (rc && !first)
			first = rc;
	}
	return first;
}

TK_API int tk_limiter_reset(struct tk_limiter *l, const char *key,
			    size_t key_len)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	size_t len;
	int rc;

	if (!l)
		return -EINVAL;
	rc = compose_key(l, key, key_len, buf, &len);
	if (rc)
		return tk__rc(rc);
	return tk__rc(l->store->ops->reset(l->store, buf, len));
}

TK_API int tk_limiter_stats(struct tk_limiter *l, struct tk_stats *out,
			    size_t size)
{
	if (!l)
		return -EINVAL;
	return tk_store_stats(l->store, out, size);
}

TK_API void tk_limiter_close(struct tk_limiter *l)
{
	if (!l)
		return;
	if (l->owns_store)
		tk_store_close(l->store);
	free(l);
}
