/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cluster.c - the slot map of a Redis Cluster and a connection pool
 * per node.
 *
 * Redis Cluster puts a key in one of 16384 slots: the CRC16/XMODEM of its
 * hash tag (the bytes between the first '{' and the next '}', if any)
 * or of the whole key, and every slot on one master.  The map here holds,
 * per slot, which node serves it (0: not known yet); it is filled by
 * CLUSTER SLOTS, asked of the known nodes when a check meets a slot not
 * known or a stale map (below), and corrected slot by slot by the MOVED
 * replies the servers send while slots migrate.
 *
 * Failover: a master that dies is replaced by one of its replicas, at
 * another address, and only a fresh CLUSTER SLOTS tells.  So whatever
 * hints that the map is stale (a connect or command that failed on a
 * node, a READONLY, CLUSTERDOWN or TRYAGAIN reply, a redirection) asks
 * for a refresh (tk__redis_cluster_refresh()):
 * - at most one in flight per store (one CAS on refreshing): other
 *   threads go on with the map as it is, which is at worst as stale as
 *   it was;
 * - at most one begun per REFRESH_GAP, so that a dead node refusing
 *   every check costs the cluster ten CLUSTER SLOTS a second, not one
 *   per check;
 * - asked of every known node in turn (seeds included), from the one
 *   after the node that answered last, until one answers: a dead node
 *   costs one refused connect (then its backoff), and a node with a
 *   stale view is not the only one asked twice running;
 * - but not of the node whose failure asked for it, unless no other is
 *   known: a node that hangs (stopped, partitioned) would spend the rest
 *   of the call's deadline, which a cross-slot check needs for its
 *   refunds.
 * Only masters enter the map (a CLUSTER SLOTS entry's first address), so
 * no write or FUNCTION LOAD is sent to a replica unless a stale map still
 * names a master since demoted; it answers MOVED or READONLY, and either
 * refreshes the map.
 *
 * A node is a spec (the store's, with the node's host and port) and the
 * per-thread pool of conn.c.  The table of nodes only grows (a
 * cluster that moves to new addresses adds nodes; 64 at most): a node is
 * added by one CAS on the first empty entry, and every thread walks the
 * entries in the same order, so no address is added twice.  No lock: a
 * fork() leaves the child nothing held.
 *
 * redis+sentinel:// runs here too: its map has every slot on the master
 * the sentinels name, and a refresh asks them (sentinel.c) instead of
 * CLUSTER SLOTS; its seeds are sentinels, not nodes.
 */
#include "config.h"
#include "redis/cluster.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#define NODES_MAX 64
#define SLOTS 16384
#define REFRESH_GAP (UINT64_C(100) * 1000000) /* ns between two refreshes */

struct node {
	struct tk__redis_spec spec; /* host and port: the node's */
	struct tk__redis_pool pool;
};

struct tk__redis_cluster {
	const struct tk__redis_spec *spec;
	tk_atomic_ptr node[NODES_MAX]; /* NULL: free, then set once */
	tk_atomic_u32 slot[SLOTS];     /* node index + 1; 0: not known */
	tk_atomic_u32 refreshing;      /* 1: a refresh is in flight */
	tk_atomic_u64 refreshed_at;    /* monotonic ns a refresh began; 0 */
	tk_atomic_u32 last_rc;	       /* -errno of the last refresh */
	tk_atomic_u32 turn; /* the node the next refresh asks first */
	struct tk__redis_sentinels *sentinels; /* redis+sentinel://; NULL */
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

unsigned int tk__redis_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;
	uint16_t crc = 0;
	size_t i;
	int bit;

	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
		if (close && close > open + 1) {
			len = (size_t)(close - open - 1);
			key = open + 1;
		}
	}
	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)key[i] << 8);
		for (bit = 0; bit < 8; bit++)
			crc = (uint16_t)(crc & 0x8000 ? crc << 1 ^ 0x1021
						      : crc << 1);
	}
	return crc & (SLOTS - 1);
}

static void node_free(struct node *n)
{
	tk__redis_pool_destroy(&n->pool);
	memset(&n->spec, 0, sizeof(n->spec)); /* the password */
	free(n);
}

/* The index of the node at @host (@hlen bytes) and @port, added if new. */
static int node_index(struct tk__redis_cluster *cl, const char *host,
		      size_t hlen, int port)
{
	struct node *mine = NULL, *n;
	void *expected;
	size_t i;

	if (hlen == 0 || hlen > TK__REDIS_HOST_MAX || port < 1 || port > 65535)
		return -EPROTO;
	for (i = 0; i < NODES_MAX; i++) {
		/* acquire: pairs with the release CAS, for the node. */
		n = tk_atomic_load_ptr(&cl->node[i], TK_MO_ACQUIRE);
		if (!n) {
			if (!mine) {
				mine = malloc(sizeof(*mine));
				if (!mine)
					return -ENOMEM;
				mine->spec = *cl->spec;
				memcpy(mine->spec.host, host, hlen);
				mine->spec.host[hlen] = '\0';
				mine->spec.port = port;
				if (tk__redis_pool_init(&mine->pool,
							&mine->spec, NULL, 0)) {
					free(mine);
					return -ENOMEM;
				}
			}
			expected = NULL;
			if (tk_atomic_cas_ptr(&cl->node[i], &expected, mine,
					      TK_MO_ACQ_REL))
				return (int)i;
			n = expected;
		}
		if (n->spec.port == port && strlen(n->spec.host) == hlen &&
		    memcmp(n->spec.host, host, hlen) == 0) {
			if (mine)
				node_free(mine);
			return (int)i;
		}
	}
	if (mine)
		node_free(mine);
	return -ENOMEM;
}

int tk__redis_cluster_init(struct tk__redis_cluster **out,
			   const struct tk__redis_spec *spec)
{
	struct tk__redis_cluster *cl = calloc(1, sizeof(*cl));
	size_t i;
	int rc = 0;

	if (!cl)
		return -ENOMEM;
	cl->spec = spec;
	if (spec->sentinel)
		rc = tk__redis_sentinels_init(&cl->sentinels, spec);
	for (i = 0; !spec->sentinel && i < spec->seeds && rc >= 0; i++)
		rc = node_index(cl, spec->seed[i].host,
				strlen(spec->seed[i].host), spec->seed[i].port);
	if (rc < 0) {
		tk__redis_cluster_destroy(cl);
		return rc;
	}
	*out = cl;
	return 0;
}

void tk__redis_cluster_destroy(struct tk__redis_cluster *cl)
{
	struct node *n;
	size_t i;

	for (i = 0; i < NODES_MAX; i++) {
		n = tk_atomic_load_ptr(&cl->node[i], TK_MO_ACQUIRE);
		if (n)
			node_free(n);
	}
	if (cl->sentinels)
		tk__redis_sentinels_destroy(cl->sentinels);
	free(cl);
}

static int integer(const redisReply *r, long long min, long long max)
{
	return r->type == REDIS_REPLY_INTEGER && r->integer >= min &&
	       r->integer <= max;
}

/*
 * One CLUSTER SLOTS entry: [first, last, [ip, port, id, ...], replicas].
 * An empty ip is the address the reply came from.
 */
static int slot_range(struct tk__redis_cluster *cl, const struct node *from,
		      const redisReply *e)
{
	const redisReply *m;
	const char *host;
	size_t hlen, s;
	int i;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    !integer(e->element[0], 0, SLOTS - 1) ||
	    !integer(e->element[1], e->element[0]->integer, SLOTS - 1))
		return -EPROTO;
	m = e->element[2];
	if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
	    m->element[0]->type != REDIS_REPLY_STRING ||
	    !integer(m->element[1], 1, 65535))
		return -EPROTO;
	host = m->element[0]->str;
	hlen = m->element[0]->len;
	if (hlen == 0) {
		host = from->spec.host;
		hlen = strlen(host);
	}
	i = node_index(cl, host, hlen, (int)m->element[1]->integer);
	if (i < 0)
		return i;
	for (s = (size_t)e->element[0]->integer;
	     s <= (size_t)e->element[1]->integer; s++)
		/* release: the node's entry; pairs with conn_of()'s
		 * acquire of the slot. */
		tk_atomic_store_u32(&cl->slot[s], (uint32_t)i + 1,
				    TK_MO_RELEASE);
	return 0;
}

/* The map from CLUSTER SLOTS of node @i. */
static int refresh_from(struct tk__redis_cluster *cl, size_t i)
{
	static const char *const argv[2] = { "CLUSTER", "SLOTS" };
	static const size_t lens[2] = { 7, 5 };
	struct node *n = tk_atomic_load_ptr(&cl->node[i], TK_MO_ACQUIRE);
	struct tk__redis_conn *c;
	redisReply *r;
	size_t k;
	int rc;

	if (!n)
		return -ENOENT;
	rc = tk__redis_conn_get(&n->pool, &c);
	if (rc == 0)
		rc = tk__redis_command(c, 2, (const char **)argv, lens,
				       (void **)&r);
	if (rc)
		return rc;
	rc = r->type == REDIS_REPLY_ARRAY ? 0 : -EPROTO;
	for (k = 0; rc == 0 && k < r->elements; k++)
		rc = slot_range(cl, n, r->element[k]);
	tk__redis_reply_free(r);
	return rc;
}

/* Is @n the node @c connects to? */
static int is_node(const struct node *n, const struct tk__redis_conn *c)
{
	return c && n &&
	       tk__redis_conn_spec((struct tk__redis_conn *)c) == &n->spec;
}

/* The map of a sentinel spec: every slot on the master they name. */
static int refresh_sentinel(struct tk__redis_cluster *cl)
{
	char host[TK__REDIS_HOST_MAX + 1];
	int port, i, rc;
	size_t s;

	rc = tk__redis_sentinels_master(cl->sentinels, host, &port);
	i = rc ? rc : node_index(cl, host, strlen(host), port);
	if (i < 0)
		return i;
	for (s = 0; s < SLOTS; s++) /* release: as in slot_range() */
		tk_atomic_store_u32(&cl->slot[s], (uint32_t)i + 1,
				    TK_MO_RELEASE);
	return 0;
}

/*
 * The map from the first node that answers, every known node asked in
 * turn from cl->turn (see the top), but @failed's node (NULL: none)
 * unless no other is known: it just failed, and a node that hangs would
 * spend the call's time.
 */
static int refresh(struct tk__redis_cluster *cl,
		   const struct tk__redis_conn *failed)
{
	size_t i, k, known;
	int rc = -ECONNREFUSED;

	if (cl->sentinels)
		return refresh_sentinel(cl);
	for (known = 0; known < NODES_MAX; known++)
		if (!tk_atomic_load_ptr(&cl->node[known], TK_MO_ACQUIRE))
			break;
	/* Relaxed: a hint of where to start; any start is correct. */
	i = tk_atomic_load_u32(&cl->turn, TK_MO_RELAXED);
	for (k = 0; k < known; k++, i++) {
		if (known > 1 &&
		    is_node(tk_atomic_load_ptr(&cl->node[i % known],
					       TK_MO_ACQUIRE),
			    failed))
			continue;
		rc = refresh_from(cl, i % known);
		if (rc == 0)
			break;
	}
	tk_atomic_store_u32(&cl->turn, known ? (uint32_t)((i + 1) % known) : 0,
			    TK_MO_RELAXED);
	return rc;
}

/*
 * One refresh, unless one is in flight or began less than REFRESH_GAP
 * ago (-EALREADY).  @wait 1: one in flight is waited for (then the map is
 * as fresh as this one would make it: -EALREADY); 2: the gap too, then
 * a refresh.  Waits are within the call's deadline.  0, -EALREADY, or
 * the refresh's error.
 */
static int refresh_once(struct tk__redis_cluster *cl,
			const struct tk__redis_conn *failed, int wait)
{
	uint64_t now = 0, last;
	uint32_t idle;
	int rc, waited = 0;

	for (;;) {
		if (tk__redis_deadline_left() == 0)
			return -ETIMEDOUT;
		/* acquire: pairs with the release below, for the map. */
		if (tk_atomic_load_u32(&cl->refreshing, TK_MO_ACQUIRE)) {
			if (!wait)
				return -EALREADY;
			waited = 1;
			pause_ms(1);
			continue;
		}
		if (waited)
			return -EALREADY;
		now = monotonic_ns();
		/* Relaxed: only a rate; the CAS below orders the refresh. */
		last = tk_atomic_load_u64(&cl->refreshed_at, TK_MO_RELAXED);
		if (last && now - last < REFRESH_GAP) {
			if (wait < 2)
				return -EALREADY;
			pause_ms(1);
			continue;
		}
		idle = 0;
		/* acquire: pairs with the release below, for the map. */
		if (tk_atomic_cas_u32(&cl->refreshing, &idle, 1, TK_MO_ACQUIRE))
			break;
	}
	tk_atomic_store_u64(&cl->refreshed_at, now, TK_MO_RELAXED);
	TK__REDIS_COUNT(cl->spec, refreshes, 1);
	rc = refresh(cl, failed);
	tk_atomic_store_u32(&cl->last_rc, (uint32_t)-rc, TK_MO_RELAXED);
	/* release: the map written; pairs with the acquires above. */
	tk_atomic_store_u32(&cl->refreshing, 0, TK_MO_RELEASE);
	return rc;
}

int tk__redis_cluster_refresh(struct tk__redis_cluster *cl,
			      const struct tk__redis_conn *failed)
{
	return refresh_once(cl, failed, 0);
}

int tk__redis_cluster_refresh_due(struct tk__redis_cluster *cl,
				  const struct tk__redis_conn *failed)
{
	return refresh_once(cl, failed, 2);
}

int tk__redis_cluster_serves(struct tk__redis_cluster *cl, unsigned int slot,
			     const struct tk__redis_conn *c)
{
	uint32_t i = tk_atomic_load_u32(&cl->slot[slot], TK_MO_ACQUIRE);

	return i &&
	       is_node(tk_atomic_load_ptr(&cl->node[i - 1], TK_MO_ACQUIRE), c);
}

static int conn_of(struct tk__redis_cluster *cl, uint32_t i,
		   struct tk__redis_conn **out)
{
	struct node *n = tk_atomic_load_ptr(&cl->node[i], TK_MO_ACQUIRE);

	return tk__redis_conn_get(&n->pool, out);
}

int tk__redis_cluster_node(struct tk__redis_cluster *cl, unsigned int slot)
{
	/* acquire: the node of the entry is there (slot_range()). */
	uint32_t i = tk_atomic_load_u32(&cl->slot[slot], TK_MO_ACQUIRE);
	int rc;

	if (i == 0) {
		rc = refresh_once(cl, NULL, 1);
		i = tk_atomic_load_u32(&cl->slot[slot], TK_MO_ACQUIRE);
		/* Another thread's refresh, just done, may have failed. */
		if (i == 0 && rc == -EALREADY)
			rc = -(int)tk_atomic_load_u32(&cl->last_rc,
						      TK_MO_RELAXED);
		if (i == 0)
			return rc ? rc : -EAGAIN; /* no master serves it */
	}
	return (int)i - 1;
}

int tk__redis_cluster_node_conn(struct tk__redis_cluster *cl, int node,
				struct tk__redis_conn **out)
{
	return conn_of(cl, (uint32_t)node, out);
}

int tk__redis_cluster_conn(struct tk__redis_cluster *cl, unsigned int slot,
			   struct tk__redis_conn **out)
{
	int i = tk__redis_cluster_node(cl, slot);

	return i < 0 ? i : conn_of(cl, (uint32_t)i, out);
}

/* The node a redirection on @c names, the map corrected if @moved. */
static int redirect_index(struct tk__redis_cluster *cl, unsigned int slot,
			  struct tk__redis_conn *c, int moved)
{
	const char *to = tk__redis_conn_redirect(c), *colon = strrchr(to, ':');
	char *end;
	long port;
	int i;

	if (!colon)
		return -EPROTO;
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1)
		return -EPROTO;
	i = node_index(cl, to, (size_t)(colon - to), (int)port);
	if (i >= 0 && moved) /* release: as in slot_range() */
		tk_atomic_store_u32(&cl->slot[slot], (uint32_t)i + 1,
				    TK_MO_RELEASE);
	return i;
}

int tk__redis_cluster_follow(struct tk__redis_cluster *cl, unsigned int slot,
			     struct tk__redis_conn *c, int moved,
			     struct tk__redis_conn **out)
{
	int i = redirect_index(cl, slot, c, moved);

	return i < 0 ? i : conn_of(cl, (uint32_t)i, out);
}

int tk__redis_cluster_moved(struct tk__redis_cluster *cl, unsigned int slot,
			    struct tk__redis_conn *c)
{
	int i = redirect_index(cl, slot, c, 1);

	return i < 0 ? i : 0;
}
