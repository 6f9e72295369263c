/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine.c - how a connection's server runs the check script, and
 * calling it there.
 *
 * A server with Functions (Redis 7) gets the script as a library of its
 * own name, by FUNCTION LOAD, and runs it by FCALL; an older one by
 * SCRIPT LOAD and EVALSHA.
 *
 * - Each connection's first check calls FCALL at once: a library loaded
 *   once serves every client, and a user its ACL forbids FUNCTION LOAD
 *   (least privilege) runs what an administrator loaded.
 * - "Function not found" (a restart, a failover, FUNCTION FLUSH, no one
 *   loaded it yet) loads the library, then calls again.
 * - FCALL unknown (before Redis 7): SCRIPT LOAD, then EVALSHA, loaded
 *   again after NOSCRIPT.
 * - What a connection learnt is reset when it reconnects: it may be to
 *   another server after a failover.
 *
 * A sliding log of one key is checked by fast.lua, a second library
 * (FCALL only), called and loaded the same way; where it cannot be
 * (no Functions, its FUNCTION LOAD refused), or where it answers that
 * the state is not one it reads, check.lua decides.
 */
#include "hash/siphash.h"
#include "redis/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

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
int tk__redis_function_load(struct tk__redis_store *s, struct tk__redis_conn *c)
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
	/* Refused (-EACCES): another user may load it; call first again. */
	else if (e->kind == TK__ENGINE_LOAD)
		e->kind = TK__ENGINE_UNKNOWN;
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

	if (e->kind == TK__ENGINE_LOAD)
		rc = tk__redis_function_load(s, c);
	else if (e->kind == TK__ENGINE_EVALSHA && !e->sha[0])
		rc = load_script(c);
	if (rc)
		return rc;
	if (e->kind == TK__ENGINE_EVALSHA) {
		call->argv[0] = "EVALSHA";
		call->argv[1] = e->sha;
	} else {
		call->argv[0] = "FCALL";
		call->argv[1] = s->function;
	}
	call->lens[0] = strlen(call->argv[0]);
	call->lens[1] = strlen(call->argv[1]);
	return 0;
}

int tk__redis_script_lost(struct tk__redis_conn *c, int rc)
{
	struct tk__redis_engine *e = tk__redis_conn_engine(c);

	if (rc == -ENOSYS && e->kind != TK__ENGINE_EVALSHA)
		e->kind = TK__ENGINE_EVALSHA; /* FCALL unknown: no Functions */
	else if (rc != -ENOENT)
		return 0;
	else if (e->kind != TK__ENGINE_EVALSHA)
		e->kind = TK__ENGINE_LOAD;
	e->sha[0] = '\0';
	return 1;
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
		if (rc == 0) {
			rc = tk__redis_reply_expand((void **)r);
			if (rc) {
				tk__redis_reply_free(*r);
				*r = NULL;
			}
			return rc;
		}
		if (!tk__redis_script_lost(c, rc))
			return rc;
	}
	return -EPROTO;
}

/*
 * A Functions library of the first @len bytes of @lua, named by a hash
 * of all of it, its function @fn (a local of @lua) registered as
 * "tk_@prefix_<hash>" into @name; a malloc()ed text.
 */
static char *library(const char *lua, size_t len, const char *prefix,
		     const char *fn, char *name, size_t name_len)
{
	static const uint64_t key[2] = { 0x7468726f74746c65, 0x6b6974 };
	static const char head[] = "#!lua name=throttlekit%s_%016llx\n";
	static const char tail[] = "redis.register_function('%s', %s)\n";
	uint64_t h = tk__siphash(key, lua, strlen(lua));
	char *text;
	int n;

	snprintf(name, name_len, "tk_%s_%016llx", prefix,
		 (unsigned long long)h);
	text = malloc(sizeof(head) + 24 + len + sizeof(tail) + name_len +
		      strlen(fn));
	if (!text)
		return NULL;
	/* check.lua's library keeps the name of earlier versions. */
	n = sprintf(text, head, strcmp(prefix, "check") ? "_fast" : "",
		    (unsigned long long)h);
	memcpy(text + n, lua, len);
	sprintf(text + n + len, tail, name, fn);
	return text;
}

int tk__redis_library_make(struct tk__redis_store *s)
{
	size_t len = strlen(tk__redis_check_lua);

	/* Without the tail EVALSHA's script ends with. */
	s->library = library(tk__redis_check_lua,
			     len - (sizeof(TK__REDIS_EVAL_TAIL) - 1), "check",
			     "check", s->function, sizeof(s->function));
	s->fast_library =
		library(tk__redis_fast_lua, strlen(tk__redis_fast_lua), "fast",
			"fast", s->fast_function, sizeof(s->fast_function));
	if (!s->library || !s->fast_library) {
		free(s->library);
		free(s->fast_library);
		s->library = s->fast_library = NULL;
		return -ENOMEM;
	}
	return 0;
}
