/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlekit.h - exact, lock-free rate limiting.
 *
 * The one public header of libthrottlekit.  A limiter binds a policy (the
 * algorithm and its parameters, written as a policy string), a store (where
 * per-key state lives) and a clock.  Every call returns 0 on success or a
 * negative errno value; tk_strerror() turns such a value into text.
 *
 * All times are integer nanoseconds: absolute times count from the Unix
 * epoch, durations are plain counts of nanoseconds.  No call takes or
 * returns a floating-point number.
 *
 * Handles are opaque.  Structures whose layout is public grow only by
 * appending fields: tk_options and tk_stats carry their size, so programs
 * built against an older header keep working; tk_decision, filled by the
 * library, grows only with a new soname (a 0.x release may add fields).
 *
 * Concurrency: unless a comment says otherwise, every function may be
 * called from any thread at any time on the same handles, except that a
 * handle must not be used during or after its close/free call.
 *
 * Clock failures: a clock that cannot be read makes the calling function
 * return -EIO; a reading at or past 2^63 ns (the year 2262) -EOVERFLOW.
 */
#ifndef THROTTLEKIT_H
#define THROTTLEKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TK_BUILDING_LIBRARY)
#define TK_API __attribute__((visibility("default")))
#else
#define TK_API
#endif

#define TK_VERSION_MAJOR 0
#define TK_VERSION_MINOR 1
#define TK_VERSION_PATCH 0
#define TK_VERSION_STRING "0.1.0"
/* 0xMMmmpp: compare with TK_VERSION_HEX >= 0x000100. */
#define TK_VERSION_HEX                                                         \
	((TK_VERSION_MAJOR << 16) | (TK_VERSION_MINOR << 8) | TK_VERSION_PATCH)

/* Longest key accepted, in bytes, not counting the limiter's prefix. */
#define TK_KEY_MAX 1024
/* Longest key prefix accepted, in bytes. */
#define TK_PREFIX_MAX 256

struct tk_limiter;
struct tk_store;
struct tk_reservation;
struct tk_clock;
struct tk_policy;

/*
 * The outcome of one check.  All fields are integers so that every store
 * reports the same decision, bit for bit, for the same timeline.
 */
struct tk_decision {
	bool allowed;
	uint64_t limit;	      /* effective ceiling: burst, capacity or quota */
	uint64_t remaining;   /* whole units admissible right now */
	uint64_t reset_at;    /* ns since the epoch: key fully replenished */
	uint64_t retry_after; /* ns until this request could pass; 0 if allowed
			       */
	/* Appended fields. */
	uint64_t delay; /* shaper (leaky): ns to wait before proceeding */
	/*
	 * The store failed and the limiter's fail policy (TK_FAIL_OPEN or
	 * TK_FAIL_CLOSED) decided instead; see tk_limiter_open().
	 */
	bool degraded;
	/*
	 * The dimension whose decision this is: of a composite (all(),
	 * any()), the one that decided the representative decision (see
	 * tk_limiter_check_keys()), which tk_http_headers() reports; of a
	 * group, counted limiter by limiter; dims[i] of a group carry i.
	 * 0 for a simple policy and a degraded decision.
	 */
	uint32_t dimension;
};

/*
 * Options for tk_store_open() and tk_limiter_open().  Always start from
 * TK_OPTIONS_INIT so that .size tells the library which fields exist;
 * fields left zero take their defaults.
 */
struct tk_options {
	size_t size; /* sizeof(struct tk_options), see TK_OPTIONS_INIT */
	struct tk_clock *clock;	   /* NULL: the system clock */
	const char *prefix;	   /* prepended to every key; NULL: none */
	struct tk_store *store;	   /* an open store to use instead of a spec */
	uint64_t max_keys;	   /* memory store: the most live keys it holds;
				    * one more evicts the coldest (slots: a power
				    * of two, at least 2.5 times as many); 0:
				    * unbounded */
	uint64_t reclaim_interval; /* ns between background sweeps; 0: 1 s */
	unsigned int flags;	   /* TK_OPT_* */
	/*
	 * ns an expired state is kept before its memory is reclaimed; a
	 * backward clock step of up to this much stays exact.  0: 60 s.
	 */
	uint64_t reclaim_grace;
	/* Zones ("shm:NAME"), when this call creates one: */
	uint64_t zone_capacity; /* slots, a power of two; 0: 65536 */
	unsigned int zone_mode; /* file mode; 0: 0600 */
	int64_t zone_gid; /* group of the file; used with TK_OPT_ZONE_GID */
	/* Bytes of state blocks (states of more than one word: windows,
	 * logs, quotas), rounded up to 16 KiB pages; 0: 32 per slot. */
	uint64_t zone_arena;
	/* Appended fields. */
	/*
	 * Owner of the zone's file; used with TK_OPT_ZONE_UID: given to the
	 * file at creation, and trusted at attach (see TK_OPT_ZONE_UID).
	 */
	int64_t zone_uid;
	/*
	 * What a check does when its store fails (TK_FAIL_*): the limiter
	 * options of tk_limiter_open().  0: TK_FAIL_ERROR.
	 */
	unsigned int fail;
	/*
	 * Zones: the rule this limiter decides (an Apache ThrottleRule, a
	 * PHP policy), registered at open in the zone's rule directory
	 * with the limiter's policy and prefix and how a client becomes a
	 * key (rule_address, rule_key, the prefix lengths), so that
	 * operators can name it (tk_zone_rules(), tk_zone_reset_client()),
	 * and its checks and denials counted there.  1 to 127 bytes; NULL:
	 * none.  Ignored by other stores.
	 */
	const char *rule;
	/* What precedes a client's address in its key ("a:"), the address
	 * masked as tk_client_key() masks it with rule_v6_prefix and
	 * rule_v4_prefix (0: 64 and 32); NULL: the rule keys no address. */
	const char *rule_address;
	/* What precedes a client's own key ("k:", or "" for the key as it
	 * is); NULL: the rule keys no such key.  At most 23 bytes each. */
	const char *rule_key;
	unsigned int rule_v6_prefix, rule_v4_prefix;
};

/* A store failure is returned as its negative errno (the default). */
#define TK_FAIL_ERROR 0u
/* A store failure admits, with tk_decision.degraded set. */
#define TK_FAIL_OPEN 1u
/* A store failure denies, with tk_decision.degraded set. */
#define TK_FAIL_CLOSED 2u

/*
 * TK_OPTIONS_INIT initialises a struct tk_options; tk_options_init()
 * returns one, as an expression.  C++ before C++20 has no designated
 * initializers, and C++20 warns about every field they leave out
 * (-Wmissing-field-initializers), so in C++ the macro is the function.
 */
#ifdef __cplusplus
#define TK_OPTIONS_INIT tk_options_init()
#else
#define TK_OPTIONS_INIT                                                        \
	{                                                                      \
		.size = sizeof(struct tk_options)                              \
	}
#endif

/*
 * tk_options_init() - options with every field zero (its default) and
 * .size set.  Any thread; no side effects.
 */
static inline struct tk_options tk_options_init(void)
{
#ifdef __cplusplus
	struct tk_options o = {};
#else
	struct tk_options o = TK_OPTIONS_INIT;
#endif

	o.size = sizeof(o);
	return o;
}

/* Do not start a background reclaimer thread; reclaim on access instead. */
#define TK_OPT_NO_RECLAIMER 0x1u
/* Zones: attach only; -ENOENT if the zone does not exist. */
#define TK_OPT_ZONE_NO_CREATE 0x2u
/* Zones: a full table answers -ENOSPC instead of evicting (at creation). */
#define TK_OPT_ZONE_REFUSE_FULL 0x4u
/*
 * Zones: give the file the group zone_gid at creation; at attach, trust a
 * zone writable by that group although this process is not a member.
 */
#define TK_OPT_ZONE_GID 0x8u
/*
 * Zones: run a background reclaimer thread in this process (started by
 * the first check, never at open; every reclaim_interval).  Without it a
 * zone is reclaimed incrementally by checks.
 */
#define TK_OPT_ZONE_RECLAIMER 0x10u
/*
 * Zones: give the file the owner zone_uid at creation (root only, unless
 * it is our own uid); at attach, trust a zone owned by zone_uid whatever
 * its mode, as that user made it.  Without it a zone must be owned by
 * this process's effective uid or root and be writable by no other user:
 * not by every user (mode o+w) and by its group (g+w) only if that is
 * one of this process's groups or zone_gid with TK_OPT_ZONE_GID.  See
 * throttlekit(7), "Permissions".
 */
#define TK_OPT_ZONE_UID 0x20u
/*
 * A store that cannot be opened for a reason of its own, not the
 * caller's (tk_error_is_caller(): a zone absent with
 * TK_OPT_ZONE_NO_CREATE, refused, corrupt or of another layout; no
 * memory; a clock error), is opened anyway as a failed store: every check
 * on it meets that error, which a limiter under TK_FAIL_OPEN or
 * TK_FAIL_CLOSED answers with a degraded decision, and tk_store_stats()
 * and tk_store_ping() return it.  A check tries to open the store again at
 * most once a second (on its limiter's clock); once that works, the store
 * works as if it had opened at once.  tk_limiter_open() sets this itself
 * when it opens its store under TK_FAIL_OPEN or TK_FAIL_CLOSED.
 */
#define TK_OPT_RETRY_OPEN 0x40u

/* One element of a tk_limiter_check_many() batch. */
struct tk_request {
	const char *key;
	size_t key_len;
	uint64_t cost;
};

/* One key of a composite check: one per dimension, in declaration order. */
struct tk_key {
	const char *key;
	size_t key_len;
};

/* Where and why a policy string did not parse. */
struct tk_parse_error {
	size_t position;   /* byte offset of the offending character */
	char message[128]; /* "expected ..." */
};

/* Store counters, read with tk_store_stats() or tk_limiter_stats(). */
struct tk_stats {
	uint64_t keys;	      /* keys holding state now */
	uint64_t capacity;    /* bound on keys; 0 if unbounded */
	uint64_t inserts;     /* keys created */
	uint64_t expirations; /* keys reclaimed because their state expired */
	uint64_t evictions;   /* live keys dropped to stay within capacity */
	uint64_t resets;      /* keys removed by reset */
	/* Appended fields. */
	uint64_t checks; /* zones: checks decided (all processes) */
	uint64_t denies; /* zones: checks denied (all processes) */
	/*
	 * States that did not validate against the policy reading them
	 * (corrupt, or written by another policy of the same algorithm and
	 * size), counted by this process; each was taken as no state.
	 */
	uint64_t corrupt;
	/*
	 * Dropped keys and states still allocated: always 0 (the memory
	 * store's table reuses a dropped key's slot at once).
	 */
	uint64_t backlog;
	/*
	 * Bytes of memory held for keys' slots and states now: the memory
	 * store's tables, counting those its growths left behind until they
	 * are freed; a zone's segment.  0 for Redis.
	 */
	uint64_t reserved;
	/*
	 * Bytes of those in the tables in use: the memory store's newest, and
	 * the one its keys move from while it grows; a zone's segment.
	 * reserved - live is waiting to be freed.
	 */
	uint64_t live;
	/*
	 * Redis stores, this process (0 elsewhere; checks and denies above
	 * count this process's decisions there too, a check over several
	 * cluster slots once).  Round trips: commands or pipelines sent,
	 * connection set-up (AUTH, SELECT) and script loads included.
	 */
	uint64_t redis_round_trips;
	uint64_t redis_connects;    /* connections made */
	uint64_t redis_reconnects;  /* of those, replacing a dropped one */
	uint64_t redis_connections; /* open now */
	uint64_t redis_refreshes;   /* cluster slot maps read */
	/* Errors by kind: connects or replies that took too long; connects
	 * refused and connections reset or closed (also no descriptor);
	 * MOVED and ASK redirections; other error replies (READONLY,
	 * CLUSTERDOWN, OOM, NOPERM, ...; not the NOSCRIPT that loads the
	 * script). */
	uint64_t redis_timeouts;
	uint64_t redis_conn_errors;
	uint64_t redis_redirects;
	uint64_t redis_error_replies;
};

/* A zone's geometry, occupancy and counters, from tk_zone_info(). */
struct tk_zone_info {
	uint64_t capacity; /* slots */
	uint64_t shards;
	uint64_t window;       /* slots per candidate window */
	uint64_t segment_size; /* bytes */
	uint64_t created;      /* ns since the epoch */
	uint64_t grace;	       /* ns an expired state is kept */
	uint64_t refuse_full;  /* 1 if a full table answers -ENOSPC */
	uint64_t keys;	       /* committed slots */
	uint64_t tentative;    /* inserts in progress (or abandoned) */
	uint64_t garbage;      /* collided inserts not yet freed */
	uint64_t violations;   /* broken invariants found by the scan */
	uint64_t checks, denies, inserts, reclaims, evictions, resets;
	uint32_t uid, gid, mode; /* of the zone's file */
	/* Appended fields. */
	uint64_t arena_size; /* bytes of state blocks */
	uint64_t blocks;     /* state blocks in use */
	uint64_t arena_used; /* bytes of those blocks */
	/* States that no policy of their algorithm could have written. */
	uint64_t corrupt;
	/* The key hash its creator chose: 1 for SipHash-1-3 (a CPU without
	 * AES-NI), 0 for AES-CMAC. */
	uint64_t siphash;
};

/*
 * tk_version() - the run-time library version, e.g. "0.1.0".
 *
 * Concurrency: safe from any thread; never fails.
 */
TK_API const char *tk_version(void);

/*
 * tk_strerror() - describe an error code returned by this library.
 *
 * @err may be negative (as returned) or positive.  Returns a static string;
 * unknown codes give "Unknown error".
 *
 * Concurrency: safe from any thread; async-signal-safe.
 */
TK_API const char *tk_strerror(int err);

/*
 * tk_strerrorname() - the symbolic name of an error code, e.g. "ERANGE".
 *
 * Returns a static string; unknown codes give "EUNKNOWN".
 */
TK_API const char *tk_strerrorname(int err);

/*
 * tk_error_is_caller() - is @err (negative or positive) the caller's
 * mistake rather than a failure of a store or clock: -EINVAL (a bad
 * argument, spec or option), -ENAMETOOLONG (a key or prefix too long),
 * -ERANGE (a cost the policy never admits), -ENOTSUP (a backend or a
 * step this build or store cannot run) or -EXDEV (a group of limiters
 * on different stores).  A limiter returns these whatever
 * its fail policy says; every other error of a check is a store's or a
 * clock's, which TK_FAIL_OPEN and TK_FAIL_CLOSED answer with a degraded
 * decision.  0 is no error, so not the caller's.
 *
 * Concurrency: safe from any thread; async-signal-safe.
 */
TK_API bool tk_error_is_caller(int err);

/*
 * Policies.  A policy string names an algorithm and its parameters:
 *
 *   gcra:L/P[,burst=B]                    token-bucket:capacity=C,refill=R/P
 *   fixed-window:L/W                      sliding-window:L/W[,buckets=S]
 *   sliding-log:L/W                       leaky:R/P,max-queue=Q
 *   quota:L/month|week|day[,offset=+HH:MM][,week-start=mon..sun]
 *   quota:L/P[,anchor=NS]
 *   all(POLICY,POLICY...)                 any(POLICY,POLICY...)
 *
 * Durations are an integer and a unit (ns, us, ms, s, m, h, d); a bare
 * unit means one of it.  Every value is checked at parse time, so a check
 * never fails because of its policy.  See throttlekit(7).
 */

/*
 * tk_policy_parse() - parse a policy string.
 *
 * Returns 0, -EINVAL for a malformed or invalid policy, an unknown
 * algorithm included (then, if @err is not NULL, err->position and
 * err->message say where and what was expected), -ENOMEM.
 */
TK_API int tk_policy_parse(struct tk_policy **out, const char *text,
			   struct tk_parse_error *err);

/*
 * tk_duration_parse() - a duration as policy strings write one (an integer
 * and a unit, ns, us, ms, s, m, h or d; a bare unit is one of it), in the
 * @len bytes at @text, nothing before or after it, so that bindings and
 * their configuration files take the same durations as policies.  Returns
 * 0 and stores the nanoseconds in *@out; -EINVAL (*@out unchanged) for any
 * other text (a number without a unit, a NUL among the bytes, 2^64 ns or
 * more), a NULL @out, or a NULL @text with a non-zero @len.  Pure: any
 * thread.
 */
TK_API int tk_duration_parse(const char *text, size_t len, uint64_t *out);

/*
 * tk_policy_format() - the canonical string of a policy, as snprintf(3):
 * writes at most @len bytes including the NUL and returns the length the
 * whole string needs (without the NUL), or -EINVAL.  Parsing the result
 * gives the same policy.
 */
TK_API int tk_policy_format(const struct tk_policy *p, char *buf, size_t len);

/* tk_policy_dimensions() - 1 for a simple policy, N for all()/any(). */
TK_API size_t tk_policy_dimensions(const struct tk_policy *p);

/* One dimension of a policy, from tk_policy_info(). */
struct tk_policy_info {
	/* "gcra", "token-bucket", "fixed-window", "sliding-window",
	 * "sliding-log", "quota", "leaky" or a strategy's name
	 * (tk_strategy_register()): the name in the policy string */
	char algorithm[16];
	/* "all" or "any" for a dimension of a composite; "" if simple */
	char composite[4];
	bool shaper; /* decisions carry a delay (leaky:) */
	/* What its decisions report as tk_decision.limit: the burst, the
	 * capacity, the limit L of a window or quota, the queue (units). */
	uint64_t limit;
	uint64_t
		dimensions; /* of the whole policy, as tk_policy_dimensions() */
};

/*
 * tk_policy_info() - dimension @dim (0 for a simple policy) of policy @p:
 * its algorithm, its limit, and what it is part of.  Copies up to @size
 * bytes into @out; pass sizeof(struct tk_policy_info) (a structure that
 * grows only by appending fields).  Returns 0, or -EINVAL for a NULL @p or
 * @out, or @dim not below tk_policy_dimensions(@p).  Pure: any thread, no
 * allocation.
 */
TK_API int tk_policy_info(const struct tk_policy *p, size_t dim,
			  struct tk_policy_info *out, size_t size);

/*
 * tk_policy_forecast() - what tk_limiter_forecast() answers, on any
 * store, for a key never seen: whether @cost units at @now (ns) would be
 * admitted, when (retry_after), and a new key's limit, remaining and
 * reset, as a peek reports them; or that the policy can never admit
 * that cost.  Returns 0
 * (the decision in *@out), -ERANGE (no state could ever admit @cost),
 * -EINVAL (NULL @p or @out, @cost 0), -EOVERFLOW (@now at or past
 * 2^63 ns).  Pure: any thread, no allocation, no store.
 */
TK_API int tk_policy_forecast(const struct tk_policy *p, uint64_t now,
			      uint64_t cost, struct tk_decision *out);

/*
 * tk_policy_change() - what the keys keep when policy @to replaces policy
 * @from on the same store, prefix and keys (a reload, a deploy): a bit
 * set over @to's dimensions, bit i set where dimension i reads the states
 * @from wrote as its own, so that their counts carry over; a dimension
 * whose bit is clear starts each key afresh, once (tk_limiter_open(3),
 * "Changing a policy").  0: every key starts afresh.  A simple policy is
 * dimension 0.  Returns -EINVAL for a NULL @from or @to.  Pure: any
 * thread, no allocation.
 */
TK_API int tk_policy_change(const struct tk_policy *from,
			    const struct tk_policy *to);

/* Algorithms of struct tk_policy_params. */
#define TK_ALG_GCRA 1		/* gcra:L/P[,burst=B] */
#define TK_ALG_TOKEN_BUCKET 2	/* token-bucket:capacity=C,refill=R/P */
#define TK_ALG_FIXED_WINDOW 3	/* fixed-window:L/W */
#define TK_ALG_SLIDING_WINDOW 4 /* sliding-window:L/W[,buckets=S] */
#define TK_ALG_SLIDING_LOG 5	/* sliding-log:L/W */
#define TK_ALG_QUOTA 6		/* quota:L/... */
#define TK_ALG_LEAKY 7		/* leaky:R/P[,max-queue=Q] */

/* Periods of a quota (struct tk_policy_params.cadence). */
#define TK_CADENCE_PERIOD 0 /* quota:L/P[,anchor=NS] */
#define TK_CADENCE_DAY 1    /* quota:L/day[,offset=] */
#define TK_CADENCE_WEEK 2   /* quota:L/week[,offset=][,week-start=] */
#define TK_CADENCE_MONTH 3  /* quota:L/month[,offset=] */

/* How tk_policy_build() combines its dimensions. */
#define TK_POLICY_SIMPLE 0 /* one dimension, no all() or any() */
#define TK_POLICY_ALL 1	   /* all(...) */
#define TK_POLICY_ANY 2	   /* any(...) */

/*
 * One dimension of a policy as numbers, for tk_policy_build(): the
 * fields of the policy string, 0 where the string would leave a value
 * out.  Start from TK_POLICY_PARAMS_INIT (.size tells the library which
 * fields exist; the structure grows only by appending fields).
 */
struct tk_policy_params {
	size_t size;		/* sizeof(struct tk_policy_params) */
	unsigned int algorithm; /* TK_ALG_* */
	/* L: requests per period (gcra), the limit of a window, log or
	 * quota; R: the refill (token-bucket) or rate (leaky) per period. */
	uint64_t limit;
	/* ns: P (gcra, token-bucket, leaky, a quota of TK_CADENCE_PERIOD)
	 * or the window W; 0 for a calendar quota. */
	uint64_t period;
	uint64_t burst;	      /* gcra: B (0: L); token-bucket: the capacity C */
	uint64_t buckets;     /* sliding-window: S (0: 10) */
	uint64_t max_queue;   /* leaky: Q, ns (0: none queues) */
	unsigned int cadence; /* quota: TK_CADENCE_* */
	/* quota of a day, week or month: seconds east of UTC, whole
	 * minutes, at most 14 h either way. */
	int32_t offset;
	unsigned int week_start; /* quota of a week: 0 Monday .. 6 Sunday */
	uint64_t anchor;	 /* quota of TK_CADENCE_PERIOD: ns */
};

#ifdef __cplusplus
#define TK_POLICY_PARAMS_INIT tk_policy_params_init()
#else
#define TK_POLICY_PARAMS_INIT                                                  \
	{                                                                      \
		.size = sizeof(struct tk_policy_params)                        \
	}
#endif

/* tk_policy_params_init() - params with every field 0 and .size set. */
static inline struct tk_policy_params tk_policy_params_init(void)
{
#ifdef __cplusplus
	struct tk_policy_params p = {};
#else
	struct tk_policy_params p = TK_POLICY_PARAMS_INIT;
#endif

	p.size = sizeof(p);
	return p;
}

/*
 * tk_policy_build() - the policy of @n dimensions @dims, combined as
 * @kind says (TK_POLICY_SIMPLE with @n 1, TK_POLICY_ALL or TK_POLICY_ANY
 * with @n 1 to TK_DIMENSIONS_MAX): the policy tk_policy_parse() makes of
 * its canonical string, which tk_policy_format() then writes.  Every
 * value is checked as the parser checks it, with the parser's errors:
 * -EINVAL (and, if @err is not NULL, err->message says what; and
 * err->position where in the canonical string) for a value out of range,
 * an unknown algorithm, cadence or kind, a non-zero field the algorithm
 * does not take, or a .size of 0; -ENOMEM.  @dims[i] are .size apart,
 * each's .size that of the first.  Any thread.
 */
TK_API int tk_policy_build(struct tk_policy **out, unsigned int kind,
			   const struct tk_policy_params *dims, size_t n,
			   struct tk_parse_error *err);

/* tk_policy_free() - free a parsed policy; NULL is ignored. */
TK_API void tk_policy_free(struct tk_policy *p);

/*
 * User-defined strategies (tk_strategy_register(3)): an algorithm written
 * in C, a pure transition over a fixed-size state, which policies then
 * name as "NAME:ARG" next to the built-in algorithms, alone or as a
 * dimension of all()/any(), on every store.
 */

/* Most bytes of a strategy's state: with the strategy's identity and the
 * state's expiry, at most two cache lines of a zone's block arena (the
 * reasons: tk_strategy_register(3), NOTES). */
#define TK_STRATEGY_STATE_MAX 32

/* What a strategy's check() asks of the store. */
#define TK_STRATEGY_KEEP 0  /* leave the key's state as it was */
#define TK_STRATEGY_WRITE 1 /* write the new state, for *ttl ns */

/*
 * A strategy's definition.  Start from TK_STRATEGY_INIT (.size tells the
 * library which fields exist; the structure grows only by appending).
 */
struct tk_strategy {
	size_t size; /* sizeof(struct tk_strategy) */
	/* Its name in policy strings: 1 to 15 of a-z and '-', starting with
	 * a letter, no built-in algorithm's name, "all" or "any". */
	const char *name;
	size_t state_size; /* bytes, 1 to TK_STRATEGY_STATE_MAX */
	/*
	 * check() - the transition: @state (state_size bytes, all zero for
	 * a key with no live state; its bytes are the caller's to change)
	 * at @now (ns) for @cost units, under the policy's argument @arg
	 * ("NAME:ARG").  Fills *@d (zeroed before the call; .allowed,
	 * .limit, .remaining, .reset_at, .retry_after) and returns
	 * TK_STRATEGY_WRITE, with *@ttl the ns (1 to 2^62) the new @state
	 * lives from @now, or TK_STRATEGY_KEEP (a denial: nothing changes),
	 * or -ERANGE (@cost can never be admitted).  @cost 0 is a peek: say
	 * what is left; what it writes is never stored.  Pure: it may run
	 * several times for one check (a store's retries), on any thread,
	 * and must not block or call the library.
	 */
	int (*check)(void *ctx, unsigned char *state, uint64_t now,
		     uint64_t cost, uint64_t arg, struct tk_decision *d,
		     uint64_t *ttl);
	void *ctx; /* handed to check() */
};

#ifdef __cplusplus
#define TK_STRATEGY_INIT tk_strategy_init()
#else
#define TK_STRATEGY_INIT                                                       \
	{                                                                      \
		.size = sizeof(struct tk_strategy)                             \
	}
#endif

/* tk_strategy_init() - a definition with every field 0 and .size set. */
static inline struct tk_strategy tk_strategy_init(void)
{
#ifdef __cplusplus
	struct tk_strategy s = {};
#else
	struct tk_strategy s = TK_STRATEGY_INIT;
#endif

	s.size = sizeof(s);
	return s;
}

/*
 * tk_strategy_register() - make strategy @s known to policy strings, for
 * the life of the process (the definition is copied; @s->ctx must stay
 * valid).  Its states are kept apart from those of every other strategy
 * and algorithm by its name and state_size.  Returns 0, -EINVAL (a NULL
 * @s or check, a .size of 0, a bad name or state_size), -EEXIST (the
 * name is taken), -ENOMEM.  Any thread.
 */
TK_API int tk_strategy_register(const struct tk_strategy *s);

/*
 * Clocks.  The system clock reads CLOCK_REALTIME and is the only place the
 * library reads time.  A manual clock holds a value set by its owner; a
 * custom clock calls back into the application.
 */

/* The process-wide system clock.  Never NULL; never freed. */
TK_API struct tk_clock *tk_clock_system(void);

/*
 * tk_clock_coarse() - the process-wide coarse clock: CLOCK_REALTIME_COARSE,
 * cheaper to read, but only as fine as the kernel's tick (1-4 ms; see
 * clock_getres(2)).  Opt-in.  Never NULL; never freed.
 */
TK_API struct tk_clock *tk_clock_coarse(void);

/*
 * tk_clock_tsc() - the process-wide TSC clock: CLOCK_REALTIME read
 * through the x86-64 time-stamp counter, calibrated against it and
 * re-anchored to it every second; never runs backwards within a process
 * and stays within 50 us of CLOCK_REALTIME while that is not stepped
 * (see tk_clock_tsc(3)).  Opt-in.  The first call calibrates (about
 * 20 ms).  Where the TSC is not invariant, and on other CPUs, returns
 * the system clock: tk_clock_kind() tells which.  Never NULL; never
 * freed.  Thread-safe; the calibration survives fork().
 */
TK_API struct tk_clock *tk_clock_tsc(void);

/* What a clock reads (tk_clock_kind()). */
enum tk_clock_kind {
	TK_CLOCK_SYSTEM = 1, /* CLOCK_REALTIME */
	TK_CLOCK_COARSE = 2, /* CLOCK_REALTIME_COARSE */
	TK_CLOCK_TSC = 3,    /* the time-stamp counter (tk_clock_tsc()) */
	TK_CLOCK_MANUAL = 4,
	TK_CLOCK_CUSTOM = 5
};

/*
 * tk_clock_kind() - what @c reads: a TK_CLOCK_* value, or -EINVAL for
 * NULL.  Pure; any thread.
 */
TK_API int tk_clock_kind(const struct tk_clock *c);

/*
 * tk_clock_manual_new() - a clock that reads @start_ns until moved.
 *
 * Returns 0, or -EINVAL if @out is NULL or @start_ns >= 2^63, -ENOMEM.
 */
TK_API int tk_clock_manual_new(struct tk_clock **out, uint64_t start_ns);

/*
 * tk_clock_custom_new() - a clock that calls @now_fn(@ctx, &ns).
 *
 * @now_fn returns 0 and stores the time, or non-zero on failure (the
 * reading call then returns -EIO).  It may be called from several threads
 * at once.  Returns 0, or -EINVAL, -ENOMEM.
 */
TK_API int tk_clock_custom_new(struct tk_clock **out,
			       int (*now_fn)(void *ctx, uint64_t *ns),
			       void *ctx);

/*
 * tk_clock_set() - move a manual clock to @ns, backwards if need be.
 *
 * Returns 0, -EINVAL if @c is not a manual clock, -ERANGE if @ns >= 2^63.
 * Concurrency: one atomic store; safe against readers and other movers.
 */
TK_API int tk_clock_set(struct tk_clock *c, uint64_t ns);

/*
 * tk_clock_advance() - move a manual clock forward by @delta_ns.
 *
 * Returns 0, -EINVAL if @c is not a manual clock, -ERANGE if the time
 * would reach 2^63 ns (the clock is then unchanged).  Concurrent advances
 * all take effect (a CAS loop).
 */
TK_API int tk_clock_advance(struct tk_clock *c, uint64_t delta_ns);

/*
 * tk_clock_now() - read a clock.
 *
 * Returns 0 and stores ns since the epoch in *@out, -EINVAL for NULL
 * arguments, -EIO if the source fails, -EOVERFLOW for a reading >= 2^63.
 */
TK_API int tk_clock_now(struct tk_clock *c, uint64_t *out);

/* tk_clock_free() - free a manual or custom clock; NULL and the
 * process-wide clocks are ignored.  No limiter or store may still use @c. */
TK_API void tk_clock_free(struct tk_clock *c);

/*
 * Stores.  A spec names a backend: "memory" is the in-process, lock-free
 * store, "shm:NAME" a zone, "redis://..." a Redis server.
 */

/*
 * tk_store_open() - open a store from a spec string: "memory" (in this
 * process), "shm:NAME" (a zone shared by the processes of this host,
 * created from the zone_* options and TK_OPT_ZONE_* flags if absent,
 * unless TK_OPT_ZONE_NO_CREATE), or a Redis server shared by many hosts:
 * "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]",
 * "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]",
 * "redis+cluster://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][?OPTIONS]"
 * or over TLS "rediss://..." (as redis://, with tls_ca=, tls_cert=,
 * tls_key=; builds with hiredis_ssl), OPTIONS timeout=,
 * connect_timeout=, key_prefix=, server_time= (see tk_store_open(3); it
 * runs every algorithm and composite, and connects on first use, one
 * connection per thread).
 *
 * @opts may be NULL; a store uses opts->clock (for its reclaimer),
 * opts->max_keys (memory), opts->reclaim_interval, opts->reclaim_grace and
 * opts->flags.  Limiters that share a store should use the same clock.
 * Returns 0, -EINVAL for an unknown spec, a bad zone name, a zone with the
 * wrong magic, or invalid options (max_keys of 2^32 or more, unknown
 * flags, opts->store set, a zone_mode writable by every user; a rediss://
 * TLS file that cannot be loaded), -ENAMETOOLONG for a long prefix,
 * -ENOTSUP for a backend this build lacks (Redis without hiredis; rediss://
 * without hiredis_ssl: tk_store_validate() says which),
 * -ENOENT (zone absent with TK_OPT_ZONE_NO_CREATE), -EPROTO (a zone of another
 * layout version, truncated, resized or corrupt), -EACCES (a zone's file the
 * trust rules refuse: see TK_OPT_ZONE_UID and tk_zone_access(); or one this
 * process may not read and write), -ENOMEM, -EIO, or a clock error.
 *
 * A zone's file truncated while it is open (by any process that may write
 * it) does not kill the process with SIGBUS: the call that meets it
 * returns -EPROTO, and so does every later call on every store of that
 * zone in this process (tk_store_stats() too); close them and open the
 * zone again.  This takes a process-wide SIGBUS handler, installed at the
 * first open of a zone, which maps zero pages over a truncated zone and
 * passes every other SIGBUS to the handler it replaced; a handler
 * installed later must pass on what it does not handle.  A process maps
 * at most 1024 zones at once (-ENOMEM beyond).
 */
TK_API int tk_store_open(struct tk_store **out, const char *spec,
			 const struct tk_options *opts);

/*
 * tk_store_validate() - would tk_store_open() take the text of @spec, in
 * this build?  Opens nothing: no connection, no zone; a rediss:// spec's
 * TLS files are loaded.  Returns 0, or the error tk_store_open() would
 * return for the text: -EINVAL (not a spec; a zone name that is not
 * valid; a Redis URL, option or TLS file in error, the byte offset
 * named) or -ENOTSUP (a backend or form this build lacks: Redis without
 * hiredis, rediss:// without hiredis_ssl), with a sentence saying why in
 * @why (at most @len bytes with the NUL, as snprintf(3); "" on success;
 * @why may be NULL if @len is 0).  The sentence never quotes a password.
 * -EINVAL too for a NULL @spec, or a NULL @why with a non-zero @len;
 * -ENOMEM.  Any thread; does not block.
 */
TK_API int tk_store_validate(const char *spec, char *why, size_t len);

/*
 * tk_store_probe() - would a store of @spec, with @opts (may be NULL),
 * open and answer a check now?  Returns 0 or the error a check would
 * meet, with a sentence saying why in @why (at most @len bytes with the
 * NUL; "" or a note on success; @why may be NULL if @len is 0), which
 * tells apart the refusals -EACCES covers: a zone the trust rules
 * refuse ("zone NAME is not trusted or not accessible: it is owned by
 * uid ..."), a Redis or PostgreSQL server that refused the login ("the
 * server of redis://u:***@host refused the login: ..."), and a
 * PostgreSQL server that let the user in but denied a privilege ("...
 * let the user in but denied a privilege the store needs: ...").  A zone
 * is judged as tk_zone_access() judges it, never created or attached; a
 * server is connected to and pinged (tk_store_ping()), then closed; the
 * memory store always answers.  The sentence never quotes a password.  Errors
 * as tk_store_validate(), tk_zone_access() and tk_store_ping().  Blocks
 * as tk_store_ping(); any thread.
 */
TK_API int tk_store_probe(const char *spec, const struct tk_options *opts,
			  char *why, size_t len);

/*
 * tk_spec_redact() - store spec @spec as a message may show it: the
 * password replaced by "***" ("redis://u:***@host").  After "://" (from
 * the start of a spec without it, a mistyped one), everything from the
 * first ':' to the last '@' is taken for the password: all that any spec
 * the library takes holds there, never less, also in a spec it refuses,
 * so that a mistyped password with a raw '/', '?' or '@' stays hidden;
 * and more where an option holds '@' (key_prefix=a@b hides the host too).
 * The value of a sentinel_password= option is "***" up to the next '&'.
 * A spec without a ':' before its last '@' is copied as it is.  Writes at
 * most @len bytes including the NUL, as snprintf(3) (a result cut short is
 * still redacted), and returns the length of the whole result; -EINVAL
 * for a NULL @spec, a NULL @buf with a non-zero @len, or a spec longer
 * than INT_MAX - 3 bytes.  Pure: any thread, no allocation,
 * async-signal-safe.
 */
TK_API int tk_spec_redact(const char *spec, char *buf, size_t len);

/*
 * tk_store_stats() - copy up to @size bytes of counters into @out.
 *
 * Pass sizeof(struct tk_stats); an older, smaller structure gets its
 * prefix.  Counters are read one by one, not as one snapshot.
 * Returns 0, -EINVAL for NULL arguments, or -EPROTO for a zone whose file
 * was truncated under the store (see tk_store_open()).
 */
TK_API int tk_store_stats(struct tk_store *s, struct tk_stats *out,
			  size_t size);

/*
 * tk_store_close() - close a store opened with tk_store_open().
 *
 * Stops its reclaimer thread and frees all state.  No limiter may still
 * use @s.  NULL is ignored.
 */
TK_API void tk_store_close(struct tk_store *s);

/*
 * What tk_store_ping() found.  It grows only by appending fields; the
 * library fills the prefix the caller's size covers.
 */
struct tk_store_ping {
	/* the backend: "memory", "shm", "redis" or "postgresql" */
	char store[16];
	char server[272]; /* Redis: "HOST:PORT" or the socket path;
			     PostgreSQL: "HOST:PORT"; else "" */
	char version[32]; /* Redis: the server's redis_version; PostgreSQL:
			     its server_version; else the library's,
			     tk_version() */
	/* How checks run: "functions" (Redis 7 FCALL), "evalsha" (older
	 * servers), "cas" (PostgreSQL: compare-and-set by the library),
	 * "memory" or "zone" (in this host, no server). */
	char engine[16];
	uint64_t rtt; /* ns: one PING's round trip; 0 without a server */
	/* Redis: the server's maxmemory-policy, of which only "noeviction"
	 * keeps every live state; "" if the server would not say (CONFIG
	 * refused by its ACL, or renamed away) and without a server. */
	char maxmemory_policy[32];
};

/*
 * tk_store_ping() - reach the store's server and say what it is.
 *
 * A Redis store connects if it must (the connection of the calling
 * thread; for a cluster, the master of slot 0), makes sure of the engine
 * its checks use (loading the check script as a check would), times one
 * PING, reads INFO server and CONFIG GET maxmemory-policy.  The memory store
 * and zones have no server: they answer at once with rtt 0.  Copies up to @size
 * bytes of the result into @out; pass sizeof(struct tk_store_ping).  Never
 * shows a password.
 *
 * Returns 0, -EINVAL for NULL arguments, and for a Redis store the errors
 * of a check: -ETIMEDOUT, -ECONNREFUSED, -ECONNRESET, -EACCES, -EROFS,
 * -ENXIO, -EMFILE, -ENOMEM,
 * -EPROTO (an unexpected reply), -EAGAIN (a cluster without a master for
 * slot 0); a zone -EPROTO if its file was truncated under it.
 * Concurrency: as a check; blocks at most the spec's connect_timeout plus
 * its timeout for each of its (at most four) commands.
 */
TK_API int tk_store_ping(struct tk_store *s, struct tk_store_ping *out,
			 size_t size);

/*
 * Zones: tables in POSIX shared memory that unrelated processes share
 * without locks ("shm:NAME" stores).  NAME is 1 to 200 characters of
 * [A-Za-z0-9._-], not starting with '.' (the file /dev/shm/throttlekit.NAME),
 * or an absolute path ending in such a name (the file at that path), whose
 * directory nobody but root, the caller or the named owner may write and
 * which is reached without a symbolic link: -EACCES otherwise, -ENOENT if
 * it does not exist.  A server keeps its zones there so that no other
 * user can take their names first.  See throttlekit(7).
 */

/*
 * tk_zone_create() - create zone @name from @opts (zone_capacity,
 * zone_mode, zone_gid with TK_OPT_ZONE_GID, TK_OPT_ZONE_REFUSE_FULL,
 * reclaim_grace); @opts may be NULL.  Of processes creating one zone at
 * once exactly one gets 0, the others -EEXIST.  zone_uid with
 * TK_OPT_ZONE_UID gives the file that owner.  Returns 0, -EEXIST if it
 * exists, -EINVAL (bad name or options; a mode writable by every user),
 * -EACCES (no right to create it, or to give it that owner or group),
 * -ENOENT (no zone directory), -ENAMETOOLONG, -ENOMEM, -EIO.
 */
TK_API int tk_zone_create(const char *name, const struct tk_options *opts);

/*
 * tk_zone_info() - geometry, occupancy and counters of zone @name; copies
 * up to @size bytes into @out.  The occupancy comes from a full scan.
 * Returns 0, -ENOENT, -EINVAL (bad name; not a zone), -EPROTO (another
 * layout version, truncated or corrupt, also while it is read), -EACCES
 * (refused by the trust rules, see TK_OPT_ZONE_UID), -ENOMEM, -EIO.
 *
 * Every zone function has an _opts variant whose @opts name the trusted
 * owner and group (zone_uid with TK_OPT_ZONE_UID, zone_gid with
 * TK_OPT_ZONE_GID): how root manages a zone owned by a server's user.
 * @opts may be NULL; other options are ignored.
 */
TK_API int tk_zone_info(const char *name, struct tk_zone_info *out,
			size_t size);
TK_API int tk_zone_info_opts(const char *name, const struct tk_options *opts,
			     struct tk_zone_info *out, size_t size);

/*
 * tk_zone_verify() - as tk_zone_info(), and -EBADMSG if the scan found
 * any broken invariant (a key in two slots, a malformed slot) or a state
 * that does not validate (info.corrupt).
 */
TK_API int tk_zone_verify(const char *name, struct tk_zone_info *out,
			  size_t size);
TK_API int tk_zone_verify_opts(const char *name, const struct tk_options *opts,
			       struct tk_zone_info *out, size_t size);

/*
 * tk_zone_walk() - call @fn(@ctx, slot, fingerprint, state) for every
 * committed key of zone @name (keys are stored only as fingerprints;
 * state is the slot's state word or block reference); stops early if @fn
 * returns non-zero, and returns that. Errors as tk_zone_info().
 */
TK_API int tk_zone_walk(const char *name,
			int (*fn)(void *ctx, uint64_t slot,
				  uint64_t fingerprint, uint64_t state),
			void *ctx);
TK_API int tk_zone_walk_opts(const char *name, const struct tk_options *opts,
			     int (*fn)(void *ctx, uint64_t slot,
				       uint64_t fingerprint, uint64_t state),
			     void *ctx);

/*
 * One record of a zone's rings of recent keys (tk_zone_recent()): a
 * check's store key, read back as the limiter's prefix and the caller's
 * key.  The pointers are valid during the callback only.
 */
struct tk_zone_recent {
	int denied;	    /* 1: a denial; 0: a sampled check */
	int truncated;	    /* 1: the ring kept only the key's first bytes */
	int dimension;	    /* a composite's dimension, or -1 */
	uint64_t ticket;    /* its place in its ring, counting from 0 */
	uint64_t count;	    /* checks it stands for (see tk_zone_recent()) */
	const char *prefix; /* the limiter's prefix (tk_options) */
	size_t prefix_len;
	const char *key; /* the caller's key, as much as was kept */
	size_t key_len;
};

/*
 * tk_zone_recent() - call @fn(@ctx, record) for each record of zone
 * @name's rings of recent keys: its last 512 records of denials (a
 * thread's denials of one key in a row add to one record's count), then
 * its last 512 sampled checks (about one check in 64 of each thread,
 * allowed or denied; count 1), each oldest first; stops early if @fn returns
 * non-zero, and returns that.  Checks write the rings without locks; a record
 * being written or torn by a writer is skipped, never passed on.  Only zones
 * keep rings.  Errors as tk_zone_info(), and -EINVAL for a NULL @fn.
 */
TK_API int tk_zone_recent(const char *name,
			  int (*fn)(void *ctx, const struct tk_zone_recent *r),
			  void *ctx);
TK_API int tk_zone_recent_opts(const char *name, const struct tk_options *opts,
			       int (*fn)(void *ctx,
					 const struct tk_zone_recent *r),
			       void *ctx);

/*
 * tk_zone_sweep() - one full reclamation pass over zone @name at time
 * @now (ns, on the clock of the limiters that use the zone): frees every
 * state expired for the zone's grace, every abandoned insert and every
 * state block no key can reference any more.  Checks do this
 * incrementally; this is for operators and tests.  Errors as
 * tk_zone_info(), and -EINVAL for @now of 2^63 or more.
 */
TK_API int tk_zone_sweep(const char *name, uint64_t now);
TK_API int tk_zone_sweep_opts(const char *name, const struct tk_options *opts,
			      uint64_t now);

/*
 * tk_zone_destroy() - remove zone @name.  Processes attached keep their
 * mapping until they close it; new attaches create a new zone (also in a
 * process whose older stores still have the removed one).  A name the
 * trust rules refuse (a symbolic link, another user's file) is not
 * removed.  Returns 0, -ENOENT, -EINVAL, -EACCES, -EIO.
 */
TK_API int tk_zone_destroy(const char *name);
TK_API int tk_zone_destroy_opts(const char *name,
				const struct tk_options *opts);

/*
 * tk_zone_access() - would this process, with @opts (the trusted owner
 * and group; may be NULL), be allowed to attach zone @name?  Returns 0,
 * or the error an attach would return (-EACCES, -ENOENT, -EINVAL, -EIO),
 * and writes a sentence saying why into @why (at most @len bytes with
 * the NUL; @why may be NULL if @len is 0), such as "it is owned by uid
 * 65534, neither this process's (0) nor root; name that owner to trust
 * it".  The answer describes the file now; a later attach judges again.
 */
TK_API int tk_zone_access(const char *name, const struct tk_options *opts,
			  char *why, size_t len);

/* One rule of a zone's rule directory, from tk_zone_rules(). */
struct tk_zone_rule {
	char name[128];
	char policy[704]; /* as the rule's limiter was opened with it */
	char prefix[TK_PREFIX_MAX + 1];
	char address[24]; /* before a client's address; see has_address */
	char key[24];	  /* before a client's key; see has_key */
	bool has_address, has_key;
	unsigned int v6_prefix, v4_prefix; /* an address's mask, bits */
	uint64_t checks, denies;	   /* counted by every process since the
					    * rule was first registered */
};

/*
 * tk_zone_rules() - call @fn(@ctx, rule) for each rule registered in zone
 * @name (tk_options.rule), in directory order; stops early if @fn returns
 * non-zero, and returns that.  A rule whose entry is being written is
 * skipped.  Errors as tk_zone_info().
 */
TK_API int tk_zone_rules(const char *name, const struct tk_options *opts,
			 int (*fn)(void *ctx, const struct tk_zone_rule *r),
			 void *ctx);

/*
 * tk_zone_reset_client() - forget the state rule @rule of zone @name
 * keeps for @client: an address (masked as the rule masks one) for a rule
 * that keys addresses, a key for one that keys keys, and both when
 * @client is an address and the rule keys both.  Every dimension, and the
 * states a group check keeps (tk_limiter_check_group()).  Returns the
 * number of client keys reset (1 or 2), -ESRCH (no rule of that name:
 * tk_zone_rules() lists them), -EINVAL (@client is neither an address the
 * rule keys nor a key: an address-only rule given a key), -ENAMETOOLONG,
 * and the errors of tk_zone_info() and tk_limiter_reset().
 */
TK_API int tk_zone_reset_client(const char *name, const struct tk_options *opts,
				const char *rule, const char *client);

/*
 * tk_limiter_open() - bind a policy, a store and a clock.
 *
 * @policy is a policy string such as "gcra:100/s,burst=20".  @store is a
 * store spec ("memory"), or NULL when @opts->store names an open store (the
 * limiter then never closes it); exactly one of the two must be given.
 * @opts may be NULL.  The prefix is copied; keys of limiters with
 * different prefixes never meet, and limiters sharing a store and a prefix
 * share keys, so give each policy its own prefix.
 *
 * Under TK_FAIL_OPEN or TK_FAIL_CLOSED a limiter that opens its own
 * store opens it with TK_OPT_RETRY_OPEN: a store that cannot be opened
 * for a reason of its own (a zone absent, refused or corrupt) does not
 * fail the open; the limiter answers every check by its fail policy until
 * the store can be opened, so that a caller needs no case of its own for
 * it.  A limiter on a failed store of @opts->store does the same.
 *
 * Returns 0, -EINVAL for an invalid policy (an unknown algorithm
 * included), spec or option, -ENAMETOOLONG for a prefix longer than
 * TK_PREFIX_MAX, -ENOTSUP for a backend this build lacks, -ENOMEM, or
 * (when it opens the store under TK_FAIL_ERROR) any error of
 * tk_store_open().
 */
TK_API int tk_limiter_open(struct tk_limiter **out, const char *policy,
			   const char *store, const struct tk_options *opts);

/*
 * tk_limiter_check() - decide whether @cost units for @key are admitted now.
 *
 * Returns 0 and fills *out (out->allowed says admit or deny; a denial is
 * not an error), -EINVAL for bad arguments (NULL, empty key, cost 0),
 * -ENAMETOOLONG for a key longer than TK_KEY_MAX, -ERANGE if @cost can never
 * be admitted under this policy, -EPROTO if the key holds state of another
 * algorithm (a shared store and prefix), -ENOMEM if a new key cannot be
 * stored, -ENOSPC if a bounded store finds no room even by eviction (the
 * memory store only when more threads insert at once than it has keys; a
 * zone created with TK_OPT_ZONE_REFUSE_FULL when full), -EIO if a zone's
 * keys kept changing under the check for over a second (a livelock, not
 * contention), or a clock error.  On a
 * Redis store also -ETIMEDOUT, -ECONNREFUSED, -ECONNRESET (the server
 * timed out, cannot be reached, or broke the connection), -EACCES (AUTH
 * refused), -ENOMEM (the server's OOM), -EROFS (the server is a replica),
 * -ENXIO (the server has no database of the spec's number), -EMFILE (no
 * file descriptor left for a connection), -EPROTO (an unexpected reply),
 * -EAGAIN (a Redis Cluster reconfiguring: redirected or told to retry
 * more than 5 times).
 *
 * Concurrency: safe from any thread; lock-free (one CAS on the key's state
 * in the common case; on Redis, one round trip on the thread's own
 * connection, which blocks for at most the spec's timeouts).  After
 * fork(): usable in the child as is.
 */
TK_API int tk_limiter_check(struct tk_limiter *l, const char *key,
			    size_t key_len, uint64_t cost,
			    struct tk_decision *out);

/*
 * tk_limiter_peek() - report the key's state without consuming anything.
 *
 * out->remaining is what could be admitted now, out->allowed is
 * remaining >= 1 and out->retry_after the ns until one unit is available.
 * Returns as tk_limiter_check(), without -ERANGE.
 */
TK_API int tk_limiter_peek(struct tk_limiter *l, const char *key,
			   size_t key_len, struct tk_decision *out);

/*
 * tk_limiter_forecast() - when would @cost units be admitted, without
 * consuming them.  out->allowed says "now"; out->retry_after says how long
 * until then.  Returns as tk_limiter_check().
 */
TK_API int tk_limiter_forecast(struct tk_limiter *l, const char *key,
			       size_t key_len, uint64_t cost,
			       struct tk_decision *out);

/*
 * tk_limiter_check_many() - check @n requests at one clock reading.
 *
 * Each request is checked in order, as by tk_limiter_check().  @rcs, if
 * not NULL, receives each request's return code; out[i] is meaningful only
 * where that code is 0.  Returns 0 if every request succeeded, otherwise
 * the first failing request's code (the remaining requests are still
 * checked).  If the clock cannot be read, nothing is checked, @rcs is not
 * written and the clock error is returned.  @n may be 0.
 */
TK_API int tk_limiter_check_many(struct tk_limiter *l,
				 const struct tk_request *reqs, size_t n,
				 struct tk_decision *out, int *rcs);

/*
 * tk_limiter_check_keys() - a composite check with one key per dimension.
 *
 * @n must equal tk_policy_dimensions() of the limiter's policy.  all()
 * admits only if every dimension admits, and then every dimension
 * consumes; any() admits if one does, and only the admitting dimensions
 * consume.  On the memory store the whole step is one atomic transition
 * over all keys.  tk_limiter_check() on a composite uses its one key for
 * every dimension.  Returns as tk_limiter_check(), and -EINVAL if @n is
 * wrong.
 */
TK_API int tk_limiter_check_keys(struct tk_limiter *l,
				 const struct tk_key *keys, size_t n,
				 uint64_t cost, struct tk_decision *out);

/* Most dimensions one tk_limiter_check_group() call decides together. */
#define TK_GROUP_DIMENSIONS_MAX 8
/*
 * Most dimensions of any policy (all(), any()) and of any group: an array
 * of TK_DIMENSIONS_MAX decisions always holds a check's per-dimension
 * decisions.
 */
#define TK_DIMENSIONS_MAX 8

/*
 * tk_limiter_dimensions() - how many per-dimension decisions
 * tk_limiter_check_group() writes for the @n limiters @ls: the sum of
 * their policies' tk_policy_dimensions(), at most TK_DIMENSIONS_MAX for
 * a group it takes (a larger sum says the group has too many).  With @n
 * 1, the dimensions of one limiter's policy.  Returns 0 for a NULL @ls,
 * @n 0 or a NULL limiter.  Pure: any thread, no allocation.
 */
TK_API size_t tk_limiter_dimensions(struct tk_limiter *const *ls, size_t n);

/*
 * tk_limiter_check_group() - one atomic check over @n limiters that share
 * a store: @ls[i] for @keys[i], admitted only if every limiter admits, and
 * then every one consumes @cost (an all() over the limiters).
 *
 * A group keeps each limiter's states under the keys of its own checks,
 * so a limiter counts the same in every group it is checked in and as
 * with tk_limiter_check(), on every store: a key's one state, however it
 * is checked (tk_limiter_check_group(3), "States").
 * Each policy must be a simple one or all(), or the group one any()
 * limiter alone (which then decides as tk_limiter_check_keys() does, with
 * its dimensions' decisions in @dims); the group has at most
 * TK_GROUP_DIMENSIONS_MAX dimensions in all, and the first limiter's
 * clock reads the time.  *@out is the representative decision as for
 * all(); @dims, if not NULL, receives one decision per dimension, limiter
 * by limiter in declaration order (@ndims of them; dimensions past @ndims
 * are not written; tk_limiter_dimensions() counts them).  A store failure
 * follows the strictest fail policy of the group (closed, then error,
 * then open).
 *
 * The limiters share one store, or each opened the same zone or the same
 * Redis server, database and key_prefix ("memory" is private to each
 * open).  Returns as tk_limiter_check(), -EXDEV if the limiters reach
 * different stores' states, and -EINVAL if @n is 0, a policy is any() in
 * a group of several or there are too many dimensions.
 */
TK_API int tk_limiter_check_group(struct tk_limiter *const *ls,
				  const struct tk_key *keys, size_t n,
				  uint64_t cost, struct tk_decision *out,
				  struct tk_decision *dims, size_t ndims);

/*
 * tk_limiter_policy() - the limiter's policy, valid until the limiter is
 * closed, or, for a policy set by tk_limiter_set_policy(), until the
 * next tk_limiter_set_policy() on it begins (for tk_policy_format(),
 * tk_policy_dimensions() and tk_http_headers()).  Never fails for a
 * valid limiter.
 */
TK_API const struct tk_policy *tk_limiter_policy(const struct tk_limiter *l);

/*
 * tk_limiter_reserve() - a check of @cost units for @key that can be
 * taken back (x/time/rate's ReserveN): as tk_limiter_check(), and, when
 * admitted, *@res a reservation of the units consumed, which
 * tk_reservation_cancel() gives back if the work did not happen and
 * tk_reservation_free() releases; NULL when denied (nothing consumed).
 * Returns 0 (the decision in *@out) or as tk_limiter_check(); the fail
 * policy does not apply (a store failure is its error).  The limiter and
 * its store must stay open while the reservation lives.  Concurrency: as
 * tk_limiter_check(); one reservation is used by one thread at a time.
 */
TK_API int tk_limiter_reserve(struct tk_limiter *l, const char *key,
			      size_t key_len, uint64_t cost,
			      struct tk_reservation **res,
			      struct tk_decision *out);

/*
 * tk_reservation_cancel() - give the reservation's units back, by the
 * refund rules of tk_limiter_reserve(3): a key unchanged since gets its
 * state before the check back exactly; a key checked since loses only
 * the reservation's units where counts make that exact (windows, quotas,
 * logs, sliding windows), and otherwise keeps them (gcra, token-bucket,
 * leaky: fewer admitted, never more).  Returns the number of dimensions
 * that got their units back (0 .. tk_policy_dimensions()), -EALREADY if
 * the reservation was cancelled before, -EINVAL for NULL, or a store's
 * or clock's error (on Redis, the refund script's: see
 * tk_limiter_reserve(3)).
 */
TK_API int tk_reservation_cancel(struct tk_reservation *r);

/* tk_reservation_free() - release a reservation (its units stay taken
 * unless it was cancelled); NULL is ignored. */
TK_API void tk_reservation_free(struct tk_reservation *r);

/*
 * tk_limiter_set_policy() - replace the limiter's policy at runtime with
 * the policy string @policy (x/time/rate's SetLimit and SetBurst): the
 * same store, prefix, clock and fail policy, and the keys keep their
 * counts exactly where a limiter opened on @policy would find them
 * (tk_limiter_open(3), "Changing a policy").  Returns 0, -EINVAL for a
 * NULL argument or an invalid policy, -ENOTSUP for a policy the store
 * cannot run, -ENOMEM; on failure the limiter is unchanged.
 *
 * Concurrency: safe from any thread while others check: each call on
 * the limiter runs wholly under the old policy or wholly under the new
 * one (RCU: readers take no lock).  Blocks until calls that began under
 * the policy it replaces have returned; never call it from a callback of
 * the library (a custom clock, a wait's @cancelled).  The policy it
 * replaces, if set by an earlier call, is freed before it returns: a
 * pointer tk_limiter_policy() returned for it is then invalid.
 */
TK_API int tk_limiter_set_policy(struct tk_limiter *l, const char *policy);

/*
 * tk_fail_parse() - the fail policy named by the @len bytes at @text:
 * "error" (TK_FAIL_ERROR), "open" (TK_FAIL_OPEN) or "closed"
 * (TK_FAIL_CLOSED), exactly so (lower case, nothing around it).  Returns
 * 0 and stores it in *@out; -EINVAL (*@out unchanged) for any other text,
 * a NULL @out, or a NULL @text with a non-zero @len.  Pure: any thread.
 */
TK_API int tk_fail_parse(const char *text, size_t len, unsigned int *out);

/*
 * tk_decision_degraded() - the decision that fail policy @fail makes for
 * policy @p at time @now (ns) when its store or clock cannot decide, as
 * every check of a limiter makes it: allowed under TK_FAIL_OPEN, denied
 * under TK_FAIL_CLOSED; limit that of the first dimension
 * (tk_policy_info()), remaining 0, reset_at @now, retry_after 0 when
 * allowed and one second when denied, delay 0, degraded set.  For a
 * binding that must answer without a limiter's check.  Returns 0 and
 * fills *@out, or -EINVAL (*@out unchanged) for a NULL @p or @out, or
 * @fail not TK_FAIL_OPEN or TK_FAIL_CLOSED.  Pure: any thread, no clock.
 */
TK_API int tk_decision_degraded(const struct tk_policy *p, unsigned int fail,
				uint64_t now, struct tk_decision *out);

/*
 * tk_limiter_wait() - block until @cost units for @key are admitted, on
 * any policy (x/time/rate's WaitN).
 *
 * A shaper (a simple leaky: policy) reserves at once and sleeps its
 * delay; a full queue returns 0 with out->allowed false at once.  Every
 * other policy, composites included, checks, and while the check is
 * denied sleeps the retry_after it reported and checks again: nothing is
 * consumed while waiting, and the check itself decides each time, so
 * waiters are admitted exactly at the policy's rate.  An admission that
 * queues in a shaper dimension then sleeps its delay.  Sleeps are on the
 * monotonic clock in chunks of at most 100 ms, calling @cancelled(@ctx)
 * (if not NULL) before each.  Returns 0 with out->allowed true once
 * admitted (and the delay slept); -ECANCELED if @cancelled returned
 * non-zero (a shaper's reservation stays consumed; a wait for admission
 * consumed nothing); -ERANGE at once if @cost can never be admitted;
 * otherwise as tk_limiter_check().  Blocks; never call it from a signal
 * handler.
 */
TK_API int tk_limiter_wait(struct tk_limiter *l, const char *key,
			   size_t key_len, uint64_t cost,
			   int (*cancelled)(void *ctx), void *ctx,
			   struct tk_decision *out);

/*
 * tk_limiter_reset() - forget @key's state, as if it had never been seen.
 *
 * Returns 0 (also when the key held no state), -EINVAL, -ENAMETOOLONG;
 * on a zone also -EPROTO (its file truncated, see tk_store_open()) and
 * -EIO (the key's slots kept changing under the reset for over a second).
 * A check racing a reset is ordered entirely before or after it.
 */
TK_API int tk_limiter_reset(struct tk_limiter *l, const char *key,
			    size_t key_len);

/* tk_limiter_stats() - the counters of the limiter's store; as
 * tk_store_stats(). */
TK_API int tk_limiter_stats(struct tk_limiter *l, struct tk_stats *out,
			    size_t size);

/*
 * tk_limiter_close() - free a limiter, and its store if the limiter opened
 * it.  No other thread may still use @l.  NULL is ignored.
 */
TK_API void tk_limiter_close(struct tk_limiter *l);

/*
 * HTTP.  Helpers for servers that answer with the RateLimit header fields
 * of draft-ietf-httpapi-ratelimit-headers-11 and Retry-After.  None
 * allocates; none reads a clock.
 */

/* Which fields tk_http_headers() writes (Retry-After: every denial). */
#define TK_HTTP_IETF 0x1u   /* RateLimit-Policy and RateLimit */
#define TK_HTTP_LEGACY 0x2u /* X-RateLimit-Limit, -Remaining, -Reset */
/* Most fields one tk_http_headers() call writes. */
#define TK_HTTP_FIELDS_MAX 6

/* One header field; @value points into the caller's buffer. */
struct tk_http_field {
	const char *name;  /* static, e.g. "RateLimit" */
	const char *value; /* NUL-terminated */
};

/* One policy of a response: its name and its decisions. */
struct tk_http_quota {
	/*
	 * The policy's name in the fields: printable ASCII, not empty.  A
	 * composite's dimension i is named "NAME.i".
	 */
	const char *name;
	const struct tk_policy *policy; /* simple or composite */
	/*
	 * One decision per dimension of @policy (tk_limiter_check_group()
	 * gives them), or NULL: the decision given to tk_http_headers() is
	 * then this quota's, of a simple policy or of a composite's
	 * dimension tk_decision.dimension (one tk_limiter_check()).
	 */
	const struct tk_decision *dims;
};

/*
 * tk_http_headers() - the header fields that answer decision @d, made at
 * time @now (ns) under the @nq quotas @q: RateLimit-Policy and RateLimit
 * (TK_HTTP_IETF, one list member per dimension of every quota, but in
 * RateLimit only @d's dimension of a composite given without @dims; none
 * if @nq is 0), the X-RateLimit-* fields (TK_HTTP_LEGACY, from @d; -Reset in
 * delta-seconds), and Retry-After on a denial (delta-seconds rounded up,
 * never 0).  Every duration is rounded up to whole seconds; counts are
 * clamped to 999999999999999 (the largest structured-field integer).  A
 * degraded @d gets no quota fields, only Retry-After if it denies.
 * Writes at most @max fields (TK_HTTP_FIELDS_MAX always suffice) into
 * @fields, their values into @buf (@len bytes); see tk_http_headers(3)
 * for the size @buf needs.  Pure: any thread, no allocation, no clock.
 *
 * Returns the number of fields written; -EINVAL for bad arguments (a NULL
 * @d, or a NULL @q, @fields or @buf with a non-zero count; unknown flags;
 * a name that is empty or not printable ASCII; a composite without @dims
 * whose @d names no dimension of it; a decision whose limit is not its
 * dimension's); -ENOSPC if @fields or
 * @buf is too small.  On failure @fields is untouched and @buf, if @len
 * is not 0, holds an empty string.
 */
TK_API int tk_http_headers(const struct tk_http_quota *q, size_t nq,
			   const struct tk_decision *d, uint64_t now,
			   unsigned int flags, struct tk_http_field *fields,
			   size_t max, char *buf, size_t len);

/*
 * tk_client_key() - the key of a client address: an IPv6 address masked
 * to @v6_prefix bits (0: 64) and an IPv4 one (also IPv4-mapped IPv6,
 * written as IPv4) to @v4_prefix bits (0: 32), written as the network,
 * "/" and the prefix length ("2001:db8:1:2::/64", "192.0.2.7/32"), so
 * that every address of one network shares a key.  @addr is exactly what
 * inet_pton(3) reads (no spaces, signs, brackets or ports); an IPv6 zone
 * index ("%eth0") is dropped.  Writes at most @len bytes including the
 * NUL, as snprintf(3) (64 bytes always suffice), and returns the length
 * of the whole key, or -EINVAL for text that is not an address, a prefix
 * out of range (checked whatever the family), or a NULL @buf with @len.
 * Pure: any thread, no allocation.
 */
TK_API int tk_client_key(const char *addr, unsigned int v6_prefix,
			 unsigned int v4_prefix, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* THROTTLEKIT_H */
