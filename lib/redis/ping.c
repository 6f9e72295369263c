/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ping.c - tk_store_ping() on the Redis store: the server's address,
 * version, engine and eviction policy, and one round trip timed.  A cluster
 * answers for the master of slot 0.
 */
#include "store/store-ops.h"
#include "redis/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

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
 * The server's maxmemory-policy into @out, or "" where the server will
 * not say: an ACL without +config (-EACCES), CONFIG renamed away
 * (-ENOSYS), or another error reply (-EPROTO).  Those are what the
 * caller reports as "could not check"; a lost connection fails the ping.
 */
static int eviction_policy(struct tk__redis_conn *c, char *out, size_t len)
{
	const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
	size_t lens[3] = { 6, 3, 16 };
	const redisReply *v;
	redisReply *r;
	int rc;

	out[0] = '\0';
	rc = tk__redis_command(c, 3, argv, lens, (void **)&r);
	if (rc == -EACCES || rc == -ENOSYS || rc == -EPROTO)
		return 0;
	if (rc)
		return rc;
	/* RESP2: [name, value]. */
	v = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]
							     : NULL;
	if (v && v->type == REDIS_REPLY_STRING && v->len < len) {
		memcpy(out, v->str, v->len);
		out[v->len] = '\0';
	}
	tk__redis_reply_free(r);
	return 0;
}

/*
 * The engine (loading the check script as a first check would), one
 * PING timed, INFO server for the version, then the eviction policy.
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
	/* An administrator's preload: both libraries (fast.c). */
	if (e->kind == TK__ENGINE_UNKNOWN) {
		rc = tk__redis_function_load(s, c);
		if (rc == 0 && e->kind == TK__ENGINE_FUNCTION)
			rc = tk__redis_fast_load(s, c);
	}
	if (rc && rc != TK__REDIS_SLOW)
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
	if (rc == 0)
		rc = eviction_policy(c, out->maxmemory_policy,
				     sizeof(out->maxmemory_policy));
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

int tk__redis_ping(struct tk_store *base, struct tk_store_ping *out)
{
	return tk__redis_route((struct tk__redis_store *)base, 0, ping_on, out);
}
