/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ping.c - tk_store_ping() on a PostgreSQL store: a connection of the
 * pool (connected, the table made sure of and the statements prepared, as
 * a first check would), one timed empty statement, and the server's
 * address and version as libpq learnt them at the connect.
 */
#include "config.h"
#include "store/store-ops.h"
#include "pg/conn.h"

#include <stdio.h>
#include <time.h>

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tk__pg_ping(struct tk__pg_pool *pool, struct tk_store_ping *out)
{
	struct tk__pg_conn *c;
	const char *v;
	PGresult *r;
	uint64_t t0;
	int rc = tk__pg_conn_get(pool, &c);

	if (rc)
		return rc;
	t0 = monotonic_ns();
	/* An empty query: one round trip, nothing parsed or planned. */
	r = tk__pq.PQexec(c->pg, "");
	out->rtt = monotonic_ns() - t0;
	rc = tk__pq.PQresultStatus(r) == PGRES_EMPTY_QUERY
		     ? 0
		     : tk__pg_error(c->pg, r);
	tk__pq.PQclear(r);
	if (rc == 0) {
		/* Never the user or the password: the address only. */
		snprintf(out->server, sizeof(out->server), "%s:%s",
			 tk__pq.PQhost(c->pg), tk__pq.PQport(c->pg));
		v = tk__pq.PQparameterStatus(c->pg, "server_version");
		snprintf(out->version, sizeof(out->version), "%s", v ? v : "");
		snprintf(out->engine, sizeof(out->engine), "cas");
	}
	tk__pg_conn_put(pool, c, rc);
	return rc;
}
