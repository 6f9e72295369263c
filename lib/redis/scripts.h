/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scripts.h - the check script (check.lua, embedded by scripts.c) and
 * what it needs of a policy: its arguments, and a state as the server
 * spells it.
 */
#ifndef TK_REDIS_SCRIPTS_H
#define TK_REDIS_SCRIPTS_H

#include <stddef.h>
#include <stdint.h>

struct tk__policy;

/*
 * The script EVALSHA runs: check.lua, which defines its helpers and
 * check(KEYS, ARGV), then TK__REDIS_EVAL_TAIL.  A function library
 * (engine.c) has the same text up to the tail and registers check
 * instead, so its helpers are made once, when it loads, not per call.
 */
#define TK__REDIS_EVAL_TAIL "return check(KEYS, ARGV)\n"
extern const char tk__redis_check_lua[];
/*
 * fast.lua: one sliding log's check without reading the log whole, a
 * function library of its own (engine.c); the same states.
 */
extern const char tk__redis_fast_lua[];
/* Does the check script know @p's algorithm? */
int tk__redis_supported(const struct tk__policy *p);
/* A decimal uint64 of s[0, len), nothing else; -EPROTO otherwise. */
int tk__redis_parse_u64(const char *s, size_t len, uint64_t *word);
/* Do @p's script arguments depend on the time (a window, a tick)? */
int tk__redis_needs_now(const struct tk__policy *p);
/*
 * The times [*lo, *hi) at which @p's script arguments are those at @now
 * (now's window, or its sliding window's tick; all of them for a policy
 * whose arguments need no time).
 */
void tk__redis_span(const struct tk__policy *p, uint64_t now, uint64_t *lo,
		    uint64_t *hi);
/* Can @p ever admit @cost (is it not -ERANGE)?  The script's USABLE. */
int tk__redis_usable(const struct tk__policy *p, uint64_t now, uint64_t cost);
/*
 * A dimension's seven arguments after ALG USABLE for @cost units of @p at
 * @now, as decimal strings (see check.lua); @cost must be one @p
 * admits (no -ERANGE).  Returns 0 or -ENOTSUP.
 */
int tk__redis_check_args(const struct tk__policy *p, uint64_t now,
			 uint64_t cost, char args[7][24]);
/*
 * A state as the server spells it (@len bytes at @s) into @words, a
 * buffer of @cap words, which must be @p->state_words; -EPROTO for one of
 * another algorithm or policy, or not the library's.  Nothing is written
 * past @cap words, whatever the value.
 */
int tk__redis_decode(const struct tk__policy *p, const char *s, size_t len,
		     uint64_t *words, size_t cap);

/* occ.c */
/* Is @p a user strategy's, which no script runs (a transaction does)? */
int tk__redis_occ(const struct tk__policy *p);
/* As tk__redis_decode(), for such a policy. */
int tk__redis_occ_decode(const struct tk__policy *p, const char *s, size_t len,
			 uint64_t *words, size_t cap);

#endif /* TK_REDIS_SCRIPTS_H */
