/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.h - the PostgreSQL store's connections (conn.c): a pool per
 * store, each connection with the store's statements prepared.
 */
#ifndef TK_PG_CONN_H
#define TK_PG_CONN_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "pg/libpq.h"
#include "pg/spec.h"

/* The prepared statements (conn.c names and writes them). */
/* GET: one row always, its state, expires_at and version NULL without
 * one, then the server's clock (ns). */
#define TK__PG_GET "tk_get"   /* (key, alg): state, expires_at, version, now */
#define TK__PG_INS "tk_ins"   /* (key, alg, state, exp, version): or none */
#define TK__PG_CAS "tk_cas"   /* (key, alg, state, exp, version) */
#define TK__PG_LOCK "tk_lock" /* (key, alg, version): row locked, as GET */
#define TK__PG_SET "tk_set"   /* (key, alg, state, exp): a locked row */
#define TK__PG_DEL "tk_del"   /* (key): every alg's row expired */
/* (cutoff, first page, end page): rows deleted, the table's pages */
#define TK__PG_SWEEP "tk_sweep"
#define TK__PG_SWEEP_MAX 256 /* rows a sweep deletes at most */

struct tk__pg_conn {
	PGconn *pg;
	pid_t pid; /* the process that connected it */
	struct tk__pg_conn *next;
};

/* Which of its refusals a pool's last -EACCES was (tk_store_probe()). */
#define TK__PG_REFUSED_LOGIN 1	   /* password, pg_hba.conf, the role */
#define TK__PG_REFUSED_PRIVILEGE 2 /* let in, then denied a privilege */

struct tk__pg_pool {
	pthread_mutex_t lock;
	struct tk__pg_conn *idle;
	const struct tk__pg_spec *spec;
	int schema;  /* 1 once this process has made sure of the table */
	int refused; /* TK__PG_REFUSED_*, under @lock; 0: none yet */
};

void tk__pg_pool_init(struct tk__pg_pool *p, const struct tk__pg_spec *spec);
void tk__pg_pool_destroy(struct tk__pg_pool *p);
/* A connection of this process, idle or new: 0 or a negative errno. */
int tk__pg_conn_get(struct tk__pg_pool *p, struct tk__pg_conn **out);
/* Back to the pool, or closed if @rc says it may be unusable. */
void tk__pg_conn_put(struct tk__pg_pool *p, struct tk__pg_conn *c, int rc);
/*
 * Run prepared statement @name with @n binary parameters; 0 with *@res
 * (PQclear() it), or the error its SQLSTATE names.
 */
int tk__pg_exec(struct tk__pg_conn *c, const char *name, int n,
		const char *const *vals, const int *lens, PGresult **res);
/* ping.c: tk_store_ping()'s fields of a connection of @pool. */
struct tk_store_ping;
int tk__pg_ping(struct tk__pg_pool *pool, struct tk_store_ping *out);
/* The errno of a failed result or connection. */
int tk__pg_error(PGconn *pg, const PGresult *r);

#endif /* TK_PG_CONN_H */
