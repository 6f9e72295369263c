/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c - the PostgreSQL store: one row per key and algorithm in a
 * table of the server's (docs/postgresql.md), shared by every host that
 * opens the same spec.
 *
 * The store runs the transition itself (struct tk__transform's fn), as
 * the memory store does, so its decisions are the memory store's for
 * every algorithm and composite, and no SQL knows any rate-limiting math.
 *
 * A check on one key is an optimistic compare-and-set in autocommit mode:
 * read the row (GET: state, expiry, version), run fn, then write it back
 * only if the version is still the one read (CAS), or insert it only if
 * there is still no row (INS ... ON CONFLICT DO NOTHING).  A write that
 * touched no row lost a race: read again.  After OPTIMISTIC_TRIES lost
 * races (a client preempted between its read and its write while others
 * commit can lose every time) the check locks the row in a transaction
 * (LOCK, then SET), which no rival changes before COMMIT, so it decides.
 * No transaction is held between statements of the optimistic path, so a
 * client killed there holds no lock, and the server ends a locked
 * transaction whose client died: two round trips for a check that
 * writes, one for one that does not.
 *
 * A composite's keys change together or not at all, so it runs in a
 * transaction: each key's row locked (LOCK: an upsert that makes an
 * expired placeholder for a missing key, so a first touch is locked too),
 * in the order of the keys' bytes, so two composites cannot deadlock; fn;
 * the rows written (SET); COMMIT: 2 + n + w round trips for n keys, w of
 * them written.  Every write bumps the version, so single-key CAS sees a
 * composite's writes.
 *
 * An expired row (expires_at at or before the check's time, the limiter's
 * clock) is no state; reset expires a key's rows rather than delete them,
 * so a version never repeats.  Nothing sweeps expired rows yet.
 */
#include "config.h"
#include "algo/policy.h"
#include "store/store-ops.h"
#include "pg/conn.h"

#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRIES 64
#define OPTIMISTIC_TRIES 8

/* What names a store's rows, as NUL-separated values (pg_same()). */
#define IDENT_MAX (TK__PG_URI_MAX + TK__PG_TABLE_MAX + 8)

struct pg_store {
	struct tk_store base;
	struct tk__pg_spec spec;
	struct tk__pg_pool pool;
	size_t ident_len;
	char ident[IDENT_MAX];
};

/* A key's row as read: @live, @state holds its words (host order). */
struct row {
	int found, live;
	uint64_t version;
	uint64_t state[TK__STATE_WORDS_MAX];
};

static uint64_t be64_at(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

/* Parameters of a statement, in binary: key, alg, state, expiry, version. */
struct params {
	uint32_t alg;
	uint64_t exp, version;
	uint64_t state[TK__STATE_WORDS_MAX];
	const char *val[5];
	int len[5];
};

static void params_set(struct params *q, const unsigned char *key, size_t len,
		       uint32_t alg, const uint64_t *state, uint32_t words,
		       uint64_t exp, uint64_t version)
{
	uint32_t i;

	q->alg = htobe32(alg);
	/* bigint is signed: an expiry past it is as good as never. */
	q->exp = htobe64(exp > INT64_MAX ? INT64_MAX : exp);
	q->version = htobe64(version);
	for (i = 0; state && i < words; i++)
		q->state[i] = htobe64(state[i]);
	q->val[0] = (const char *)key;
	q->len[0] = (int)len;
	q->val[1] = (const char *)&q->alg;
	q->len[1] = 4;
	q->val[2] = (const char *)q->state;
	q->len[2] = (int)(words * 8);
	q->val[3] = (const char *)&q->exp;
	q->len[3] = 8;
	q->val[4] = (const char *)&q->version;
	q->len[4] = 8;
}

/* A GET's or LOCK's result into @w, live if its state fits @words. */
static void row_of(struct pg_store *s, PGresult *r, uint32_t words,
		   uint64_t now, struct row *w)
{
	uint32_t i;

	w->found = tk__pq.PQntuples(r) == 1;
	w->live = 0;
	if (!w->found)
		return;
	w->version = be64_at(tk__pq.PQgetvalue(r, 0, 2));
	if ((uint64_t)be64_at(tk__pq.PQgetvalue(r, 0, 1)) <= now)
		return;
	if (tk__pq.PQgetlength(r, 0, 0) != (int)(words * 8)) {
		atomic_fetch_add_explicit(&s->base.corrupt, 1,
					  memory_order_relaxed);
		return;
	}
	for (i = 0; i < words; i++)
		w->state[i] = be64_at(tk__pq.PQgetvalue(r, 0, 0) + 8 * i);
	w->live = 1;
}

static int written(PGresult *r)
{
	return strcmp(tk__pq.PQcmdTuples(r), "1") == 0;
}

/* One try: 1 decided (*@out), 0 lost a race, or a negative errno. */
static int try_apply(struct pg_store *s, struct tk__pg_conn *c,
		     const unsigned char *key, size_t len, uint64_t now,
		     const struct tk__transform *t, int *out)
{
	struct row w;
	struct params q;
	uint64_t next[TK__STATE_WORDS_MAX], exp = 0;
	PGresult *r;
	int rc, done;

	params_set(&q, key, len, t->alg, NULL, 0, 0, 0);
	rc = tk__pg_exec(c, TK__PG_GET, 2, q.val, q.len, &r);
	if (rc)
		return rc;
	row_of(s, r, t->words, now, &w);
	tk__pq.PQclear(r);
	*out = t->fn(t->ctx, w.live ? w.state : NULL, next, &exp);
	if (*out != TK__PERSIST)
		return 1;
	params_set(&q, key, len, t->alg, next, t->words, exp, w.version);
	rc = w.found ? tk__pg_exec(c, TK__PG_CAS, 5, q.val, q.len, &r)
		     : tk__pg_exec(c, TK__PG_INS, 4, q.val, q.len, &r);
	if (rc)
		return rc;
	done = written(r);
	tk__pq.PQclear(r);
	return done;
}

static int simple(struct tk__pg_conn *c, const char *sql);

/* One try with the row locked in a transaction: 1 decided (*@out), or a
 * negative errno.  A missing key's placeholder goes with a ROLLBACK. */
static int locked_apply(struct pg_store *s, struct tk__pg_conn *c,
			const unsigned char *key, size_t len, uint64_t now,
			const struct tk__transform *t, int *out)
{
	uint64_t next[TK__STATE_WORDS_MAX], exp = 0;
	struct params q;
	struct row w;
	PGresult *r;
	int rc, end;

	rc = simple(c, "BEGIN");
	if (rc)
		return rc;
	*out = TK__KEEP;
	params_set(&q, key, len, t->alg, NULL, 0, 0, 0);
	rc = tk__pg_exec(c, TK__PG_LOCK, 2, q.val, q.len, &r);
	if (rc == 0) {
		row_of(s, r, t->words, now, &w);
		tk__pq.PQclear(r);
		*out = t->fn(t->ctx, w.live ? w.state : NULL, next, &exp);
	}
	if (rc == 0 && *out == TK__PERSIST) {
		params_set(&q, key, len, t->alg, next, t->words, exp, 0);
		rc = tk__pg_exec(c, TK__PG_SET, 4, q.val, q.len, &r);
		if (rc == 0)
			tk__pq.PQclear(r);
	}
	end = simple(c, rc == 0 && *out == TK__PERSIST ? "COMMIT" : "ROLLBACK");
	return rc ? rc : end ? end : 1;
}

static int pg_apply(struct tk_store *base, const unsigned char *key, size_t len,
		    uint64_t now, const struct tk__transform *t)
{
	struct pg_store *s = (struct pg_store *)base;
	struct tk__pg_conn *c;
	int rc, out = 0, tries;

	if (t->words > TK__STATE_WORDS_MAX)
		return -EINVAL;
	rc = tk__pg_conn_get(&s->pool, &c);
	if (rc)
		return rc;
	for (tries = 0, rc = 0; rc == 0 && tries < OPTIMISTIC_TRIES; tries++)
		rc = try_apply(s, c, key, len, now, t, &out);
	if (rc == 0) /* starved: take the row's lock */
		rc = locked_apply(s, c, key, len, now, t, &out);
	tk__pg_conn_put(&s->pool, c, rc);
	return rc < 0 ? rc : rc == 0 ? -EAGAIN : out;
}

/* The order the composite locks its keys in: by bytes, then algorithm. */
static int key_cmp(const struct tk__multi *m, size_t a, size_t b)
{
	size_t n = m->len[a] < m->len[b] ? m->len[a] : m->len[b];
	int d = memcmp(m->key[a], m->key[b], n);

	if (d == 0 && m->len[a] != m->len[b])
		d = m->len[a] < m->len[b] ? -1 : 1;
	if (d == 0 && m->alg[a] != m->alg[b])
		d = m->alg[a] < m->alg[b] ? -1 : 1;
	return d;
}

struct multi_rows {
	struct row w[TK__MULTI_MAX];
	uint64_t next[TK__MULTI_MAX][TK__STATE_WORDS_MAX];
	struct params q;
};

/* In a transaction: lock and read every key, run fn, write. */
static int multi_locked(struct pg_store *s, struct tk__pg_conn *c, uint64_t now,
			const struct tk__multi *m, struct multi_rows *x)
{
	const uint64_t *old[TK__MULTI_MAX];
	uint64_t *next[TK__MULTI_MAX], exp[TK__MULTI_MAX] = { 0 };
	int persist[TK__MULTI_MAX] = { 0 }, rc = 0, out;
	size_t order[TK__MULTI_MAX], i, j, k;
	PGresult *r;

	for (i = 0; i < m->n; i++) {
		for (j = i; j > 0 && key_cmp(m, order[j - 1], i) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (j = 0; rc == 0 && j < m->n; j++) {
		k = order[j];
		params_set(&x->q, m->key[k], m->len[k], m->alg[k], NULL, 0, 0,
			   0);
		rc = tk__pg_exec(c, TK__PG_LOCK, 2, x->q.val, x->q.len, &r);
		if (rc == 0) {
			row_of(s, r, m->words[k], now, &x->w[k]);
			tk__pq.PQclear(r);
		}
	}
	for (i = 0; rc == 0 && i < m->n; i++) {
		old[i] = x->w[i].live ? x->w[i].state : NULL;
		next[i] = x->next[i];
	}
	if (rc)
		return rc;
	out = m->fn(m->ctx, old, next, persist, exp);
	for (i = 0; out == TK__PERSIST && rc == 0 && i < m->n; i++) {
		if (!persist[i])
			continue;
		params_set(&x->q, m->key[i], m->len[i], m->alg[i], next[i],
			   m->words[i], exp[i], 0);
		rc = tk__pg_exec(c, TK__PG_SET, 4, x->q.val, x->q.len, &r);
		if (rc == 0)
			tk__pq.PQclear(r);
	}
	return rc ? rc : out;
}

static int simple(struct tk__pg_conn *c, const char *sql)
{
	PGresult *r = tk__pq.PQexec(c->pg, sql);
	int rc = tk__pq.PQresultStatus(r) == PGRES_COMMAND_OK
			 ? 0
			 : tk__pg_error(c->pg, r);

	tk__pq.PQclear(r);
	return rc;
}

static int pg_apply_multi(struct tk_store *base, uint64_t now,
			  const struct tk__multi *m)
{
	struct pg_store *s = (struct pg_store *)base;
	struct multi_rows *x;
	struct tk__pg_conn *c = NULL;
	int rc, tries, end;
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->words[i] > TK__STATE_WORDS_MAX)
			return -EINVAL;
	x = malloc(sizeof(*x));
	if (!x)
		return -ENOMEM;
	rc = tk__pg_conn_get(&s->pool, &c);
	/* A deadlock with a writer outside the library: once more. */
	for (tries = 0; rc == 0 && tries < MAX_TRIES; tries++) {
		rc = simple(c, "BEGIN");
		if (rc == 0)
			rc = multi_locked(s, c, now, m, x);
		/* Nothing written: placeholders for new keys go too. */
		end = simple(c, rc == TK__PERSIST ? "COMMIT" : "ROLLBACK");
		if (rc >= 0 && end)
			rc = end;
		if (rc != -EAGAIN)
			break;
		rc = 0;
	}
	if (c)
		tk__pg_conn_put(&s->pool, c, rc);
	free(x);
	return rc;
}

static int pg_reset(struct tk_store *base, const unsigned char *key, size_t len)
{
	struct pg_store *s = (struct pg_store *)base;
	struct tk__pg_conn *c;
	struct params q;
	PGresult *r;
	int rc = tk__pg_conn_get(&s->pool, &c);

	if (rc)
		return rc;
	params_set(&q, key, len, 0, NULL, 0, 0, 0);
	rc = tk__pg_exec(c, TK__PG_DEL, 1, q.val, q.len, &r);
	if (rc == 0)
		tk__pq.PQclear(r);
	tk__pg_conn_put(&s->pool, c, rc);
	return rc;
}

/* The server keeps the rows; this process counts nothing of them yet. */
static void pg_stats(struct tk_store *base, struct tk_stats *out)
{
	(void)base;
	(void)out;
}

static void pg_close(struct tk_store *base)
{
	struct pg_store *s = (struct pg_store *)base;

	tk__pg_pool_destroy(&s->pool);
	/* The password is not left in freed memory. */
	memset(&s->spec, 0, sizeof(s->spec));
	free(s);
}

static int pg_ping(struct tk_store *base, struct tk_store_ping *out)
{
	return tk__pg_ping(&((struct pg_store *)base)->pool, out);
}

/*
 * The libpq options that choose the server, the database and the schema
 * the unqualified table name resolves in (options=-c search_path=...),
 * then the table: two specs equal in them reach the same rows, whatever
 * their login, timeouts or TLS.  Values as written: "localhost" and
 * "127.0.0.1", or a port left out and 5432, are not taken for one; such
 * limiters are not grouped (-EXDEV) rather than grouped wrongly.
 */
static void pg_ident(struct pg_store *s)
{
	static const char *const keys[] = { "host",   "hostaddr", "port",
					    "dbname", "options",  "service" };
	PQconninfoOption *opts = tk__pq.PQconninfoParse(s->spec.uri, NULL);
	const PQconninfoOption *o;
	size_t i, at = 0;
	int n;

	for (i = 0; opts && i < sizeof(keys) / sizeof(keys[0]); i++) {
		for (o = opts; o->keyword && strcmp(o->keyword, keys[i]); o++)
			;
		n = snprintf(s->ident + at, sizeof(s->ident) - at, "%s",
			     o->keyword && o->val ? o->val : "");
		at += (size_t)n + 1; /* each value's NUL kept */
	}
	n = snprintf(s->ident + at, sizeof(s->ident) - at, "%s", s->spec.table);
	s->ident_len = opts ? at + (size_t)n : 0;
	tk__pq.PQconninfoFree(opts);
}

/* Do @a and @b reach the same rows (tk_limiter_check_group())? */
static int pg_same(struct tk_store *a, struct tk_store *b)
{
	const struct pg_store *x = (const struct pg_store *)a;
	const struct pg_store *y = (const struct pg_store *)b;

	return x->ident_len && x->ident_len == y->ident_len &&
	       memcmp(x->ident, y->ident, x->ident_len) == 0;
}

static const char *pg_refusal(struct tk_store *base, int rc)
{
	struct tk__pg_pool *p = &((struct pg_store *)base)->pool;
	int refused;

	if (rc != -EACCES)
		return NULL;
	pthread_mutex_lock(&p->lock);
	refused = p->refused;
	pthread_mutex_unlock(&p->lock);
	if (refused == TK__PG_REFUSED_LOGIN)
		return "refused the login: a wrong user or password, none "
		       "where one is required, or no pg_hba.conf line that "
		       "lets this user into this database from this host";
	if (refused == TK__PG_REFUSED_PRIVILEGE)
		return "let the user in but denied a privilege the store "
		       "needs: CONNECT on the database, CREATE on the schema "
		       "while the table does not exist, or SELECT, INSERT "
		       "and UPDATE on the table";
	return NULL;
}

static const struct tk__store_ops pg_ops = {
	.name = "postgresql",
	.apply = pg_apply,
	.apply_multi = pg_apply_multi,
	.reset = pg_reset,
	.stats = pg_stats,
	.ping = pg_ping,
	.same = pg_same,
	.refusal = pg_refusal,
	.close = pg_close,
};

int tk__pg_open(struct tk_store **out, const char *spec,
		const struct tk_options *o, char *why, size_t why_len)
{
	struct pg_store *s;
	int rc;

	if (why_len)
		why[0] = '\0';
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = tk__pg_spec_parse(spec, &s->spec, why, why_len);
	if (rc) {
		free(s);
		return rc;
	}
	pg_ident(s);
	/* Opening connects nothing: the first check does. */
	tk__pg_pool_init(&s->pool, &s->spec);
	s->base.ops = &pg_ops;
	s->base.clock = o->clock ? o->clock : tk_clock_system();
	*out = &s->base;
	return 0;
}
