/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sentinel.c - the sentinels of a redis+sentinel:// spec, asked where
 * the master of its name is (SENTINEL get-master-addr-by-name).
 *
 * The store is run as a cluster (cluster.c) whose map has every slot on
 * the one master: the same hints of a stale map (a failed connect or
 * command, READONLY from a master since demoted) ask for the same
 * rate-limited refresh, and a refresh asks the sentinels here instead
 * of CLUSTER SLOTS.  So a failover is followed as a cluster's is, and
 * nothing of the routing is written twice.
 *
 * The sentinels are asked in turn, from the one that answered last,
 * until one names an address: a dead sentinel costs one refused
 * connect, then its backoff (conn.c).  Their connections authenticate
 * with sentinel_password= only (the spec's user and password are the
 * data nodes'), select no database and count in no store counter.
 */
#include "config.h"
#include "redis/cluster.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

struct sentinel {
	struct tk__redis_spec spec; /* host and port: the sentinel's */
	struct tk__redis_pool pool;
};

struct tk__redis_sentinels {
	const struct tk__redis_spec *spec;
	size_t n;
	struct sentinel s[TK__REDIS_SEEDS_MAX];
	tk_atomic_u32 turn; /* the sentinel asked first */
};

int tk__redis_sentinels_init(struct tk__redis_sentinels **out,
			     const struct tk__redis_spec *spec)
{
	struct tk__redis_sentinels *ss = calloc(1, sizeof(*ss));
	struct tk__redis_spec *sp;

	if (!ss)
		return -ENOMEM;
	ss->spec = spec;
	for (; ss->n < spec->seeds; ss->n++) {
		sp = &ss->s[ss->n].spec;
		*sp = *spec;
		memcpy(sp->host, spec->seed[ss->n].host, sizeof(sp->host));
		sp->port = spec->seed[ss->n].port;
		sp->user[0] = '\0';
		memcpy(sp->password, spec->sentinel_password,
		       sizeof(sp->password));
		sp->has_password = spec->has_sentinel_password;
		sp->db = 0;
		sp->max_connections = 0;
		sp->stats = NULL;
		if (tk__redis_pool_init(&ss->s[ss->n].pool, sp, NULL, 0)) {
			tk__redis_sentinels_destroy(ss);
			return -ENOMEM;
		}
	}
	*out = ss;
	return 0;
}

void tk__redis_sentinels_destroy(struct tk__redis_sentinels *ss)
{
	size_t i;

	for (i = 0; i < ss->n; i++) {
		tk__redis_pool_destroy(&ss->s[i].pool);
		memset(&ss->s[i].spec, 0, sizeof(ss->s[i].spec));
	}
	free(ss);
}

/*
 * The master's address as sentinel @i names it: 0, EHOSTUNREACH (a
 * sentinel that knows no master of the name: nil), or the errors of
 * tk__redis_conn_get() and tk__redis_command().
 */
static int ask(struct tk__redis_sentinels *ss, size_t i, char *host, int *port)
{
	const char *argv[3] = { "SENTINEL", "get-master-addr-by-name",
				ss->spec->master_name };
	size_t lens[3] = { 8, 23, strlen(ss->spec->master_name) };
	struct tk__redis_conn *c;
	const redisReply *h, *p;
	redisReply *r;
	char *end;
	long v;
	int rc = tk__redis_conn_get(&ss->s[i].pool, &c);

	if (rc == 0)
		rc = tk__redis_command(c, 3, argv, lens, (void **)&r);
	if (rc)
		return rc;
	rc = r->type == REDIS_REPLY_NIL ? -EHOSTUNREACH : -EPROTO;
	h = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[0]
							     : NULL;
	p = h ? r->element[1] : NULL;
	if (h && h->type == REDIS_REPLY_STRING && h->len > 0 &&
	    h->len <= TK__REDIS_HOST_MAX && p->type == REDIS_REPLY_STRING &&
	    p->len > 0 && p->len < 6) {
		v = strtol(p->str, &end, 10);
		if (*end == '\0' && v >= 1 && v <= 65535) {
			memcpy(host, h->str, h->len);
			host[h->len] = '\0';
			*port = (int)v;
			rc = 0;
		}
	}
	tk__redis_reply_free(r);
	return rc;
}

int tk__redis_sentinels_master(struct tk__redis_sentinels *ss, char *host,
			       int *port)
{
	int rc = -ECONNREFUSED, unknown = 0;
	size_t k, i;

	/* Relaxed: a hint of where to start; any start is correct. */
	i = tk_atomic_load_u32(&ss->turn, TK_MO_RELAXED);
	for (k = 0; k < ss->n; k++, i++) {
		rc = ask(ss, i % ss->n, host, port);
		if (rc == 0) {
			tk_atomic_store_u32(&ss->turn, (uint32_t)(i % ss->n),
					    TK_MO_RELAXED);
			return 0;
		}
		unknown |= rc == -EHOSTUNREACH;
	}
	/* One that does not know the name says more than one unreachable. */
	return unknown ? -EHOSTUNREACH : rc;
}
