/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy.h - a parsed policy: one algorithm's parameters (struct
 * tk__policy), and the public handle over one or several of them
 * (struct tk_policy, the dimensions of all()/any()).
 */
#ifndef TK_POLICY_H
#define TK_POLICY_H

#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include <throttlekit.h>

#include "udiv.h"

struct tk__algorithm;
struct tk__strategy;

/* Most bytes of a policy's store-key tag: length, id, layout (algo.h). */
#define TK__TAG_MAX 26

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
		struct {
			const struct tk__strategy *s; /* algo/user.c */
			uint64_t arg;		      /* "NAME:ARG" */
		} user;
	} u;
	/*
	 * The bytes that keep this policy's states apart in the store key
	 * (store-key.h) from those of any policy that could not read them:
	 * [n][algorithm id][layout], n the bytes after it; none (tag_len
	 * 0) for gcra, so that the default algorithm's keys are those of
	 * releases before tags.  Filled by the policy's parse.
	 */
	uint32_t tag_len;
	unsigned char tag[TK__TAG_MAX];
};

enum tk__composite { TK__SINGLE, TK__ALL, TK__ANY };

/* The public handle: one policy, or the dimensions of all()/any(). */
struct tk_policy {
	enum tk__composite kind;
	uint32_t state_words; /* sum over the dimensions */
	size_t n;
	struct tk__policy dim[];
};

/* policy.c */
int tk__policy_parse(struct tk_policy **out, const char *text,
		     struct tk_parse_error *err);

#endif /* TK_POLICY_H */
