/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-tier.c - two tiers ("shm:NAME[?OPTIONS]+redis://..."): a host's
 * zone in front of a Redis store, which leases credit for a key in
 * batches into the zone, where every process of the host consumes it.
 *
 * - A check of a single policy whose algorithm leases (tier.h) runs the
 *   lease's transitions (tier-lease.c) by the zone's apply(): one CAS on
 *   the credit word where the credit covers it; else one on the lease's
 *   block, where a cached denial denies.  Neither costs a Redis call.
 * - Otherwise the Redis store runs its normal check (check.lua) for k
 *   units, k the lease's size (k >= cost), all or nothing: a denied lease
 *   is asked again for half what Redis reported remaining, then for the
 *   check's own cost, which is the exact global decision.  The answer
 *   goes to the zone, the block then the word: an admitted lease's units
 *   beyond the check's become the host's credit; a denial is cached.
 *   A process killed in between loses that lease (under-admission).
 * - An expired lease's unused credit, a sliding window's or log's, goes
 *   back to Redis by the check that took it off the word, one call
 *   (tk__redis_give_back()), while its units still count; else, and for
 *   the other algorithms, it is dropped.
 * - A lease's keys are the store key with a bit set in its first byte
 *   that no store key has (store-key.h), one for the block and one for
 *   the word, so they share a zone with plain keys.
 * - Everything else goes to Redis as it is: peeks and forecasts, the
 *   composites (apply_multi), the leaky shaper and user strategies,
 *   reservations (which refund by the states Redis spelled), resets
 *   (which clear the host's lease too).
 * - Redis failing: credit keeps admitting (degraded), cached denials keep
 *   denying; a check that needs Redis returns the error, which the
 *   limiter's fail policy answers.
 */
#include "store/tier.h"
#include "atomic.h"
#include "fork.h"
#include "step.h"
#include "store/store-key.h"
#include "test-hooks.h"
#include "../../shm/zone.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* In the first byte of a lease's keys, its block's and its credit
 * word's: bits no store key has (store-key.h). */
#define LEASE_BIT 0x20
#define CREDIT_BIT 0x10
_Static_assert(((LEASE_BIT | CREDIT_BIT) &
		(TK__STORE_KEY_DIM | TK__STORE_KEY_TAG |
		 (TK_PREFIX_MAX >> 8))) == 0,
	       "a lease's keys are no store keys");

/* Lease sizes tried after a denied lease, before the check's own cost. */
#define SHRINKS 3

/* Leases of a sliding window or log this process was granted, whose
 * unused credit it gives back once they end (pending()). */
#define PENDING_MAX 16

struct pending {
	uint64_t end; /* ns: the lease's, as its credit word holds it */
	struct tk__policy p;
	size_t len;
	unsigned char key[TK__STORE_KEY_MAX];
};

struct tier_store {
	struct tk_store base;
	struct tk_store *zone, *redis;
	struct tk__tier_cfg cfg;
	tk_atomic_u64 checks, denies; /* this process's */
	/* The pending give-backs: a lock only ever tried (1 + the fork
	 * generation of its holder, 0 free), the earliest end of those
	 * held (UINT64_MAX: none), which a check reads without it. */
	tk_atomic_u64 lock, first_end;
	int n_pending;
	struct pending pending[PENDING_MAX];
};

static struct tier_store *tier_of(struct tk_store *s)
{
	return (struct tier_store *)s;
}

/*
 * A claim's owner: this process (its pid, read again after a fork), this
 * thread (a number of the process's), and a count of the thread's checks,
 * which wraps only after 2^24 of them, long after any claim expired.
 * Thread-local: no line that the threads of a process share.
 */
static uint64_t new_token(void)
{
	static tk_atomic_u64 threads;
	static __thread uint64_t gen = UINT64_MAX, pid, thread, count;
	uint64_t g = tk__fork_generation();

	if (g != gen) {
		gen = g;
		pid = (uint64_t)getpid();
		if (!thread)
			thread = tk_atomic_add_u64(&threads, 1, TK_MO_RELAXED) +
				 1;
	}
	count++;
	return pid << 40 | (thread & 0xffff) << 24 | (count & 0xffffff);
}

/*
 * One transition of the key's lease, on its credit word (@word) or its
 * block: the zone's result.  The word is a word slot's state, recorded
 * as a GCRA's (a word slot holds an algorithm; its key is no GCRA's).
 */
static int lease_apply(struct tier_store *s, const unsigned char *key,
		       size_t len, struct tk__lease_call *c, int word)
{
	unsigned char lkey[TK__STORE_KEY_MAX];
	struct tk__transform t = { .fn = word ? tk__credit_fn : tk__lease_fn,
				   .ctx = c,
				   .words = word ? 1 : TK__LEASE_WORDS,
				   .flags = word ? TK__T_WORD_IS_EXPIRY : 0,
				   .alg = word ? TK__ALG_GCRA : TK__ALG_USER,
				   .policy = c->p,
				   .cost = c->cost,
				   .now = &c->now };

	if (len > sizeof(lkey) || len < 1)
		return -EINVAL;
	memcpy(lkey, key, len);
	lkey[0] |= word ? CREDIT_BIT : LEASE_BIT;
	return s->zone->ops->apply(s->zone, lkey, len, c->now, &t);
}

/*
 * Redis's check of *@k units (shrunk after a denial, to the check's own
 * cost at last), as the limiter's check @t would run it: 0 with the
 * decision in *@got and the time it was decided at in *@at, or Redis's
 * error.
 */
static int from_redis(struct tier_store *s, const unsigned char *key,
		      size_t len, uint64_t now, const struct tk__transform *t,
		      uint64_t *k, struct tk_decision *got, uint64_t *at)
{
	struct tk__transform rt;
	struct tk__step st;
	uint64_t half;
	int rc, tries;

	for (tries = 0;; tries++) {
		tk__step_single(&st, TK__OP_CHECK, t->policy, t->flags, now, *k,
				&rt);
		rc = s->redis->ops->apply(s->redis, key, len, now, &rt);
		rc = tk__step_done(s->redis, &st, rc, got);
		*at = st.now; /* the server's time, with server_time=1 */
		if (rc < 0 || got->allowed || *k == t->cost)
			return rc;
		half = got->remaining / 2;
		*k = tries < SHRINKS && half >= t->cost && half < *k ? half
								     : t->cost;
	}
}

/*
 * @c's unused credit of an expired lease back to Redis, one call, where
 * the refund rules make that exact (tk__redis_give_back()) and its units
 * still count (the lease younger than the window); else dropped.
 */
static void give_back(struct tier_store *s, const unsigned char *key,
		      size_t len, const struct tk__lease_call *c)
{
	const struct tk__policy *p = c->p;
	uint64_t window = p->alg->id == TK__ALG_SLIDING_LOG
				  ? p->u.window.window
				  : p->u.sliding.window;

	/* A call that fails leaves them consumed: fewer admitted. */
	if (c->ret && c->ret_at && c->now < c->ret_at + window)
		tk__redis_give_back(s->redis, key, len, p, c->ret_at, c->ret);
}

/* The check's decision, counted. */
static int answer(struct tier_store *s, const struct tk__transform *t,
		  const struct tk_decision *d)
{
	((struct tk__step *)t->ctx)->d = *d;
	tk_atomic_add_u64(&s->checks, 1, TK_MO_RELAXED);
	if (!d->allowed)
		tk_atomic_add_u64(&s->denies, 1, TK_MO_RELAXED);
	return d->allowed ? TK__PERSIST : TK__KEEP;
}

/*
 * The pending give-backs' lock, tried, never waited for: a check that
 * finds it held leaves them be (a lease not remembered is given back by
 * the host's next check of its key, or dropped).  One held across a
 * fork() is free in the child.
 */
static int pending_lock(struct tier_store *s)
{
	uint64_t mine = tk__fork_generation() + 1,
		 held = tk_atomic_load_u64(&s->lock, TK_MO_RELAXED);

	if (held == mine)
		return 0;
	return tk_atomic_cas_u64(&s->lock, &held, mine, TK_MO_ACQUIRE);
}

static void pending_unlock(struct tier_store *s)
{
	tk_atomic_store_u64(&s->lock, 0, TK_MO_RELEASE);
}

static void first_end_again(struct tier_store *s)
{
	uint64_t first = UINT64_MAX;
	int i;

	for (i = 0; i < s->n_pending; i++)
		if (s->pending[i].end < first)
			first = s->pending[i].end;
	tk_atomic_store_u64(&s->first_end, first, TK_MO_RELAXED);
}

/* Remember the lease @c was just granted for @key, to give back what is
 * left of it when it ends (a full list forgets its oldest). */
static void remember(struct tier_store *s, const unsigned char *key, size_t len,
		     const struct tk__lease_call *c)
{
	struct pending *e;

	if (!tk__lease_returns(c->p) || len > sizeof(e->key) ||
	    !pending_lock(s))
		return;
	if (s->n_pending == PENDING_MAX)
		memmove(&s->pending[0], &s->pending[1],
			--s->n_pending * sizeof(s->pending[0]));
	e = &s->pending[s->n_pending++];
	e->end = c->expiry & ~(uint64_t)TK__WORD_SLACK;
	e->p = *c->p;
	e->len = len;
	memcpy(e->key, key, len);
	first_end_again(s);
	pending_unlock(s);
}

static void give_back(struct tier_store *s, const unsigned char *key,
		      size_t len, const struct tk__lease_call *c);
static int lease_apply(struct tier_store *s, const unsigned char *key,
		       size_t len, struct tk__lease_call *c, int word);

/*
 * One remembered lease that has ended by @now, if any: its unused
 * credit taken off its word (by one CAS, as a check of its key would,
 * so that it goes back once) and given back.  One per check, so that a
 * check pays at most one give-back's call for leases of other keys.
 */
static void pending(struct tier_store *s, uint64_t now)
{
	struct tk__lease_call c = { .op = TK__LEASE_COLLECT, .now = now };
	struct pending e;
	int i;

	if (now < tk_atomic_load_u64(&s->first_end, TK_MO_RELAXED) ||
	    !pending_lock(s))
		return;
	for (i = 0; i < s->n_pending && s->pending[i].end > now; i++)
		;
	if (i == s->n_pending) {
		pending_unlock(s);
		return;
	}
	e = s->pending[i];
	s->pending[i] = s->pending[--s->n_pending];
	first_end_again(s);
	pending_unlock(s);
	c.p = &e.p;
	c.cfg = &s->cfg;
	if (lease_apply(s, e.key, e.len, &c, 1) >= 0 && c.ret &&
	    lease_apply(s, e.key, e.len, &c, 0) >= 0)
		give_back(s, e.key, e.len, &c);
}

#if TK_TEST_HOOKS
void (*tk__tier_pause)(void *arg, int where);
void *tk__tier_pause_arg;
#endif

/*
 * @c, a TAKE that has just claimed a refill: does the word cover its
 * check now?  The word was read before the claim, and the lease of the
 * claim before may have landed on it since; then the check spends from
 * it and the claim goes, unused.
 */
static int covered(struct tier_store *s, const unsigned char *key, size_t len,
		   struct tk__lease_call *c)
{
	if (lease_apply(s, key, len, c, 1) >= 0 && c->way == TK__LEASE_ALLOW) {
		c->op = TK__LEASE_RELEASE;
		lease_apply(s, key, len, c, 0);
		return 1;
	}
	c->way = TK__LEASE_CLAIM;
	return 0;
}

static int lease_check(struct tier_store *s, const unsigned char *key,
		       size_t len, uint64_t now, const struct tk__transform *t)
{
	struct tk__lease_call c = { .op = TK__LEASE_TAKE,
				    .p = t->policy,
				    .cfg = &s->cfg,
				    .now = now,
				    .cost = t->cost,
				    .token = new_token() };
	struct tk_decision got;
	int zone_rc, rc;
	uint64_t k;

	zone_rc = lease_apply(s, key, len, &c, 1);
	if (zone_rc >= 0 && c.way == TK__LEASE_ALLOW)
		return answer(s, t, &c.d);
	pending(s, now);
	if (tk__tier_pause)
		tk__tier_pause(tk__tier_pause_arg, 0);
	if (zone_rc >= 0)
		zone_rc = lease_apply(s, key, len, &c, 0);
	/* A zone that fails leaves Redis to decide alone. */
	if (zone_rc < 0)
		c.way = TK__LEASE_EXACT;
	else
		give_back(s, key, len, &c);
	if (c.way == TK__LEASE_DENY)
		return answer(s, t, &c.d);
	if (c.way == TK__LEASE_CLAIM && covered(s, key, len, &c))
		return answer(s, t, &c.d);
	if (c.way != TK__LEASE_CLAIM)
		c.token = 0;
	k = c.way == TK__LEASE_CLAIM ? c.k : t->cost;
	rc = from_redis(s, key, len, now, t, &k, &got, &c.at);
	c.op = rc < 0 ? TK__LEASE_FAIL : TK__LEASE_DONE;
	c.got = got;
	c.k = k;
	if (rc == 0)
		c.expiry = tk__lease_expiry(t->policy, now, &got);
	/* The block first: it says whether the lease is this claim's.  A
	 * write lost here loses the lease (under-admission only). */
	if (zone_rc >= 0 && lease_apply(s, key, len, &c, 0) >= 0) {
		if (c.grant && tk__tier_pause)
			tk__tier_pause(tk__tier_pause_arg, 1);
		lease_apply(s, key, len, &c, 1);
		/* Its credit on the word: the claim goes (a process killed
		 * before this leaves it to expire, CLAIM_NS). */
		if (c.grant) {
			c.op = TK__LEASE_RELEASE;
			lease_apply(s, key, len, &c, 0);
			remember(s, key, len, &c);
		}
	}
	return rc < 0 ? rc : answer(s, t, &got);
}

static int tier_apply(struct tk_store *base, const unsigned char *key,
		      size_t len, uint64_t now, const struct tk__transform *t)
{
	struct tier_store *s = tier_of(base);
	int rc;

	/* The limiter's own check of a single policy (step.h), no
	 * reservation: the one step a lease can answer. */
	if ((t->flags & TK__T_CHECK) && t->fn == tk__check_fn && !t->spelling &&
	    tk__lease_leasable(t->policy))
		return lease_check(s, key, len, now, t);
	rc = s->redis->ops->apply(s->redis, key, len, now, t);
	if (rc >= 0 && (t->flags & TK__T_CHECK)) {
		tk_atomic_add_u64(&s->checks, 1, TK_MO_RELAXED);
		if (rc != TK__PERSIST)
			tk_atomic_add_u64(&s->denies, 1, TK_MO_RELAXED);
	}
	return rc;
}

static int tier_apply_multi(struct tk_store *base, uint64_t now,
			    const struct tk__multi *m)
{
	struct tier_store *s = tier_of(base);
	int rc = s->redis->ops->apply_multi(s->redis, now, m);

	if (rc >= 0 && (m->flags & TK__T_CHECK)) {
		tk_atomic_add_u64(&s->checks, 1, TK_MO_RELAXED);
		if (rc != TK__PERSIST)
			tk_atomic_add_u64(&s->denies, 1, TK_MO_RELAXED);
	}
	return rc;
}

/* The key's state on Redis, and the host's lease of it. */
static int tier_reset(struct tk_store *base, const unsigned char *key,
		      size_t len)
{
	struct tier_store *s = tier_of(base);
	unsigned char lkey[TK__STORE_KEY_MAX];
	int rc = s->redis->ops->reset(s->redis, key, len);

	if (rc == 0 && len >= 1 && len <= sizeof(lkey)) {
		memcpy(lkey, key, len);
		lkey[0] |= LEASE_BIT;
		rc = s->zone->ops->reset(s->zone, lkey, len);
		lkey[0] ^= LEASE_BIT | CREDIT_BIT;
		if (rc == 0)
			rc = s->zone->ops->reset(s->zone, lkey, len);
	}
	return rc;
}

static int tier_refund(struct tk_store *base, size_t n,
		       const unsigned char *const *key, const size_t *len,
		       const struct tk__policy *const *pol,
		       const struct tk__spelling *sp, uint64_t cost, int *done)
{
	struct tk_store *r = tier_of(base)->redis;

	return r->ops->refund(r, n, key, len, pol, sp, cost, done);
}

/* Redis's counters; the zone's keys; the checks this process decided. */
static void tier_stats(struct tk_store *base, struct tk_stats *out)
{
	struct tier_store *s = tier_of(base);
	struct tk_stats z;

	memset(&z, 0, sizeof(z));
	s->redis->ops->stats(s->redis, out);
	s->zone->ops->stats(s->zone, &z);
	out->keys = z.keys;
	out->capacity = z.capacity;
	out->inserts = z.inserts;
	out->expirations = z.expirations;
	out->evictions = z.evictions;
	out->resets = z.resets;
	out->reserved = z.reserved;
	out->live = z.live;
	out->checks = tk_atomic_load_u64(&s->checks, TK_MO_RELAXED);
	out->denies = tk_atomic_load_u64(&s->denies, TK_MO_RELAXED);
}

static int tier_supports(struct tk_store *base, const struct tk_policy *p)
{
	struct tk_store *r = tier_of(base)->redis;

	return r->ops->supports ? r->ops->supports(r, p) : 0;
}

static int tier_failed(struct tk_store *base)
{
	struct tk_store *z = tier_of(base)->zone;

	return z->ops->failed ? z->ops->failed(z) : 0;
}

static int tier_same(struct tk_store *a, struct tk_store *b)
{
	struct tier_store *x = tier_of(a), *y = tier_of(b);

	return x->zone->ops->same(x->zone, y->zone) &&
	       x->redis->ops->same(x->redis, y->redis);
}

static int tier_ping(struct tk_store *base, struct tk_store_ping *out)
{
	struct tk_store *r = tier_of(base)->redis;
	int rc = r->ops->ping(r, out);

	snprintf(out->store, sizeof(out->store), "%s", base->ops->name);
	return rc;
}

static void tier_close(struct tk_store *base)
{
	struct tier_store *s = tier_of(base);

	s->redis->ops->close(s->redis);
	s->zone->ops->close(s->zone);
	free(s);
}

static const struct tk__store_ops tier_ops = {
	.name = "tier",
	.apply = tier_apply,
	.apply_multi = tier_apply_multi,
	.reset = tier_reset,
	.refund = tier_refund,
	.stats = tier_stats,
	.supports = tier_supports,
	.failed = tier_failed,
	.same = tier_same,
	.ping = tier_ping,
	.close = tier_close,
};

/* "lease=N" or "lease_max=N" at @opt (@len bytes) into @cfg. */
static int option(const char *opt, size_t len, struct tk__tier_cfg *cfg)
{
	char buf[32], *end;
	const char *eq = memchr(opt, '=', len);
	unsigned long long v;
	size_t n;

	if (!eq || (size_t)(opt + len - eq - 1) >= sizeof(buf) ||
	    eq + 1 == opt + len || eq[1] < '0' || eq[1] > '9')
		return -EINVAL;
	n = (size_t)(opt + len - eq - 1);
	memcpy(buf, eq + 1, n);
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (*end || errno || v == 0 || v > TK__LEASE_CREDIT_MAX)
		return -EINVAL;
	if ((size_t)(eq - opt) == 5 && memcmp(opt, "lease", 5) == 0)
		cfg->lease = v;
	else if ((size_t)(eq - opt) == 9 && memcmp(opt, "lease_max", 9) == 0)
		cfg->lease_max = v;
	else
		return -EINVAL;
	return 0;
}

/* "NAME[?OPTIONS]" at @s (@len bytes): the zone's name into @name. */
static int parse_zone(const char *s, size_t len, char *name, size_t cap,
		      struct tk__tier_cfg *cfg, char *why, size_t why_len)
{
	const char *q = memchr(s, '?', len), *at, *amp;
	size_t n = q ? (size_t)(q - s) : len;
	int rc = 0;

	memset(cfg, 0, sizeof(*cfg));
	if (n >= cap)
		n = cap; /* too long: tk__zone_name_valid() refuses it */
	memcpy(name, s, n < cap ? n : cap - 1);
	name[n < cap ? n : cap - 1] = '\0';
	if (n >= cap || !tk__zone_name_valid(name)) {
		snprintf(why, why_len, "a zone's name before '+redis'");
		return -EINVAL;
	}
	for (at = q ? q + 1 : s + len; rc == 0 && at < s + len; at = amp + 1) {
		amp = memchr(at, '&', (size_t)(s + len - at));
		if (!amp)
			amp = s + len;
		rc = option(at, (size_t)(amp - at), cfg);
	}
	if (rc == 0 && q && q + 1 == s + len)
		rc = -EINVAL;
	if (rc)
		snprintf(why, why_len,
			 "options lease=N or lease_max=N (N from 1 to "
			 "65535) joined by '&' after the zone's name");
	return rc;
}

/*
 * The '+' before the Redis spec of "NAME[?OPTIONS]+REDIS-SPEC", or NULL.
 * A zone's path may hold a '+' ("/run/a+b/zone"), never "+redis://" and
 * the like (no component of it is empty).
 */
static const char *tier_plus(const char *spec)
{
	const char *plus;

	for (plus = strchr(spec, '+'); plus; plus = strchr(plus + 1, '+'))
		if (tk__redis_is_spec(plus + 1))
			return plus;
	return NULL;
}

int tk__tier_is_spec(const char *spec)
{
	return strncmp(spec, "shm:", 4) == 0 && tier_plus(spec + 4);
}

int tk__tier_open(struct tk_store **out, const char *spec,
		  const struct tk_options *o, char *why, size_t why_len)
{
	const char *plus = tier_plus(spec);
	struct tier_store *s;
	char name[4096];
	int rc;

	if (why_len)
		why[0] = '\0';
	if (!plus)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = parse_zone(spec, (size_t)(plus - spec), name, sizeof(name),
			&s->cfg, why, why_len);
	if (rc == 0)
		rc = tk__redis_open(&s->redis, plus + 1, o, why, why_len);
	/* Validating opens no zone (none is created). */
	if (rc == 0 && !out) {
		s->redis->ops->close(s->redis);
		rc = 1;
	}
	if (rc == 0) {
		rc = tk__shm_open(&s->zone, name, o);
		if (rc)
			s->redis->ops->close(s->redis);
	}
	if (rc) {
		free(s);
		return rc < 0 ? rc : 0;
	}
	s->base.ops = &tier_ops;
	s->base.clock = s->redis->clock;
	tk_atomic_store_u64(&s->first_end, UINT64_MAX, TK_MO_RELAXED);
	*out = &s->base;
	return 0;
}
