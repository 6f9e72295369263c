/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * census.c - what a zone holds, read without changing it: its counters,
 * a census of its slots and blocks (every invariant of the slot protocol
 * checked, for tests and "throttlectl verify"), and a walk over its keys.
 */
#include "word.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Does MEM slot @i's state validate (a broken reference counts as a
 * violation elsewhere, and a state that moved on is not judged)? */
static int state_valid(struct tk__zone *z, const struct tk__zone_census *c,
		       uint64_t i, uint64_t w0, uint64_t w1)
{
	uint64_t words[TKZ_STATE_WORDS_MAX], exp;
	int n;

	if (!(w0 & TKZ_FP_BLOCK))
		return w1 == 0 ||
		       c->valid((unsigned int)tkz_fp_alg(w0), 1, &w1);
	if (!tkz_is_ref(w1))
		return 1;
	n = tk__blk_read(z, &tk__zone_slots(z)[i], w0, w1, words,
			 TKZ_STATE_WORDS_MAX, &exp, NULL);
	return n < 0 ||
	       c->valid((unsigned int)tkz_fp_alg(w0), (uint32_t)n, words);
}

static int by_key(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

void tk__zone_counters(struct tk__zone *z, uint64_t out[TKZ_COUNTERS])
{
	struct tkz_header *h = tk__zone_header(z);
	int i;

	for (i = 0; i < TKZ_COUNTERS; i++)
		out[i] = ck_pr_load_64(&h->counters[i].v);
}

int tk__zone_census(struct tk__zone *z, struct tk__zone_census *c)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t per = tk__zone_geo(z)->per_shard, i, n = 0, w0, w1, st,
		 mem = 0;
	uint64_t(*keys)[2];

	c->empty = c->ins = c->mem = c->col = c->violations = c->invalid = 0;
	/* Room for the keys only, not for every slot. */
	for (i = 0; i < tk__zone_geo(z)->capacity; i++)
		mem += tkz_state(ck_pr_load_64(&slots[i].w[0])) == TKZ_MEM;
	mem += 64; /* keys committed since the count */
	keys = malloc(mem * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < tk__zone_geo(z)->capacity; i++) {
		tkz_read_slot(&slots[i], &w0, &w1);
		st = tkz_state(w0);
		if (tkz_frozen(w0)) {
			/* Only a table that has grown freezes slots, and
			 * nothing looks at it any more. */
			c->violations++;
			continue;
		}
		if (st == TKZ_EMPTY) {
			c->empty++;
			if (w0 || w1)
				c->violations++;
			continue;
		}
		/* Algorithm 0 in a block's slot: a user strategy's state. */
		if ((tkz_fp(w0) & TKZ_FP_KEY) == 0 ||
		    (tkz_fp_alg(w0) == 0 && !(w0 & TKZ_FP_BLOCK)) ||
		    (st != TKZ_MEM && w1 == 0) ||
		    (st == TKZ_MEM && (w0 & TKZ_FP_BLOCK) &&
		     !(w1 & TKZ_NOSTATE) && !tkz_is_ref(w1) &&
		     !tkz_is_desc(w1)))
			c->violations++;
		if (st == TKZ_INS)
			c->ins++;
		else if (st == TKZ_COL)
			c->col++;
		else
			c->mem++;
		if (st == TKZ_MEM && n < mem) {
			keys[n][0] = i / per; /* a key lives in one shard */
			keys[n][1] = tkz_fp(w0) & TKZ_FP_KEY;
			n++;
		}
		if (st == TKZ_MEM && c->valid && !state_valid(z, c, i, w0, w1))
			c->invalid++;
	}
	/* No key in two slots, whatever their shapes: a key's bits are MEM
	 * at most once per shard (distinct keys share them with probability
	 * about 2^-56). */
	qsort(keys, n, sizeof(*keys), by_key);
	for (i = 1; i < n; i++)
		if (keys[i][0] == keys[i - 1][0] &&
		    keys[i][1] == keys[i - 1][1])
			c->violations++;
	free(keys);
	tk__blk_census(z, c);
	return 0;
}

int tk__zone_walk(struct tk__zone *z,
		  int (*fn)(void *ctx, uint64_t index, uint64_t fp,
			    uint64_t state),
		  void *ctx)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t i, w0, w1;
	int rc;

	for (i = 0; i < tk__zone_geo(z)->capacity; i++) {
		tkz_read_slot(&slots[i], &w0, &w1);
		if (tkz_state(w0) != TKZ_MEM || tkz_frozen(w0))
			continue;
		rc = fn(ctx, i, tkz_fp(w0), w1);
		if (rc)
			return rc;
	}
	return 0;
}
