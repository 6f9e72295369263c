/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * occ-state.c - what the Redis store's decoder (scripts.c) needs of user
 * strategies: which policies are strategies, and their states as the
 * transactions of occ.c spell them ("8:W0:W1:...").  Apart from occ.c,
 * which needs a connection, so that the decoders link alone (the fuzz
 * harness of tests/fuzz/run.sh).
 */
#include "algo/algo.h"
#include "redis/scripts.h"
#include "redis/store.h"

#include <errno.h>
#include <stdint.h>

int tk__redis_occ(const struct tk__policy *p)
{
	return p->alg == &tk__user;
}

int tk__redis_occ_decode(const struct tk__policy *p, const char *s, size_t len,
			 uint64_t *words, size_t cap)
{
	size_t n = 0, i = 0, at;
	uint64_t f;

	for (;;) {
		for (at = i; i < len && s[i] != ':'; i++)
			;
		if (n > cap || tk__redis_parse_u64(s + at, i - at, &f))
			return -EPROTO;
		if (n == 0 && f != TK__ALG_USER)
			return -EPROTO;
		if (n > 0)
			words[n - 1] = f;
		n++;
		if (i++ == len)
			break;
	}
	return n == cap + 1 && p->alg->valid(p, (uint32_t)cap, words) ? 0
								      : -EPROTO;
}
