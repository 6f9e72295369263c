/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table.h - the hash table both table baselines use: open addressing with
 * linear probing over 32-byte entries that hold the key in full (as
 * nginx's limit_req nodes do) and its GCRA TAT.  No deletion and no
 * expiry: the benchmark sizes tables so that they never fill, which only
 * spares the baselines work (nginx expires up to two entries per request).
 *
 * Not thread-safe: the mutex table calls it under the shard's lock, the
 * per-process table from its one process.
 */
#ifndef TK_BENCH_TABLE_H
#define TK_BENCH_TABLE_H

#include "../bench.h"

#include <errno.h>
#include <string.h>

#define BT_KEY_MAX 15 /* bytes of key an entry holds */

struct bt_entry {
	uint64_t hash; /* bench_hash() of the key; 0: empty */
	uint64_t tat;  /* ns since the epoch; 0: no state yet */
	uint8_t len;   /* bytes of key */
	char key[BT_KEY_MAX];
};

_Static_assert(sizeof(struct bt_entry) == 32, "two entries per cache line");

/*
 * Check one unit for @key at @now in @e[0..mask], inserting the key if
 * it is new.  Returns 1 (admitted), 0 (denied), -ENOSPC (table full) or
 * -ENAMETOOLONG.
 */
static inline int bt_check(struct bt_entry *e, uint64_t mask, uint64_t hash,
			   const char *key, size_t len, uint64_t now,
			   const struct bench_gcra *g)
{
	uint64_t i = hash >> 20, probes, next;
	struct bt_entry *x;

	if (len > BT_KEY_MAX)
		return -ENAMETOOLONG;
	for (probes = 0; probes <= mask; probes++, i++) {
		x = &e[i & mask];
		if (x->hash == 0) {
			x->hash = hash;
			x->len = (uint8_t)len;
			memcpy(x->key, key, len);
			x->tat = 0;
			break;
		}
		if (x->hash == hash && x->len == len &&
		    memcmp(x->key, key, len) == 0)
			break;
	}
	if (probes > mask)
		return -ENOSPC;
	if (!bench_gcra_step(g, x->tat, now, &next))
		return 0;
	x->tat = next;
	return 1;
}

#endif /* TK_BENCH_TABLE_H */
