/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * route.c - a call of the Redis store taken to the node that serves its
 * slot: the one server, or a cluster's master of the slot, following the
 * cluster's redirections.
 *
 * A script redirected was not run, so following never counts a check
 * twice.  The slot map itself, and a pool per node, are cluster.c's.
 */
#include "config.h"
#include "redis/store.h"

#include <errno.h>
#include <time.h>

#define REDIRECTS_MAX 5

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * @fn on the server, or on the master of @slot: MOVED corrects the map
 * and follows, ASK follows with ASKING, TRYAGAIN and CLUSTERDOWN (-EAGAIN)
 * wait 1 ms; each at most REDIRECTS_MAX times, then -EAGAIN.  All of it
 * within one deadline (the caller's, or one begun here): a connect or
 * command it leaves no time for answers -ETIMEDOUT.
 */
int tk__redis_route(struct tk__redis_store *s, unsigned int slot,
		    tk__redis_on_node_fn *fn, void *arg)
{
	uint64_t was = tk__redis_deadline_begin(&s->spec);
	struct tk__redis_conn *c;
	int rc, tries, asking = 0;

	if (!s->cluster)
		rc = tk__redis_conn_get(&s->pool, &c);
	else
		rc = tk__redis_cluster_conn(s->cluster, slot, &c);
	for (tries = 0; rc == 0; tries++) {
		rc = fn(s, c, arg, asking);
		if (!s->cluster || tries == REDIRECTS_MAX ||
		    (rc != TK__REDIS_MOVED && rc != TK__REDIS_ASK &&
		     rc != -EAGAIN))
			break;
		if (rc == -EAGAIN) {
			pause_ms(1);
			rc = 0;
			continue;
		}
		asking = rc == TK__REDIS_ASK;
		rc = tk__redis_cluster_follow(s->cluster, slot, c,
					      rc == TK__REDIS_MOVED, &c);
	}
	tk__redis_deadline_end(was);
	return rc == TK__REDIS_MOVED || rc == TK__REDIS_ASK ? -EAGAIN : rc;
}
