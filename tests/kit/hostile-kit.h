/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostile-kit.h - values written straight into the keys the Redis store
 * uses (tests/unit/redis/test_redis_hostile.c,
 * test_redis_window_state.c).  Keys are "k" under a policy, without the
 * key prefix (the functions name theirs: "h:" or "t:").
 */
#ifndef TK_TESTS_KIT_HOSTILE_H
#define TK_TESTS_KIT_HOSTILE_H

#include <stddef.h>
#include <stdint.h>

#include <throttlekit.h>

#include "redis-kit.h"

/* redis_kit_need(@k), and @k the server of the functions below. */
void hostile_kit_need(struct redis_kit *k);
/* The Redis key of "k" under @policy, dimension @dim (or -1), into @key:
 * its length. */
size_t state_key(const char *policy, int dim, char *key);
/* Does "h:" @key still hold the @len bytes at @value? */
int unchanged(const char *key, size_t klen, const char *value, size_t len);
/* @len bytes at @value under "h:" and the state of "k" of @policy
 * (dimension @dim of a composite, or -1): a check answers @want (-EPROTO
 * but where the flaw lies where a single log's check never reads), a
 * peek and a batch fail with -EPROTO, and nothing is written; @opts is
 * added to the spec (e.g. "&server_time=0"). */
void hostile_with(const char *policy, int dim, const char *value, size_t len,
		  const char *opts, int want);
/* hostile_with() with the spec's default clock, and server_time=1. */
void assert_hostile_bytes(const char *policy, int dim, const char *value,
			  size_t len);
/* The same for the string @value. */
void assert_hostile(const char *policy, int dim, const char *value);
/* Each of @n strings under @policy's key. */
void assert_each(const char *policy, const char *const *bad, size_t n);
/* @script run on the state of key "k" under @policy (prefix "t:"). */
long long eval_on(const char *policy, const char *script);
/* The state of key "k" (prefix "t:") under @policy: its length, and its
 * first byte in *first. */
long long state_len(const char *policy, unsigned char *first);
/*
 * Twins: a limiter on the memory store (l[0]) and one on the Redis store
 * (l[1]), each on a manual clock at 1700000000 s (c[0], c[1]).
 */
struct twin {
	struct tk_limiter *l[2];
	struct tk_clock *c[2];
};

/* Twins of @policy, the Redis one on @spec; key "k" reset, then checked
 * for 2 units (admitted). */
void twin_open(struct twin *t, const char *policy, const char *spec);
/* Both clocks at @now, one unit of "k" on each: the same decision, which
 * it returns (admitted or not). */
int twin_check(struct twin *t, uint64_t now);
void twin_close(struct twin *t);

#endif
