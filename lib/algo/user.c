/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user.c - strategies written by the application (tk_strategy_register()),
 * run as one more algorithm, tk__user, so that every store runs them as
 * it runs the built-in ones.
 *
 * - The registry is a list that only grows, behind one mutex: it is read
 *   when a policy is parsed, never by a check, and a policy keeps a
 *   pointer to its entry, which lives as long as the process.
 * - A state is [identity][expiry][the strategy's bytes, in whole words]:
 *   the identity (a hash of name and state size, never 0) tells one
 *   strategy's states from another's wherever the key's tag alone would
 *   not (a zone's slot records TK__ALG_USER & 7, that is 0, in its three
 *   algorithm bits, the same for every strategy); the expiry (ns) makes a
 *   state past its TTL read as no state on every store, whether or not the
 *   store has removed it yet, since a strategy, unlike the built-in
 *   algorithms, may not be idempotent over stale state.
 * - The tag (store-key.h) carries the identity too, so that a key's
 *   states under two strategies never meet in the first place.
 */
#include "algo/algo.h"
#include "parse.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HEAD 2 /* words before the strategy's bytes: identity, expiry */
#define TTL_MAX (UINT64_C(1) << 62)

_Static_assert(HEAD + (TK_STRATEGY_STATE_MAX + 7) / 8 <= TK__STATE_WORDS_MAX,
	       "a strategy's state fits a policy's");

struct tk__strategy {
	struct tk_strategy def;
	char name[16];
	uint64_t id;
	struct tk__strategy *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tk__strategy *registry;

static const char *const reserved[] = { "all",		"any",
					"gcra",		"token-bucket",
					"fixed-window", "sliding-window",
					"sliding-log",	"quota",
					"leaky" };

static int name_ok(const char *name)
{
	size_t i, n;

	if (!name || name[0] < 'a' || name[0] > 'z')
		return 0;
	for (n = 0; name[n]; n++)
		if (n == 15 ||
		    ((name[n] < 'a' || name[n] > 'z') && name[n] != '-'))
			return 0;
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcmp(name, reserved[i]) == 0)
			return 0;
	return 1;
}

/* FNV-1a over the name, its NUL and the state size: not secret, only
 * distinct (a store key's tag carries it, and every state). */
static uint64_t identity(const char *name, size_t size)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	size_t i, n = strlen(name) + 1;

	for (i = 0; i < n + 8; i++) {
		h ^= i < n ? (unsigned char)name[i]
			   : (unsigned char)(size >> (8 * (i - n)));
		h *= UINT64_C(0x100000001b3);
	}
	return h ? h : 1;
}

static struct tk__strategy *find_locked(const char *name, size_t len)
{
	struct tk__strategy *s;

	for (s = registry; s; s = s->next)
		if (strlen(s->name) == len && memcmp(s->name, name, len) == 0)
			return s;
	return NULL;
}

TK_API int tk_strategy_register(const struct tk_strategy *def)
{
	struct tk__strategy *s;
	int rc = 0;

	if (!def || def->size == 0 ||
	    def->size < offsetof(struct tk_strategy, ctx) ||
	    !name_ok(def->name) || !def->check || def->state_size == 0 ||
	    def->state_size > TK_STRATEGY_STATE_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(&s->def, def,
	       def->size < sizeof(s->def) ? def->size : sizeof(s->def));
	s->def.size = sizeof(s->def);
	strcpy(s->name, def->name);
	s->def.name = s->name;
	s->id = identity(s->name, def->state_size);
	pthread_mutex_lock(&lock);
	if (find_locked(s->name, strlen(s->name))) {
		rc = -EEXIST;
	} else {
		s->next = registry;
		registry = s;
	}
	pthread_mutex_unlock(&lock);
	if (rc)
		free(s);
	return rc;
}

const struct tk__strategy *tk__strategy_find(const char *name, size_t len)
{
	struct tk__strategy *s;

	pthread_mutex_lock(&lock);
	s = find_locked(name, len);
	pthread_mutex_unlock(&lock);
	return s;
}

const char *tk__strategy_name(const struct tk__strategy *s)
{
	return s->name;
}

/* After "NAME:": the argument, any unsigned integer. */
static int user_parse(struct tk__policy *p, struct tk__parser *ps)
{
	const struct tk__strategy *s = p->u.user.s;
	int rc = tk__parse_uint(ps, &p->u.user.arg);

	if (rc)
		return rc;
	p->state_words = HEAD + (uint32_t)((s->def.state_size + 7) / 8);
	p->limit = p->u.user.arg;
	return 0;
}

static void user_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "%s:%llu", p->u.user.s->name,
		(unsigned long long)p->u.user.arg);
}

/*
 * Run the strategy on a copy of @state's bytes (none where @state is
 * another's, zeros or past its expiry).  Returns what check() returned,
 * TK_STRATEGY_WRITE only with @ttl in range, or -EPROTO for a broken
 * promise (a result it may not return, a TTL out of range).
 */
static int run(const struct tk__policy *p, const uint64_t *state, uint64_t now,
	       uint64_t cost, uint64_t *words, struct tk_decision *d,
	       uint64_t *ttl)
{
	const struct tk__strategy *s = p->u.user.s;
	size_t n = p->state_words - HEAD;
	int rc;

	memset(words, 0, n * sizeof(words[0]));
	if (state[0] == s->id && state[1] > now)
		memcpy(words, state + HEAD, n * sizeof(words[0]));
	memset(d, 0, sizeof(*d));
	*ttl = 0;
	rc = s->def.check(s->def.ctx, (unsigned char *)words, now, cost,
			  p->u.user.arg, d, ttl);
	if (rc == TK_STRATEGY_KEEP || rc == -ERANGE)
		return rc;
	if (rc != TK_STRATEGY_WRITE || *ttl == 0 || *ttl > TTL_MAX)
		return -EPROTO;
	return rc;
}

static int user_check(const struct tk__policy *p, const uint64_t *state,
		      uint64_t now, uint64_t cost, uint64_t *next,
		      struct tk_decision *d)
{
	uint64_t ttl;
	int rc = run(p, state, now, cost, next + HEAD, d, &ttl);

	if (rc != TK_STRATEGY_WRITE)
		return rc < 0 ? rc : TK__KEEP;
	next[0] = p->u.user.s->id;
	next[1] = now + ttl;
	return TK__PERSIST;
}

static int user_forecast(const struct tk__policy *p, const uint64_t *state,
			 uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t words[TK__STATE_WORDS_MAX], ttl;
	int rc = run(p, state, now, cost, words, d, &ttl);

	return rc < 0 ? rc : TK__KEEP;
}

static uint64_t user_expires(const struct tk__policy *p, const uint64_t *state)
{
	(void)p;
	return state[1];
}

/* Any bytes may be a strategy's; the identity tells whose they are, and
 * run() takes another's as none.  Without the policy (a zone's verify):
 * a state of some strategy's size. */
static int user_valid(const struct tk__policy *p, uint32_t words,
		      const uint64_t *state)
{
	(void)state;
	if (!p)
		return words > HEAD &&
		       words <= HEAD + (TK_STRATEGY_STATE_MAX + 7) / 8;
	return words == p->state_words;
}

static size_t user_layout(const struct tk__policy *p, unsigned char *buf)
{
	tk__layout_u64(buf, p->u.user.s->id);
	return 8;
}

const struct tk__algorithm tk__user = {
	.name = "user",
	.id = TK__ALG_USER,
	.parse = user_parse,
	.format = user_format,
	.check = user_check,
	.forecast = user_forecast,
	.expires = user_expires,
	.valid = user_valid,
	.layout = user_layout,
};
