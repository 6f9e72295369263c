/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c - the Redis store: state on a Redis server, shared by every
 * host that opens the same spec.  This file binds the tier's parts to
 * the store interface (apply, apply_multi, reset, ping, close) and opens
 * the store.
 *
 * A check is one script on the server (check.lua, run as engine.c
 * loads it; one sliding log's or window's, fast.lua: fast.c).  The script reads
 * the states of the check's keys (one, or one per dimension of a composite or
 * group; keys.c names them), decides admission with exact integer arithmetic,
 * writes the new states with a TTL (expiry plus the grace) and returns the
 * states it read and wrote, which the client judges (verdict.c).
 *
 * A batch (tk_limiter_check_many()) sends the same scripts, one pipeline
 * per node: pipeline.c, through the steps store.h declares.  A check over
 * keys of several slots of a cluster is one script per slot, with
 * refunds: xslot.c, through the same steps.  A peek or forecast is a
 * plain GET (MGET): peek.c.
 *
 * Every algorithm runs, alone, in composites and in groups.  User
 * strategies (tk_strategy_register()), which no script knows, run as a
 * transaction of WATCH, MGET, MULTI, SET and EXEC: occ.c.  With
 * server_time=1 the decision's time is the server's TIME, read by the
 * script, which arguments computed at an estimate of it must fit
 * (clock.c).
 */
#include "algo/policy.h"
#include "store/store-ops.h"
#include "redis/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

/* ns, as the memory store. */
#define DEFAULT_GRACE (UINT64_C(60) * 1000000000)

/*
 * The script, and once more at the server's time if that lay outside
 * the span of the arguments (a window's edge, a stale estimate).
 */
static int check(struct tk__redis_store *s, struct tk__redis_conn *c,
		 struct tk__redis_req *q, int asking)
{
	struct tk__redis_call call;
	redisReply *r;
	int rc, tries;

	/* One sliding log or window: fast.lua (fast.c), or check.lua
	 * where it says. */
	for (tries = 0; tk__redis_call_fast(q) && tries < 2; tries++) {
		rc = tk__redis_call_build(s, q, &call);
		if (rc == 0)
			rc = tk__redis_eval_fast(s, c, q, &call, &r, asking);
		if (rc == TK__REDIS_SLOW)
			break;
		if (rc)
			return rc;
		if (tk__redis_call_retry(s, q, r)) {
			tk__redis_reply_free(r);
			continue;
		}
		rc = tk__redis_fast_verdict(q, r);
		tk__redis_reply_free(r);
		if (rc >= 0 && q->on_server)
			tk__redis_learn(s, *q->decide_at, q->local);
		return rc;
	}
	for (tries = 0; tries < 2; tries++) {
		rc = tk__redis_call_build(s, q, &call);
		if (rc == 0)
			rc = tk__redis_eval(s, c, &call, &r, asking);
		if (rc)
			return rc;
		if (!tk__redis_call_retry(s, q, r))
			break;
		tk__redis_reply_free(r);
	}
	rc = tk__redis_call_verdict(q, r);
	tk__redis_reply_free(r);
	return rc;
}

struct step_arg {
	struct tk__redis_req *q;
	uint32_t flags;
	int occ; /* user strategies: a transaction (occ.c) */
};

static int step_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		   void *arg, int asking)
{
	struct step_arg *a = arg;
	int rc = 0;

	if (!(a->flags & TK__T_CHECK)) {
		rc = tk__redis_peek(s, c, a->q, asking);
		/* One that writes is a refund (lib/reserve.c), which the
		 * store's refund() leaves to apply() for user strategies. */
		return a->occ && rc == TK__PERSIST
			       ? tk__redis_occ_check(s, c, a->q, asking,
						     a->flags)
			       : rc;
	}
	if (a->occ)
		return tk__redis_occ_check(s, c, a->q, asking, a->flags);
	if (s->spec.server_time)
		rc = tk__redis_server_clock(s, c, a->q);
	return rc ? rc : check(s, c, a->q, asking);
}

int tk__redis_step(struct tk__redis_store *s, struct tk__redis_req *q,
		   uint32_t flags)
{
	struct step_arg a = { q, flags, 0 };
	unsigned int slot;
	uint64_t was;
	int rc = tk__redis_req_slot(s, q, &slot);

	if (rc < 0)
		return rc;
	/* One deadline for the check, over all the slots it runs in. */
	was = tk__redis_deadline_begin(&s->spec);
	/* A peek reads only one key's dimensions, which share a slot. */
	if (rc == TK__REDIS_XSLOT) {
		rc = flags & TK__T_CHECK ? tk__redis_xslot(s, q) : -ENOTSUP;
		/* Its parts, one per slot, count nothing themselves. */
		if (rc >= 0) {
			TK__REDIS_COUNT(&s->spec, checks, 1);
			if (rc != TK__PERSIST)
				TK__REDIS_COUNT(&s->spec, denies, 1);
		}
	} else {
		a.occ = rc == TK__REDIS_OCC;
		rc = tk__redis_route(s, slot, step_on, &a);
	}
	tk__redis_deadline_end(was);
	return rc;
}

static int redis_apply(struct tk_store *base, const unsigned char *key,
		       size_t len, uint64_t now, const struct tk__transform *t)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct tk__redis_req q;
	int rc = tk__redis_req_single(s, key, len, now, t, &q);

	return rc ? rc : tk__redis_step(s, &q, t->flags);
}

static int redis_apply_multi(struct tk_store *base, uint64_t now,
			     const struct tk__multi *m)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct tk__redis_req q;
	int rc = tk__redis_req_multi(s, now, m, &q);

	return rc ? rc : tk__redis_step(s, &q, m->flags);
}

struct del_arg {
	char key[TK__REDIS_KEY_MAX];
	size_t len;
};

static int del_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		  void *arg, int asking)
{
	struct del_arg *a = arg;
	const char *argv[2] = { "DEL", a->key };
	size_t lens[2] = { 3, a->len };
	redisReply *r;
	int rc = asking ? tk__redis_asking(c) : 0;

	(void)s;
	if (rc == 0)
		rc = tk__redis_command(c, 2, argv, lens, (void **)&r);
	if (rc == 0)
		tk__redis_reply_free(r);
	return rc;
}

static int redis_reset(struct tk_store *base, const unsigned char *key,
		       size_t len)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct del_arg a;
	int rc = tk__redis_key(s, key, len, a.key, &a.len);

	return rc ? rc
		  : tk__redis_route(s, tk__redis_slot(a.key, a.len), del_on,
				    &a);
}

/* The server keeps the keys; this process counts nothing of them yet. */
static uint64_t got(tk_atomic_u64 *counter)
{
	return tk_atomic_load_u64(counter, TK_MO_RELAXED);
}

static void redis_stats(struct tk_store *base, struct tk_stats *out)
{
	struct tk__redis_stats *st = &((struct tk__redis_store *)base)->stats;

	out->checks = got(&st->checks);
	out->denies = got(&st->denies);
	out->redis_round_trips = got(&st->round_trips);
	out->redis_connects = got(&st->connects);
	out->redis_reconnects = got(&st->reconnects);
	out->redis_connections = got(&st->connections);
	out->redis_refreshes = got(&st->refreshes);
	out->redis_timeouts = got(&st->timeouts);
	out->redis_conn_errors = got(&st->conn_errors);
	out->redis_redirects = got(&st->redirects);
	out->redis_error_replies = got(&st->error_replies);
}

/* Every algorithm has its transition in the script; one added to the
 * library without one is refused at open, not at each check.  User
 * strategies run as a transaction (occ.c), which writes every built-in
 * algorithm's state beside them as the script would. */
static int redis_supports(struct tk_store *base, const struct tk_policy *p)
{
	const struct tk__policy *pol[TK__MULTI_MAX];
	size_t i;

	(void)base;
	for (i = 0; i < p->n && i < TK__MULTI_MAX; i++)
		pol[i] = &p->dim[i];
	return tk__redis_occ_route(pol, i) < 0 ? -ENOTSUP : 0;
}

static void redis_close(struct tk_store *base)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;

	if (s->cluster)
		tk__redis_cluster_destroy(s->cluster);
	else
		tk__redis_pool_destroy(&s->pool);
	free(s->library);
	free(s->fast_library);
	/* The password is not left in freed memory. */
	memset(&s->spec, 0, sizeof(s->spec));
	free(s);
}

/*
 * The same server (address, the cluster's seeds, or the sentinels and
 * master name), database and
 * key_prefix, over TLS or not alike: the same keys.  The connection's
 * timeouts and login may differ; a group runs on its first limiter's.
 */
static int redis_same(struct tk_store *a, struct tk_store *b)
{
	const struct tk__redis_spec *x = &((struct tk__redis_store *)a)->spec;
	const struct tk__redis_spec *y = &((struct tk__redis_store *)b)->spec;
	size_t i;

	if (x->unix_socket != y->unix_socket || x->port != y->port ||
	    x->db != y->db || x->tls != y->tls || x->cluster != y->cluster ||
	    x->seeds != y->seeds || x->server_time != y->server_time ||
	    x->sentinel != y->sentinel ||
	    strcmp(x->master_name, y->master_name) ||
	    strcmp(x->host, y->host) || strcmp(x->path, y->path) ||
	    x->key_prefix_len != y->key_prefix_len ||
	    memcmp(x->key_prefix, y->key_prefix, x->key_prefix_len))
		return 0;
	for (i = 0; i < x->seeds; i++)
		if (x->seed[i].port != y->seed[i].port ||
		    strcmp(x->seed[i].host, y->seed[i].host))
			return 0;
	return 1;
}

static const struct tk__store_ops redis_ops = {
	.name = "redis",
	.apply = redis_apply,
	.apply_multi = redis_apply_multi,
	.apply_batch = tk__redis_apply_batch,
	.reset = redis_reset,
	.refund = tk__redis_refund,
	.stats = redis_stats,
	.supports = redis_supports,
	.ping = tk__redis_ping,
	.same = redis_same,
	.close = redis_close,
};

int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o, char *why, size_t why_len)
{
	struct tk__redis_store *s;
	int rc;

	if (why_len)
		why[0] = '\0';
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = tk__redis_spec_parse(spec, &s->spec, why, why_len);
	/* Before the cluster's nodes copy the spec. */
	s->spec.stats = &s->stats;
	if (rc == 0)
		rc = tk__redis_library_make(s);
	/* A sentinel spec is a cluster of one master (cluster.c). */
	if (rc == 0 && (s->spec.cluster || s->spec.sentinel))
		rc = tk__redis_cluster_init(&s->cluster, &s->spec);
	else if (rc == 0)
		rc = tk__redis_pool_init(&s->pool, &s->spec, why, why_len);
	if (rc) {
		free(s->library);
		free(s->fast_library);
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
