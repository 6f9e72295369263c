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

#include <stdint.h>

#include <throttlekit.h>

#ifdef TK_DEBUG
static const int tk__debug = 1;
#else
static const int tk__debug = 0;
#endif

#define TK__UNUSED __attribute__((unused))

/* What a transition asks of the store. */
#define TK__KEEP 0    /* leave the state as it was */
#define TK__PERSIST 1 /* write the new state */

/* Most state words any algorithm uses; a transition's scratch space. */
#define TK__STATE_WORDS_MAX 64

struct tk__policy;

struct tk__algorithm {
	const char *name;
	/*
	 * check() - consume @cost at @now.  @state is NULL for a key with no
	 * (or expired) state.  On TK__PERSIST, @next and *@expires_at (ns at
	 * which the new state is equivalent to no state) are filled.  Returns
	 * TK__PERSIST, TK__KEEP (a denial), or -ERANGE.
	 */
	int (*check)(const struct tk__policy *p, const uint64_t *state,
		     uint64_t now, uint64_t cost, uint64_t *next,
		     uint64_t *expires_at, struct tk_decision *d);
	/* forecast() - what check() would say, without consuming.  @cost 0
	 * asks for one unit with peek semantics. */
	int (*forecast)(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, struct tk_decision *d);
};

struct tk__policy {
	const struct tk__algorithm *alg;
	uint32_t state_words; /* 64-bit words of per-key state */
	uint64_t limit;	      /* the decision's .limit */
	union {
		struct {
			uint64_t t;   /* ns per unit: floor(P / L) */
			uint64_t tau; /* ns of burst tolerance: t * burst */
		} gcra;
	} u;
};

/* policy.c */
int tk__policy_parse(struct tk__policy *p, const char *text);

/* gcra.c */
extern const struct tk__algorithm tk__gcra;
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
};

struct tk__store_ops {
	const char *name;
	/* Run @t atomically on @key's state at @now.  Returns fn's final
	 * result (TK__KEEP or TK__PERSIST) or a negative errno. */
	int (*apply)(struct tk_store *s, const unsigned char *key, size_t len,
		     uint64_t now, const struct tk__transform *t);
	int (*reset)(struct tk_store *s, const unsigned char *key, size_t len);
	void (*stats)(struct tk_store *s, struct tk_stats *out);
	void (*close)(struct tk_store *s);
};

/* Every store starts with this header. */
struct tk_store {
	const struct tk__store_ops *ops;
	struct tk_clock *clock;
};

/* store-memory.c */
int tk__memory_open(struct tk_store **out, const struct tk_options *o);
/* Wheel entries examined so far: lets tests prove expiry is O(expired). */
uint64_t tk__memory_visited(struct tk_store *s);

/* options.c */
int tk__options_read(struct tk_options *dst, const struct tk_options *src);

/* clock.c */
int tk__clock_read(struct tk_clock *c, uint64_t *ns);

/* error.c: let only documented codes leave the library. */
int tk__rc(int rc);

/* siphash.c: SipHash-2-4 with a 128-bit key. */
uint64_t tk__siphash(const uint64_t key[2], const void *data, size_t len);
int tk__random_bytes(void *buf, size_t len);

/* rcu.c: the liburcu flavour and fork handling, in one place. */
void tk__rcu_setup(void);
uint64_t tk__fork_generation(void);

#endif /* TK_INTERNAL_H */
