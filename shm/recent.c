/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recent.c - the rings of recent key names (recent.h).
 *
 * - A writer takes ticket t from the head (fetch-add); its entry is
 *   t mod TKZ_RECENT_ENTRIES.  It claims the entry by a CAS of the
 *   sequence from anything older than 2t + 1 to 2t + 1, so that an entry
 *   left odd by a dead writer is taken one lap later, and a writer that
 *   finds a later ticket's sequence there gives up its record.
 * - It stores the length, a count of 1, the kept words and their sum,
 *   then publishes by a CAS from 2t + 1 to 2t + 2: one that fails means a
 *   later ticket took the entry meanwhile, whose record is then the
 *   entry's.
 * - A thread whose next event is of the key of its last record counts
 *   it in that record while the entry still holds it (tk__recent_
 *   repeat()): a flood of one key's denials writes one line the thread
 *   already has, not the head every process writes, and by a plain store
 *   of the count it keeps, tagged with the record's lap so that a store
 *   one lap late is known for one.
 * - A reader expects 2t + 2 in the entry of ticket t: it loads the
 *   sequence, copies, loads it again (a seqlock's read), and checks the
 *   sum.  The sum is what catches a writer delayed a whole lap: claimed
 *   out from under it, it may still store into the entry after the later
 *   writer published, which no sequence shows.
 * The ring needs nothing of a dead process: no entry is waited on, and an
 * odd one costs a reader one skip until it is reused.
 */
#include "recent.h"

#include <ck_pr.h>
#include <string.h>

void (*tk__recent_write_hook)(struct tkz_recent_entry *e);
void (*tk__recent_read_hook)(struct tkz_recent_entry *e);

static uint64_t words_of(uint64_t len)
{
	uint64_t kept = len < TKZ_RECENT_KEY ? len : TKZ_RECENT_KEY;

	return (kept + 7) / 8;
}

/*
 * Not a secret: it tells a torn record from a whole one.  Each step is a
 * bijection of x for a given word, so one word changed changes the sum;
 * several changed at once collide with a chance of about 2^-64.
 */
static uint64_t sum(uint64_t ticket, uint64_t len, const uint64_t *w,
		    uint64_t n)
{
	uint64_t x = ticket ^ (len << 40), i;

	for (i = 0; i < n; i++)
		x = (x ^ w[i]) * UINT64_C(0x9e3779b97f4a7c15) + i;
	return tk__zone_mix(x);
}

uint64_t tk__recent_put(struct tkz_recent_ring *r, const void *key, size_t len)
{
	uint64_t w[TKZ_RECENT_WORDS] = { 0 };
	uint64_t n = words_of(len), t, s, mine, i;
	struct tkz_recent_entry *e;

	memcpy(w, key, len < TKZ_RECENT_KEY ? len : TKZ_RECENT_KEY);
	t = ck_pr_faa_64(&r->head.v, 1);
	e = &r->e[t & (TKZ_RECENT_ENTRIES - 1)];
	mine = 2 * t + 1;
	s = ck_pr_load_64(&e->seq);
	do {
		if (s >= mine)
			return UINT64_MAX; /* a later ticket has it */
	} while (!ck_pr_cas_64_value(&e->seq, s, mine, &s));
	/* The odd sequence before any word: pairs with the reader's load
	 * fence before its second load of the sequence. */
	ck_pr_fence_store();
	ck_pr_store_64(&e->len, len);
	ck_pr_store_64(&e->count, tkz_recent_count_word(t, 1));
	for (i = 0; i < n; i++) {
		if (i == n / 2 && tk__recent_write_hook)
			tk__recent_write_hook(e);
		ck_pr_store_64(&e->key[i], w[i]);
	}
	ck_pr_store_64(&e->sum, sum(t, len, w, n));
	/* Release: the words before the even sequence; pairs with the
	 * reader's load fence after its first load of the sequence. */
	ck_pr_fence_store();
	ck_pr_cas_64(&e->seq, mine, mine + 1);
	return t;
}

__thread struct tk__recent_last tk__recent_last
	__attribute__((tls_model("initial-exec")));

void tk__recent_first(struct tkz_recent_ring *r, uint64_t id, const void *key,
		      size_t len)
{
	uint64_t t = tk__recent_put(r, key, len);

	tk__recent_last =
		(struct tk__recent_last){ t == UINT64_MAX ? NULL : r,
					  t,
					  1,
					  id,
					  len,
					  tk_atomic_load_u64(&tk__fork_gen,
							     TK_MO_RELAXED) };
}

/* Copy the record of ticket @t from @e into @rec: 0, or the skip. */
static int copy(struct tkz_recent_entry *e, uint64_t t,
		struct tk__recent_rec *rec, struct tk__recent_skips *sk)
{
	uint64_t w[TKZ_RECENT_WORDS] = { 0 };
	uint64_t s = ck_pr_load_64(&e->seq), n, i, len, check;

	/* Acquire: pairs with the writer's fence before it publishes. */
	ck_pr_fence_load();
	if (s != 2 * t + 2) {
		if (s > 2 * t + 2)
			sk->lapped++;
		else
			sk->busy++;
		return -1;
	}
	len = ck_pr_load_64(&e->len);
	rec->count = ck_pr_load_64(&e->count);
	/* A count of an earlier lap: a repeat's store one lap late. */
	if (rec->count >> TKZ_RECENT_COUNT_BITS != tkz_recent_lap(t))
		rec->count = 1;
	else
		rec->count &= TKZ_RECENT_COUNT_MAX;
	n = words_of(len);
	for (i = 0; i < n; i++) {
		if (i == n / 2 && tk__recent_read_hook)
			tk__recent_read_hook(e);
		w[i] = ck_pr_load_64(&e->key[i]);
	}
	check = ck_pr_load_64(&e->sum);
	/* The copy before the second load: pairs with the writer's fence
	 * after its claim. */
	ck_pr_fence_load();
	if (ck_pr_load_64(&e->seq) != s) {
		sk->torn++;
		return -1;
	}
	if (check != sum(t, len, w, n)) {
		sk->bad++;
		return -1;
	}
	rec->ticket = t;
	rec->len = len;
	rec->kept = (uint32_t)(len < TKZ_RECENT_KEY ? len : TKZ_RECENT_KEY);
	memcpy(rec->key, w, rec->kept);
	return 0;
}

int tk__recent_read(struct tkz_recent_ring *r, struct tk__recent_skips *skips,
		    int (*fn)(void *ctx, const struct tk__recent_rec *rec),
		    void *ctx)
{
	struct tk__recent_skips mine = { 0, 0, 0, 0 };
	struct tk__recent_skips *sk = skips ? skips : &mine;
	uint64_t head = ck_pr_load_64(&r->head.v), t;
	struct tk__recent_rec rec;
	int rc;

	t = head > TKZ_RECENT_ENTRIES ? head - TKZ_RECENT_ENTRIES : 0;
	for (; t < head; t++) {
		if (copy(&r->e[t & (TKZ_RECENT_ENTRIES - 1)], t, &rec, sk))
			continue;
		rc = fn(ctx, &rec);
		if (rc)
			return rc;
	}
	return 0;
}

void tk__zone_recent_put(struct tk__zone *z, int id, const void *key,
			 size_t len)
{
	(void)tk__recent_put(&tk__zone_recent(z)->ring[id], key, len);
}
