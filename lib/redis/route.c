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
 * A stale map (see cluster.c) after a failure on @c: refreshed; does it
 * now name another node than @c's as @slot's master (worth trying)?
 */
static int elsewhere(struct tk__redis_cluster *cl, unsigned int slot,
		     const struct tk__redis_conn *c)
{
	tk__redis_cluster_refresh(cl, c);
	return c && !tk__redis_cluster_serves(cl, slot, c);
}

/*
 * @fn on the master of @slot, following the cluster: MOVED corrects the
 * map and follows, ASK follows with ASKING; TRYAGAIN, CLUSTERDOWN
 * (-EAGAIN) and READONLY (-EROFS: the node was demoted) were not run,
 * and go again to the slot's master of a refreshed map: after 1 ms, or
 * for READONLY after a refresh it waits for (a stale map for sure).  A
 * connect that fails is tried again on a refreshed map's master if that
 * is another node: nothing was sent.  A command that failed on its
 * connection may have run: only the map is refreshed, for the next call.
 */
static int on_cluster(struct tk__redis_store *s, unsigned int slot,
		      tk__redis_on_node_fn *fn, void *arg)
{
	struct tk__redis_cluster *cl = s->cluster;
	struct tk__redis_conn *c = NULL;
	int rc, tries, asking = 0, moved;

	rc = tk__redis_cluster_conn(cl, slot, &c);
	for (tries = 0; tries <= REDIRECTS_MAX; tries++) {
		if (rc) {
			/* No connection: nothing sent. */
			if (!tk__redis_cluster_stale(rc) ||
			    tries == REDIRECTS_MAX || !elsewhere(cl, slot, c))
				break;
			c = NULL;
			rc = tk__redis_cluster_conn(cl, slot, &c);
			continue;
		}
		rc = fn(s, c, arg, asking);
		if (rc != TK__REDIS_MOVED && rc != TK__REDIS_ASK &&
		    rc != -EAGAIN && rc != -EROFS) {
			if (tk__redis_cluster_stale(rc))
				tk__redis_cluster_refresh(cl, c);
			break;
		}
		if (tries == REDIRECTS_MAX)
			break;
		asking = rc == TK__REDIS_ASK;
		if (asking || rc == TK__REDIS_MOVED) {
			moved = rc == TK__REDIS_MOVED;
			rc = tk__redis_cluster_follow(cl, slot, c, moved, &c);
			/* A moved slot is rarely alone (a failover moves
			 * all of a node's): the rest of the map learns.
			 * Within REFRESH_GAP of the last refresh only this
			 * slot does; the first MOVED after the gap
			 * refreshes. */
			if (moved)
				tk__redis_cluster_refresh(cl, NULL);
			continue;
		}
		if (rc == -EROFS) {
			/* The map names a replica: a refresh will tell. */
			tk__redis_cluster_refresh_due(cl, c);
		} else {
			pause_ms(1);
			tk__redis_cluster_refresh(cl, c);
		}
		c = NULL;
		rc = tk__redis_cluster_conn(cl, slot, &c);
	}
	return rc == TK__REDIS_MOVED || rc == TK__REDIS_ASK ? -EAGAIN : rc;
}

/*
 * @fn on the server, or on the master of @slot (on_cluster()).  All of
 * it within one deadline (the caller's, or one begun here): a connect
 * or command it leaves no time for answers -ETIMEDOUT.
 */
int tk__redis_route(struct tk__redis_store *s, unsigned int slot,
		    tk__redis_on_node_fn *fn, void *arg)
{
	uint64_t was = tk__redis_deadline_begin(&s->spec);
	struct tk__redis_conn *c;
	int rc;

	if (s->cluster) {
		rc = on_cluster(s, slot, fn, arg);
	} else {
		rc = tk__redis_conn_get(&s->pool, &c);
		if (rc == 0)
			rc = fn(s, c, arg, 0);
		if (rc == TK__REDIS_MOVED || rc == TK__REDIS_ASK)
			rc = -EAGAIN;
	}
	tk__redis_deadline_end(was);
	return rc;
}
