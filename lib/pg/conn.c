/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c - the PostgreSQL store's connections.
 *
 * A store keeps a pool of idle connections under a mutex; a call takes
 * one for its statements and gives it back, so no two threads ever share
 * one.  Each is connected in autocommit mode, its statement_timeout set to
 * the spec's timeout, and the store's statements prepared on it (binary
 * results).  The first connection of a process creates the table if it is
 * missing, serialized by an advisory lock across every process, since two
 * CREATE TABLE IF NOT EXISTS at once may fail; one that finds it runs no
 * CREATE, which the schema's privileges might refuse.
 *
 * fork(): a child inherits the parent's sockets.  tk__pq.PQfinish() would send
 * the server a Terminate on them and end the parent's session, so a
 * connection made in another process is closed with /dev/null in place
 * of its socket: the child's copy goes, the parent's session stays.
 *
 * A failed statement leaves the connection in the pool only if it is
 * still up and in no transaction; otherwise it is closed, and the next
 * call connects anew (no backoff yet).  One the server closed while it
 * sat idle in the pool (a restart, pg_terminate_backend()) is seen
 * before use and replaced, so that the next check does not fail for it.
 */
#include "config.h"
#include "pg/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tk__pg_pool_init(struct tk__pg_pool *p, const struct tk__pg_spec *spec)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->spec = spec;
}

static void conn_close(struct tk__pg_conn *c)
{
	int nul;

	if (c->pid != getpid()) {
		nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (nul < 0 || dup2(nul, tk__pq.PQsocket(c->pg)) < 0) {
			/* Leaked rather than end the parent's session. */
			if (nul >= 0)
				close(nul);
			free(c);
			return;
		}
		close(nul);
	}
	tk__pq.PQfinish(c->pg);
	free(c);
}

void tk__pg_pool_destroy(struct tk__pg_pool *p)
{
	struct tk__pg_conn *c;

	while ((c = p->idle)) {
		p->idle = c->next;
		conn_close(c);
	}
	pthread_mutex_destroy(&p->lock);
}

int tk__pg_error(PGconn *pg, const PGresult *r)
{
	const char *state =
		r ? tk__pq.PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

	if (tk__pq.PQstatus(pg) == CONNECTION_BAD)
		return -ECONNRESET;
	if (!state)
		return -EPROTO;
	if (strcmp(state, "57014") == 0) /* statement_timeout */
		return -ETIMEDOUT;
	if (strcmp(state, "25006") == 0) /* a hot standby */
		return -EROFS;
	if (strncmp(state, "57P", 3) == 0 || strncmp(state, "08", 2) == 0)
		return -ECONNRESET; /* shutdown, terminated, connection */
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
		return -EAGAIN;		 /* serialization failure, deadlock */
	if (strcmp(state, "53300") == 0) /* too many connections */
		return -ECONNREFUSED;
	if (strncmp(state, "28", 2) == 0 || strcmp(state, "42501") == 0)
		return -EACCES;
	return -EPROTO;
}

static int run(PGconn *pg, const char *sql)
{
	PGresult *r = tk__pq.PQexec(pg, sql);
	int rc = tk__pq.PQresultStatus(r) == PGRES_COMMAND_OK ||
				 tk__pq.PQresultStatus(r) == PGRES_TUPLES_OK
			 ? 0
			 : tk__pg_error(pg, r);

	tk__pq.PQclear(r);
	return rc;
}

/* @fmt with each "%s" the table's name (no format from data). */
static void fill(char *sql, size_t cap, const char *fmt, const char *table)
{
	const char *at;
	size_t len = 0;
	int n;

	sql[0] = '\0';
	while ((at = strstr(fmt, "%s")) && len < cap) {
		n = snprintf(sql + len, cap - len, "%.*s%s", (int)(at - fmt),
			     fmt, table);
		len += n > 0 ? (size_t)n : 0;
		fmt = at + 2;
	}
	if (len < cap)
		snprintf(sql + len, cap - len, "%s", fmt);
}

static int prepare(PGconn *pg, const char *name, const char *fmt,
		   const char *table)
{
	char sql[1024];
	PGresult *r;
	int rc;

	fill(sql, sizeof(sql), fmt, table);
	r = tk__pq.PQprepare(pg, name, sql, 0, NULL);
	rc = tk__pq.PQresultStatus(r) == PGRES_COMMAND_OK ? 0
							  : tk__pg_error(pg, r);
	tk__pq.PQclear(r);
	return rc;
}

/*
 * The row of a key and an algorithm (the memory store keys states by
 * both).  An expires_at at or before the check's time is no state.
 */
static const char schema[] =
	"SELECT pg_advisory_xact_lock(7405312100);"
	"CREATE TABLE IF NOT EXISTS %s ("
	"key bytea NOT NULL, alg integer NOT NULL, state bytea NOT NULL, "
	"expires_at bigint NOT NULL, version bigint NOT NULL, "
	"PRIMARY KEY (key, alg))";

/*
 * Is the table there, where the statements will find it (to_regclass()
 * resolves a name by the search_path as they do)?  Then the store runs
 * no CREATE TABLE, which needs CREATE on the schema even when the table
 * exists: a role granted only the rows of a table made in advance works.
 */
static const char exists[] = "SELECT to_regclass('%s') IS NOT NULL";

/* 1 if @sql's one value is true, 0 if false, or a negative errno. */
static int is_true(PGconn *pg, const char *sql)
{
	PGresult *r = tk__pq.PQexec(pg, sql);
	int rc = tk__pq.PQresultStatus(r) == PGRES_TUPLES_OK
			 ? tk__pq.PQntuples(r) == 1 &&
				   strcmp(tk__pq.PQgetvalue(r, 0, 0), "t") == 0
			 : tk__pg_error(pg, r);

	tk__pq.PQclear(r);
	return rc;
}

/*
 * The server's clock in integer ns, from one clock_timestamp() (the time
 * the statement reads it, after any lock it waited for): whole seconds
 * of the epoch, and the microseconds of the second.  No float: extract()
 * is numeric since PostgreSQL 14, and before it a double that holds
 * these integers exactly.
 */
#define NOW_NS                                                                 \
	"(SELECT floor(extract(epoch FROM n.c))::bigint * 1000000000 + "       \
	"extract(microseconds FROM n.c)::bigint % 1000000 * 1000 "             \
	"FROM (SELECT clock_timestamp() AS c) n)"

/*
 * A bounded sweep of the expired rows of pages [$2, $3) (a TID range
 * scan since PostgreSQL 14): rows a check holds locked are skipped, not
 * waited for, and a row is deleted only if it is still expired under its
 * lock, so a row written again since the scan read it stays.
 */
#define SWEEP_SQL                                                              \
	"WITH d AS (DELETE FROM %s WHERE ctid = ANY (ARRAY("                   \
	"SELECT ctid FROM %s WHERE ctid >= ('(' || $2::bigint || ',0)')::tid " \
	"AND ctid < ('(' || $3::bigint || ',0)')::tid AND expires_at < $1 "    \
	"LIMIT 256 FOR UPDATE SKIP LOCKED)) AND expires_at < $1 RETURNING 1) " \
	"SELECT (SELECT count(*) FROM d), pg_relation_size('%s') / "           \
	"current_setting('block_size')::bigint"

_Static_assert(TK__PG_SWEEP_MAX == 256, "the LIMIT of SWEEP_SQL");

static const struct {
	const char *name, *sql;
} statements[] = {
	{ TK__PG_GET, "SELECT t.state, t.expires_at, t.version, " NOW_NS
		      " FROM (SELECT 1) o LEFT JOIN %s t "
		      "ON t.key = $1 AND t.alg = $2" },
	{ TK__PG_INS, "INSERT INTO %s VALUES ($1, $2, $3, $4, $5) "
		      "ON CONFLICT (key, alg) DO NOTHING" },
	{ TK__PG_CAS, "UPDATE %s SET state = $3, expires_at = $4, "
		      "version = version + 1 "
		      "WHERE key = $1 AND alg = $2 AND version = $5" },
	{ TK__PG_LOCK,
	  "INSERT INTO %s AS t VALUES ($1, $2, '', 0, $3) "
	  "ON CONFLICT (key, alg) DO UPDATE SET version = "
	  "t.version RETURNING state, expires_at, version, " NOW_NS },
	{ TK__PG_SET, "UPDATE %s SET state = $3, expires_at = $4, "
		      "version = version + 1 WHERE key = $1 AND alg = $2" },
	{ TK__PG_DEL, "UPDATE %s SET expires_at = 0, version = version + 1 "
		      "WHERE key = $1" },
	{ TK__PG_SWEEP, SWEEP_SQL },
};

static int setup(struct tk__pg_pool *p, PGconn *pg)
{
	char sql[512];
	size_t i;
	int rc;

	snprintf(sql, sizeof(sql), "SET statement_timeout = %llu",
		 (unsigned long long)(p->spec->timeout / 1000000));
	rc = run(pg, sql);
	if (rc == 0 && !p->schema) {
		fill(sql, sizeof(sql), exists, p->spec->table);
		rc = is_true(pg, sql);
		if (rc == 0) {
			fill(sql, sizeof(sql), schema, p->spec->table);
			rc = run(pg, sql);
		}
		if (rc >= 0) {
			p->schema = 1;
			rc = 0;
		}
	}
	for (i = 0; rc == 0 && i < sizeof(statements) / sizeof(statements[0]);
	     i++)
		rc = prepare(pg, statements[i].name, statements[i].sql,
			     p->spec->table);
	return rc;
}

/* The server's notices ("already exists, skipping") are no one's
 * business on a host's stderr. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/*
 * The errno of a connection libpq could not make.  libpq names no
 * SQLSTATE for it: its words and the server's (English under the C or an
 * English lc_messages) tell a refused login or a CONNECT privilege denied
 * (-EACCES, @p->refused says which) from a missing database (-ENXIO) and
 * from no server (-ECONNREFUSED, also what words of another language
 * come to).
 */
static int connect_error(struct tk__pg_pool *p, const char *msg)
{
	int refused = 0, rc = -ECONNREFUSED;

	if (strstr(msg, "permission denied")) /* CONNECT on the database */
		refused = TK__PG_REFUSED_PRIVILEGE;
	else if (strstr(msg, "authentication") || strstr(msg, "password") ||
		 strstr(msg, "pg_hba.conf") || strstr(msg, "to log in") ||
		 (strstr(msg, "role \"") && strstr(msg, "does not exist")))
		refused = TK__PG_REFUSED_LOGIN;
	else if (strstr(msg, "does not exist"))
		rc = -ENXIO;
	if (refused) {
		rc = -EACCES;
		pthread_mutex_lock(&p->lock);
		p->refused = refused;
		pthread_mutex_unlock(&p->lock);
	}
	return rc;
}

static int connect_now(struct tk__pg_pool *p, struct tk__pg_conn **out)
{
	struct tk__pg_conn *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->pid = getpid();
	c->pg = tk__pq.PQconnectdb(p->spec->uri);
	if (!c->pg) {
		free(c);
		return -ENOMEM;
	}
	if (tk__pq.PQstatus(c->pg) != CONNECTION_OK) {
		rc = connect_error(p, tk__pq.PQerrorMessage(c->pg));
		conn_close(c);
		return rc;
	}
	tk__pq.PQsetNoticeProcessor(c->pg, quiet, NULL);
	pthread_mutex_lock(&p->lock);
	rc = setup(p, c->pg);
	/* Logged in: what is refused now is a privilege (the schema's). */
	if (rc == -EACCES)
		p->refused = TK__PG_REFUSED_PRIVILEGE;
	pthread_mutex_unlock(&p->lock);
	if (rc) {
		conn_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/*
 * Has the server closed @c while it was idle (a restart,
 * pg_terminate_backend(), idle_session_timeout)?  Between calls nothing
 * is due from it: any byte (the FATAL it sends first), an EOF or a reset
 * makes it unusable, and a check on it would fail for nothing.
 */
static int closed(const struct tk__pg_conn *c)
{
	struct pollfd p = { .fd = tk__pq.PQsocket(c->pg), .events = POLLIN };

#ifdef POLLRDHUP
	p.events |= POLLRDHUP;
#endif
	/* Under TLS bytes may be the protocol's own: only a hangup counts. */
	if (tk__pq.PQsslInUse(c->pg))
		p.events &= (short)~POLLIN;
	while (poll(&p, 1, 0) < 0)
		if (errno != EINTR)
			return 0;
	return p.revents != 0;
}

int tk__pg_conn_get(struct tk__pg_pool *p, struct tk__pg_conn **out)
{
	struct tk__pg_conn *c, *stale = NULL;

	pthread_mutex_lock(&p->lock);
	while ((c = p->idle) && (c->pid != getpid() || closed(c))) {
		p->idle = c->next;
		c->next = stale;
		stale = c;
	}
	if (c)
		p->idle = c->next;
	pthread_mutex_unlock(&p->lock);
	while (stale) {
		struct tk__pg_conn *next = stale->next;

		conn_close(stale);
		stale = next;
	}
	if (c) {
		*out = c;
		return 0;
	}
	return connect_now(p, out);
}

void tk__pg_conn_put(struct tk__pg_pool *p, struct tk__pg_conn *c, int rc)
{
	if (rc < 0 && (tk__pq.PQstatus(c->pg) != CONNECTION_OK ||
		       tk__pq.PQtransactionStatus(c->pg) != PQTRANS_IDLE)) {
		conn_close(c);
		return;
	}
	pthread_mutex_lock(&p->lock);
	c->next = p->idle;
	p->idle = c;
	pthread_mutex_unlock(&p->lock);
}

int tk__pg_exec(struct tk__pg_conn *c, const char *name, int n,
		const char *const *vals, const int *lens, PGresult **res)
{
	static const int fmts[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	PGresult *r =
		tk__pq.PQexecPrepared(c->pg, name, n, vals, lens, fmts, 1);
	ExecStatusType st = tk__pq.PQresultStatus(r);
	int rc;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*res = r;
		return 0;
	}
	rc = tk__pg_error(c->pg, r);
	tk__pq.PQclear(r);
	return rc;
}
