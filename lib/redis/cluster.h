/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cluster.h - a Redis Cluster (cluster.c): the hash slot of a key, the
 * slot map, and a connection pool per node.
 */
#ifndef TK_REDIS_CLUSTER_H
#define TK_REDIS_CLUSTER_H

#include <errno.h>
#include <stddef.h>

#include "redis/conn.h"
#include "redis/spec.h"

/* The hash slot of a key, as Redis computes it. */
unsigned int tk__redis_slot(const char *key, size_t len);

/* The slot map and a pool per node of a cluster spec. */
struct tk__redis_cluster;
/* @spec must outlive the cluster; nothing is sent before the first use. */
int tk__redis_cluster_init(struct tk__redis_cluster **out,
			   const struct tk__redis_spec *spec);
void tk__redis_cluster_destroy(struct tk__redis_cluster *cl);
/*
 * This thread's connection to the master of @slot (the map discovered by
 * CLUSTER SLOTS first if the slot is not known): the errors of
 * tk__redis_conn_get(), and -EAGAIN while no master serves the slot.
 */
int tk__redis_cluster_conn(struct tk__redis_cluster *cl, unsigned int slot,
			   struct tk__redis_conn **out);
/* The same in two steps: the index of @slot's master, then this
 * thread's connection to it. */
int tk__redis_cluster_node(struct tk__redis_cluster *cl, unsigned int slot);
int tk__redis_cluster_node_conn(struct tk__redis_cluster *cl, int node,
				struct tk__redis_conn **out);
/*
 * After TK__REDIS_MOVED (@moved: the map is corrected) or TK__REDIS_ASK
 * on @c: this thread's connection to the node named.
 */
int tk__redis_cluster_follow(struct tk__redis_cluster *cl, unsigned int slot,
			     struct tk__redis_conn *c, int moved,
			     struct tk__redis_conn **out);
/* After TK__REDIS_MOVED on @c: the map corrected, nothing connected. */
int tk__redis_cluster_moved(struct tk__redis_cluster *cl, unsigned int slot,
			    struct tk__redis_conn *c);

/*
 * The map may be stale (a node failed, a READONLY, CLUSTERDOWN or
 * TRYAGAIN reply, a redirection): CLUSTER SLOTS asked again of the known
 * nodes in turn, but @failed's (the connection that met it; NULL: none)
 * unless it is the only one, and unless a refresh is in flight or began
 * less than 100 ms ago (-EALREADY: the map as it is).  0, -EALREADY, or
 * the errors of tk__redis_conn_get() when no node answered.  Within the
 * call's deadline; never waits for another thread.
 */
int tk__redis_cluster_refresh(struct tk__redis_cluster *cl,
			      const struct tk__redis_conn *failed);
/*
 * The map is known stale (READONLY: @failed's node was demoted): as
 * tk__redis_cluster_refresh(), but a refresh in flight is waited for
 * (-EALREADY once done), and one begun less than 100 ms ago is waited
 * out, then the map refreshed: within the call's deadline (-ETIMEDOUT).
 */
int tk__redis_cluster_refresh_due(struct tk__redis_cluster *cl,
				  const struct tk__redis_conn *failed);
/* Does the map name @c's node as the master of @slot? */
int tk__redis_cluster_serves(struct tk__redis_cluster *cl, unsigned int slot,
			     const struct tk__redis_conn *c);
/*
 * Does @rc hint that the map is stale?  A connect or command that
 * failed on the node, READONLY (-EROFS: a master since demoted),
 * CLUSTERDOWN and TRYAGAIN (-EAGAIN), MOVED.
 */
static inline int tk__redis_cluster_stale(int rc)
{
	return rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -ETIMEDOUT ||
	       rc == -EROFS || rc == -EAGAIN || rc == TK__REDIS_MOVED;
}

/*
 * sentinel.c: the sentinels of a redis+sentinel:// spec, through which
 * a cluster of that spec (every slot on one master) refreshes its map.
 */
struct tk__redis_sentinels;
/* A pool per sentinel of @spec, which must outlive them: 0, -ENOMEM. */
int tk__redis_sentinels_init(struct tk__redis_sentinels **out,
			     const struct tk__redis_spec *spec);
void tk__redis_sentinels_destroy(struct tk__redis_sentinels *ss);
/*
 * The master's address, from the first sentinel that names one (@host
 * holds TK__REDIS_HOST_MAX + 1 bytes): 0, -EHOSTUNREACH when a sentinel
 * answered and none knows the spec's master name, else the last
 * sentinel's error (-ECONNREFUSED, -ETIMEDOUT, -EACCES, -EPROTO, ...).
 */
int tk__redis_sentinels_master(struct tk__redis_sentinels *ss, char *host,
			       int *port);

#endif /* TK_REDIS_CLUSTER_H */
