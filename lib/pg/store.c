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
 * An expired row (expires_at at or before the check's time) is no state;
 * reset expires a key's rows rather than delete them.  The check's time
 * is the limiter's clock, or with server_time=1 the server's, which every
 * GET and LOCK returns with the row: no round trip of its own.
 *
 * Every SWEEP_EVERY-th write of a store sweeps: one bounded DELETE of at
 * most TK__PG_SWEEP_MAX rows expired for longer than the grace, over the
 * next SWEEP_PAGES pages of the table (conn.c, SWEEP_SQL), on the writing
 * call's connection after its check decided.  A sweep deletes rows,
 * which would let a version repeat (a row read, swept, inserted anew at
 * the version read, and a stale CAS that matches it): a row is inserted
 * at a random version below 2^62, so a stale CAS matches a new row with
 * a chance of 2^-62.
 */
#include "config.h"
#include "algo/policy.h"
#include "store/store-ops.h"
#include "pg/conn.h"
#include "hash/siphash.h" /* tk__random_bytes() */
#include "test-hooks.h"

#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TRIES 64
#define OPTIMISTIC_TRIES 8
#define SWEEP_EVERY 64
#define SWEEP_PAGES 64
/* ns an expired row stays before a sweep, as the memory store's. */
#define DEFAULT_GRACE (UINT64_C(60) * 1000000000)

#if TK_TEST_HOOKS
int tk__pg_locked_only;
void (*tk__pg_locked_pause)(void *arg);
void *tk__pg_locked_pause_arg;
#endif

/* What names a store's rows, as NUL-separated values (pg_same()). */
#define IDENT_MAX (TK__PG_URI_MAX + TK__PG_TABLE_MAX + 8)

struct pg_store {
	struct tk_store base;
	struct tk__pg_spec spec;
	struct tk__pg_pool pool;
	size_t ident_len;
	char ident[IDENT_MAX];
	uint64_t grace;		     /* ns an expired row stays */
	_Atomic uint64_t writes;     /* writes, for SWEEP_EVERY */
	_Atomic uint64_t sweep_page; /* where the next sweep starts */
};

/*
 * A key's row as read: @ok if its state is as long as its algorithm's
 * (@state, host order), @live if also not expired at the check's time.
 */
struct row {
	int found, ok, live;
	uint64_t version, exp, server_now;
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

/* The version a new row starts at (the header says why random). */
static uint64_t first_version(void)
{
	uint64_t v = 0;

	if (tk__random_bytes(&v, sizeof(v)) != 0)
		v = (uint64_t)(uintptr_t)&v ^ (uint64_t)getpid() << 32;
	return (v & ((UINT64_C(1) << 62) - 1)) | 1;
}

/* LOCK's parameters: key, alg, and the version of a placeholder row. */
static void params_lock(struct params *q, const unsigned char *key, size_t len,
			uint32_t alg)
{
	params_set(q, key, len, alg, NULL, 0, 0, first_version());
	q->val[2] = q->val[4];
	q->len[2] = 8;
}

/* A GET's or LOCK's result into @w, not yet judged (row_judge()). */
static void row_of(PGresult *r, uint32_t words, struct row *w)
{
	uint32_t i;

	w->found = !tk__pq.PQgetisnull(r, 0, 2);
	w->ok = w->live = 0;
	w->server_now = be64_at(tk__pq.PQgetvalue(r, 0, 3));
	if (!w->found)
		return;
	w->version = be64_at(tk__pq.PQgetvalue(r, 0, 2));
	w->exp = be64_at(tk__pq.PQgetvalue(r, 0, 1));
	w->ok = tk__pq.PQgetlength(r, 0, 0) == (int)(words * 8);
	for (i = 0; w->ok && i < words; i++)
		w->state[i] = be64_at(tk__pq.PQgetvalue(r, 0, 0) + 8 * i);
}

/* Is @w's state live at @now?  A live one of the wrong length is corrupt. */
static void row_judge(struct pg_store *s, struct row *w, uint64_t now)
{
	w->live = w->found && w->exp > now && w->ok;
	if (w->found && w->exp > now && !w->ok)
		atomic_fetch_add_explicit(&s->base.corrupt, 1,
					  memory_order_relaxed);
}

/* The check's time: the limiter's @now, or the server's as read, which
 * the decision then reports (*@t_now). */
static uint64_t decide_at(const struct pg_store *s, uint64_t now,
			  const struct row *w, uint64_t *t_now)
{
	if (!s->spec.server_time)
		return now;
	if (t_now)
		*t_now = w->server_now;
	return w->server_now;
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
	row_of(r, t->words, &w);
	tk__pq.PQclear(r);
	row_judge(s, &w, decide_at(s, now, &w, t->now));
	*out = t->fn(t->ctx, w.live ? w.state : NULL, next, &exp);
	if (*out != TK__PERSIST)
		return 1;
	params_set(&q, key, len, t->alg, next, t->words, exp,
		   w.found ? w.version : first_version());
	rc = tk__pg_exec(c, w.found ? TK__PG_CAS : TK__PG_INS, 5, q.val, q.len,
			 &r);
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
	params_lock(&q, key, len, t->alg);
	rc = tk__pg_exec(c, TK__PG_LOCK, 3, q.val, q.len, &r);
	if (rc == 0) {
		row_of(r, t->words, &w);
		tk__pq.PQclear(r);
		row_judge(s, &w, decide_at(s, now, &w, t->now));
		if (tk__pg_locked_pause)
			tk__pg_locked_pause(tk__pg_locked_pause_arg);
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

/*
 * One sweep (the header says when), at the check's time @now: expired
 * for longer than the grace, so that a clock stepped back by up to the
 * grace finds the states the memory store would.  Its answer is the
 * sweep's own: the check has decided.
 */
static int sweep(struct pg_store *s, struct tk__pg_conn *c, uint64_t now)
{
	uint64_t from =
		atomic_load_explicit(&s->sweep_page, memory_order_relaxed);
	uint64_t v[3] = { 0, htobe64(from), htobe64(from + SWEEP_PAGES) };
	const char *val[3] = { (const char *)&v[0], (const char *)&v[1],
			       (const char *)&v[2] };
	const int len[3] = { 8, 8, 8 };
	uint64_t deleted, pages;
	PGresult *r;
	int rc;

	if (now <= s->grace || now - s->grace > INT64_MAX)
		return 0;
	v[0] = htobe64(now - s->grace);
	rc = tk__pg_exec(c, TK__PG_SWEEP, 3, val, len, &r);
	if (rc)
		return rc;
	deleted = be64_at(tk__pq.PQgetvalue(r, 0, 0));
	pages = be64_at(tk__pq.PQgetvalue(r, 0, 1));
	tk__pq.PQclear(r);
	/* A full sweep may have left more in its pages: there again. */
	if (deleted < TK__PG_SWEEP_MAX)
		atomic_store_explicit(
			&s->sweep_page,
			from + SWEEP_PAGES < pages ? from + SWEEP_PAGES : 0,
			memory_order_relaxed);
	return 0;
}

/* After a check that wrote at @now: every SWEEP_EVERY-th sweeps. */
static void maybe_sweep(struct pg_store *s, struct tk__pg_conn *c, uint64_t now)
{
	if (atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed) %
		    SWEEP_EVERY ==
	    SWEEP_EVERY - 1)
		(void)sweep(s, c, now);
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
	tries = tk__pg_locked_only ? OPTIMISTIC_TRIES : 0;
	for (rc = 0; rc == 0 && tries < OPTIMISTIC_TRIES; tries++)
		rc = try_apply(s, c, key, len, now, t, &out);
	if (rc == 0) /* starved: take the row's lock */
		rc = locked_apply(s, c, key, len, now, t, &out);
	if (rc == 1 && out == TK__PERSIST)
		maybe_sweep(s, c,
			    t->now && s->spec.server_time ? *t->now : now);
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
		params_lock(&x->q, m->key[k], m->len[k], m->alg[k]);
		rc = tk__pg_exec(c, TK__PG_LOCK, 3, x->q.val, x->q.len, &r);
		if (rc == 0) {
			row_of(r, m->words[k], &x->w[k]);
			tk__pq.PQclear(r);
		}
	}
	if (rc)
		return rc;
	/* At the server's time when the last key was locked. */
	now = decide_at(s, now, &x->w[order[m->n - 1]], m->now);
	for (i = 0; i < m->n; i++) {
		row_judge(s, &x->w[i], now);
		old[i] = x->w[i].live ? x->w[i].state : NULL;
		next[i] = x->next[i];
	}
	if (tk__pg_locked_pause)
		tk__pg_locked_pause(tk__pg_locked_pause_arg);
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
	if (rc == TK__PERSIST)
		maybe_sweep(s, c,
			    m->now && s->spec.server_time ? *m->now : now);
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
	s->grace = o->reclaim_grace ? o->reclaim_grace : DEFAULT_GRACE;
	*out = &s->base;
	return 0;
}
