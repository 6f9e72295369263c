/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * occ.c - checks of user strategies (tk_strategy_register()) on the
 * Redis store, which has no script for them: optimistic concurrency.
 *
 * - One try: WATCH the keys and MGET their states (one pipeline), run the
 *   limiter's transition here, then MULTI, one SET ... PX per state it
 *   writes, EXEC (one pipeline): two round trips.  EXEC answers nil when a
 * watched key changed after the WATCH: the try lost a race and nothing was
 * written; the next try reads again.  A transition that writes nothing (a
 * denial, an error) ends with UNWATCH, so that the connection carries no watch
 * into the next command.
 * - At most TRIES tries, then -EAGAIN: a key so contended that every try
 *   lost (each lost try means another client's write landed, so the
 *   system as a whole progresses).  A lost try pauses a random while,
 *   growing with the losses, before the next: clients that lost together
 *   would otherwise meet again at once, and one could lose every time.
 * - The keys of one check share a hash tag (keys.c), so they are in one
 *   slot of a cluster; a group of several keys of several slots is
 *   -ENOTSUP, and so is a slot being migrated (ASK): a transaction cannot
 *   follow it.
 * - A state is spelled "8:W0:W1:...", the algorithm's id (TK__ALG_USER),
 *   then its words in decimal, as the script spells the built-in ones
 *   (scripts.c); its TTL is the state's expiry (its second word) less the
 *   check's time, plus the store's grace, as the script's.
 * - A composite (or a group) may hold any built-in algorithm beside
 *   strategies: its state is written as the script spells it, with the
 *   script's TTL, so that the script reads it as its own in any policy
 *   that shares the dimension's key, and the transaction reads what the
 *   script wrote through the decoder every script reply goes through
 *   (scripts.c).  GCRA, token bucket and leaky: "ID:WORD", the text the
 *   script still reads.  Sliding logs: "5:L:T1:...:Tn", the n stamps of
 *   word 0; sliding windows: "4:S:w:T0:N0:...:TS:NS", the ring word for
 *   word; both are the algorithm's next state as the memory store keeps
 *   it, which the script's transition reads as it reads its own (the
 *   differential tests hold the two transitions equal).  Fixed windows
 *   and quotas: "ID:POLICY:START:END:COUNT", which the script builds from
 *   the text it read rather than from the words (a packed window keeps no
 *   start), so the transaction builds it the same way.
 * - With server_time=1 the check decides at the server's TIME, read first
 *   on the same connection.
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "redis/store.h"
#include "status.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define TRIES 64
#define PAUSE_MAX_NS 2000000 /* the longest pause after a lost try */
/* Bytes of a window's spelled state (spell_window()): five numbers. */
#define WINDOW_SPELL_MAX (5 * 21)

/* A built-in algorithm whose state the transaction can write as the
 * script spells it, "ID:WORD" (check.lua, one_word()). */
static int one_word(const struct tk__policy *p)
{
	return p->alg == &tk__gcra || p->alg == &tk__token_bucket ||
	       p->alg == &tk__leaky;
}

/* A window of the script's, "ID:POLICY:START:END:COUNT" (window()). */
static int windowed(const struct tk__policy *p)
{
	return p->alg == &tk__fixed_window || p->alg == &tk__quota;
}

/* A sliding log or window, spelled from its words (log(), sliding()). */
static int sliding(const struct tk__policy *p)
{
	return p->alg == &tk__sliding_log || p->alg == &tk__sliding_window;
}

int tk__redis_occ_route(const struct tk__policy *const *pol, size_t n)
{
	size_t i, user = 0, along = 0;

	for (i = 0; i < n; i++) {
		if (!pol[i])
			return -ENOTSUP;
		user += tk__redis_occ(pol[i]) != 0;
		along +=
			one_word(pol[i]) || windowed(pol[i]) || sliding(pol[i]);
	}
	for (i = 0; !user && i < n; i++)
		if (!tk__redis_supported(pol[i]))
			return -ENOTSUP;
	if (!user)
		return 0;
	return user + along == n ? TK__REDIS_OCC : -ENOTSUP;
}

/* Bytes spell() may write for a state of @p: a head of at most three
 * numbers, then ":" and up to 20 digits per word, and the NUL. */
static size_t spell_size(const struct tk__policy *p)
{
	return 3 * 21 + 21 * (size_t)p->state_words + 1;
}

/*
 * @p's state @w as the script spells it: "ID:W0:W1:..." (a strategy's, a
 * one-word state), "5:L:T1:...:Tn" (a log: the n stamps after word 0),
 * "4:S:w:T0:N0:...:TS:NS" (a ring: every word).
 */
static size_t spell(const struct tk__policy *p, const uint64_t *w, char *buf)
{
	size_t n, i = 0, end = p->state_words;

	if (p->alg == &tk__sliding_log) {
		n = (size_t)sprintf(buf, "%u:%llu", p->alg->id,
				    (unsigned long long)p->limit);
		i = 1;
		end = 1 + (w[0] < end ? w[0] : end - 1);
	} else if (p->alg == &tk__sliding_window) {
		n = (size_t)sprintf(buf, "%u:%u:%llu", p->alg->id,
				    (unsigned int)p->u.sliding.buckets,
				    (unsigned long long)p->u.sliding.width);
	} else {
		n = (size_t)sprintf(buf, "%u", p->alg->id);
	}
	for (; i < end; i++)
		n += (size_t)sprintf(buf + n, ":%llu",
				     (unsigned long long)w[i]);
	return n;
}

/*
 * A window's state after @cost units at @now, as the script writes it
 * from @old (NULL: none): now's window, or the state's if that is later
 * (the clock stepped back), its count if it is that window's, plus the
 * cost; the window's end into *@stop, as the script's TTL counts from it.
 */
static int spell_window(const struct tk__policy *p, const char *old,
			uint64_t now, uint64_t cost, char *buf, uint64_t *stop)
{
	uint64_t f[5] = { 0 }, policy, start, count = 0;
	char args[7][24];
	const char *at = old;
	size_t n, len;

	if (tk__redis_check_args(p, now, cost, args) ||
	    tk__redis_parse_u64(args[0], strlen(args[0]), &policy) ||
	    tk__redis_parse_u64(args[1], strlen(args[1]), &start) ||
	    tk__redis_parse_u64(args[2], strlen(args[2]), stop))
		return -EPROTO;
	for (n = 0; old && n < 5; n++) {
		len = strcspn(at, ":");
		if (tk__redis_parse_u64(at, len, &f[n]))
			return -EPROTO;
		at += len + (at[len] == ':');
	}
	if (old && f[2] > start) {
		start = f[2];
		*stop = f[3];
	}
	if (old && f[2] == start)
		count = f[4];
	sprintf(buf, "%u:%llu:%llu:%llu:%llu", p->alg->id,
		(unsigned long long)policy, (unsigned long long)start,
		(unsigned long long)*stop, (unsigned long long)(count + cost));
	return 0;
}

/* Milliseconds until @exp (ns) and the grace after it, from @now, as
 * the script counts them: whole ones, plus one. */
static void px_of(const struct tk__redis_store *s, uint64_t now, uint64_t exp,
		  char *buf)
{
	uint64_t grace = 0, ns;

	tk__redis_parse_u64(s->grace, strlen(s->grace), &grace);
	ns = (exp > now ? exp - now : 0) + grace;
	snprintf(buf, 24, "%llu", (unsigned long long)(ns / 1000000 + 1));
}

/* @argc words of @argv (lengths @lens) on @c: its reply checked for
 * @type, then freed.  0 or an errno. */
static int simple(struct tk__redis_conn *c, int argc, const char **argv,
		  const size_t *lens)
{
	redisReply *r;
	int rc = tk__redis_command(c, argc, argv, lens, (void **)&r);

	if (rc == 0)
		tk__redis_reply_free(r);
	return rc;
}

static int unwatch(struct tk__redis_conn *c)
{
	const char *argv[1] = { "UNWATCH" };
	size_t lens[1] = { 7 };

	return simple(c, 1, argv, lens);
}

/* The states of a window's keys as the server spelled them (NULL: none),
 * which the script's spelling of the next one starts from. */
struct spelt {
	char s[TK__MULTI_MAX][128];
	const char *at[TK__MULTI_MAX];
};

/* WATCH and MGET of @q's keys in one pipeline, the states into @b (and
 * windows' into @sp). */
static int read_states(struct tk__redis_conn *c, const struct tk__redis_req *q,
		       struct tk__redis_bufs *b, struct spelt *sp)
{
	const char *argv[1 + TK__MULTI_MAX];
	size_t lens[1 + TK__MULTI_MAX], i;
	redisReply *r[2] = { NULL, NULL };
	int rc, got, k, flushed;

	for (i = 0; i < q->n; i++) {
		argv[1 + i] = q->key[i];
		lens[1 + i] = q->klen[i];
	}
	argv[0] = "WATCH";
	lens[0] = 5;
	rc = tk__redis_append(c, (int)(1 + q->n), argv, lens);
	argv[0] = "MGET";
	lens[0] = 4;
	if (rc == 0)
		rc = tk__redis_append(c, (int)(1 + q->n), argv, lens);
	if (rc == 0)
		rc = tk__redis_flush(c);
	/* Both replies are read, so that the connection stays in step. */
	for (k = 0, flushed = rc == 0; flushed && k < 2; k++) {
		got = tk__redis_next_reply(c, 0, (void **)&r[k]);
		rc = rc ? rc : got;
	}
	if (rc == 0 &&
	    (r[1]->type != REDIS_REPLY_ARRAY || r[1]->elements != q->n))
		rc = -EPROTO;
	for (i = 0; rc == 0 && i < q->n; i++) {
		rc = tk__redis_take_old(b, q, i, r[1]->element[i]);
		sp->at[i] = NULL;
		if (rc == 0 && b->old[i] && windowed(q->pol[i])) {
			if (r[1]->element[i]->len >= sizeof(sp->s[i]))
				rc = -EPROTO;
			else
				sp->at[i] =
					memcpy(sp->s[i], r[1]->element[i]->str,
					       r[1]->element[i]->len + 1);
		}
	}
	for (k = 0; k < 2; k++)
		if (r[k])
			tk__redis_reply_free(r[k]);
	return rc;
}

/* Queue SET KEY VALUE PX MS of state @i of @q, spelled into @val. */
static int queue_set(struct tk__redis_store *s, struct tk__redis_conn *c,
		     const struct tk__redis_req *q,
		     const struct tk__redis_bufs *b, const struct spelt *sp,
		     size_t i, char *val)
{
	const struct tk__policy *p = q->pol[i];
	const char *argv[5] = { "SET", q->key[i], val, "PX", NULL };
	size_t lens[5] = { 3, q->klen[i], 0, 2, 0 };
	char px[24];
	uint64_t exp = 0;
	int rc = 0;

	if (windowed(p)) {
		rc = spell_window(p, sp->at[i], q->now, q->cost, val, &exp);
		lens[2] = strlen(val);
	} else {
		lens[2] = spell(p, b->next[i], val);
		exp = p->alg->expires(p, b->next[i]);
	}
	px_of(s, q->now, exp, px);
	argv[4] = px;
	lens[4] = strlen(px);
	return rc ? rc : tk__redis_append(c, 5, argv, lens);
}

/* Room for every state @persist marks, spelled: one block. */
static char *spell_room(const struct tk__redis_req *q, const int *persist,
			size_t *at)
{
	size_t i, total = 0;

	for (i = 0; i < q->n; i++) {
		at[i] = total;
		if (persist[i])
			total += windowed(q->pol[i]) ? WINDOW_SPELL_MAX
						     : spell_size(q->pol[i]);
	}
	return malloc(total ? total : 1);
}

/*
 * MULTI, a SET of each state @persist marks, EXEC, in one pipeline.  0,
 * TK__REDIS_LOST (EXEC nil: a watched key changed), or an errno.
 */
static int write_states(struct tk__redis_store *s, struct tk__redis_conn *c,
			const struct tk__redis_req *q,
			const struct tk__redis_bufs *b, const struct spelt *sp,
			const int *persist)
{
	const char *multi[1] = { "MULTI" }, *exec[1] = { "EXEC" };
	size_t mlen[1] = { 5 }, elen[1] = { 4 }, at[TK__MULTI_MAX], i;
	char *val = spell_room(q, persist, at);
	int rc, got, sent = 0, k, flushed;
	redisReply *r = NULL;

	/* Nothing sent: the watch ends here, as after a denial. */
	if (!val) {
		(void)unwatch(c);
		return -ENOMEM;
	}
	rc = tk__redis_append(c, 1, multi, mlen);
	for (i = 0; rc == 0 && i < q->n; i++) {
		if (!persist[i])
			continue;
		rc = queue_set(s, c, q, b, sp, i, val + at[i]);
		sent++;
	}
	free(val);
	if (rc == 0)
		rc = tk__redis_append(c, 1, exec, elen);
	if (rc == 0)
		rc = tk__redis_flush(c);
	/* Every reply is read, so that the connection stays in step: OK,
	 * QUEUED for each SET, then EXEC's. */
	for (k = 0, flushed = rc == 0; flushed && k < sent + 2; k++) {
		r = NULL;
		got = tk__redis_next_reply(c, 0, (void **)&r);
		rc = rc ? rc : got;
		if (r && k < sent + 1)
			tk__redis_reply_free(r);
	}
	if (rc == 0)
		rc = r->type == REDIS_REPLY_NIL	    ? TK__REDIS_LOST
		     : r->type == REDIS_REPLY_ARRAY ? 0
						    : -EPROTO;
	/* A SET that failed as it ran (queued ones fail EXEC itself). */
	for (k = 0; rc == 0 && k < (int)r->elements; k++)
		if (r->element[k]->type == REDIS_REPLY_ERROR)
			rc = strncmp(r->element[k]->str, "OOM", 3) == 0
				     ? -ENOMEM
				     : -EPROTO;
	if (r && flushed)
		tk__redis_reply_free(r);
	return rc;
}

/* One try: the transition's result, TK__REDIS_LOST, or an errno. */
static int attempt(struct tk__redis_store *s, struct tk__redis_conn *c,
		   struct tk__redis_req *q)
{
	int persist[TK__MULTI_MAX], rc, lost;
	struct tk__redis_bufs b;
	size_t i, writes = 0;
	struct spelt sp;

	rc = tk__redis_bufs_init(&b, q);
	if (rc)
		return rc;
	rc = read_states(c, q, &b, &sp);
	if (rc == 0)
		rc = tk__redis_transition(q, b.old, b.next, persist);
	for (i = 0; rc >= 0 && i < q->n; i++)
		writes += persist[i] != 0;
	if (rc >= 0 && writes) {
		lost = write_states(s, c, q, &b, &sp, persist);
		rc = lost ? lost : rc;
	} else if (rc >= 0 || rc == -EPROTO || rc == -ERANGE) {
		/* Nothing to write, on a connection still in step: the
		 * watch ends here (a broken one took it along). */
		lost = unwatch(c);
		rc = rc < 0 ? rc : lost ? lost : rc;
	}
	free(b.heap);
	return rc;
}

/*
 * After lost try @k: a pause of up to 25 us << k (at most 2 ms), drawn at
 * random, so that the clients that lost together do not meet again at
 * once.  The store's timeout bounds the whole check all the same.
 */
static void pause_after(int k)
{
	static __thread uint64_t x;
	uint64_t span = UINT64_C(25000) << (k < 7 ? k : 7);
	struct timespec ts = { 0, 0 };

	if (x == 0)
		x = (uint64_t)(uintptr_t)&x ^ (uint64_t)time(NULL) ^
		    ((uint64_t)getpid() << 32 | 1);
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	span = span < PAUSE_MAX_NS ? span : PAUSE_MAX_NS;
	ts.tv_nsec = (long)(x % span);
	nanosleep(&ts, NULL);
}

int tk__redis_occ_check(struct tk__redis_store *s, struct tk__redis_conn *c,
			struct tk__redis_req *q, int asking, uint32_t flags)
{
	int rc = 0, tries;

	if (asking)
		return -EAGAIN; /* a slot on the move: no transaction */
	if (s->spec.server_time) {
		rc = tk__redis_server_now(c, &q->now);
		if (rc)
			return rc;
		tk__redis_learn(s, q->now, q->local);
		*q->decide_at = q->now;
	}
	for (tries = 0; tries < TRIES; tries++) {
		rc = attempt(s, c, q);
		if (rc != TK__REDIS_LOST)
			break;
		pause_after(tries);
	}
	if (rc == TK__REDIS_LOST)
		return -EAGAIN;

	if (rc >= 0 && q->stats && (flags & TK__T_CHECK)) {
		tk_atomic_add_u64(&q->stats->checks, 1, TK_MO_RELAXED);
		if (rc != TK__PERSIST)
			tk_atomic_add_u64(&q->stats->denies, 1, TK_MO_RELAXED);
	}
	return rc;
}
