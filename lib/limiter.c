/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * limiter.c - the front door: policy + store + clock + key prefix.
 *
 * The limiter reads the clock exactly once per call (a batch included),
 * joins prefix and key in the one place that does so, and hands the
 * store a pure transition built from the policy (step.c).  A single
 * policy's check is first offered to the store's fast path, if it has
 * one (try_check(): decided there, or "not here").  Each dimension of a
 * composite policy keeps its state under its own store key (the same key
 * for every dimension of tk_limiter_check()), and the store's multi-key
 * step (apply_multi) decides them together, atomically.  The whole path
 * of a check: docs/architecture.md.
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "clock.h"
#include "test-hooks.h"
#include "error.h"
#include "options.h"
#include "algo/gcra.h"
#include "step.h"
#include "rule.h"
#include "store/store-key.h"
#include "atomic.h"
#include "fork.h"
#include "rcu.h"
#include "reserve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tk_limiter {
	struct tk_policy *policy;
	struct tk_store *store;
	struct tk_clock *clock;
	int clock_id; /* tk__clock_id(clock) */
	int owns_store;
	unsigned int fail; /* TK_FAIL_* */
	size_t prefix_len;
	char prefix[TK_PREFIX_MAX];
	/*
	 * A single policy's checks, bound at open (check_single()): its
	 * dimension, the store's fast path if it has one and the policy's
	 * algorithm has in-place steps (gcra.h; else NULL), and the store
	 * key's head (the bytes before the caller's key, store-key.h).
	 * NULL for a composite.
	 */
	const struct tk__policy *single;
	int (*try_check)(struct tk_store *s, const struct tk__store_head *head,
			 const char *key, size_t key_len, uint64_t now,
			 struct tk__when *late, const struct tk__policy *p,
			 uint64_t cost, struct tk_decision *d);
	uint32_t flags; /* tk__step_flags() of its checks */
	int rule; /* its entry in the zone's rule directory + 1; 0: none */
	/* 1: a check may take tk_limiter_check()'s lean entry (bind()). */
	int lean;
	struct tk__store_head head;
	/*
	 * The policy set last by tk_limiter_set_policy(): a whole copy of
	 * the limiter bound to it (whose own gen is NULL), or NULL while the
	 * policy is the one opened with, these very fields (see gen_enter()).
	 */
	tk_atomic_ptr gen;
};

/*
 * The limiter a call runs: @l itself while no policy was ever set (no RCU
 * section: the handle's fields live until close), else its current
 * generation, read in an RCU read-side section that gen_leave() ends, so
 * that tk_limiter_set_policy() frees a generation it replaced only after
 * every call that could see it is over.  A call sees one generation from
 * start to end: either policy, never a mix.
 */
static inline __attribute__((always_inline)) struct tk_limiter *
gen_enter(struct tk_limiter *l, int *rcu)
{
	*rcu = 0;
	/* Relaxed: NULL publishes nothing; a generation is loaded again. */
	if (caa_likely(!tk_atomic_load_ptr(&l->gen, TK_MO_RELAXED)))
		return l;
	*rcu = 1;
	tk__rcu_read_lock();
	/* Acquire: pairs with the release of the xchg in set_policy(). */
	return tk_atomic_load_ptr(&l->gen, TK_MO_ACQUIRE);
}

static inline __attribute__((always_inline)) void gen_leave(int rcu)
{
	if (rcu)
		tk__rcu_read_unlock();
}

/* The store key's format, and why: store-key.h. */
#define SINGLE TK__STORE_KEY_SINGLE

static int key_error(const char *key, size_t key_len)
{
	if (!key || key_len == 0)
		return -EINVAL;
	return key_len > TK_KEY_MAX ? -ENAMETOOLONG : 0;
}

_Static_assert(TK__TAG_MAX <= TK__STORE_KEY_TAG_MAX, "a tag fits a key");

static int compose_key(const struct tk_limiter *l, int dim, const char *key,
		       size_t key_len, unsigned char *buf, size_t *len)
{
	const struct tk__policy *p = &l->policy->dim[dim == SINGLE ? 0 : dim];
	int rc = key_error(key, key_len);

	if (rc)
		return rc;
	*len = tk__store_key_encode(buf, l->prefix, l->prefix_len, dim, p->tag,
				    p->tag_len, key, key_len);
	return 0;
}

/* The bytes of the store keys of every dimension of @key_len bytes. */
static size_t keys_size(const struct tk_limiter *l, size_t key_len)
{
	size_t i, n = 0;

	for (i = 0; i < l->policy->n; i++)
		n += tk__store_key_size(l->prefix_len,
					l->single ? SINGLE : (int)i,
					l->policy->dim[i].tag_len, key_len);
	return n;
}

/* A simple policy's step at @now, other than a check: one key, one apply. */
static int run_single(struct tk_limiter *l, const char *key, size_t key_len,
		      struct tk__step *s, enum tk__op op, uint64_t now,
		      uint64_t cost)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	struct tk__transform t;
	size_t len;
	int rc;

	tk__step_single(s, op, &l->policy->dim[0],
			tk__step_flags(op, &l->policy->dim[0]), now, cost, &t);
	rc = compose_key(l, SINGLE, key, key_len, buf, &len);
	if (rc == 0)
		rc = l->store->ops->apply(l->store, buf, len, now, &t);
	return rc;
}

/*
 * A composite's step: one key per dimension (@keys, or @key for all),
 * composed one after another in @buf, which holds policy->n times
 * TK__STORE_KEY_MAX bytes or (for valid keys) what they need.
 */
static int composite_multi(struct tk_limiter *l, const char *key,
			   size_t key_len, const struct tk_key *keys,
			   struct tk__step *s, unsigned char *buf,
			   struct tk__multi *m)
{
	const struct tk_policy *pol = s->policy;
	size_t i;
	int rc = 0;

	*m = (struct tk__multi){ .n = pol->n,
				 .fn = tk__composite_fn,
				 .ctx = s,
				 .flags = s->op == TK__OP_CHECK ? TK__T_CHECK
								: 0,
				 .cost = s->cost,
				 .kind = pol->kind,
				 .now = &s->now };
	s->n = pol->n;
	s->kind = pol->kind;
	for (i = 0; i < pol->n && rc == 0; i++) {
		rc = compose_key(l, (int)i, keys ? keys[i].key : key,
				 keys ? keys[i].key_len : key_len, buf,
				 &m->len[i]);
		m->key[i] = buf;
		buf += m->len[i];
		m->words[i] = pol->dim[i].state_words;
		m->alg[i] = pol->dim[i].alg->id;
		m->policy[i] = &pol->dim[i];
	}
	return rc;
}

/*
 * check_single() where the store's fast path does not decide: its
 * apply() runs the policy's transition on the joined store key.  Out of
 * line, so that the fast path's caller carries neither the key's buffer
 * nor the step in its frame.
 */
#if TK_TEST_HOOKS
__thread uint64_t tk__check_applied;
#endif

static __attribute__((noinline)) int
check_apply(struct tk_limiter *l, const char *key, size_t key_len, uint64_t now,
	    struct tk__when *late, uint64_t cost, struct tk_decision *out)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	struct tk__transform t;
	struct tk__step s;
	size_t len;
	int rc;

#if TK_TEST_HOOKS
	tk__check_applied++;
#endif
	if (late) {
		rc = tk__when_read(late);
		if (rc)
			return rc;
		now = late->ns;
	}
	len = tk__store_key_join(buf, &l->head, key, key_len);
	tk__step_single(&s, TK__OP_CHECK, l->single, l->flags, now, cost, &t);
	rc = l->store->ops->apply(l->store, buf, len, now, &t);
	return tk__step_done(l->store, &s, rc, out);
}

/*
 * A check of a single policy, everything that does not change from one
 * check to the next bound at open: the store's fast path decides it if
 * it can (try_check()), else its apply() runs the policy's transition
 * (check_apply()).  At @now, or, with @late, at the time read from @late
 * (by the store, once it has hashed the key, or by check_apply();
 * only with the fast path).  @out is written only on success.
 */
static inline __attribute__((always_inline)) int
check_single(struct tk_limiter *l, const char *key, size_t key_len,
	     uint64_t now, struct tk__when *late, uint64_t cost,
	     struct tk_decision *out)
{
	int rc = key_error(key, key_len);

	if (rc)
		return rc;
	if (caa_likely(l->try_check != NULL)) {
		/* The key as the caller gave it: the store hashes it with the
		 * head in registers (tk__keyhash_join()). */
		rc = l->try_check(l->store, &l->head, key, key_len, now, late,
				  l->single, cost, out);
		if (caa_likely(rc != TK__NOT_HERE)) /* 0 or an error */
			return rc;
	}
	return check_apply(l, key, key_len, now, late, cost, out);
}

/* A composite: one key per dimension (@keys, or @key for all). */
static int run_composite(struct tk_limiter *l, const char *key, size_t key_len,
			 const struct tk_key *keys, struct tk__step *s,
			 enum tk__op op, uint64_t now, uint64_t cost)
{
	unsigned char buf[TK__MULTI_MAX * TK__STORE_KEY_MAX];
	struct tk__multi m;
	int rc;

	*s = (struct tk__step){
		.policy = l->policy, .op = op, .now = now, .cost = cost
	};
	rc = composite_multi(l, key, key_len, keys, s, buf, &m);
	if (rc == 0)
		rc = l->store->ops->apply_multi(l->store, s->now, &m);
	return rc;
}

/* Any step but a single policy's check, at @now.  @keys: one per
 * dimension, or NULL for @key in every dimension. */
static int run(struct tk_limiter *l, const char *key, size_t key_len,
	       const struct tk_key *keys, enum tk__op op, uint64_t now,
	       uint64_t cost, struct tk_decision *out)
{
	struct tk__step s;
	int rc;

	rc = l->policy->kind == TK__SINGLE
		     ? run_single(l, key, key_len, &s, op, now, cost)
		     : run_composite(l, key, key_len, keys, &s, op, now, cost);
	return tk__step_done(l->store, &s, rc, out);
}

/* What a check of @l's policy needs bound at open (check_single()). */
static void bind(struct tk_limiter *l)
{
	/* compose_key()'s bytes for a single policy, up to the key. */
	tk__store_head_set(&l->head, l->prefix, l->prefix_len, SINGLE,
			   l->policy->dim[0].tag, l->policy->dim[0].tag_len);
	l->single = NULL;
	l->try_check = NULL;
	l->flags = 0;
	if (l->policy->kind == TK__SINGLE) {
		l->single = &l->policy->dim[0];
		if (tk__gcra_family(l->single))
			l->try_check = l->store->ops->try_check;
		else if (tk__window_direct(l->single))
			l->try_check = l->store->ops->try_window;
		l->flags = tk__step_flags(TK__OP_CHECK, l->single);
	}
	l->lean = l->try_check && !l->rule && l->clock_id >= 0;
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
	rc = tk__policy_parse(&l->policy, policy, NULL);
	if (rc)
		goto fail;
	l->clock = o.clock ? o.clock : tk_clock_system();
	l->clock_id = tk__clock_id(l->clock);
	l->fail = o.fail;
	if (o.prefix) {
		l->prefix_len = strlen(o.prefix);
		memcpy(l->prefix, o.prefix, l->prefix_len);
	}
	if (o.store) {
		l->store = o.store;
	} else {
		/* Under fail open or closed a store that fails answers by it.
		 */
		if (o.fail != TK_FAIL_ERROR)
			o.flags |= TK_OPT_RETRY_OPEN;
		rc = tk_store_open(&l->store, store, &o);
		if (rc)
			goto fail;
		l->owns_store = 1;
	}
	/* A store that cannot run this policy says so now, not per check. */
	if (l->store->ops->supports &&
	    (rc = l->store->ops->supports(l->store, l->policy)) != 0) {
		if (l->owns_store)
			tk_store_close(l->store);
		goto fail;
	}
	rc = tk__rule_register(l->store, &o, l->policy);
	if (rc < 0) {
		if (l->owns_store)
			tk_store_close(l->store);
		goto fail;
	}
	l->rule = rc;
	bind(l);
	*out = l;
	return 0;
fail:
	tk_policy_free(l->policy);
	free(l);
	return tk__rc(rc);
}

#if TK_TEST_HOOKS /* test-hooks.h */
void tk__limiter_generic(struct tk_limiter *l)
{
	l->try_check = NULL;
	l->lean = 0;
}
#endif

/*
 * The fail policy (fail-policy.c): a store or clock that cannot decide is
 * answered by @fail instead of its error; a caller's mistake is an error
 * whatever @fail says.
 */
static int fail_policy(unsigned int fail, const struct tk_policy *pol,
		       uint64_t now, int rc, struct tk_decision *out)
{
	rc = tk__rc(rc);
	if (rc >= 0 || fail == TK_FAIL_ERROR || tk_error_is_caller(rc))
		return rc;
	return tk_decision_degraded(pol, fail, now, out);
}

/*
 * The keys' own errors, which a clock failure must not hide from the fail
 * policy; @keys: one per dimension, or NULL for @key.
 */
static int keys_error(size_t n, const char *key, size_t key_len,
		      const struct tk_key *keys)
{
	size_t i;
	int rc = 0;

	for (i = 0; keys && i < n && rc == 0; i++)
		rc = key_error(keys[i].key, keys[i].key_len);
	return keys ? rc : key_error(key, key_len);
}

/*
 * One clock reading, one step: the common body of the single calls
 * (inlined: a check's operation and keys are then constants).  The clock
 * is read first, unless the store's fast path reads it itself once it
 * has hashed the key (tk__store_reads_clock()).
 */
static inline __attribute__((always_inline)) int
run_now(struct tk_limiter *l, const char *key, size_t key_len,
	const struct tk_key *keys, enum tk__op op, uint64_t cost,
	struct tk_decision *out)
{
	struct tk__when late;
	uint64_t now = 0;
	int rc, rcu;

	if (!l || !out)
		return -EINVAL;
	l = gen_enter(l, &rcu);
	if (op == TK__OP_CHECK && l->try_check &&
	    tk__store_reads_clock(l->store)) {
		late = (struct tk__when){ l->clock, l->clock_id, 0 };
		rc = check_single(l, key, key_len, 0, &late, cost, out);
		now = late.ns;
	} else {
		rc = l->clock_id >= 0 ? tk__clock_gettime(l->clock_id, &now)
				      : tk__clock_read(l->clock, &now);
		if (rc == 0)
			rc = l->single && op == TK__OP_CHECK
				     ? check_single(l, key, key_len, now, NULL,
						    cost, out)
				     : run(l, key, key_len, keys, op, now, cost,
					   out);
		else if (l->fail != TK_FAIL_ERROR)
			rc = keys_error(l->policy->n, key, key_len, keys) ?: rc;
	}
	if (rc == 0) { /* a decision: nothing for the fail policy */
		if (op == TK__OP_CHECK && l->rule)
			tk__rule_count(l->store, l->rule, 1, !out->allowed);
	} else {
		rc = fail_policy(l->fail, l->policy, now, rc, out);
	}
	gen_leave(rcu);
	return rc;
}

/* A check that does not take the lean entry: run_now() out of line, so
 * that the lean entry's frame is its own. */
static __attribute__((noinline)) int check_slow(struct tk_limiter *l,
						const char *key, size_t key_len,
						uint64_t cost,
						struct tk_decision *out)
{
	return cost ? run_now(l, key, key_len, NULL, TK__OP_CHECK, cost, out)
		    : -EINVAL;
}

/*
 * The rest of a lean check (tk_limiter_check()) that the store's fast
 * path did not decide: @rc is the clock's error or try_check()'s, @w the
 * clock's reading, or the clock still to read (where the store reads
 * it).  What run_now() does from there, out of line.
 */
static __attribute__((noinline)) int
check_rest(struct tk_limiter *l, const char *key, size_t key_len,
	   struct tk__when *w, int rc, uint64_t cost, struct tk_decision *out)
{
	/* A clock's error is never TK__NOT_HERE. */
	if (rc == TK__NOT_HERE)
		rc = check_apply(l, key, key_len, w->ns, w->clock ? w : NULL,
				 cost, out);
	return rc ? fail_policy(l->fail, l->policy, w->ns, rc, out) : 0;
}

/*
 * A check takes the lean entry where run_now() would only read the clock
 * and offer the check to the store's fast path: a valid key of a single
 * policy that path runs, a clock read inline, no generation set, no rule
 * to count.  It does what run_now() does in that case, in a frame of its
 * own size: every instruction here is on the path of the hot key's check
 * (bench/README.md, "2026-11-28 morning").
 */
TK_API int tk_limiter_check(struct tk_limiter *l, const char *key,
			    size_t key_len, uint64_t cost,
			    struct tk_decision *out)
{
	struct tk__when w;
	int rc;

	if (caa_unlikely(!l || !out || !cost || !key ||
			 key_len - 1 >= TK_KEY_MAX || !l->lean ||
			 tk_atomic_load_ptr(&l->gen, TK_MO_RELAXED)))
		return check_slow(l, key, key_len, cost, out);
	w = (struct tk__when){ NULL, l->clock_id, 0 };
	if (caa_unlikely(tk__store_reads_clock(l->store))) {
		w.clock = l->clock;
		rc = l->try_check(l->store, &l->head, key, key_len, 0, &w,
				  l->single, cost, out);
	} else {
		rc = tk__clock_gettime(l->clock_id, &w.ns);
		if (caa_likely(rc == 0))
			rc = l->try_check(l->store, &l->head, key, key_len,
					  w.ns, NULL, l->single, cost, out);
	}
	if (caa_likely(rc == 0))
		return 0;
	return check_rest(l, key, key_len, &w, rc, cost, out);
}

TK_API int tk_limiter_peek(struct tk_limiter *l, const char *key,
			   size_t key_len, struct tk_decision *out)
{
	return run_now(l, key, key_len, NULL, TK__OP_FORECAST, 0, out);
}

TK_API int tk_limiter_forecast(struct tk_limiter *l, const char *key,
			       size_t key_len, uint64_t cost,
			       struct tk_decision *out)
{
	return cost ? run_now(l, key, key_len, NULL, TK__OP_FORECAST, cost, out)
		    : -EINVAL;
}

/* Requests per apply_batch() call: bounds what a batch allocates. */
#define BATCH_MAX 1024

/* One request of a batch: its step and what the store runs. */
struct batch_req {
	size_t req; /* its index in the batch */
	struct tk__step s;
	union {
		struct tk__transform t;
		struct tk__multi m;
	} u;
};

/*
 * Requests @reqs[0, n) by the store's apply_batch(), at @now: rc[i] as
 * run() would answer for each (decisions in @out).
 */
static void run_batch(struct tk_limiter *l, const struct tk_request *reqs,
		      size_t n, uint64_t now, struct tk_decision *out, int *rc)
{
	struct tk__batch_item *items;
	struct batch_req *br;
	unsigned char *keys;
	size_t i, m = 0, at = 0, total = 0;

	for (i = 0; i < n; i++) {
		rc[i] = reqs[i].cost ? key_error(reqs[i].key, reqs[i].key_len)
				     : -EINVAL;
		if (rc[i] == 0)
			total += keys_size(l, reqs[i].key_len);
	}
	br = malloc(n * sizeof(*br));
	items = malloc(n * sizeof(*items));
	keys = malloc(total ? total : 1);
	for (i = 0; i < n && !(br && items && keys); i++)
		rc[i] = rc[i] ?: -ENOMEM;
	for (i = 0; i < n && br && items && keys; i++) {
		if (rc[i])
			continue;
		br[m].req = i;
		items[m] = (struct tk__batch_item){ .rc = 0 };
		if (l->single) {
			tk__step_single(&br[m].s, TK__OP_CHECK, l->single,
					l->flags, now, reqs[i].cost,
					&br[m].u.t);
			compose_key(l, SINGLE, reqs[i].key, reqs[i].key_len,
				    keys + at, &items[m].len);
			items[m].key = keys + at;
			items[m].t = &br[m].u.t;
			at += items[m].len;
		} else {
			br[m].s = (struct tk__step){ .policy = l->policy,
						     .op = TK__OP_CHECK,
						     .now = now,
						     .cost = reqs[i].cost };
			composite_multi(l, reqs[i].key, reqs[i].key_len, NULL,
					&br[m].s, keys + at, &br[m].u.m);
			items[m].m = &br[m].u.m;
			at += keys_size(l, reqs[i].key_len);
		}
		m++;
	}
	if (m)
		l->store->ops->apply_batch(l->store, now, items, m);
	for (i = 0; i < m; i++)
		rc[br[i].req] = tk__step_done(l->store, &br[i].s, items[i].rc,
					      &out[br[i].req]);
	free(keys);
	free(items);
	free(br);
}

static int check_many(struct tk_limiter *l, const struct tk_request *reqs,
		      size_t n, struct tk_decision *out, int *rcs)
{
	int batch_rc[BATCH_MAX];
	uint64_t now = 0, checks = 0, denies = 0;
	int rc, clock_rc, first = 0;
	size_t i, at = 0, chunk = 0;

	if (!l || (n && (!reqs || !out)))
		return -EINVAL;
	if (n == 0)
		return 0;
	clock_rc = tk__clock_read(l->clock, &now);
	if (clock_rc && l->fail == TK_FAIL_ERROR)
		return tk__rc(clock_rc);
	for (i = 0; i < n; i++) {
		if (clock_rc == 0 && l->store->ops->apply_batch) {
			/* A store that batches: its chunk's results. */
			if (i == at + chunk) {
				at = i;
				chunk = n - i < BATCH_MAX ? n - i : BATCH_MAX;
				run_batch(l, reqs + at, chunk, now, out + at,
					  batch_rc);
			}
			rc = batch_rc[i - at];
		} else {
			rc = reqs[i].cost == 0 ? -EINVAL
			     : clock_rc
				     ? key_error(reqs[i].key, reqs[i].key_len)
					       ?: clock_rc
			     : l->single
				     ? check_single(l, reqs[i].key,
						    reqs[i].key_len, now, NULL,
						    reqs[i].cost, &out[i])
				     : run(l, reqs[i].key, reqs[i].key_len,
					   NULL, TK__OP_CHECK, now,
					   reqs[i].cost, &out[i]);
		}
		if (rc == 0) {
			checks++;
			denies += !out[i].allowed;
		}
		rc = fail_policy(l->fail, l->policy, now, rc, &out[i]);
		if (rcs)
			rcs[i] = rc;
		if (rc && !first)
			first = rc;
	}
	if (l->rule)
		tk__rule_count(l->store, l->rule, checks, denies);
	return first;
}

TK_API int tk_limiter_check_many(struct tk_limiter *l,
				 const struct tk_request *reqs, size_t n,
				 struct tk_decision *out, int *rcs)
{
	int rc, rcu;

	if (!l)
		return -EINVAL;
	l = gen_enter(l, &rcu);
	rc = check_many(l, reqs, n, out, rcs);
	gen_leave(rcu);
	return rc;
}

/* The keys' count and the check, under one generation of @l. */
static int check_keys(struct tk_limiter *l, const struct tk_key *keys, size_t n,
		      uint64_t cost, struct tk_decision *out)
{
	if (!l || !keys || !out || cost == 0 || n != l->policy->n)
		return -EINVAL;
	if (l->policy->kind == TK__SINGLE)
		return tk_limiter_check(l, keys[0].key, keys[0].key_len, cost,
					out);
	return run_now(l, NULL, 0, keys, TK__OP_CHECK, cost, out);
}

TK_API int tk_limiter_check_keys(struct tk_limiter *l,
				 const struct tk_key *keys, size_t n,
				 uint64_t cost, struct tk_decision *out)
{
	int rc, rcu;

	if (!l)
		return -EINVAL;
	l = gen_enter(l, &rcu);
	rc = check_keys(l, keys, n, cost, out);
	gen_leave(rcu);
	return rc;
}

_Static_assert(TK_GROUP_DIMENSIONS_MAX <= TK__MULTI_MAX,
	       "a group is one multi-key step");
_Static_assert(TK_DIMENSIONS_MAX >= TK_GROUP_DIMENSIONS_MAX &&
		       TK_DIMENSIONS_MAX >= TK__MULTI_MAX,
	       "TK_DIMENSIONS_MAX bounds every policy and group");

TK_API size_t tk_limiter_dimensions(struct tk_limiter *const *ls, size_t n)
{
	size_t i, total = 0;

	for (i = 0; ls && i < n; i++) {
		if (!ls[i])
			return 0;
		total += ls[i]->policy->n;
	}
	return total;
}

/*
 * Do @a and @b hold the same states: one store, or two opens of one
 * zone or one Redis server, database and key_prefix (the store's same())?
 * Two "memory" stores never do: each open is private.
 */
static int same_store(struct tk_store *a, struct tk_store *b)
{
	return a == b ||
	       (a->ops == b->ops && a->ops->same && a->ops->same(a, b));
}

/* The strictest fail policy of a group: closed, then error, then open. */
static unsigned int group_fail(struct tk_limiter *const *ls, size_t n)
{
	unsigned int fail = TK_FAIL_OPEN;
	size_t i;

	for (i = 0; i < n; i++)
		if (ls[i]->fail == TK_FAIL_CLOSED ||
		    (ls[i]->fail == TK_FAIL_ERROR && fail == TK_FAIL_OPEN))
			fail = ls[i]->fail;
	return fail;
}

/*
 * The store key's dimension of dimension @j of group member @l: a
 * simple policy's own key, so that its group and single checks share one
 * state (a store that keeps a one-word state inline moves it to a block
 * for its multi-key step: shm/mcas.c); an all() dimension's key, as its
 * checks use it.
 */
static int group_dim(const struct tk_limiter *l, size_t j)
{
	return l->policy->kind == TK__SINGLE ? SINGLE : (int)j;
}

/*
 * A group is an all() over the limiters' dimensions, each dimension kept
 * under its own limiter's prefix as group_dim() says, so one limiter's
 * states are the same in every group and in tk_limiter_check().
 */
static int run_group(struct tk_limiter *const *ls, const struct tk_key *keys,
		     size_t n, uint64_t now, struct tk__step *s)
{
	unsigned char buf[TK__MULTI_MAX][TK__STORE_KEY_MAX];
	const struct tk__policy *dims[TK__MULTI_MAX];
	struct tk__multi m = { .fn = tk__composite_fn,
			       .ctx = s,
			       .flags = TK__T_CHECK,
			       .cost = s->cost,
			       .kind = TK__ALL,
			       .now = &s->now };
	size_t i, j;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		for (j = 0; j < ls[i]->policy->n && rc == 0; j++) {
			dims[m.n] = &ls[i]->policy->dim[j];
			rc = compose_key(ls[i], group_dim(ls[i], j),
					 keys[i].key, keys[i].key_len, buf[m.n],
					 &m.len[m.n]);
			m.key[m.n] = buf[m.n];
			m.words[m.n] = dims[m.n]->state_words;
			m.alg[m.n] = dims[m.n]->alg->id;
			m.policy[m.n] = dims[m.n];
			m.n++;
		}
	}
	if (rc)
		return rc;
	s->group = dims;
	s->n = m.n;
	/* One any() limiter alone is its own composite. */
	s->kind = ls[0]->policy->kind == TK__ANY ? TK__ANY : TK__ALL;
	s->now = now;
	return ls[0]->store->ops->apply_multi(ls[0]->store, now, &m);
}

/*
 * Each rule of a group checked once; denied if a dimension of its own
 * denied (without @dims, every rule of a group that denied).
 */
static void count_group(struct tk_limiter *const *ls, size_t n,
			const struct tk_decision *out,
			const struct tk_decision *dims, size_t ndims)
{
	size_t i, j, at = 0;
	int denied;

	for (i = 0; i < n; i++) {
		denied = !out->allowed && !dims;
		for (j = 0; dims && j < ls[i]->policy->n; j++)
			if (at + j < ndims && !dims[at + j].allowed)
				denied = 1;
		at += ls[i]->policy->n;
		if (ls[i]->rule)
			tk__rule_count(ls[i]->store, ls[i]->rule, 1, denied);
	}
}

static int check_group(struct tk_limiter *const *ls, const struct tk_key *keys,
		       size_t n, uint64_t cost, struct tk_decision *out,
		       struct tk_decision *dims, size_t ndims)
{
	struct tk__step s = { .op = TK__OP_CHECK,
			      .cost = cost,
			      .dims = dims,
			      .ndims = dims ? ndims : 0 };
	size_t i, total = 0;
	uint64_t now = 0;
	int rc;

	if (!ls || !keys || !out || n == 0 || cost == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!ls[i] || (ls[i]->policy->kind == TK__ANY && n > 1))
			return -EINVAL;
		if (!same_store(ls[i]->store, ls[0]->store))
			return -EXDEV;
		rc = key_error(keys[i].key, keys[i].key_len);
		if (rc)
			return rc;
		total += ls[i]->policy->n;
	}
	if (total > TK_GROUP_DIMENSIONS_MAX)
		return -EINVAL;
	rc = tk__clock_read(ls[0]->clock, &now);
	if (rc == 0)
		rc = tk__step_done(ls[0]->store, &s,
				   run_group(ls, keys, n, now, &s), out);
	if (rc == 0) {
		count_group(ls, n, out, dims, ndims);
		return 0;
	}
	return fail_policy(group_fail(ls, n), ls[0]->policy, now, rc, out);
}

/*
 * Each limiter's current generation, all read in one RCU section, or,
 * while no limiter of the group ever had a policy set, the handles
 * themselves without one (as gen_enter()).
 */
TK_API int tk_limiter_check_group(struct tk_limiter *const *ls,
				  const struct tk_key *keys, size_t n,
				  uint64_t cost, struct tk_decision *out,
				  struct tk_decision *dims, size_t ndims)
{
	struct tk_limiter *g[TK_GROUP_DIMENSIONS_MAX], *cur;
	int rc, rcu = 0;
	size_t i;

	/* Every limiter has a dimension at least. */
	if (!ls || n == 0 || n > TK_GROUP_DIMENSIONS_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		/* Relaxed: a generation is loaded again below. */
		if (ls[i] && tk_atomic_load_ptr(&ls[i]->gen, TK_MO_RELAXED))
			rcu = 1;
	if (rcu)
		tk__rcu_read_lock();
	for (i = 0; i < n; i++) {
		/* Acquire: pairs with the xchg in set_policy(). */
		cur = ls[i] && rcu
			      ? tk_atomic_load_ptr(&ls[i]->gen, TK_MO_ACQUIRE)
			      : NULL;
		g[i] = cur ? cur : ls[i];
	}
	rc = check_group(g, keys, n, cost, out, dims, ndims);
	if (rcu)
		tk__rcu_read_unlock();
	return rc;
}

TK_API const struct tk_policy *tk_limiter_policy(const struct tk_limiter *l)
{
	struct tk_limiter *g;

	if (!l)
		return NULL;
	/* Acquire: pairs with the xchg in set_policy(). */
	g = tk_atomic_load_ptr((tk_atomic_ptr *)&l->gen, TK_MO_ACQUIRE);
	return g ? g->policy : l->policy;
}

/*
 * A new generation of @l: the handle's store, clock, prefix and fail policy,
 * bound to @policy.  Its keys are those the handle would compose for @policy,
 * so a state keeps its counts exactly where a limiter opened on @policy would
 * read it (tk_limiter_open(3), "Changing a policy").
 */
TK_API int tk_limiter_set_policy(struct tk_limiter *l, const char *policy)
{
	struct tk_limiter *g, *old;
	int rc;

	if (!l || !policy)
		return -EINVAL;
	g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	memcpy(g, l, sizeof(*g));
	g->owns_store = 0;
	tk_atomic_store_ptr(&g->gen, NULL, TK_MO_RELAXED);
	g->policy = NULL;
	rc = tk__policy_parse(&g->policy, policy, NULL);
	if (rc == 0 && g->store->ops->supports)
		rc = g->store->ops->supports(g->store, g->policy);
	if (rc) {
		tk_policy_free(g->policy);
		free(g);
		return tk__rc(rc);
	}
	bind(g);
	tk__rcu_setup();
	/* Release: publishes g's fields to gen_enter()'s acquire. */
	old = tk_atomic_xchg_ptr(&l->gen, g, TK_MO_ACQ_REL);
	if (old) {
		/* No call that could see @old is still running after this. */
		tk__rcu_synchronize();
		tk_policy_free(old->policy);
		free(old);
	}
	return 0;
}

static int reset(struct tk_limiter *l, const char *key, size_t key_len)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	const struct tk_policy *pol;
	size_t i, len;
	int rc = 0;

	if (!l)
		return -EINVAL;
	pol = l->policy;
	for (i = 0; i < pol->n && rc == 0; i++) {
		rc = compose_key(l, pol->kind == TK__SINGLE ? SINGLE : (int)i,
				 key, key_len, buf, &len);
		if (rc == 0)
			rc = l->store->ops->reset(l->store, buf, len);
	}
	return tk__rc(rc);
}

TK_API int tk_limiter_reset(struct tk_limiter *l, const char *key,
			    size_t key_len)
{
	int rc, rcu;

	if (!l)
		return -EINVAL;
	l = gen_enter(l, &rcu);
	rc = reset(l, key, key_len);
	gen_leave(rcu);
	return rc;
}

int tk__limiter_reserve_keys(struct tk_limiter *l, const char *key,
			     size_t key_len, struct tk__reserve_keys *k)
{
	size_t i, size;
	int rc = 0, rcu;

	l = gen_enter(l, &rcu);
	k->store = l->store;
	k->clock = l->clock;
	size = sizeof(*l->policy) + l->policy->n * sizeof(l->policy->dim[0]);
	k->policy = malloc(size);
	if (!k->policy)
		rc = -ENOMEM;
	else
		memcpy(k->policy, l->policy, size);
	for (i = 0; rc == 0 && i < l->policy->n; i++)
		rc = compose_key(l, l->single ? SINGLE : (int)i, key, key_len,
				 k->key[i], &k->len[i]);
	gen_leave(rcu);
	if (rc) {
		free(k->policy);
		k->policy = NULL;
	}
	return rc;
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
	struct tk_limiter *g;

	if (!l)
		return;
	g = tk_atomic_load_ptr(&l->gen, TK_MO_ACQUIRE);
	if (g) {
		tk_policy_free(g->policy);
		free(g);
	}
	if (l->owns_store)
		tk_store_close(l->store);
	tk_policy_free(l->policy);
	free(l);
}
