/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reserve.h - what a reservation (reserve.c) takes from its limiter
 * (limiter.c): the limiter's current store, clock and policy, and the
 * store keys of one key, all of one generation of the limiter.
 */
#ifndef TK_RESERVE_H
#define TK_RESERVE_H

#include "store/store-ops.h"
#include "store/store-key.h"

struct tk__reserve_keys {
	struct tk_store *store;
	struct tk_clock *clock;
	struct tk_policy *policy; /* a copy: the caller frees it */
	unsigned char key[TK__MULTI_MAX][TK__STORE_KEY_MAX];
	size_t len[TK__MULTI_MAX];
};

/* @l's keys of @key (@key_len bytes): 0, or the key's error, -ENOMEM. */
int tk__limiter_reserve_keys(struct tk_limiter *l, const char *key,
			     size_t key_len, struct tk__reserve_keys *k);

#endif /* TK_RESERVE_H */
