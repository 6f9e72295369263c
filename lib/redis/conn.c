/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c - one hiredis connection per thread, typed errors.
 *
 * A hiredis context is not thread-safe, so each thread takes a connection
 * of its own from the store's pool: a push-only list of connections, each
 * claimed by one CAS on in_use, and found again through a thread-specific
 * pointer.  A thread that exits gives its connection back (the key's
 * destructor), still connected, for the next thread.  No lock, no thread.
 *
 * fork(): a child inherits its parent's socket with the connection.  Both
 * writing to it would interleave their commands, so a connection made in
 * another process is dropped (closed here only, nothing sent) and the
 * child connects anew.
 *
 * TLS (rediss://, builds with hiredis_ssl): the pool holds one
 * hiredis_ssl context, made at open from the spec's tls_ files, and
 * every connection does its handshake on it right after the connect,
 * before AUTH.
 *
 * Time: a call of the store (a check, a cross-slot check, a batch) has
 * one deadline, its start plus the spec's timeout and connect_timeout
 * (tk__redis_deadline_begin()), kept per thread as the connections are:
 * every connect and command of the call, whichever node it is for, waits
 * at most what is left of it, so redirections, a reload of the script or
 * a connect mid-call cannot add up past it; when nothing is left a
 * command is not sent and answers -ETIMEDOUT.
 *
 * Failure: a command that times out or meets a reset leaves the context
 * dead (hiredis 0.14 cannot resume it), so it is discarded, and the next
 * call connects at once: one slow reply says nothing of the next.  Only
 * failing connects back off, 10 ms doubling to 1 s while they keep
 * failing; until then calls fail at once with the last error, so an
 * outage costs the caller no time once it is known, and a server back
 * is used within a second.
 *
 * Dead connections: the server closes idle clients (its timeout), and a
 * restart closes every client.  A connection is polled (no wait) before
 * a call reuses it: an EOF, a reset, or bytes no command asked for, and
 * the call connects anew before sending anything.  A close that comes
 * after the poll is known only by the command: one whose first write
 * failed with nothing written never reached the server and is sent once
 * more on a fresh connection, within the call's deadline; one that may
 * have reached it (a write that got some bytes out, a reply that never
 * came) is not, as the server may have run it.
 *
 * SIGPIPE: hiredis 0.14 writes without MSG_NOSIGNAL, so a write to a
 * connection the server has closed raises SIGPIPE, whose default action
 * kills the process.  Every write (a command, a flush, a read that may
 * flush, a TLS handshake) runs with SIGPIPE blocked in the calling
 * thread; a SIGPIPE it raised is consumed before the thread's mask is
 * restored, unless one was already pending (the application's, left to
 * it), and the write fails as on a reset connection.  The process's
 * disposition is never touched.
 */
#include "config.h"
#include "redis/conn.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#ifdef TK_HAVE_HIREDIS_SSL
#include <hiredis/hiredis_ssl.h>
#endif

#define BACKOFF_MIN (UINT64_C(10) * 1000000)   /* ns */
#define BACKOFF_MAX (UINT64_C(1000) * 1000000) /* ns */

struct tk__redis_conn {
	struct tk__redis_conn *next; /* the pool's list; set before push */
	tk_atomic_u32 in_use;	     /* claimed by a thread */
	const struct tk__redis_spec *spec;
	void *tls;	   /* the pool's hiredis_ssl context, or NULL */
	redisContext *ctx; /* NULL: not connected */
	pid_t pid;	   /* the process that made ctx */
	uint64_t retry_at; /* monotonic ns: no connect before */
	uint64_t backoff;  /* ns, 0 after a success */
	int last_err;	   /* what calls answer until retry_at */
	int up;		   /* counted in the store's open connections */
	int ever;	   /* connected before: the next is a reconnect */
	struct tk__redis_engine engine;
	char redirect[TK__REDIS_HOST_MAX + 8]; /* MOVED or ASK: HOST:PORT */
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timeval timeval_of(uint64_t ns)
{
	uint64_t us = (ns + 999) / 1000;
	struct timeval tv = { .tv_sec = (time_t)(us / 1000000),
			      .tv_usec = (suseconds_t)(us % 1000000) };

	return tv;
}

/* The deadline of this thread's call (monotonic ns), 0: none. */
static __thread uint64_t call_deadline;

uint64_t tk__redis_deadline_begin(const struct tk__redis_spec *spec)
{
	uint64_t was = call_deadline;

	if (!was)
		call_deadline =
			monotonic_ns() + spec->timeout + spec->connect_timeout;
	return was;
}

void tk__redis_deadline_end(uint64_t was)
{
	call_deadline = was;
	if (!was)
		tk__redis_cap_release();
}

/*
 * The time the next wait of the call may take, at most @cap ns: what is
 * left before the call's deadline or @deadline (0: none), whichever comes
 * first, and at least @floor.  0: nothing is left.
 */
static uint64_t time_left(uint64_t cap, uint64_t deadline, uint64_t floor)
{
	uint64_t now, left, end = deadline;

	if (call_deadline && (!end || call_deadline < end))
		end = call_deadline;
	if (!end)
		return cap;
	now = monotonic_ns();
	left = end > now ? end - now : 0;
	if (left < floor)
		left = floor;
	return left < cap ? left : cap;
}

uint64_t tk__redis_deadline_left(void)
{
	return time_left(UINT64_MAX, 0, 0);
}

/*
 * Before a read on @c: its socket's timeout cut to time_left() when that
 * is less than the spec's (then *@cut is set, for uncut()).  -ETIMEDOUT:
 * nothing is left, nothing is to be sent.
 */
static int cut_timeout(struct tk__redis_conn *c, uint64_t deadline,
		       uint64_t floor, int *cut)
{
	uint64_t left = time_left(c->spec->timeout, deadline, floor);

	*cut = 0;
	if (left == 0)
		return -ETIMEDOUT;
	if (left < c->spec->timeout) {
		redisSetTimeout(c->ctx, timeval_of(left));
		*cut = 1;
	}
	return 0;
}

static void uncut(struct tk__redis_conn *c, int cut)
{
	if (cut && c->ctx)
		redisSetTimeout(c->ctx, timeval_of(c->spec->timeout));
}

/* The errno of a failed context; @err_no is errno right after the call. */
static int io_error(const redisContext *ctx, int err_no, int connecting)
{
	if (!ctx)
		return -ENOMEM;
	/* No descriptor for the socket: hiredis reports it as an I/O
	 * error or, from its socket(2) loop, as another. */
	if (connecting && (err_no == EMFILE || err_no == ENFILE))
		return -EMFILE;
	switch (ctx->err) {
	case REDIS_ERR_IO:
		if (err_no == EAGAIN || err_no == EWOULDBLOCK ||
		    err_no == ETIMEDOUT || err_no == EINPROGRESS)
			return -ETIMEDOUT;
		if (err_no == ENOMEM)
			return -ENOMEM;
		if (connecting || err_no == ECONNREFUSED)
			return -ECONNREFUSED;
		return -ECONNRESET;
	case REDIS_ERR_EOF:
		return -ECONNRESET;
	case REDIS_ERR_OOM:
		return -ENOMEM;
	case REDIS_ERR_PROTOCOL:
		return -EPROTO;
	default:
		/* An unresolvable host, an address of no known family. */
		return connecting ? -ECONNREFUSED : -EPROTO;
	}
}

static int starts(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && memcmp(s, word, n) == 0;
}

/* "MOVED SLOT HOST:PORT": the target into @c->redirect. */
static int redirected(struct tk__redis_conn *c, const redisReply *r, int rc)
{
	const char *sp = memrchr(r->str, ' ', r->len);
	size_t n = sp ? r->len - (size_t)(sp + 1 - r->str) : 0;

	if (n == 0 || n >= sizeof(c->redirect))
		return -EPROTO;
	memcpy(c->redirect, sp + 1, n);
	c->redirect[n] = '\0';
	return rc;
}

/* Counts a failed connect or command by its errno. */
static void count_io(const struct tk__redis_conn *c, int rc)
{
	if (rc == -ETIMEDOUT)
		TK__REDIS_COUNT(c->spec, timeouts, 1);
	else if (rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -EMFILE)
		TK__REDIS_COUNT(c->spec, conn_errors, 1);
}

/* The errno of an error reply (the server's text stays out of it). */
static int mapped(struct tk__redis_conn *c, const redisReply *r)
{
	if (starts(r->str, r->len, "MOVED "))
		return redirected(c, r, TK__REDIS_MOVED);
	if (starts(r->str, r->len, "ASK "))
		return redirected(c, r, TK__REDIS_ASK);
	if (starts(r->str, r->len, "TRYAGAIN") ||
	    starts(r->str, r->len, "CLUSTERDOWN"))
		return -EAGAIN;
	if (starts(r->str, r->len, "NOSCRIPT") ||
	    starts(r->str, r->len, "ERR Function not found"))
		return -ENOENT;
	if (starts(r->str, r->len, "ERR unknown command") ||
	    starts(r->str, r->len, "ERR unknown subcommand"))
		return -ENOSYS;
	if (starts(r->str, r->len, "ERR Library") &&
	    memmem(r->str, r->len, "already exists", 14))
		return -EEXIST;
	if (starts(r->str, r->len, "OOM"))
		return -ENOMEM;
	if (starts(r->str, r->len, "READONLY"))
		return -EROFS;
	if (starts(r->str, r->len, "NOAUTH") ||
	    starts(r->str, r->len, "WRONGPASS") ||
	    starts(r->str, r->len, "NOPERM") ||
	    starts(r->str, r->len, "ERR invalid password") ||
	    /* Redis 7 answers a long command before AUTH so. */
	    starts(r->str, r->len, "ERR Protocol error: unauthenticated") ||
	    starts(r->str, r->len, "ERR AUTH"))
		return -EACCES;
	return -EPROTO;
}

/* The errno of an error reply (the server's text stays out of it),
 * counted: the answers by which the script is found and loaded are no
 * errors. */
static int reply_error(struct tk__redis_conn *c, const redisReply *r)
{
	int rc = mapped(c, r);

	if (rc == TK__REDIS_MOVED || rc == TK__REDIS_ASK)
		TK__REDIS_COUNT(c->spec, redirects, 1);
	else if (rc != -ENOENT && rc != -ENOSYS && rc != -EEXIST)
		TK__REDIS_COUNT(c->spec, error_replies, 1);
	return rc;
}

static void drop(struct tk__redis_conn *c)
{
	if (c->up)
		TK__REDIS_COUNT(c->spec, connections, (uint64_t)-1);
	c->up = 0;
	/* Closes the descriptor only: a child's close leaves the parent's
	 * connection up, as nothing is sent. */
	redisFree(c->ctx);
	c->ctx = NULL;
	memset(&c->engine, 0, sizeof(c->engine));
}

/*
 * A command failed: the connection is dropped, and the next call
 * connects at once (a backoff is for connects that fail).
 */
static int lost(struct tk__redis_conn *c, int rc)
{
	count_io(c, rc);
	drop(c);
	c->last_err = rc;
	return rc;
}

/* A connect failed: none until the backoff has passed, which doubles
 * while connects keep failing. */
static int failed(struct tk__redis_conn *c, int rc)
{
	c->backoff = c->backoff ? c->backoff * 2 : BACKOFF_MIN;
	if (c->backoff > BACKOFF_MAX)
		c->backoff = BACKOFF_MAX;
	c->retry_at = monotonic_ns() + c->backoff;
	c->last_err = rc;
	count_io(c, rc);
	return rc;
}

/* SIGPIPE blocked in this thread, around a write (see the top). */
struct nopipe {
	sigset_t old;
	int pending; /* one was pending before: it is not ours */
};

static void nopipe_begin(struct nopipe *g)
{
	sigset_t pipe, pending;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	g->pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

/* Consume the SIGPIPE the write raised, if any; errno is kept. */
static void nopipe_end(struct nopipe *g)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t pipe, pending;
	int saved = errno;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigemptyset(&pending);
	if (!g->pending && sigpending(&pending) == 0 &&
	    sigismember(&pending, SIGPIPE) == 1)
		while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	errno = saved;
}

/*
 * Write the queued command, then read its reply; *@unsent is set when the
 * first write failed, having written nothing.  REDIS_OK or REDIS_ERR.
 */
static int send_read(redisContext *ctx, redisReply **r, int *unsent)
{
	int done = 0, ok;

	errno = 0;
	ok = redisBufferWrite(ctx, &done) == REDIS_OK;
	*unsent = !ok;
	while (ok && !done) {
		errno = 0;
		ok = redisBufferWrite(ctx, &done) == REDIS_OK;
	}
	if (ok) {
		errno = 0;
		ok = redisGetReply(ctx, (void **)r) == REDIS_OK && *r;
	}
	return ok ? REDIS_OK : REDIS_ERR;
}

/*
 * One command on @c, nothing else queued; an I/O failure drops @c and
 * answers its errno, or TK__REDIS_UNSENT.
 */
static int raw_command(struct tk__redis_conn *c, int argc, const char **argv,
		       const size_t *lens, redisReply **out)
{
	struct nopipe g;
	redisReply *r = NULL;
	int cut, unsent = 0, ok, rc = cut_timeout(c, 0, 0, &cut);

	if (rc)
		return rc;
	errno = 0;
	if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK)
		return lost(c, io_error(c->ctx, errno, 0));
	nopipe_begin(&g);
	ok = send_read(c->ctx, &r, &unsent) == REDIS_OK;
	nopipe_end(&g);
	uncut(c, cut);
	if (!unsent)
		TK__REDIS_COUNT(c->spec, round_trips, 1);
	if (!ok) {
		rc = io_error(c->ctx, errno, 0);
		lost(c, rc);
		return unsent ? TK__REDIS_UNSENT : rc;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		rc = reply_error(c, r);
		freeReplyObject(r);
		return rc;
	}
	*out = r;
	return 0;
}

static int hello(struct tk__redis_conn *c)
{
	const struct tk__redis_spec *sp = c->spec;
	const char *argv[3];
	size_t lens[3];
	char db[24];
	redisReply *r;
	int argc = 0, rc = 0;

	if (sp->has_password) {
		argv[argc] = "AUTH";
		lens[argc++] = 4;
		if (sp->user[0]) {
			argv[argc] = sp->user;
			lens[argc++] = strlen(sp->user);
		}
		argv[argc] = sp->password;
		lens[argc++] = strlen(sp->password);
		rc = raw_command(c, argc, argv, lens, &r);
		if (rc == TK__REDIS_UNSENT)
			rc = -ECONNRESET;
		if (rc == -EPROTO)
			rc = -EACCES; /* AUTH has no other error */
		if (rc == 0)
			freeReplyObject(r);
	}
	if (rc == 0 && sp->db) {
		snprintf(db, sizeof(db), "%ld", sp->db);
		argv[0] = "SELECT";
		lens[0] = 6;
		argv[1] = db;
		lens[1] = strlen(db);
		rc = raw_command(c, 2, argv, lens, &r);
		if (rc == TK__REDIS_UNSENT)
			rc = -ECONNRESET;
		else if (rc == -EPROTO)
			rc = -ENXIO; /* out of range, or a cluster node */
		if (rc == 0)
			freeReplyObject(r);
	}
	return rc;
}

static int connect_now(struct tk__redis_conn *c)
{
	const struct tk__redis_spec *sp = c->spec;
	uint64_t left = time_left(sp->connect_timeout, 0, 0);
	struct timeval tv = timeval_of(left);
	int rc;

	if (c->retry_at && monotonic_ns() < c->retry_at)
		return c->last_err;
	if (left == 0)
		return -ETIMEDOUT; /* the call's time is spent */
	errno = 0;
	c->ctx = sp->unix_socket
			 ? redisConnectUnixWithTimeout(sp->path, tv)
			 : redisConnectWithTimeout(sp->host, sp->port, tv);
	c->pid = getpid();
	if (!c->ctx || c->ctx->err) {
		rc = io_error(c->ctx, errno, 1);
		if (c->ctx)
			drop(c);
		return failed(c, rc);
	}
	if (redisSetTimeout(c->ctx, timeval_of(sp->timeout)) != REDIS_OK) {
		drop(c);
		return failed(c, -ECONNRESET);
	}
#ifdef TK_HAVE_HIREDIS_SSL
	/* A handshake that fails (a certificate not trusted, a server
	 * without TLS) is a reply the library cannot use. */
	if (c->tls) {
		struct nopipe g;
		int cut;

		rc = cut_timeout(c, 0, 0, &cut);
		nopipe_begin(&g);
		if (rc == 0 &&
		    redisInitiateSSLWithContext(c->ctx, c->tls) != REDIS_OK)
			rc = -EPROTO;
		nopipe_end(&g);
		uncut(c, cut);
		if (rc) {
			drop(c);
			return failed(c, rc);
		}
	}
#endif
	rc = hello(c);
	if (rc) {
		if (c->ctx)
			drop(c);
		return failed(c, rc);
	}
	c->backoff = 0;
	c->retry_at = 0;
	c->up = 1;
	TK__REDIS_COUNT(c->spec, connects, 1);
	TK__REDIS_COUNT(c->spec, connections, 1);
	if (c->ever)
		TK__REDIS_COUNT(c->spec, reconnects, 1);
	c->ever = 1;
	return 0;
}

/* A thread's exit gives its connection back to the pool (and the end
 * of a call, under max_connections=: cap.c). */
void tk__redis_conn_give_back(void *arg)
{
	struct tk__redis_conn *c = arg;

	tk_atomic_store_u32(&c->in_use, 0, TK_MO_RELEASE);
}

#ifdef TK_HAVE_HIREDIS_SSL
static void init_openssl(void)
{
	redisInitOpenSSL();
}

static int tls_context(struct tk__redis_pool *pool, char *why, size_t why_len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const struct tk__redis_spec *sp = pool->spec;
	redisSSLContextError err = REDIS_SSL_CTX_NONE;
	/* SNI for a host name; an address has none. */
	int named = strspn(sp->host, "0123456789.:") != strlen(sp->host);

	pthread_once(&once, init_openssl);
	pool->tls =
		redisCreateSSLContext(sp->tls_ca[0] ? sp->tls_ca : NULL, NULL,
				      sp->tls_cert[0] ? sp->tls_cert : NULL,
				      sp->tls_key[0] ? sp->tls_key : NULL,
				      named ? sp->host : NULL, &err);
	if (pool->tls)
		return 0;
	if (why_len)
		snprintf(why, why_len, "TLS: %s", redisSSLContextGetError(err));
	return err == REDIS_SSL_CTX_CREATE_FAILED ? -ENOMEM : -EINVAL;
}
#endif

int tk__redis_pool_init(struct tk__redis_pool *pool,
			const struct tk__redis_spec *spec, char *why,
			size_t why_len)
{
	pool->spec = spec;
	pool->tls = NULL;
	pool->made = 0;
	tk_atomic_store_ptr(&pool->all, NULL, TK_MO_RELAXED);
#ifdef TK_HAVE_HIREDIS_SSL
	if (spec->tls) {
		int rc = tls_context(pool, why, why_len);

		if (rc)
			return rc;
	}
#else
	(void)why;
	(void)why_len;
#endif
	if (tk__redis_cap_init(pool) ||
	    pthread_key_create(&pool->key, tk__redis_conn_give_back)) {
		tk__redis_cap_destroy(pool);
#ifdef TK_HAVE_HIREDIS_SSL
		if (pool->tls)
			redisFreeSSLContext(pool->tls);
#endif
		return -ENOMEM;
	}
	return 0;
}

void tk__redis_pool_destroy(struct tk__redis_pool *pool)
{
	struct tk__redis_conn *c, *next;

	pthread_key_delete(pool->key);
	tk__redis_cap_destroy(pool);
	for (c = tk_atomic_load_ptr(&pool->all, TK_MO_ACQUIRE); c; c = next) {
		next = c->next;
		if (c->ctx)
			redisFree(c->ctx);
		free(c);
	}
#ifdef TK_HAVE_HIREDIS_SSL
	if (pool->tls)
		redisFreeSSLContext(pool->tls);
#endif
}

struct tk__redis_conn *tk__redis_conn_claim(struct tk__redis_pool *pool,
					    int create)
{
	struct tk__redis_conn *c;
	void *head;
	uint32_t free_ = 0;

	/* acquire: pairs with the release push below, for c->next. */
	for (c = tk_atomic_load_ptr(&pool->all, TK_MO_ACQUIRE); c;
	     c = c->next) {
		free_ = 0;
		/* acquire: pairs with give_back(): the last owner is done. */
		if (tk_atomic_cas_u32(&c->in_use, &free_, 1, TK_MO_ACQUIRE))
			return c;
	}
	c = create ? calloc(1, sizeof(*c)) : NULL;
	if (!c)
		return NULL;
	c->spec = pool->spec;
	c->tls = pool->tls;
	tk_atomic_store_u32(&c->in_use, 1, TK_MO_RELAXED);
	head = tk_atomic_load_ptr(&pool->all, TK_MO_RELAXED);
	do
		c->next = head;
	/* release: c's fields; pairs with the acquire walk above. */
	while (!tk_atomic_cas_ptr(&pool->all, &head, c, TK_MO_RELEASE));
	return c;
}

/*
 * Has the server closed @c, or sent what no command asked for?  Between
 * calls nothing is due, so any byte, an EOF or a reset makes @c unusable.
 * Under TLS bytes may be the protocol's own (a session ticket): only a
 * hangup counts there.
 */
static int closed(const struct tk__redis_conn *c)
{
	struct pollfd p = { .fd = c->ctx->fd, .events = POLLIN };

#ifdef POLLRDHUP
	p.events |= POLLRDHUP;
#endif
	if (c->tls)
		p.events &= (short)~POLLIN;
	while (poll(&p, 1, 0) < 0)
		if (errno != EINTR)
			return 0;
	return p.revents != 0;
}

int tk__redis_conn_get(struct tk__redis_pool *pool, struct tk__redis_conn **out)
{
	struct tk__redis_conn *c = NULL;
	int rc;

	if (pool->spec->max_connections) {
		rc = tk__redis_cap_take(pool, &c);
		if (rc)
			return rc;
	} else if (!(c = pthread_getspecific(pool->key))) {
		c = tk__redis_conn_claim(pool, 1);
		if (!c)
			return -ENOMEM;
		if (pthread_setspecific(pool->key, c)) {
			tk__redis_conn_give_back(c);
			return -ENOMEM;
		}
	}
	if (c->ctx && (c->pid != getpid() || closed(c)))
		drop(c);
	*out = c;
	return c->ctx ? 0 : connect_now(c);
}

int tk__redis_command(struct tk__redis_conn *c, int argc, const char **argv,
		      const size_t *lens, void **reply)
{
	struct tk__redis_engine e;
	redisReply *r = NULL;
	int rc;

	if (!c->ctx)
		return c->last_err ? c->last_err : -ECONNRESET;
	rc = raw_command(c, argc, argv, lens, &r);
	if (rc == TK__REDIS_UNSENT) {
		/* Never sent: once more, on a fresh connection.  @argv may
		 * name the engine's SHA-1, which a reconnect clears: kept
		 * (a server without the script answers -ENOENT, as ever). */
		e = c->engine;
		rc = connect_now(c);
		if (rc == 0) {
			c->engine = e;
			rc = raw_command(c, argc, argv, lens, &r);
		}
		if (rc == TK__REDIS_UNSENT)
			rc = c->last_err;
	}
	if (rc == 0)
		*reply = r;
	return rc;
}

/*
 * Pipelining (pipeline.c): commands are queued by append, sent
 * together by flush, and their replies read in order by next_reply.  A
 * failure drops the connection as a command's does; every reply still
 * expected then answers the same error.
 */
static int pipe_failed(struct tk__redis_conn *c)
{
	return lost(c, io_error(c->ctx, errno, 0));
}

int tk__redis_append(struct tk__redis_conn *c, int argc, const char **argv,
		     const size_t *lens)
{
	if (!c->ctx)
		return c->last_err ? c->last_err : -ECONNRESET;
	errno = 0;
	if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK)
		return pipe_failed(c);
	return 0;
}

int tk__redis_flush_unsent(struct tk__redis_conn *c, int *unsent)
{
	struct nopipe g;
	int done = 0, ok;

	*unsent = 0;
	if (!c->ctx)
		return c->last_err ? c->last_err : -ECONNRESET;
	nopipe_begin(&g);
	errno = 0;
	ok = redisBufferWrite(c->ctx, &done) == REDIS_OK;
	*unsent = !ok;
	while (ok && !done) {
		errno = 0;
		ok = redisBufferWrite(c->ctx, &done) == REDIS_OK;
	}
	nopipe_end(&g);
	if (!*unsent)
		TK__REDIS_COUNT(c->spec, round_trips, 1);
	return ok ? 0 : pipe_failed(c);
}

int tk__redis_flush(struct tk__redis_conn *c)
{
	int unsent;

	return tk__redis_flush_unsent(c, &unsent);
}

int tk__redis_next_reply(struct tk__redis_conn *c, uint64_t deadline,
			 void **reply)
{
	redisReply *r = NULL;
	struct nopipe g;
	int rc, cut, ok;

	if (!c->ctx)
		return c->last_err ? c->last_err : -ECONNRESET;
	/* At least 1 ms: what has come is read. */
	cut_timeout(c, deadline, UINT64_C(1000000), &cut);
	/* A read flushes what is still queued first. */
	nopipe_begin(&g);
	errno = 0;
	ok = redisGetReply(c->ctx, (void **)&r) == REDIS_OK && r;
	nopipe_end(&g);
	if (!ok)
		return pipe_failed(c);
	uncut(c, cut);
	if (r->type == REDIS_REPLY_ERROR) {
		rc = reply_error(c, r);
		freeReplyObject(r);
		return rc;
	}
	*reply = r;
	return 0;
}

void tk__redis_reply_free(void *reply)
{
	freeReplyObject(reply);
}

const char *tk__redis_conn_redirect(struct tk__redis_conn *c)
{
	return c->redirect;
}

struct tk__redis_engine *tk__redis_conn_engine(struct tk__redis_conn *c)
{
	return &c->engine;
}

const struct tk__redis_spec *tk__redis_conn_spec(struct tk__redis_conn *c)
{
	return c->spec;
}
