/*
 * store.c - the Redis store: state on a Redis server, shared by
 * every host that opens the same spec.
 *
 * A check is one script on the server (check.lua: a Redis 7
 * function called by FCALL, or EVALSHA on older servers; loaded on a
 * connection's first check and again whenever the server lost it: after
 * a restart, a failover, FUNCTION FLUSH or SCRIPT FLUSH).  The script
 * reads the states of the check's keys (one, or one per dimension of a
 * composite or group), decides admission with exact integer arithmetic,
 * writes the new states with a TTL (expiry plus the grace) and returns
 * the states it read and wrote.  The client then runs the algorithms
 * themselves on the states read: they fill the decision, and they must
 * reach the same verdict and the same new states as the script, or the
 * call fails with -EPROTO; so a Redis decision is the memory store's, bit
 * for bit, by construction.
 *
 * A batch (tk_limiter_check_many()) sends the same scripts, one pipeline
 * per node: pipeline.c, through the steps store.h declares.
 * A check over keys of several slots of a cluster is one script per
 * slot, with refunds: xslot.c, through the same steps.
 *
 * A peek or forecast is a plain GET (MGET).  A state is a string of
 * decimal fields, the algorithm's id first (scripts.c): one of
 * another algorithm answers -EPROTO, as on the local stores.
 *
 * Every algorithm runs, alone, in composites and in groups.  With
 * server_time=1 the decision's time is the server's TIME, read by the
 * script, which arguments computed at an estimate of it must fit
 * (server_clock()).
 */
#include "internal.h"
#include "redis/conn.h"
#include "redis/store.h"
#include "store-key.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

/* ns, as the memory store. */
#define DEFAULT_GRACE (UINT64_C(60) * 1000000000)
#define KEY_MAX TK__REDIS_KEY_MAX

/*
 * The Redis key: the spec's key_prefix, then "{", the store key, "}".  A
 * composite's dimension has its index inside the store key
 * (store-key.h); it moves after the "}", so that every dimension of one
 * key shares the hash tag and a composite is one script on one node of a
 * cluster.  An index (0 to 7) is never '}', so no two keys meet.
 */
static int redis_key(const struct tk__redis_store *s, const unsigned char *key,
		     size_t len, char *buf, size_t *out)
{
	struct tk__store_key_parts k;
	size_t n = s->spec.key_prefix_len;
	int rc;

	if (len < 2 || len + 2 > KEY_MAX - n)
		return -ENAMETOOLONG;
	rc = tk__store_key_decode(key, len, &k);
	if (rc)
		return rc;
	memcpy(buf, s->spec.key_prefix, n);
	buf[n++] = '{';
	memcpy(buf + n, key, k.dim_at);
	n += k.dim_at;
	if (k.dim != TK__STORE_KEY_SINGLE) {
		memcpy(buf + n, key + k.dim_at + 1, len - k.dim_at - 1);
		n += len - k.dim_at - 1;
	}
	buf[n++] = '}';
	if (k.dim != TK__STORE_KEY_SINGLE)
		buf[n++] = (char)k.dim;
	*out = n;
	return 0;
}

/* The limiter's transition on @old (NULL: none); persist[i] set as it
 * writes key i. */
static int run(const struct tk__redis_req *q, const uint64_t *const *old,
	       uint64_t *const *next, int *persist)
{
	uint64_t expires[TK__MULTI_MAX];
	size_t i;
	int rc;

	for (i = 0; i < q->n; i++)
		persist[i] = 0;
	if (q->t) {
		rc = q->t->fn(q->t->ctx, old[0], next[0], &expires[0]);
		persist[0] = rc == TK__PERSIST;
		return rc;
	}
	rc = q->m->fn(q->m->ctx, old, next, persist, expires);
	if (rc != TK__PERSIST)
		for (i = 0; i < q->n; i++)
			persist[i] = 0;
	return rc;
}

static int load_script(struct tk__redis_conn *c)
{
	const char *argv[3] = { "SCRIPT", "LOAD", tk__redis_check_lua };
	size_t lens[3] = { 6, 4, strlen(tk__redis_check_lua) };
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	redisReply *r;
	int rc;

	rc = tk__redis_command(c, 3, argv, lens, (void **)&r);
	if (rc)
		return rc;
	if (r->type != REDIS_REPLY_STRING || r->len != 40) {
		tk__redis_reply_free(r);
		return -EPROTO;
	}
	memcpy(e->sha, r->str, 40);
	e->sha[40] = '\0';
	tk__redis_reply_free(r);
	return 0;
}

/*
 * FUNCTION LOAD of the script as the library of this version; a server
 * without Functions (before Redis 7) is left to EVALSHA.
 */
static int load_function(struct tk__redis_store *s, struct tk__redis_conn *c)
{
	const char *argv[3] = { "FUNCTION", "LOAD", s->library };
	size_t lens[3] = { 8, 4, strlen(s->library) };
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	redisReply *r;
	int rc;

	rc = tk__redis_command(c, 3, argv, lens, (void **)&r);
	if (rc == 0)
		tk__redis_reply_free(r);
	if (rc == 0 || rc == -EEXIST)
		e->kind = TK__ENGINE_FUNCTION;
	else if (rc == -ENOSYS)
		e->kind = TK__ENGINE_EVALSHA;
	return rc == -EEXIST || rc == -ENOSYS ? 0 : rc;
}

/* ASK: the next command is for a slot this node is importing. */
int tk__redis_asking(struct tk__redis_conn *c)
{
	const char *argv[1] = { "ASKING" };
	size_t lens[1] = { 6 };
	redisReply *r;
	int rc = tk__redis_command(c, 1, argv, lens, (void **)&r);

	if (rc == 0)
		tk__redis_reply_free(r);
	return rc;
}

int tk__redis_call_target(struct tk__redis_store *s, struct tk__redis_conn *c,
			  struct tk__redis_call *call)
{
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	int rc = 0;

	if (e->kind == TK__ENGINE_UNKNOWN)
		rc = load_function(s, c);
	else if (e->kind == TK__ENGINE_EVALSHA && !e->sha[0])
		rc = load_script(c);
	if (rc)
		return rc;
	if (e->kind == TK__ENGINE_FUNCTION) {
		call->argv[0] = "FCALL";
		call->argv[1] = s->function;
	} else {
		call->argv[0] = "EVALSHA";
		call->argv[1] = e->sha;
	}
	call->lens[0] = strlen(call->argv[0]);
	call->lens[1] = strlen(call->argv[1]);
	return 0;
}

void tk__redis_script_lost(struct tk__redis_conn *c)
{
	struct tk__redis_engine *e = tk__redis_conn_engine(c);

	/* Load it again: a function by LOAD, a script too. */
	if (e->kind == TK__ENGINE_FUNCTION)
		e->kind = TK__ENGINE_UNKNOWN;
	e->sha[0] = '\0';
}

/*
 * The check script, by FCALL where the server has Functions, else by
 * EVALSHA; a function or script the server lost (a restart, a failover,
 * FUNCTION FLUSH, SCRIPT FLUSH) is loaded again.
 */
int tk__redis_eval(struct tk__redis_store *s, struct tk__redis_conn *c,
		   struct tk__redis_call *call, redisReply **r, int asking)
{
	int rc, tries;

	for (tries = 0; tries < 3; tries++) {
		rc = tk__redis_call_target(s, c, call);
		if (rc == 0 && asking)
			rc = tk__redis_asking(c);
		if (rc == 0)
			rc = tk__redis_command(c, call->argc, call->argv,
					       call->lens, (void **)r);
		if (rc != -ENOENT)
			return rc;
		tk__redis_script_lost(c);
	}
	return -EPROTO;
}

/*
 * The words of one step: every key's old state, the limiter's new one and
 * the script's, zeroed (a sliding log writes only the stamps it holds).
 */
struct bufs {
	const uint64_t *old[TK__MULTI_MAX];
	uint64_t *was[TK__MULTI_MAX], *next[TK__MULTI_MAX];
	uint64_t *made[TK__MULTI_MAX];
	uint64_t *heap;
	uint64_t local[3 * 8];
};

static int bufs_init(struct bufs *b, const struct tk__redis_req *q)
{
	size_t i, total = 0, at = 0;
	uint64_t *w = b->local;

	for (i = 0; i < q->n; i++)
		total += q->pol[i]->state_words;
	b->heap = NULL;
	if (3 * total > sizeof(b->local) / sizeof(b->local[0])) {
		w = b->heap = calloc(3 * total, sizeof(*w));
		if (!w)
			return -ENOMEM;
	} else {
		memset(b->local, 0, sizeof(b->local));
	}
	for (i = 0; i < q->n; i++) {
		b->old[i] = NULL;
		b->was[i] = w + at;
		b->next[i] = w + total + at;
		b->made[i] = w + 2 * total + at;
		at += q->pol[i]->state_words;
	}
	return 0;
}

/* A reply's state of key @i into @b: none, or the words it decodes to. */
static int take_old(struct bufs *b, const struct tk__redis_req *q, size_t i,
		    const redisReply *r)
{
	b->old[i] = NULL;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	b->old[i] = b->was[i];
	if (r->type != REDIS_REPLY_STRING)
		return -EPROTO;
	return tk__redis_decode(q->pol[i], r->str, r->len, b->was[i]);
}

/* TIME's reply, seconds and microseconds, in ns. */
static int time_of(const redisReply *r, uint64_t *now)
{
	uint64_t sec, usec;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    tk__redis_parse_u64(r->element[0]->str, r->element[0]->len, &sec) ||
	    tk__redis_parse_u64(r->element[1]->str, r->element[1]->len,
				&usec) ||
	    usec >= 1000000 || sec >= TK__NOW_LIMIT / 1000000000 - 1)
		return -EPROTO;
	*now = sec * 1000000000 + usec * 1000;
	return 0;
}

/*
 * A peek: MGET of the keys, the algorithms run on what it read.  With
 * server_time=1, TIME goes in the same pipeline (one round trip), and
 * the peek is at it.
 */
static int forecast(struct tk__redis_store *s, struct tk__redis_conn *c,
		    struct tk__redis_req *q, int asking)
{
	const char *argv[1 + TK__MULTI_MAX], *time[1] = { "TIME" };
	const char *ask[1] = { "ASKING" };
	size_t lens[1 + TK__MULTI_MAX], tlen[1] = { 4 }, alen[1] = { 6 }, i;
	int persist[TK__MULTI_MAX], rc = 0, k, got, sent;
	int timed = s->spec.server_time;
	struct bufs b;
	void *rep[3] = { NULL, NULL, NULL };
	redisReply *r;

	argv[0] = "MGET";
	lens[0] = 4;
	for (i = 0; i < q->n; i++) {
		argv[1 + i] = q->key[i];
		lens[1 + i] = q->klen[i];
	}
	rc = bufs_init(&b, q);
	if (rc)
		return rc;
	/* ASKING holds for the next command only: the MGET. */
	if (timed)
		rc = tk__redis_append(c, 1, time, tlen);
	if (rc == 0 && asking)
		rc = tk__redis_append(c, 1, ask, alen);
	if (rc == 0)
		rc = tk__redis_append(c, (int)(1 + q->n), argv, lens);
	if (rc == 0)
		rc = tk__redis_flush(c);
	/* Every reply is read, so that the connection stays in step. */
	for (k = 0, sent = rc == 0; sent && k < timed + asking + 1; k++) {
		got = tk__redis_next_reply(c, 0, &rep[k]);
		rc = rc ? rc : got;
	}
	r = rep[timed + asking];
	if (rc == 0 && timed) {
		rc = time_of(rep[0], &q->now);
		if (rc == 0) {
			tk__redis_learn(s, q->now, q->local);
			*q->decide_at = q->now;
		}
	}
	if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != q->n))
		rc = -EPROTO;
	for (i = 0; rc == 0 && i < q->n; i++)
		rc = take_old(&b, q, i, r->element[i]);
	for (k = 0; k < 3; k++)
		if (rep[k])
			tk__redis_reply_free(rep[k]);
	if (rc == 0)
		rc = run(q, b.old, b.next, persist);
	free(b.heap);
	return rc;
}

/* The script's verdict, checked against the algorithms' own. */
static int verdict(const redisReply *r, const struct tk__redis_req *q,
		   struct bufs *b)
{
	int persist[TK__MULTI_MAX], wrote[TK__MULTI_MAX], rc = 0, admitted;
	const redisReply *e;
	size_t i, n = q->n;
	uint64_t at;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 + 2 * n ||
	    r->element[0]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	admitted = r->element[0]->integer == 1;
	e = r->element[1 + 2 * n];
	if (e->type != REDIS_REPLY_STRING ||
	    tk__redis_parse_u64(e->str, e->len, &at) || at >= TK__NOW_LIMIT ||
	    (!q->on_server && at != q->now))
		return -EPROTO;
	/* The algorithms decide at the time the script decided at. */
	*q->decide_at = at;
	for (i = 0; rc == 0 && i < n; i++) {
		rc = take_old(b, q, i, r->element[1 + i]);
		e = r->element[1 + n + i];
		wrote[i] = e->type != REDIS_REPLY_NIL;
		if (rc == 0 && wrote[i])
			rc = e->type == REDIS_REPLY_STRING
				     ? tk__redis_decode(q->pol[i], e->str,
							e->len, b->made[i])
				     : -EPROTO;
	}
	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		memset(b->next[i], 0,
		       q->pol[i]->state_words * sizeof(b->next[i][0]));
	rc = run(q, b->old, b->next, persist);
	if (rc < 0)
		return rc;
	if ((rc == TK__PERSIST) != admitted)
		return -EPROTO;
	for (i = 0; i < n; i++)
		if (persist[i] != wrote[i] ||
		    (wrote[i] &&
		     memcmp(b->next[i], b->made[i],
			    q->pol[i]->state_words * sizeof(b->next[i][0]))))
			return -EPROTO;
	return rc;
}

/*
 * "TIME", or "TIME:LO:HI" where the arguments, computed at now (the
 * server's time as estimated), hold only from LO to HI: the intersection
 * of the dimensions' spans.
 */
static void time_arg(const struct tk__redis_req *q, char *buf, size_t len)
{
	uint64_t lo = 0, hi = UINT64_MAX, a, b;
	size_t i;

	for (i = 0; i < q->n; i++) {
		tk__redis_span(q->pol[i], q->now, &a, &b);
		lo = a > lo ? a : lo;
		hi = b < hi ? b : hi;
	}
	if (lo == 0 && hi == UINT64_MAX)
		snprintf(buf, len, "TIME");
	else
		snprintf(buf, len, "TIME:%llu:%llu", (unsigned long long)lo,
			 (unsigned long long)hi);
}

int tk__redis_call_build(const struct tk__redis_store *s,
			 const struct tk__redis_req *q,
			 struct tk__redis_call *call)
{
	const char **argv = call->argv;
	size_t i, j, argc = 0;
	int persist[TK__MULTI_MAX], rc;
	struct bufs b;

	rc = bufs_init(&b, q);
	if (rc)
		return rc;
	/* What no state could change (-ERANGE) costs no round trip. */
	rc = run(q, b.old, b.next, persist);
	free(b.heap);
	if (rc < 0)
		return rc;
	if (q->on_server)
		time_arg(q, call->now, sizeof(call->now));
	else
		snprintf(call->now, sizeof(call->now), "%llu",
			 (unsigned long long)q->now);
	snprintf(call->n, sizeof(call->n), "%zu", q->n);
	argv[argc++] = NULL; /* FCALL or EVALSHA, tk__redis_call_target() */
	argv[argc++] = NULL; /* the function or the script's SHA-1 */
	argv[argc++] = call->n;
	for (i = 0; i < q->n; i++)
		argv[argc++] = q->key[i];
	argv[argc++] = q->kind == TK__ANY ? "any" : "all";
	argv[argc++] = call->now;
	argv[argc++] = s->grace;
	argv[argc++] = call->n;
	for (i = 0, rc = 0; i < q->n && rc >= 0; i++) {
		snprintf(call->alg[i], sizeof(call->alg[i]), "%u",
			 q->pol[i]->alg->id);
		argv[argc++] = call->alg[i];
		argv[argc++] = tk__redis_usable(q->pol[i], q->now, q->cost)
				       ? "1"
				       : "0";
		rc = tk__redis_check_args(q->pol[i], q->now, q->cost,
					  call->arg[i]);
		for (j = 0; j < 7; j++)
			argv[argc++] = call->arg[i][j];
	}
	if (rc < 0)
		return rc;
	for (i = 2; i < argc; i++)
		call->lens[i] = i >= 3 && i < 3 + q->n ? q->klen[i - 3]
						       : strlen(argv[i]);
	call->argc = (int)argc;
	return 0;
}

int tk__redis_call_verdict(const struct tk__redis_req *q, const void *r)
{
	struct bufs b;
	int rc = bufs_init(&b, q);

	if (rc == 0)
		rc = verdict(r, q, &b);
	free(b.heap);
	return rc;
}

void tk__redis_learn(struct tk__redis_store *s, uint64_t server, uint64_t local)
{
	tk_atomic_store_u64(&s->skew, (server - local) | 1, TK_MO_RELAXED);
}

int tk__redis_estimate(struct tk__redis_store *s, struct tk__redis_req *q)
{
	uint64_t skew = tk_atomic_load_u64(&s->skew, TK_MO_RELAXED);
	uint64_t at = q->local + skew;

	if (!skew || at >= TK__NOW_LIMIT)
		return -ENOENT;
	q->now = at;
	*q->decide_at = at;
	q->on_server = 1;
	return 0;
}

int tk__redis_call_retry(struct tk__redis_store *s, struct tk__redis_req *q,
			 const void *reply)
{
	const redisReply *r = reply, *e;
	uint64_t at;

	if (!q->on_server || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
		return 0;
	e = r->element[r->elements - 1];
	if (e->type != REDIS_REPLY_STRING ||
	    tk__redis_parse_u64(e->str, e->len, &at) || at >= TK__NOW_LIMIT)
		return 0;
	tk__redis_learn(s, at, q->local);
	if (r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[0]->integer != 2)
		return 0;
	/* TIME left the span the arguments hold in: at TIME, as sent. */
	q->now = at;
	*q->decide_at = at;
	q->on_server = 0;
	return 1;
}

/*
 * The script, and once more at the server's time if that lay outside
 * the span of the arguments (a window's edge, a stale estimate).
 */
static int check(struct tk__redis_store *s, struct tk__redis_conn *c,
		 struct tk__redis_req *q, int asking)
{
	struct tk__redis_call call;
	redisReply *r;
	int rc, tries;

	for (tries = 0; tries < 2; tries++) {
		rc = tk__redis_call_build(s, q, &call);
		if (rc == 0)
			rc = tk__redis_eval(s, c, &call, &r, asking);
		if (rc)
			return rc;
		if (!tk__redis_call_retry(s, q, r))
			break;
		tk__redis_reply_free(r);
	}
	rc = tk__redis_call_verdict(q, r);
	tk__redis_reply_free(r);
	return rc;
}

/* The server's clock, in ns: TIME's seconds and microseconds. */
int tk__redis_server_now(struct tk__redis_conn *c, uint64_t *now)
{
	const char *argv[1] = { "TIME" };
	size_t lens[1] = { 4 };
	redisReply *r;
	int rc;

	rc = tk__redis_command(c, 1, argv, lens, (void **)&r);
	if (rc)
		return rc;
	rc = time_of(r, now);
	tk__redis_reply_free(r);
	return rc;
}

/*
 * server_time=1: a check whose arguments need no time reads TIME in the
 * script (one round trip).  A window or a tick needs the time: the
 * arguments are computed at the server's time as estimated, and the
 * script decides at its TIME if that lies in their span, else answers
 * TIME and the check is sent again at it (check()): one round trip, two
 * at a window's edge or after a clock moved.  Without an estimate yet
 * (the first check of the store), TIME is read first.  A peek
 * (forecast()) sends TIME in one pipeline with its read.
 */
static int server_clock(struct tk__redis_store *s, struct tk__redis_conn *c,
			struct tk__redis_req *q)
{
	size_t i;
	int rc, needs = 0;

	for (i = 0; i < q->n; i++)
		needs |= tk__redis_needs_now(q->pol[i]);
	if (!needs) {
		q->on_server = 1;
		return 0;
	}
	if (tk__redis_estimate(s, q) == 0)
		return 0;
	rc = tk__redis_server_now(c, &q->now);
	if (rc == 0) {
		tk__redis_learn(s, q->now, q->local);
		*q->decide_at = q->now;
	}
	return rc;
}

#define REDIRECTS_MAX 5

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * @fn on the server, or on the master of @slot: MOVED corrects the map
 * and follows, ASK follows with ASKING, TRYAGAIN and CLUSTERDOWN (-EAGAIN)
 * wait 1 ms; each at most REDIRECTS_MAX times, then -EAGAIN.  A script
 * redirected was not run, so following never counts a check twice.  All
 * of it within one deadline (the caller's, or one begun here): a
 * connect or command it leaves no time for answers -ETIMEDOUT.
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

struct step_arg {
	struct tk__redis_req *q;
	uint32_t flags;
};

static int step_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		   void *arg, int asking)
{
	struct step_arg *a = arg;
	int rc = 0;

	if (!(a->flags & TK__T_CHECK))
		return forecast(s, c, a->q, asking);
	if (s->spec.server_time)
		rc = server_clock(s, c, a->q);
	return rc ? rc : check(s, c, a->q, asking);
}

int tk__redis_req_slot(const struct tk__redis_store *s,
		       const struct tk__redis_req *q, unsigned int *slot)
{
	size_t i;

	*slot = 0;
	for (i = 0; i < q->n; i++)
		if (!q->pol[i] || !tk__redis_supported(q->pol[i]))
			return -ENOTSUP;
	/* One script runs on one node: a check over keys of several slots
	 * (a group of several keys) is one script per slot (xslot.c). */
	for (i = 0; s->cluster && i < q->n; i++)
		if (i == 0)
			*slot = tk__redis_slot(q->key[0], q->klen[0]);
		else if (tk__redis_slot(q->key[i], q->klen[i]) != *slot)
			return TK__REDIS_XSLOT;
	return 0;
}

int tk__redis_step(struct tk__redis_store *s, struct tk__redis_req *q,
		   uint32_t flags)
{
	struct step_arg a = { q, flags };
	unsigned int slot;
	uint64_t was;
	int rc = tk__redis_req_slot(s, q, &slot);

	if (rc < 0)
		return rc;
	/* One deadline for the check, over all the slots it runs in. */
	was = tk__redis_deadline_begin(&s->spec);
	/* A peek reads only one key's dimensions, which share a slot. */
	if (rc == TK__REDIS_XSLOT)
		rc = flags & TK__T_CHECK ? tk__redis_xslot(s, q) : -ENOTSUP;
	else
		rc = tk__redis_route(s, slot, step_on, &a);
	tk__redis_deadline_end(was);
	return rc;
}

/* The fields of @q but its keys, which are filled next. */
static void req_init(struct tk__redis_req *q, size_t n, enum tk__composite kind,
		     uint64_t now, uint64_t *decide_at, uint64_t cost)
{
	q->n = n;
	q->kind = kind;
	q->now = now;
	q->local = now;
	q->decide_at = decide_at;
	q->cost = cost;
	q->on_server = 0;
	q->t = NULL;
	q->m = NULL;
}

int tk__redis_req_single(const struct tk__redis_store *s,
			 const unsigned char *key, size_t len, uint64_t now,
			 const struct tk__transform *t, struct tk__redis_req *q)
{
	req_init(q, 1, TK__ALL, now, t->now, t->cost);
	q->pol[0] = t->policy;
	q->t = t;
	return redis_key(s, key, len, q->key[0], &q->klen[0]);
}

int tk__redis_req_multi(const struct tk__redis_store *s, uint64_t now,
			const struct tk__multi *m, struct tk__redis_req *q)
{
	size_t i;
	int rc = 0;

	if (m->n > TK__MULTI_MAX)
		return -EINVAL;
	req_init(q, m->n, m->kind, now, m->now, m->cost);
	q->m = m;
	for (i = 0; i < m->n && rc == 0; i++) {
		q->pol[i] = m->policy[i];
		rc = redis_key(s, m->key[i], m->len[i], q->key[i], &q->klen[i]);
	}
	return rc;
}

static int redis_apply(struct tk_store *base, const unsigned char *key,
		       size_t len, uint64_t now, const struct tk__transform *t)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct tk__redis_req q;
	int rc = tk__redis_req_single(s, key, len, now, t, &q);

	return rc ? rc : tk__redis_step(s, &q, t->flags);
}

static int redis_apply_multi(struct tk_store *base, uint64_t now,
			     const struct tk__multi *m)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct tk__redis_req q;
	int rc = tk__redis_req_multi(s, now, m, &q);

	return rc ? rc : tk__redis_step(s, &q, m->flags);
}

struct del_arg {
	char key[KEY_MAX];
	size_t len;
};

static int del_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		  void *arg, int asking)
{
	struct del_arg *a = arg;
	const char *argv[2] = { "DEL", a->key };
	size_t lens[2] = { 3, a->len };
	redisReply *r;
	int rc = asking ? tk__redis_asking(c) : 0;

	(void)s;
	if (rc == 0)
		rc = tk__redis_command(c, 2, argv, lens, (void **)&r);
	if (rc == 0)
		tk__redis_reply_free(r);
	return rc;
}

static int redis_reset(struct tk_store *base, const unsigned char *key,
		       size_t len)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;
	struct del_arg a;
	int rc = redis_key(s, key, len, a.key, &a.len);

	return rc ? rc
		  : tk__redis_route(s, tk__redis_slot(a.key, a.len), del_on,
				    &a);
}

/* The server keeps the keys; this process counts nothing of them yet. */
static void redis_stats(struct tk_store *base, struct tk_stats *out)
{
	(void)base;
	(void)out;
}

/* Every algorithm has its transition in the script; one added to the
 * library without one is refused at open, not at each check. */
static int redis_supports(struct tk_store *base, const struct tk_policy *p)
{
	size_t i;

	(void)base;
	for (i = 0; i < p->n; i++)
		if (!tk__redis_supported(&p->dim[i]))
			return -ENOTSUP;
	return 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "redis_version:X.Y.Z\r\n" of an INFO reply (after "# Server") into
 * @out. */
static int info_version(const redisReply *r, char *out, size_t len)
{
	static const char field[] = "\nredis_version:";
	const char *at, *end;
	size_t n;

	if (r->type != REDIS_REPLY_STRING)
		return -EPROTO;
	at = memmem(r->str, r->len, field, sizeof(field) - 1);
	if (!at)
		return -EPROTO;
	at += sizeof(field) - 1;
	end = at;
	while (end < r->str + r->len && *end != '\r' && *end != '\n')
		end++;
	n = (size_t)(end - at);
	if (n == 0 || n >= len)
		return -EPROTO;
	memcpy(out, at, n);
	out[n] = '\0';
	return 0;
}

/*
 * The engine (loading the check script as a first check would), one
 * PING timed, then INFO server for the version.
 */
static int ping_on(struct tk__redis_store *s, struct tk__redis_conn *c,
		   void *arg, int asking)
{
	const char *ping[1] = { "PING" }, *info[2] = { "INFO", "server" };
	size_t ping_len[1] = { 4 }, info_len[2] = { 4, 6 };
	const struct tk__redis_spec *sp = tk__redis_conn_spec(c);
	struct tk__redis_engine *e = tk__redis_conn_engine(c);
	struct tk_store_ping *out = arg;
	uint64_t t0;
	redisReply *r;
	int rc = 0;

	(void)asking;
	if (e->kind == TK__ENGINE_UNKNOWN)
		rc = load_function(s, c);
	if (rc)
		return rc;
	t0 = monotonic_ns();
	rc = tk__redis_command(c, 1, ping, ping_len, (void **)&r);
	if (rc)
		return rc;
	out->rtt = monotonic_ns() - t0;
	rc = r->type == REDIS_REPLY_STATUS && r->len == 4 &&
			     memcmp(r->str, "PONG", 4) == 0
		     ? 0
		     : -EPROTO;
	tk__redis_reply_free(r);
	if (rc == 0)
		rc = tk__redis_command(c, 2, info, info_len, (void **)&r);
	if (rc)
		return rc;
	rc = info_version(r, out->version, sizeof(out->version));
	tk__redis_reply_free(r);
	if (sp->unix_socket)
		snprintf(out->server, sizeof(out->server), "%s", sp->path);
	else
		snprintf(out->server, sizeof(out->server),
			 strchr(sp->host, ':') ? "[%s]:%d" : "%s:%d", sp->host,
			 sp->port);
	snprintf(out->engine, sizeof(out->engine), "%s",
		 e->kind == TK__ENGINE_FUNCTION ? "functions" : "evalsha");
	return rc;
}

/* A cluster answers for the master of slot 0. */
static int redis_ping(struct tk_store *base, struct tk_store_ping *out)
{
	return tk__redis_route((struct tk__redis_store *)base, 0, ping_on, out);
}

static void redis_close(struct tk_store *base)
{
	struct tk__redis_store *s = (struct tk__redis_store *)base;

	if (s->cluster)
		tk__redis_cluster_destroy(s->cluster);
	else
		tk__redis_pool_destroy(&s->pool);
	free(s->library);
	/* The password is not left in freed memory. */
	memset(&s->spec, 0, sizeof(s->spec));
	free(s);
}

static const struct tk__store_ops redis_ops = {
	.name = "redis",
	.apply = redis_apply,
	.apply_multi = redis_apply_multi,
	.apply_batch = tk__redis_apply_batch,
	.reset = redis_reset,
	.stats = redis_stats,
	.supports = redis_supports,
	.ping = redis_ping,
	.close = redis_close,
};

static int make_library(struct tk__redis_store *s)
{
	static const uint64_t key[2] = { 0x7468726f74746c65, 0x6b6974 };
	static const char head[] = "#!lua name=throttlekit_%016llx\n"
				   "redis.register_function('%s',\n"
				   "function(KEYS, ARGV)\n";
	static const char tail[] = "\nend)\n";
	size_t len = strlen(tk__redis_check_lua);
	uint64_t h = tk__siphash(key, tk__redis_check_lua, len);
	int n;

	snprintf(s->function, sizeof(s->function), "tk_check_%016llx",
		 (unsigned long long)h);
	s->library = malloc(sizeof(head) + 64 + len + sizeof(tail));
	if (!s->library)
		return -ENOMEM;
	n = sprintf(s->library, head, (unsigned long long)h, s->function);
	memcpy(s->library + n, tk__redis_check_lua, len);
	memcpy(s->library + n + len, tail, sizeof(tail));
	return 0;
}

int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o, char *why, size_t why_len)
{
	struct tk__redis_store *s;
	int rc;

	if (why_len)
		why[0] = '\0';
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = tk__redis_spec_parse(spec, &s->spec, why, why_len);
	if (rc == 0)
		rc = make_library(s);
	if (rc == 0 && s->spec.cluster)
		rc = tk__redis_cluster_init(&s->cluster, &s->spec);
	else if (rc == 0)
		rc = tk__redis_pool_init(&s->pool, &s->spec, why, why_len);
	if (rc) {
		free(s->library);
		memset(&s->spec, 0, sizeof(s->spec));
		free(s);
		return rc;
	}
	s->base.ops = &redis_ops;
	s->base.clock = o->clock ? o->clock : tk_clock_system();
	snprintf(s->grace, sizeof(s->grace), "%llu",
		 (unsigned long long)(o->reclaim_grace ? o->reclaim_grace
						       : DEFAULT_GRACE));
	*out = &s->base;
	return 0;
}
