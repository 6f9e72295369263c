/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * internal.h - contracts between the parts of libthrottlekit.
 *
 * An algorithm is a set of pure transitions over a fixed number of 64-bit
 * state words; a store runs one such transition atomically per key
 * (apply); the limiter reads the clock once and binds the two.  No store
 * contains rate-limiting math and no algorithm touches a store or a clock.
 *
 * Internal non-static symbols are prefixed tk__.
 */
#ifndef TK_INTERNAL_H
#define TK_INTERNAL_H

#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <throttlekit.h>

#include "udiv.h"

/* What a transition asks of the store. */
#define TK__KEEP 0    /* leave the state as it was */
#define TK__PERSIST 1 /* write the new state */
#define TK__INVALID 3 /* check_unvalidated(): valid() refuses the state */

/* Most 64-bit state words one key may hold (composites add up). */
#define TK__STATE_WORDS_MAX 1024

struct tk__policy;
struct tk__parser;
struct tk__fmt;

/*
 * An algorithm: pure functions over a fixed number of state words.  A key
 * with no state is handed all-zero words, which every algorithm treats as
 * "never seen"; stale state is harmless too (a past TAT, an old window),
 * so expiry is only ever a memory optimisation.
 */
struct tk__algorithm {
	const char *name;
	/*
	 * TK__ALG_*: every store records it with each state an algorithm
	 * writes, so that a key read under another algorithm is -EPROTO
	 * rather than words misread.
	 */
	unsigned int id;
	/* Parse the text after "NAME:"; fills everything but .alg. */
	int (*parse)(struct tk__policy *p, struct tk__parser *ps);
	void (*format)(const struct tk__policy *p, struct tk__fmt *f);
	/*
	 * check() - consume @cost at @now.  Returns TK__PERSIST (and fills
	 * @next), TK__KEEP (a denial: nothing changes) or -ERANGE.
	 */
	int (*check)(const struct tk__policy *p, const uint64_t *state,
		     uint64_t now, uint64_t cost, uint64_t *next,
		     struct tk_decision *d);
	/*
	 * forecast() - what check() would say, without consuming.  @cost 0
	 * is a peek: about one unit, with remaining = units available now.
	 */
	int (*forecast)(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, struct tk_decision *d);
	/* From when on @state is equivalent to no state (ns). */
	uint64_t (*expires)(const struct tk__policy *p, const uint64_t *state);
	/*
	 * 1 if, whenever check() returns TK__PERSIST for a @cost of 1 or
	 * more, expires(@next) equals the decision's reset_at: a caller may
	 * then take that rather than call expires() on the state just made.
	 */
	int expires_at_reset;
	/*
	 * check_unvalidated() - optional: valid(p, p->state_words, @state),
	 * then check() if it holds, without decoding the state twice.
	 * Returns TK__INVALID (@next and @d untouched) where valid()
	 * refuses, else what check() returns.
	 */
	int (*check_unvalidated)(const struct tk__policy *p,
				 const uint64_t *state, uint64_t now,
				 uint64_t cost, uint64_t *next,
				 struct tk_decision *d);
	/*
	 * valid() - could this algorithm have written @state, @words words
	 * long?  Stores hand back whatever bytes they hold (a corrupt zone,
	 * another policy of the same algorithm and size), so every count,
	 * index and size that check(), forecast() and expires() rely on is
	 * bounded here first.  @p is NULL when the policy is unknown
	 * (verify): then only what @words determines is checked.  Returns 1
	 * if valid.
	 */
	int (*valid)(const struct tk__policy *p, uint32_t words,
		     const uint64_t *state);
};

/* Clock readings are below this (tk__clock_read); states may not be. */
#define TK__NOW_LIMIT (UINT64_C(1) << 63)

/* Algorithm ids: 3 bits in a zone slot, so 1..7 (0: none). */
#define TK__ALG_GCRA 1
#define TK__ALG_TOKEN_BUCKET 2
#define TK__ALG_FIXED_WINDOW 3
#define TK__ALG_SLIDING_WINDOW 4
#define TK__ALG_SLIDING_LOG 5
#define TK__ALG_QUOTA 6
#define TK__ALG_LEAKY 7
#define TK__ALG_MAX 7

/* The algorithm of id @id, or NULL. */
const struct tk__algorithm *tk__algorithm_of(unsigned int id);

/*
 * A policy whose state is one word w that expires by w | TK__WORD_SLACK
 * (a TAT, a departure time, a packed window) can live in a zone's slot,
 * whose reclaimers judge it without knowing the policy.
 */
#define TK__WORD_SLACK ((UINT64_C(1) << 24) - 1)

struct tk__policy {
	const struct tk__algorithm *alg;
	uint32_t state_words;	 /* 64-bit words of per-key state */
	uint32_t word_is_expiry; /* see TK__WORD_SLACK */
	uint64_t limit;		 /* the decision's .limit */
	union {
		struct {
			uint64_t rate;	 /* L (or R) as written */
			uint64_t period; /* P as written, ns */
			uint64_t t;	 /* ns per unit: floor(P / L) */
			uint64_t tau;	 /* ns of burst tolerance: t * burst */
			struct tk__udiv per_t; /* division by t */
		} gcra;			       /* gcra and token-bucket */
		struct {
			uint64_t window; /* ns */
		} window;		 /* fixed-window and sliding-log */
		struct {
			uint64_t window;	     /* W, ns */
			uint64_t width;		     /* w = W / S, ns */
			uint32_t buckets;	     /* S */
			uint64_t tick_max;	     /* (2^63 - 1) / w */
			struct tk__udiv per_width;   /* division by w */
			struct tk__udiv per_ring;    /* division by S + 1 */
			uint64_t ring_inv, ring_lim; /* see in_ring_slot() */
			uint8_t ring_rot;
		} sliding;
		struct {
			int cadence; /* TK__CADENCE_*, or -1: fixed period */
			int32_t offset_s;    /* seconds east of UTC */
			uint32_t week_start; /* 0 Monday .. 6 Sunday */
			uint64_t period;     /* ns, fixed periods */
			uint64_t anchor;     /* ns, fixed periods */
		} quota;
		struct {
			uint64_t rate;	    /* R as written */
			uint64_t period;    /* P as written, ns */
			uint64_t t;	    /* ns per unit: floor(P / R) */
			uint64_t max_queue; /* Q, ns */
		} leaky;
	} u;
};

enum tk__composite { TK__SINGLE, TK__ALL, TK__ANY };

/* The public handle: one policy, or the dimensions of all()/any(). */
struct tk_policy {
	enum tk__composite kind;
	uint32_t state_words; /* sum over the dimensions */
	size_t n;
	struct tk__policy dim[];
};

extern const struct tk__algorithm tk__gcra, tk__token_bucket, tk__fixed_window,
	tk__sliding_window, tk__sliding_log, tk__quota, tk__leaky;

/* policy.c */
int tk__policy_parse(struct tk_policy **out, const char *text,
		     struct tk_parse_error *err);

/*
 * fixed-window.c: counting in a window [start, end), shared by quota.c.
 * A state {start, count} packs into one word {ceil(end / 2^24), count}
 * when every window lasts at least 2^24 ns (16.8 ms) and the limit is
 * below 2^24: then a coarse end still names one window, and the word
 * expires by word | TK__WORD_SLACK.
 */
int tk__window_packs(uint64_t shortest, uint64_t limit);
/*
 * @state into @st = {start, count}.  Returns 0 if that is all, or, for a
 * packed state, its coarse end, of which the caller finds the window and
 * sets st[0] (or, if there is none, st[1] = 0).
 */
uint64_t tk__window_load(const struct tk__policy *p, const uint64_t *state,
			 uint64_t st[2]);
/* An algorithm's reading of its {start, count} state: 0, or -1 if no check
 * of @p writes @state. */
typedef int tk__window_unpack_fn(const struct tk__policy *p,
				 const uint64_t *state, uint64_t st[2]);
/* What tk__window_valid() checks before it asks @unpack. */
int tk__window_shape_valid(uint32_t words, const uint64_t *state);
/*
 * The valid() of a {start, count} algorithm.  What every such state in
 * @words words shares, packed (1) or not (2): a start below 2^63, a count
 * of at most 2^62, an end of at most 2^63 + 2^62, and a count only with an
 * end; and, with @p, @p's word count and a state @unpack reads.
 */
int tk__window_valid(const struct tk__policy *p, uint32_t words,
		     const uint64_t *state, tk__window_unpack_fn *unpack);
/* The packed word of @count units in a window ending at @end. */
uint64_t tk__window_pack(uint64_t end, uint64_t count);
/* Does window [.., @end) have coarse end @coarse? */
int tk__window_ends_at(uint64_t end, uint64_t coarse);
/* tk__window_check() from @st, into @next as @p keeps its state. */
int tk__window_step(const struct tk__policy *p, const uint64_t *st,
		    uint64_t start, uint64_t end, uint64_t now, uint64_t cost,
		    uint64_t *next, struct tk_decision *d);
int tk__window_check(uint64_t limit, const uint64_t *state, uint64_t start,
		     uint64_t end, uint64_t now, uint64_t cost, uint64_t *next,
		     struct tk_decision *d);
int tk__window_forecast(uint64_t limit, const uint64_t *state, uint64_t start,
			uint64_t end, uint64_t now, uint64_t cost,
			struct tk_decision *d);

/* quota.c: the period [start, end) that contains @t; -EOVERFLOW if none. */
int tk__quota_period(const struct tk__policy *p, uint64_t t, uint64_t *start,
		     uint64_t *end);

/* gcra.c: the GCRA core that token-bucket shares. */
int tk__gcra_init(struct tk__policy *p, uint64_t limit, uint64_t period,
		  uint64_t burst);

/*
 * A transition as a store sees it.  fn() is pure and may run several
 * times for one apply (each CAS retry); only the last run's side effects
 * on @ctx count.  @old is NULL when the key has no live state.
 */
struct tk__transform {
	int (*fn)(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires_at);
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
};

/* try_check(): not decided here; the caller runs apply(). */
#define TK__NOT_HERE 2

/*
 * The time a check decides at, read when the store asks (tk__when_read):
 * a store whose key's slot may be out of the cache hashes the key and
 * prefetches the slot first, so that the miss overlaps the clock read.
 * @clock NULL: @ns is read already (a batch's one reading).
 */
struct tk__when {
	struct tk_clock *clock;
	int clock_id; /* tk__clock_id(clock) */
	uint64_t ns;
};

/*
 * What this thread's last direct check (lib/slot-store.h) wrote: the
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

struct tk__store_ops {
	const char *name;
	/* Run @t atomically on @key's state at @now.  Returns fn's final
	 * result (TK__KEEP or TK__PERSIST) or a negative errno. */
	int (*apply)(struct tk_store *s, const unsigned char *key, size_t len,
		     uint64_t now, const struct tk__transform *t);
	/*
	 * Optional: the fast path of a check of @cost units by policy @p,
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
	 * (lib/slot-store.h).  A failed reading returns the clock's error;
	 * after TK__NOT_HERE @late may still be unread.
	 */
	int (*try_check)(struct tk_store *s, const unsigned char *key,
			 size_t len, uint64_t now, struct tk__when *late,
			 const struct tk__policy *p, uint64_t cost,
			 struct tk_decision *d);
	/* Run @m atomically over all its keys at @now; as apply(). */
	int (*apply_multi)(struct tk_store *s, uint64_t now,
			   const struct tk__multi *m);
	/* Optional: the @n items in order, each exactly as apply() or
	 * apply_multi() at @now would run it, with fewer round trips to a
	 * server (Redis: one pipeline per node). */
	void (*apply_batch)(struct tk_store *s, uint64_t now,
			    struct tk__batch_item *items, size_t n);
	int (*reset)(struct tk_store *s, const unsigned char *key, size_t len);
	void (*stats)(struct tk_store *s, struct tk_stats *out);
	/* Optional: 0, or -ENOTSUP if this store cannot run @p yet (Redis). */
	int (*supports)(struct tk_store *s, const struct tk_policy *p);
	/* Optional: 0, or the error every call of the store now returns
	 * (a zone whose file was truncated under it: -EPROTO). */
	int (*failed)(struct tk_store *s);
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
	 * try_check() reads the clock itself (lib/slot-store.h). */
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

/* limiter.c: checks of @l by the store's apply() alone, never its
 * try_check() (tests compare the two). */
void tk__limiter_generic(struct tk_limiter *l);

/* store.c.  Tests: if not zero, a store opened takes one less than this
 * for the most slots a table of it in the cache has (lib/slot-store.h). */
extern uint64_t tk__slot_near_test;

/* store-memory.c */
int tk__memory_open(struct tk_store **out, const struct tk_options *o);
/* The key hash of memory store @s, as prepared (tests). */
struct tk__keyhash_key;
const struct tk__keyhash_key *tk__memory_keyhash(struct tk_store *s);
/* The table of memory store @s (tests). */
struct tk__table;
struct tk__table *tk__memory_table(struct tk_store *s);
/* Tests: if not zero, the secret of every memory store opened, so that
 * two stores place and evict keys alike. */
extern uint64_t tk__memory_secret[2];

/* store-shm.c */
struct tk__zone_config;
int tk__shm_open(struct tk_store **out, const char *name,
		 const struct tk_options *o);
int tk__zone_config_from(const struct tk_options *o, struct tk__zone_config *c);

/*
 * redis/store.c: a redis://, redis+unix://, redis+cluster:// or rediss://
 * spec; on -EINVAL or -ENOTSUP a sentence in @why (@why_len bytes, may be
 * 0), never quoting a password.
 */
int tk__redis_open(struct tk_store **out, const char *spec,
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

/* options.c */
int tk__options_read(struct tk_options *dst, const struct tk_options *src);

/* clock.c */
int tk__clock_read(struct tk_clock *c, uint64_t *ns);
/* The clock_gettime(2) clock that @c reads (the system and the coarse
 * clock), or -1 for a manual or custom clock. */
int tk__clock_id(const struct tk_clock *c);

/* A reading of clock_gettime(2) clock @id as tk__clock_read() gives it:
 * inline, so that a check on the system clock makes one call for it. */
static inline int tk__clock_gettime(clockid_t id, uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0 || ts.tv_sec < 0)
		return -EIO;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return *ns < TK__NOW_LIMIT ? 0 : -EOVERFLOW;
}

/* Read @w's clock unless read already: 0 or the clock's error. */
static inline __attribute__((always_inline)) int
tk__when_read(struct tk__when *w)
{
	int rc;

	if (!w->clock)
		return 0;
	rc = w->clock_id >= 0 ? tk__clock_gettime(w->clock_id, &w->ns)
			      : tk__clock_read(w->clock, &w->ns);
	if (rc == 0)
		w->clock = NULL;
	return rc;
}

/* error.c: let only documented codes leave the library. */
int tk__rc(int rc);

/*
 * siphash.c: SipHash-2-4 (names that leave the process) and SipHash-1-3
 * (tk__keyhash's long keys) with a 128-bit key.
 */
uint64_t tk__siphash(const uint64_t key[2], const void *data, size_t len);
uint64_t tk__siphash13(const uint64_t key[2], const void *data, size_t len);
int tk__random_bytes(void *buf, size_t len);

/*
 * keyhash.c: the stores' keyed hash of a store key, one of two functions
 * chosen per store (never per key):
 *   TK__KEYHASH_CMAC: keys of at most TK__KEYHASH_CMAC_MAX bytes: the
 *     first 8 bytes of AES-CMAC under the store's 128-bit secret,
 *     little-endian; longer keys: SipHash-1-3 under a key derived from
 *     the secret by AES.  Chosen where the CPU has AES-NI.
 *   TK__KEYHASH_SIP13: SipHash-1-3 of every key under the secret itself
 *     (two little-endian words); no AES at all.  Chosen without AES-NI,
 *     where the software AES would cost 3.6 times as much.
 * The definition and why it resists HashDoS: keyhash.c.
 */
#define TK__KEYHASH_CMAC_MAX 32 /* bytes */
#define TK__KEYHASH_CMAC 0
#define TK__KEYHASH_SIP13 1

/* A secret prepared once per store: never changed after setup. */
struct tk__keyhash_key {
	unsigned char rk[11][16] __attribute__((aligned(16))); /* AES-128 */
	unsigned char k1[16] __attribute__((aligned(16))); /* CMAC subkeys */
	unsigned char k2[16] __attribute__((aligned(16)));
	uint64_t sip[2]; /* SipHash-1-3 key: long keys, or all (SIP13) */
	int kind;	 /* TK__KEYHASH_* */
	int hw;		 /* 1: CMAC by AES-NI; 0: software AES, or SIP13 */
};

/*
 * tk__keyhash_aesni() - 1 if this CPU has AES-NI (and the test hook
 * below does not hide it), else 0: which kind a new store chooses.
 *
 * tk__keyhash_setup() - prepare @k of @kind from the 16 bytes at
 * @secret: for CMAC the round keys, CMAC subkeys, the SipHash key and
 * AES-NI if tk__keyhash_aesni() (else the software AES, same bits); for
 * SIP13 the SipHash key only.  tk__keyhash() - the hash of @len bytes at
 * @data under @k.  Pure functions of their arguments (and the CPU, for
 * speed only): safe from any thread; @k is read-only once set up.
 */
int tk__keyhash_aesni(void);
void tk__keyhash_setup(struct tk__keyhash_key *k, const void *secret, int kind);
uint64_t tk__keyhash(const struct tk__keyhash_key *k, const void *data,
		     size_t len);
/* Test hook: non-zero makes tk__keyhash_aesni() answer 0, as on a CPU
 * without AES-NI.  Set before opening stores; never by the library. */
extern int tk__keyhash_no_aesni;
/* The primitives under a CMAC key, for the FIPS-197 and RFC 4493
 * vectors (tests): one AES-128 block, and the full 16-byte AES-CMAC of
 * any length, each by @k's implementation. */
void tk__aes128(const struct tk__keyhash_key *k, const unsigned char in[16],
		unsigned char out[16]);
void tk__aes_cmac(const struct tk__keyhash_key *k, const void *data, size_t len,
		  unsigned char tag[16]);

/* rcu.c: the liburcu flavour and fork handling, in one place. */
void tk__rcu_setup(void);
uint64_t tk__fork_generation(void);

#endif /* TK_INTERNAL_H */
