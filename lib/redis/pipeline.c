/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pipeline.c - a batch of checks on the Redis store in one round
 * trip per node (tk_limiter_check_many()).
 *
 * Each check is the same script, with the same arguments, as apply() or
 * apply_multi() sends alone (store.c); the batch only queues them
 * on the connection of the node that serves their slot (one server off
 * a cluster), sends every node's queue, then reads the replies.  A
 * server runs the commands of one connection in the order sent, and
 * every key of a check is in one slot, so each key sees the checks of
 * the batch in the caller's order: the decisions are those of the same
 * checks made one by one, bit for bit, and each reply is judged by the
 * same verdict as a single check's.
 *
 * Per request, not per batch:
 * - NOSCRIPT (or a flushed Functions library) means the script did not
 *   run: it is loaded again and only the requests that met it are sent
 *   again, in order, in a second pipeline (three rounds at most, as a
 *   single check tries three times);
 * - MOVED corrects the slot map; MOVED, ASK, TRYAGAIN, CLUSTERDOWN and
 *   READONLY (a master since demoted) send that request again alone,
 *   after the pipelines, by the single check's path (which follows
 *   redirects and refreshes the map, cluster.c), as does a request for a
 *   node no connection could be made to (a failover may have moved its
 *   slots);
 * - a check over keys of several slots of a cluster is made alone too,
 *   after the pipelines (xslot.c: one script per slot, in order);
 * - a connection that fails mid-pipeline (reset, timeout) answers every
 *   request not yet answered with its error (-ECONNRESET, -ETIMEDOUT),
 *   which the limiter's fail policy then handles request by request;
 *   but a pipeline whose first write failed, nothing written, reached
 *   no server: it is sent again in the next round on a new connection,
 *   once per batch (conn.c polls a connection before reuse, so this is
 *   a close that came in between).
 *
 * Time: the replies of all nodes are read before one deadline, the
 * spec's timeout after the commands were sent, so that a batch spread
 * over nodes that all stall waits one timeout, not one per node; and the
 * whole batch, connects, reloads and requests sent alone included, ends
 * by the call's deadline (the spec's timeout plus connect_timeout after
 * it began), its requests not answered by then -ETIMEDOUT.
 */
#include "store/store-ops.h"
#include "hash/siphash.h"
#include "redis/conn.h"
#include "redis/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 3     /* a script lost, loaded, lost again: give up */
#define NODES_MAX 64 /* as cluster.c */

enum { TODO, SENT, REDIRECT, DONE };

struct pending {
	unsigned int slot;
	int node;  /* index in the round's nodes */
	int state; /* TODO, SENT, REDIRECT, DONE */
	int timed; /* now and on_server are settled */
	int on_server;
	uint64_t now; /* ns */
};

struct batch {
	struct tk__redis_store *s;
	struct tk__batch_item *items;
	struct pending *p;
	size_t n;
	struct tk__redis_req q; /* the request being built or judged */
	struct tk__redis_call call;
	struct tk__redis_conn *conn[NODES_MAX];
	int node[NODES_MAX];	/* the cluster's index; -1: the one server */
	int node_rc[NODES_MAX]; /* 0, or why it has no connection */
	int nodes;
	int resent;   /* a pipeline that never left was sent again */
	uint64_t now; /* the limiter's time, ns */
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void done(struct batch *b, size_t i, int rc)
{
	b->items[i].rc = rc;
	b->p[i].state = DONE;
}

/* Item @i as a request in b->q, at the time settled for it. */
static int load_req(struct batch *b, size_t i)
{
	const struct tk__batch_item *it = &b->items[i];
	int rc = it->t ? tk__redis_req_single(b->s, it->key, it->len, b->now,
					      it->t, &b->q)
		       : tk__redis_req_multi(b->s, b->now, it->m, &b->q);

	if (rc == 0 && b->p[i].timed) {
		b->q.now = b->p[i].now;
		b->q.on_server = b->p[i].on_server;
	}
	return rc;
}

static uint32_t flags_of(const struct tk__batch_item *it)
{
	return it->t ? it->t->flags : it->m->flags;
}

/*
 * Into *k, the index of this round's connection to node @node (-1: the
 * one server), which is asked for once per round: a node that cannot be
 * reached costs one connect, and every request of it gets its error.
 * -E2BIG: more nodes than a map holds.
 */
static int conn_for(struct batch *b, int node, int *k)
{
	for (*k = 0; *k < b->nodes && b->node[*k] != node; ++*k)
		;
	if (*k == NODES_MAX)
		return -E2BIG;
	if (*k == b->nodes) {
		b->node[*k] = node;
		b->node_rc[*k] =
			node < 0 ? tk__redis_conn_get(&b->s->pool, &b->conn[*k])
				 : tk__redis_cluster_node_conn(
					   b->s->cluster, node, &b->conn[*k]);
		b->nodes++;
	}
	return b->node_rc[*k];
}

/* The node of each item still to send, its connection in b->conn. */
static void assign_nodes(struct batch *b)
{
	size_t i;
	int node, k = 0, rc;

	b->nodes = 0;
	for (i = 0; i < b->n; i++) {
		if (b->p[i].state != TODO)
			continue;
		node = -1;
		rc = 0;
		if (b->s->cluster) {
			node = tk__redis_cluster_node(b->s->cluster,
						      b->p[i].slot);
			rc = node < 0 ? node : 0;
		}
		if (rc == 0)
			rc = conn_for(b, node, &k);
		/* A node that cannot be reached may have failed over:
		 * nothing was sent, so the single check's path (a refreshed
		 * map, the new master) may still make it. */
		if (rc == -E2BIG ||
		    (rc && node >= 0 && tk__redis_cluster_stale(rc)))
			b->p[i].state = REDIRECT;
		else if (rc)
			done(b, i, rc);
		else
			b->p[i].node = k;
	}
}

static int needs_now(const struct tk__redis_req *q)
{
	size_t d;
	int needs = 0;

	for (d = 0; d < q->n; d++)
		needs |= tk__redis_needs_now(q->pol[d]);
	return needs;
}

static int by_value(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (*x > *y) - (*x < *y);
}

/*
 * May node @k's requests whose arguments need the time be sent at the
 * estimate?  Only if none of their keys is another's (by a hash: a
 * collision only costs the estimate).  A request the script sends back
 * (its TIME out of the arguments' span) goes again in the next round,
 * after the requests behind it: which is the caller's order only where
 * no later request touches its keys.
 */
static int keys_apart(struct batch *b, int k)
{
	static const uint64_t key[2] = { 0x6b657973, 0x6170617274 };
	uint64_t *h;
	size_t i, d, n = 0, cap = 0;
	int apart = 1;

	for (i = 0; i < b->n; i++)
		if (b->p[i].state == TODO && b->p[i].node == k &&
		    !b->p[i].timed)
			cap += TK__MULTI_MAX;
	h = malloc((cap ? cap : 1) * sizeof(*h));
	if (!h)
		return 0;
	for (i = 0; i < b->n; i++) {
		if (b->p[i].state != TODO || b->p[i].node != k ||
		    b->p[i].timed || load_req(b, i) || !needs_now(&b->q))
			continue;
		for (d = 0; d < b->q.n; d++)
			h[n++] = tk__siphash(key, b->q.key[d], b->q.klen[d]);
	}
	qsort(h, n, sizeof(*h), by_value);
	for (i = 1; i < n && apart; i++)
		apart = h[i] != h[i - 1];
	free(h);
	return apart;
}

/*
 * server_time=1, as a single check does it: a request whose arguments
 * need the time is computed at the server's time as estimated (the
 * script checks that its TIME lies where they hold), or, without an
 * estimate or where requests share keys, at the server's TIME read once
 * per node for all of them; the others let the script read it.
 */
static void server_times(struct batch *b, int k)
{
	uint64_t t = 0;
	size_t i;
	int needs, asked = 0, rc = 0, guess = keys_apart(b, k);

	for (i = 0; i < b->n; i++) {
		if (b->p[i].state != TODO || b->p[i].node != k || b->p[i].timed)
			continue;
		rc = load_req(b, i);
		if (rc) {
			done(b, i, rc);
			continue;
		}
		needs = needs_now(&b->q);
		if (needs && guess && tk__redis_estimate(b->s, &b->q) == 0) {
			b->p[i].timed = 1;
			b->p[i].on_server = 1;
			b->p[i].now = b->q.now;
			continue;
		}
		if (needs && !asked) {
			rc = tk__redis_server_now(b->conn[k], &t);
			if (rc == 0)
				tk__redis_learn(b->s, t, b->now);
			asked = 1;
		}
		if (needs && rc) {
			done(b, i, rc);
			continue;
		}
		b->p[i].timed = 1;
		b->p[i].on_server = !needs;
		b->p[i].now = needs ? t : b->now;
		if (needs)
			*b->q.decide_at = t;
	}
}

/* Queue node @k's requests; one that cannot be sent is done. */
static void queue(struct batch *b, int k)
{
	struct tk__redis_conn *c = b->conn[k];
	const char *verb = NULL, *name = NULL;
	size_t i;
	int rc = 0;

	if (b->s->spec.server_time)
		server_times(b, k);
	for (i = 0; i < b->n; i++) {
		if (b->p[i].state != TODO || b->p[i].node != k)
			continue;
		if (!b->s->spec.server_time) {
			b->p[i].timed = 1;
			b->p[i].now = b->now;
		}
		rc = load_req(b, i);
		if (rc == 0)
			rc = tk__redis_call_build(b->s, &b->q, &b->call);
		if (rc) {
			done(b, i, rc);
			continue;
		}
		/* The script is loaded once, before the first command. */
		if (!verb) {
			rc = tk__redis_call_target(b->s, c, &b->call);
			if (rc) {
				done(b, i, rc);
				continue;
			}
			verb = b->call.argv[0];
			name = b->call.argv[1];
		}
		b->call.argv[0] = verb;
		b->call.argv[1] = name;
		b->call.lens[0] = strlen(verb);
		b->call.lens[1] = strlen(name);
		rc = tk__redis_append(c, b->call.argc, b->call.argv,
				      b->call.lens);
		if (rc)
			done(b, i, rc);
		else
			b->p[i].state = SENT;
	}
}

/* Node @k's replies, in the order sent, before @deadline. */
static void collect(struct batch *b, int k, uint64_t deadline)
{
	struct tk__redis_conn *c = b->conn[k];
	void *r;
	size_t i;
	int rc, lost = 0;

	for (i = 0; i < b->n; i++) {
		if (b->p[i].state != SENT || b->p[i].node != k)
			continue;
		rc = tk__redis_next_reply(c, deadline, &r);
		if (rc == 0 && tk__redis_reply_expand(&r)) {
			tk__redis_reply_free(r);
			done(b, i, -EPROTO);
			continue;
		}
		if (rc == 0) {
			rc = load_req(b, i);
			if (rc == 0 && tk__redis_call_retry(b->s, &b->q, r)) {
				/* Again at the server's TIME, next round. */
				b->p[i].now = b->q.now;
				b->p[i].on_server = 0;
				b->p[i].state = TODO;
				tk__redis_reply_free(r);
				continue;
			}
			if (rc == 0)
				rc = tk__redis_call_verdict(&b->q, r);
			tk__redis_reply_free(r);
			done(b, i, rc);
		} else if (rc == -ENOENT || rc == -ENOSYS) {
			/* Not run: sent again once the script is back. */
			b->p[i].state = TODO;
			lost = rc;
		} else if (rc == TK__REDIS_MOVED || rc == TK__REDIS_ASK ||
			   rc == -EAGAIN || (rc == -EROFS && b->s->cluster)) {
			/* Not run either; MOVED: the map learns now, while
			 * the connection still holds the target. */
			if (rc == TK__REDIS_MOVED && b->s->cluster)
				tk__redis_cluster_moved(b->s->cluster,
							b->p[i].slot, c);
			b->p[i].state = b->s->cluster ? REDIRECT : DONE;
			b->items[i].rc = b->s->cluster ? 0 : -EAGAIN;
		} else {
			done(b, i, rc);
		}
	}
	if (lost)
		tk__redis_script_lost(c, lost);
}

/*
 * Send node @k's queue: 0, or its error when none of it left and it goes
 * again next round (then collect() has nothing to read), unless this is
 * the @last.
 */
static int send_queue(struct batch *b, int k, int last)
{
	size_t i;
	int unsent, rc = tk__redis_flush_unsent(b->conn[k], &unsent);

	if (!rc || !unsent || b->resent || last)
		return 0; /* a failure answers each request in collect() */
	b->resent = 1;
	for (i = 0; i < b->n; i++)
		if (b->p[i].state == SENT && b->p[i].node == k)
			b->p[i].state = TODO;
	return rc;
}

static void run_batch(struct batch *b)
{
	uint64_t deadline;
	size_t i;
	int round, k, left = 0;

	for (i = 0; i < b->n; i++) {
		b->p[i].state = TODO;
		b->p[i].timed = 0;
		b->p[i].on_server = 0;
		if (!(flags_of(&b->items[i]) & TK__T_CHECK))
			b->p[i].state = REDIRECT; /* not a check: alone */
		else if ((b->items[i].rc = load_req(b, i)) != 0 ||
			 (b->items[i].rc = tk__redis_req_slot(
				  b->s, &b->q, &b->p[i].slot)) < 0)
			b->p[i].state = DONE;
		else if (b->items[i].rc == TK__REDIS_XSLOT ||
			 b->items[i].rc == TK__REDIS_OCC)
			b->p[i].state = REDIRECT; /* several slots, a
						     transaction: alone */
	}
	for (round = 0; round < ROUNDS; round++) {
		assign_nodes(b);
		for (k = 0; k < b->nodes; k++)
			if (!b->node_rc[k])
				queue(b, k);
		/* Every node's commands leave before any reply is read. */
		for (k = 0; k < b->nodes; k++)
			if (!b->node_rc[k])
				b->node_rc[k] =
					send_queue(b, k, round == ROUNDS - 1);
		deadline = monotonic_ns() + b->s->spec.timeout;
		for (k = 0; k < b->nodes; k++)
			if (!b->node_rc[k])
				collect(b, k, deadline);
		for (left = 0, i = 0; i < b->n; i++)
			left += b->p[i].state == TODO;
		if (!left)
			break;
	}
	for (i = 0; i < b->n; i++) {
		if (b->p[i].state == TODO) /* lost three times */
			done(b, i, -EPROTO);
		if (b->p[i].state != REDIRECT)
			continue;
		b->items[i].rc = load_req(b, i);
		if (b->items[i].rc == 0)
			b->items[i].rc = tk__redis_step(b->s, &b->q,
							flags_of(&b->items[i]));
	}
}

void tk__redis_apply_batch(struct tk_store *base, uint64_t now,
			   struct tk__batch_item *items, size_t n)
{
	struct batch *b = malloc(sizeof(*b));
	uint64_t was;
	size_t i;

	if (b)
		b->p = malloc(n * sizeof(b->p[0]));
	if (!b || !b->p) {
		for (i = 0; i < n; i++)
			items[i].rc = -ENOMEM;
		free(b);
		return;
	}
	b->s = (struct tk__redis_store *)base;
	b->items = items;
	b->n = n;
	b->resent = 0;
	b->now = now;
	was = tk__redis_deadline_begin(&b->s->spec);
	run_batch(b);
	tk__redis_deadline_end(was);
	free(b->p);
	free(b);
}
