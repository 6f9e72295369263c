/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * xslot.c - a check over keys of several hash slots of a Redis
 * Cluster (tk_limiter_check_keys(), tk_limiter_check_group()), where one
 * script cannot run: every key a script touches must be in one slot.
 *
 * The protocol, for all() (every dimension admits, or none consumes):
 *
 *   1. The keys are split into parts by slot, and the parts are taken in
 *      ascending slot order, so that every client consumes in the same
 *      order.
 *   2. Each part is one check script on its slot's master: atomic within
 *      the part, all() over the part's dimensions.  It answers the states
 *      it read (PRE) and wrote (POST).
 *   3. The first part that refuses ends the consumes.  The parts after it
 *      are read (MGET, nothing written), so that the decision is the one
 *      a single script would give on those states; then every part
 *      already consumed is refunded by the refund script
 *      (check.lua): a key still at POST gets PRE back exactly; a key
 *      written since keeps those writes, and a window's count gets the
 *      cost back, a sliding log loses cost stamps of the check's time, a
 *      sliding window's bucket the cost (counts and stamps commute, so
 *      this is exact), each only from the window, stamps or bucket the
 *      consume added to and only if they still hold the cost (a later
 *      window, a reused bucket, expired stamps or a state lost and
 *      written again hold none of this check's units); gcra,
 *      token-bucket and leaky states keep the consume.
 *   4. The decision is the composite's, run by the limiter on the states
 *      read: the same shape as on one slot (the longest retry_after of a
 *      refusal, the least remaining of an admission, every dimension's
 *      decision), checked against the scripts' verdicts (-EPROTO if they
 *      differ).
 *
 * The guarantee: never more admitted than any dimension's limit.  Each
 * dimension's consume is the one-slot script's, so a key's state never
 * admits past its limit; a refund removes no unit another check consumed
 * (it restores PRE only over its own POST, and takes only its own cost
 * off a count, a log or a bucket).  What it costs: while a check holds units it
 * will give back (between steps 2 and 3), another check of the same key can be
 * refused for want of them (transient under-admission), and a refund
 * that finds a one-word state (gcra, token-bucket, leaky) written since
 * leaves the consume in place: under-admission by that cost, once, until
 * the state drains (another check admitted since moved the state from
 * max(TAT, now), and taking this check's increment off could give back
 * part of theirs).  A process that dies, or a refund
 * that fails (a node down, a timeout), between steps 2 and 3 leaves the
 * consumes too: fewer admitted, never more.  Without races (no other
 * check of these keys between a consume and its refund) the decisions
 * and states are the memory store's, bit for bit.
 *
 * A reservation's cancel (lib/reserve.c) is the same refund, over the
 * states its check spelled: tk__redis_refund().
 *
 * any() needs no refund: it consumes in every dimension that admits,
 * whatever the others do, so each part is checked on its own and the
 * check is admitted if one part admits.
 *
 * With server_time=1 the first part decides at its master's TIME: its
 * script's arguments are computed at the server's time as estimated
 * (sent again at that TIME if it lay outside their span, as a single
 * check's), or, without an estimate yet, at TIME read first; every other
 * part decides at the time the first decided at.
 */
#include "redis/store.h"
#include "test-hooks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keys of one slot, as indexes into the whole check's. */
struct part {
	unsigned int slot;
	size_t n;
	size_t at[TK__MULTI_MAX];
};

/* The whole check, and what each key's script said. */
struct xslot {
	struct tk__redis_req *q;
	size_t parts;
	struct part part[TK__MULTI_MAX];
	uint64_t now; /* ns: when every part decides */
	int guess;    /* now is an estimate, the first part's TIME decides */
	/* Per key: PRE and POST as the server spelled them (NULL: none). */
	char *pre[TK__MULTI_MAX], *post[TK__MULTI_MAX];
	size_t pre_len[TK__MULTI_MAX], post_len[TK__MULTI_MAX];
	/* Per key, what its refund did (tk__redis_refund()), or NULL. */
	int *done;
	/* Per key, its policy's state_words each: the state read (old[k]
	 * points there, or is NULL), the state written, the limiter's. */
	uint64_t *words[TK__MULTI_MAX], *made[TK__MULTI_MAX];
	uint64_t *next[TK__MULTI_MAX];
	const uint64_t *old[TK__MULTI_MAX];
	uint64_t w[]; /* where they point */
};

static struct xslot *xslot_new(struct tk__redis_req *q)
{
	size_t i, total = 0, at = 0;
	struct xslot *x;

	for (i = 0; i < q->n; i++)
		total += q->pol[i]->state_words;
	x = calloc(1, sizeof(*x) + 3 * total * sizeof(x->w[0]));
	if (!x)
		return NULL;
	x->q = q;
	x->now = q->now;
	for (i = 0; i < q->n; i++) {
		x->words[i] = x->w + at;
		x->made[i] = x->w + total + at;
		x->next[i] = x->w + 2 * total + at;
		at += q->pol[i]->state_words;
	}
	return x;
}

#if TK_TEST_HOOKS
void (*tk__xslot_pause)(void *arg);
void *tk__xslot_pause_arg;
#endif

static const uint64_t zeros[TK__STATE_WORDS_MAX];
static const uint64_t *const none[TK__MULTI_MAX];

/*
 * The all() (or any()) of one part, as its script decides it: the
 * limiter's composite keeps its decision for the whole check, so a part
 * is decided here, by the algorithms themselves.
 */
struct part_ctx {
	const struct tk__redis_req *q; /* the part's */
	const uint64_t *now;
};

static int part_fn(void *ctx, const uint64_t *const *old, uint64_t *const *next,
		   int *persist, uint64_t *expires_at)
{
	const struct part_ctx *c = ctx;
	const struct tk__redis_req *q = c->q;
	int rc[TK__MULTI_MAX], first = 0;
	size_t i, yes = 0, failed = 0;
	struct tk_decision d;

	for (i = 0; i < q->n; i++) {
		const struct tk__policy *p = q->pol[i];
		const uint64_t *st = old[i];

		if (st && !p->alg->valid(p, p->state_words, st))
			st = NULL;
		memset(&d, 0, sizeof(d));
		rc[i] = p->alg->check(p, st ? st : zeros, *c->now, q->cost,
				      next[i], &d);
		if (rc[i] < 0 && !failed++)
			first = rc[i];
		else if (rc[i] >= 0 && d.allowed)
			yes++;
	}
	if (q->kind == TK__ALL && failed)
		return first;
	if (q->kind == TK__ALL ? yes < q->n : yes == 0)
		return TK__KEEP;
	for (i = 0; i < q->n; i++) {
		persist[i] = rc[i] == TK__PERSIST;
		if (persist[i])
			expires_at[i] =
				q->pol[i]->alg->expires(q->pol[i], next[i]);
	}
	return TK__PERSIST;
}

/* One part's request: its keys and policies, decided at x->now. */
static void part_req(const struct xslot *x, const struct part *p,
		     struct tk__redis_req *sub, struct tk__multi *m,
		     struct part_ctx *c, uint64_t *at)
{
	size_t i;

	memset(sub, 0, sizeof(*sub));
	memset(m, 0, sizeof(*m));
	sub->n = p->n;
	for (i = 0; i < p->n; i++) {
		sub->pol[i] = x->q->pol[p->at[i]];
		memcpy(sub->key[i], x->q->key[p->at[i]], x->q->klen[p->at[i]]);
		sub->klen[i] = x->q->klen[p->at[i]];
	}
	sub->kind = x->q->kind;
	sub->now = x->now;
	sub->local = x->q->local;
	sub->on_server = x->guess;
	sub->cost = x->q->cost;
	*at = x->now;
	sub->decide_at = at;
	sub->m = m;
	m->n = p->n;
	m->fn = part_fn;
	m->ctx = c;
	c->q = sub;
	c->now = at;
}

static int copy_str(const redisReply *r, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	if (r->type != REDIS_REPLY_STRING)
		return -EPROTO;
	*out = malloc(r->len + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, r->str, r->len);
	(*out)[r->len] = '\0';
	*len = r->len;
	return 0;
}

/* Key @k's state as read (@r, nil: none): kept as text and as words. */
static int take_pre(struct xslot *x, size_t k, const redisReply *r)
{
	int rc = copy_str(r, &x->pre[k], &x->pre_len[k]);

	x->old[k] = NULL;
	if (rc == 0 && x->pre[k]) {
		rc = tk__redis_decode(x->q->pol[k], x->pre[k], x->pre_len[k],
				      x->words[k], x->q->pol[k]->state_words);
		x->old[k] = x->words[k];
	}
	return rc;
}

struct consume_arg {
	struct xslot *x;
	const struct part *p;
	int admitted;
};

static int consume_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		      void *arg, int asking)
{
	struct consume_arg *a = arg;
	struct xslot *x = a->x;
	const struct part *p = a->p;
	struct tk__redis_call call;
	struct tk__multi m;
	struct part_ctx ctx;
	struct tk__redis_req sub;
	redisReply *r = NULL;
	uint64_t at;
	size_t i, k;
	int rc;

	part_req(x, p, &sub, &m, &ctx, &at);
	for (i = 0; i < 2; i++) {
		rc = tk__redis_call_build(s, &sub, &call);
		if (rc == 0)
			rc = tk__redis_eval(s, c, &call, &r, asking);
		if (rc || !tk__redis_call_retry(s, &sub, r))
			break;
		/* TIME out of the arguments' span: again at it. */
		tk__redis_reply_free(r);
		r = NULL;
	}
	if (rc == 0)
		rc = tk__redis_call_verdict(&sub, r);
	if (rc < 0)
		goto out;
	if (x->guess) {
		/* The other parts decide when the first did. */
		x->guess = 0;
		x->now = at;
		*x->q->decide_at = at;
	}
	a->admitted = rc == TK__PERSIST;
	/* tk__redis_call_verdict() has checked the reply's shape. */
	for (i = 0; rc >= 0 && i < p->n; i++) {
		k = p->at[i];
		rc = take_pre(x, k, r->element[1 + i]);
		if (rc == 0)
			rc = copy_str(r->element[1 + p->n + i], &x->post[k],
				      &x->post_len[k]);
		if (rc == 0 && x->post[k])
			rc = tk__redis_decode(x->q->pol[k], x->post[k],
					      x->post_len[k], x->made[k],
					      x->q->pol[k]->state_words);
	}
out:
	if (r)
		tk__redis_reply_free(r);
	return rc < 0 ? rc : 0;
}

/* The states of a part not consumed: read, nothing written. */
static int read_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		   void *arg, int asking)
{
	struct consume_arg *a = arg;
	const char *argv[1 + TK__MULTI_MAX];
	size_t lens[1 + TK__MULTI_MAX], i;
	redisReply *r = NULL;
	int rc;

	(void)s;
	argv[0] = "MGET";
	lens[0] = 4;
	for (i = 0; i < a->p->n; i++) {
		argv[1 + i] = a->x->q->key[a->p->at[i]];
		lens[1 + i] = a->x->q->klen[a->p->at[i]];
	}
	rc = asking ? tk__redis_asking(c) : 0;
	if (rc == 0)
		rc = tk__redis_command(c, (int)(1 + a->p->n), argv, lens,
				       (void **)&r);
	if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != a->p->n))
		rc = -EPROTO;
	for (i = 0; rc == 0 && i < a->p->n; i++)
		rc = take_pre(a->x, a->p->at[i], r->element[i]);
	if (r)
		tk__redis_reply_free(r);
	return rc;
}

/* The refund's command: 5 words, then 6 per key. */
_Static_assert(5 + 6 * TK__MULTI_MAX <= TK__REDIS_ARGS_MAX,
	       "a refund's command fits a check's");

/* The refund script over the keys of part @a->p that the consume wrote. */
static int refund_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		     void *arg, int asking)
{
	struct consume_arg *a = arg;
	struct xslot *x = a->x;
	struct tk__redis_call call;
	const char **argv = call.argv;
	size_t *lens = call.lens, i, k, n = 0, argc;
	char nkeys[24], cost[24], now[24], args[TK__MULTI_MAX][7][24];
	redisReply *r = NULL;
	int rc;

	snprintf(cost, sizeof(cost), "%llu", (unsigned long long)x->q->cost);
	snprintf(now, sizeof(now), "%llu", (unsigned long long)x->now);
	for (i = 0; i < a->p->n; i++) {
		k = a->p->at[i];
		if (!x->post[k])
			continue;
		argv[3 + n] = x->q->key[k];
		lens[3 + n] = x->q->klen[k];
		n++;
	}
	if (n == 0)
		return 0;
	snprintf(nkeys, sizeof(nkeys), "%zu", n);
	argv[2] = nkeys;
	lens[2] = strlen(nkeys);
	argc = 3 + n;
	argv[argc] = "refund";
	lens[argc++] = 6;
	argv[argc] = nkeys;
	lens[argc++] = strlen(nkeys);
	for (i = 0; i < a->p->n; i++) {
		k = a->p->at[i];
		if (!x->post[k])
			continue;
		argv[argc] = x->pre[k] ? x->pre[k] : "";
		lens[argc++] = x->pre_len[k];
		argv[argc] = x->post[k];
		lens[argc++] = x->post_len[k];
		argv[argc] = cost;
		lens[argc++] = strlen(cost);
		argv[argc] = now;
		lens[argc++] = strlen(now);
		/* A sliding window's bucket: its check's SLOT argument. */
		if (tk__redis_check_args(x->q->pol[k], x->now, x->q->cost,
					 args[i]) ||
		    x->q->pol[k]->alg->id != TK__ALG_SLIDING_WINDOW)
			strcpy(args[i][6], "0");
		argv[argc] = args[i][6];
		lens[argc++] = strlen(args[i][6]);
	}
	call.argc = (int)argc;
	rc = tk__redis_eval(s, c, &call, &r, asking);
	if (rc == 0) {
		if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
			rc = -EPROTO;
		for (i = 0, n = 0; rc == 0 && x->done && i < a->p->n; i++)
			if (x->post[a->p->at[i]])
				x->done[a->p->at[i]] =
					(int)r->element[n++]->integer;
		tk__redis_reply_free(r);
	}
	return rc;
}

static int now_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		  void *arg, int asking)
{
	(void)s;
	(void)asking;
	return tk__redis_server_now(c, arg);
}

static int by_slot(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	return (x->slot > y->slot) - (x->slot < y->slot);
}

static void split(struct xslot *x)
{
	const struct tk__redis_req *q = x->q;
	unsigned int slot;
	size_t i, j;

	for (i = 0; i < q->n; i++) {
		slot = tk__redis_slot(q->key[i], q->klen[i]);
		for (j = 0; j < x->parts && x->part[j].slot != slot; j++)
			;
		if (j == x->parts) {
			x->part[j].slot = slot;
			x->part[j].n = 0;
			x->parts++;
		}
		x->part[j].at[x->part[j].n++] = i;
	}
	qsort(x->part, x->parts, sizeof(x->part[0]), by_slot);
}

/*
 * The limiter's composite on the states read, which fills the decision;
 * it must agree with the parts' scripts: admitted iff @admitted, and then
 * writing what they wrote.
 */
static int decide(struct xslot *x, int admitted)
{
	const struct tk__redis_req *q = x->q;
	uint64_t *const *next = x->next, expires[TK__MULTI_MAX];
	int persist[TK__MULTI_MAX], rc;
	size_t i;

	for (i = 0; i < q->n; i++) {
		memset(next[i], 0, q->pol[i]->state_words * sizeof(next[i][0]));
		persist[i] = 0;
	}
	rc = q->m->fn(q->m->ctx, x->old, next, persist, expires);
	if (rc < 0)
		return rc;
	if ((rc == TK__PERSIST) != admitted)
		return -EPROTO;
	for (i = 0; admitted && i < q->n; i++)
		if (!persist[i] != !x->post[i] ||
		    (persist[i] &&
		     memcmp(next[i], x->made[i],
			    q->pol[i]->state_words * sizeof(next[i][0]))))
			return -EPROTO;
	return rc;
}

int tk__redis_xslot(struct tk__redis_store *s, struct tk__redis_req *q)
{
	int persist[TK__MULTI_MAX], rc = 0, admitted;
	struct consume_arg a[TK__MULTI_MAX];
	uint64_t expires[TK__MULTI_MAX];
	struct xslot *x;
	size_t i, done = 0, denied;

	if (!q->m || (q->kind != TK__ALL && q->kind != TK__ANY))
		return -ENOTSUP;
	x = xslot_new(q);
	if (!x)
		return -ENOMEM;
	/* What no state could change (-ERANGE) costs no round trip. */
	rc = q->m->fn(q->m->ctx, none, x->next, persist, expires);
	if (rc < 0)
		goto out;
	rc = 0;
	split(x);
	denied = x->parts;
	if (s->spec.server_time && tk__redis_estimate(s, q) == 0) {
		x->now = q->now;
		x->guess = 1;
	} else if (s->spec.server_time) {
		rc = tk__redis_route(s, x->part[0].slot, now_on, &x->now);
		if (rc == 0)
			tk__redis_learn(s, x->now, q->local);
	}
	if (rc == 0 && x->now >= TK__NOW_LIMIT)
		rc = -EPROTO;
	if (rc == 0)
		*q->decide_at = x->now;
	for (i = 0; rc == 0 && i < x->parts; i++) {
		a[i] = (struct consume_arg){ x, &x->part[i], 0 };
		rc = tk__redis_route(s, x->part[i].slot, consume_on, &a[i]);
		if (rc == 0)
			done = i + 1;
		if (rc == 0 && q->kind == TK__ALL && !a[i].admitted) {
			denied = i;
			break;
		}
	}
	/* A refused all(): the rest is read for the decision. */
	for (i = denied + 1; rc == 0 && i < x->parts; i++) {
		a[i] = (struct consume_arg){ x, &x->part[i], 0 };
		rc = tk__redis_route(s, x->part[i].slot, read_on, &a[i]);
	}
	/* Give back what the parts before the refusal (or the error)
	 * consumed; a refund that fails leaves its consume (fewer
	 * admitted, never more). */
	if (q->kind == TK__ALL && (rc || denied < x->parts)) {
		if (tk__xslot_pause && done && denied)
			tk__xslot_pause(tk__xslot_pause_arg);
		for (i = 0; i < done && i < denied; i++)
			tk__redis_route(s, x->part[i].slot, refund_on, &a[i]);
	}
	if (rc == 0) {
		admitted = q->kind == TK__ALL ? denied == x->parts : 0;
		for (i = 0; q->kind == TK__ANY && i < x->parts; i++)
			admitted |= a[i].admitted;
		rc = decide(x, admitted);
	}
	/* A reservation keeps the states as the server spelled them. */
	for (i = 0; rc >= 0 && q->m->spelling && i < q->n; i++)
		if (tk__redis_spelled(q->m->spelling, i, x->pre[i],
				      x->pre_len[i], x->post[i],
				      x->post_len[i]))
			rc = -ENOMEM;
	if (rc >= 0 && q->m->spelling)
		q->m->spelling->now = x->now;
out:
	for (i = 0; i < q->n; i++) {
		free(x->pre[i]);
		free(x->post[i]);
	}
	free(x);
	return rc;
}

int tk__redis_refund(struct tk_store *base, size_t n,
		     const unsigned char *const *key, const size_t *len,
		     const struct tk__policy *const *pol,
		     const struct tk__spelling *sp, uint64_t cost, int *done)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct consume_arg a[TK__MULTI_MAX];
	struct tk__redis_req q = { .n = n, .kind = TK__ALL, .cost = cost };
	struct xslot *x;
	size_t i;
	int rc = 0;

	q.now = sp->now;
	for (i = 0; i < n && rc == 0; i++) {
		q.pol[i] = pol[i];
		done[i] = 0;
		rc = tk__redis_key(s, key[i], len[i], q.key[i], &q.klen[i]);
	}
	x = rc ? NULL : xslot_new(&q);
	if (!x)
		return rc ? rc : -ENOMEM;
	/* The states are the caller's: lent, never freed here. */
	for (i = 0; i < n; i++) {
		x->pre[i] = sp->pre[i];
		x->pre_len[i] = sp->pre_len[i];
		x->post[i] = sp->post[i];
		x->post_len[i] = sp->post_len[i];
	}
	x->done = done;
	split(x);
	for (i = 0; rc == 0 && i < x->parts; i++) {
		a[i] = (struct consume_arg){ x, &x->part[i], 0 };
		rc = tk__redis_route(s, x->part[i].slot, refund_on, &a[i]);
	}
	free(x);
	return rc;
}
