/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-ops.h - the store contract: a transition as a store runs it (struct
 * tk__transform, struct tk__multi), the operations every store provides
 * (struct tk__store_ops), the header every store starts with, and the
 * stores' constructors that store.c dispatches to.
 */
#ifndef TK_STORE_OPS_H
#define TK_STORE_OPS_H

#include "config.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <throttlekit.h>

#include "algo/algo.h"
#include "clock.h"
#include "status.h" /* TK__NOT_HERE */

/*
 * Optional, with a check (a reservation, lib/reserve.c): where a store
 * that keeps states in a spelling of its own (Redis) leaves the states
 * the check read (pre) and wrote (post) of each key, as it spells them
 * (malloc'd; NULL: none), and the time it decided at, for its refund().
 */
struct tk__spelling {
	char *pre[8], *post[8];
	size_t pre_len[8], post_len[8];
	uint64_t now; /* ns */
};

struct tk__zone_inplace; /* shm/zone.h */

/*
 * A transition as a store sees it.  fn() is pure and may run several
 * times for one apply (each CAS retry); only the last run's side effects
 * on @ctx count.  @old is NULL when the key has no live state.
 */
struct tk__transform {
	int (*fn)(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires_at);
	/* NULL, or fn() where it changes one word of @old alone (an
	 * in-place update: docs/shm-protocol.md; tk__check_inplace). */
	const struct tk__zone_inplace *inplace;
	void *ctx;
	uint32_t words;
	uint32_t flags; /* TK__T_* */
	uint32_t alg;	/* TK__ALG_* of the state */
	/*
	 * What fn() decides, for a store that must decide on its server
	 * (Redis): the policy and the units a check consumes.
	 */
	const struct tk__policy *policy;
	uint64_t cost;
	/* The time fn() decides at (ns): the limiter's clock reading, which
	 * a store deciding on its server's clock replaces before fn(). */
	uint64_t *now;
	struct tk__spelling *spelling; /* NULL, or see there */
};

/*
 * What this thread's last direct check (lib/store/slot-store.h) wrote: the
 * slot, the word, and whether that check found a rival's word where this
 * thread's last one had been.  A thread that shares a hot key with a
 * writer on another core then checks in the far order, the slot
 * prefetched before the clock read, so that the line's trip from the
 * rival's cache overlaps the clock read (bench/README.md, "2026-11-26
 * morning").  Initial-exec, as the tally's slot: read inline.
 */
struct tk__last_write {
	const void *slot;
	uint64_t word;
	int rival;
};
extern __thread struct tk__last_write tk__last_write
	__attribute__((tls_model("initial-exec")));

#define TK__T_CHECK 0x1		 /* a check (KEEP means a denial) */
#define TK__T_WORD_IS_EXPIRY 0x2 /* one word, its own expiry time */

/*
 * A transition over several keys at once (composite policies): fn() sees
 * every key's state (NULL: none) and, on TK__PERSIST, writes next[i] and
 * expires_at[i] for each key whose persist[i] it sets.  The store applies
 * all of it in one atomic step, or nothing.
 */
#define TK__MULTI_MAX 8
_Static_assert(TK__MULTI_MAX == 8, "struct tk__spelling holds every key");

struct tk__multi {
	size_t n;
	const unsigned char *key[TK__MULTI_MAX];
	size_t len[TK__MULTI_MAX];
	uint32_t words[TK__MULTI_MAX];
	uint32_t alg[TK__MULTI_MAX]; /* TK__ALG_* of each state */
	int (*fn)(void *ctx, const uint64_t *const *old, uint64_t *const *next,
		  int *persist, uint64_t *expires_at);
	void *ctx;
	uint32_t flags; /* TK__T_CHECK */
	/* As in struct tk__transform: each key's policy, the units, and
	 * how the dimensions combine (TK__ALL or TK__ANY). */
	const struct tk__policy *policy[TK__MULTI_MAX];
	uint64_t cost;
	enum tk__composite kind;
	uint64_t *now;
	struct tk__spelling *spelling; /* NULL, or see there */
};

/*
 * One request of a batch: @t on @key (@len bytes) as apply() runs it, or
 * @m as apply_multi() does; @rc receives what that call would return.
 */
struct tk__batch_item {
	const unsigned char *key;
	size_t len;
	const struct tk__transform *t; /* or, with key NULL: */
	const struct tk__multi *m;
	int rc;
};

struct tk__rule;       /* shm/rules.h */
struct tk__store_head; /* store-key.h */

/* Does a check of @p go to try_window() (struct tk__store_ops)? */
static inline int tk__window_direct(const struct tk__policy *p)
{
	return p->alg->id == TK__ALG_FIXED_WINDOW ||
	       p->alg->id == TK__ALG_SLIDING_WINDOW;
}

struct tk__store_ops {
	const char *name;
	/* Run @t atomically on @key's state at @now.  Returns fn's final
	 * result (TK__KEEP or TK__PERSIST) or a negative errno. */
	int (*apply)(struct tk_store *s, const unsigned char *key, size_t len,
		     uint64_t now, const struct tk__transform *t);
	/*
	 * Optional: the fast path of a check of @cost units by policy @p
	 * of the store key @head + @key (store-key.h; handed apart, so that
	 * the store hashes them as they are, without joining them first),
	 * one whose algorithm has in-place steps (gcra.h: GCRA and the
	 * token bucket, a state of one word that is its own expiry), as
	 * uv_try_write() is to a write: it decides here or says "not here".
	 * Returns 0 with the decision in *@d, after the same writes to the
	 * store as apply() would make; TK__NOT_HERE where this is not the
	 * plain case, having written nothing to the store or to @d (the
	 * caller runs apply() instead); or a negative errno.
	 * It decides at @now, or, if @late is not NULL (while
	 * tk__store_reads_clock()), at the time it reads from @late when it
	 * is ready for it (tk__when_read()): after hashing the key and
	 * prefetching its slot, so that a miss overlaps the clock read
	 * (lib/store/slot-store.h).  A failed reading returns the clock's
	 * error; after TK__NOT_HERE @late may still be unread.
	 */
	int (*try_check)(struct tk_store *s, const struct tk__store_head *head,
			 const char *key, size_t key_len, uint64_t now,
			 struct tk__when *late, const struct tk__policy *p,
			 uint64_t cost, struct tk_decision *d);
	/*
	 * Optional: try_check() for a policy of a fixed or sliding window
	 * (tk__window_direct()), whose state is a packed word or a block:
	 * the same contract, the policy's own transition stepped on it.
	 */
	int (*try_window)(struct tk_store *s, const struct tk__store_head *head,
			  const char *key, size_t key_len, uint64_t now,
			  struct tk__when *late, const struct tk__policy *p,
			  uint64_t cost, struct tk_decision *d);
	/* Run @m atomically over all its keys at @now; as apply(). */
	int (*apply_multi)(struct tk_store *s, uint64_t now,
			   const struct tk__multi *m);
	/* Optional: the @n items in order, each exactly as apply() or
	 * apply_multi() at @now would run it, with fewer round trips to a
	 * server (Redis: one pipeline per node). */
	void (*apply_batch)(struct tk_store *s, uint64_t now,
			    struct tk__batch_item *items, size_t n);
	int (*reset)(struct tk_store *s, const unsigned char *key, size_t len);
	/*
	 * Optional: give back @cost units a check of the @n keys @key
	 * (@len bytes each; policies @pol) consumed, by the refund rules of
	 * lib/reserve.c, from the states it spelled in @sp; done[i] 1 (the
	 * state before restored), 2 (the units given back) or 0 (left).  A
	 * store without it runs lib/reserve.c's transition by apply().
	 */
	int (*refund)(struct tk_store *s, size_t n,
		      const unsigned char *const *key, const size_t *len,
		      const struct tk__policy *const *pol,
		      const struct tk__spelling *sp, uint64_t cost, int *done);
	void (*stats)(struct tk_store *s, struct tk_stats *out);
	/* Optional: 0, or -ENOTSUP if this store cannot run @p yet (Redis). */
	int (*supports)(struct tk_store *s, const struct tk_policy *p);
	/* Optional: 0, or the error every call of the store now returns
	 * (a zone whose file was truncated under it: -EPROTO). */
	int (*failed)(struct tk_store *s);
	/* Optional (zones): register rule @r in the store's rule directory
	 * (shm/rules.h): its entry's index, or a negative errno. */
	int (*rule_register)(struct tk_store *s, const struct tk__rule *r);
	/* With rule_register: add to the counters of entry @idx. */
	void (*rule_count)(struct tk_store *s, int idx, uint64_t checks,
			   uint64_t denies);
	/*
	 * Optional: do @s and @other (a store of the same ops) reach the
	 * same states, keys hashed alike (two opens of one zone; of one Redis
	 * server, database and key_prefix)?  Without it only a store is the
	 * same as itself.
	 */
	int (*same)(struct tk_store *s, struct tk_store *other);
	/*
	 * Optional: what the server meant by the error @rc of the store's
	 * last call, where the code alone cannot say (PostgreSQL's -EACCES:
	 * a login refused, or a privilege denied), as a phrase that follows
	 * "the server of SPEC " in tk_store_probe()'s sentence; NULL: the
	 * code says it all.
	 */
	const char *(*refusal)(struct tk_store *s, int rc);
	/* Optional: fill the server's fields of @out (Redis); a store
	 * without it has no server (tk_store_ping()). */
	int (*ping)(struct tk_store *s, struct tk_store_ping *out);
	void (*close)(struct tk_store *s);
};

/* Every store starts with this header. */
struct tk_store {
	const struct tk__store_ops *ops;
	struct tk_clock *clock;
	/* States found invalid by this process's checks (tk_stats.corrupt). */
	_Atomic uint64_t corrupt;
	/* 1 while the store's table is larger than a core's cache, so that
	 * try_check() reads the clock itself (lib/store/slot-store.h). */
	_Atomic int far;
};

/*
 * Does a check on @s hand try_check() its clock unread?  While @s is far,
 * or while this thread's last in-place write met a rival writer (struct
 * tk__last_write): the store says both; the limiter only follows.
 */
static inline int tk__store_reads_clock(struct tk_store *s)
{
	return atomic_load_explicit(&s->far, memory_order_relaxed) ||
	       tk__last_write.rival;
}

/* store-memory.c */
int tk__memory_open(struct tk_store **out, const struct tk_options *o);

/* store-shm.c */
struct tk__zone_config;
int tk__shm_open(struct tk_store **out, const char *name,
		 const struct tk_options *o);
int tk__zone_config_from(const struct tk_options *o, struct tk__zone_config *c);

/* store.c: does @spec name a Redis store (by its scheme)? */
int tk__redis_is_spec(const char *spec);

/*
 * redis/store.c: a redis://, redis+unix://, redis+cluster://,
 * redis+sentinel:// or rediss:// spec; on -EINVAL or -ENOTSUP a sentence in
 * @why (@why_len bytes, may be 0), never quoting a password.
 */
int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o, char *why, size_t why_len);

/*
 * redis/give-back.c: give back @units that a check of the key @key (@len
 * bytes) of @p decided at @at consumed on Redis store @s, by the refund
 * rules of lib/reserve.c for a state written since (a window's count, a
 * sliding window's bucket, a log's stamps; never a one-word state's):
 * 2 given back, 0 left as it is (no longer exact), -ENOTSUP for @p's
 * algorithm, or the store's error.
 */
int tk__redis_give_back(struct tk_store *s, const unsigned char *key,
			size_t len, const struct tk__policy *p, uint64_t at,
			uint64_t units);

/*
 * pg/store.c: a postgresql:// spec (pg/store-none.c without libpq: a
 * spec that parses is -ENOTSUP); on -EINVAL or -ENOTSUP a sentence in
 * @why, never quoting a password.  Opening connects nothing.
 */
int tk__pg_open(struct tk_store **out, const char *spec,
		const struct tk_options *o, char *why, size_t why_len);

/* zone-registry.c: one mapping per zone and process. */
struct tk__zone;
struct tk__zone_tally; /* tally.h */
int tk__zone_open_shared(struct tk__zone **out, struct tk__zone_tally **tally,
			 const char *name, const struct tk__zone_config *cfg,
			 int flags);
void tk__zone_close_shared(struct tk__zone *z);

/*
 * store-failed.c: a store answering every step with @err (negative), which
 * opens @spec with @o (less TK_OPT_RETRY_OPEN) at most once a second
 * until that works, and then forwards every step to it.
 */
int tk__failed_open(struct tk_store **out, const char *spec,
		    const struct tk_options *o, int err);

#endif /* TK_STORE_OPS_H */
