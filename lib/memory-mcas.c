/*
 * memory-mcas.c - one atomic step over several keys of the memory store.
 *
 * A composite policy (all(...), any(...)) decides several keys together:
 * all() must consume every dimension or none, so the keys' cells change
 * in one atomic step.  This is a multi-word compare-and-swap with a
 * descriptor, after Harris, Fraser and Pratt (2002), on 16-byte cells:
 *
 *   1. install: in address order, CAS each cell from the value the step
 *      read (old[i]) to {descriptor, MARK}.  A cell holding another
 *      descriptor is helped to completion first; any other value decides
 *      FAILED.
 *   2. decide: CAS the status from UNDECIDED to SUCCEEDED (all installed)
 *      or FAILED; the first decision wins.
 *   3. release: CAS every cell still holding the descriptor to new[i]
 *      (SUCCEEDED) or back to old[i] (FAILED).
 *
 * Any thread that meets a MARK cell runs the same three phases for that
 * descriptor (helping), so a step never waits on a thread that stalls, and
 * installing in address order rules out helping cycles.  Installing after
 * the decision is harmless: phase 3 reverts it.  The one hazard, an old
 * value coming back (ABA) so that a late install succeeds on a step long
 * over, cannot happen here: a single-word state only grows (TATs move
 * forward), and a multi-word state is a block pointer that cannot be
 * reused while any helper, inside its RCU read-side section, still holds
 * the descriptor that names it.
 *
 * Memory: descriptors are freed after a grace period; entries a step
 * names are pinned until the step is over, so that a helper that found the
 * descriptor never touches a freed entry (the wheel retires only unpinned
 * entries).  A read-only outcome (a denial) is taken from a double
 * collect: every cell read again, untorn, and unchanged.
 */
#include "store-memory.h"
#include "rcu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MCAS_UNDECIDED, MCAS_SUCCEEDED, MCAS_FAILED };

void tk__mem_help(struct mem_store *s, struct mcas *d)
{
	uint64_t mine[2] = { (uintptr_t)d, MARK }, cur[2];
	uint64_t outcome = MCAS_SUCCEEDED, status;
	size_t i;

	published(&d->published);
	for (i = 0; i < d->n; i++) {
		for (;;) {
			if (tk_atomic_load_u64(&d->status, TK_MO_ACQUIRE) !=
			    MCAS_UNDECIDED)
				goto release;
			cur[0] = d->old[i][0];
			cur[1] = d->old[i][1];
			if (tk_cell_cas(&d->e[i]->cell, cur, mine))
				break;
			if (cur[0] == mine[0] && cur[1] == mine[1])
				break; /* a helper installed it */
			if (cur[1] == MARK) {
				tk__mem_help(s, block_of_mcas(cur[0]));
				continue;
			}
			outcome = MCAS_FAILED;
			goto decide;
		}
	}
decide:
	status = MCAS_UNDECIDED;
	/* seq_cst: every helper agrees on one outcome. */
	tk_atomic_cas_u64(&d->status, &status, outcome, TK_MO_SEQ_CST);
release:
	status = tk_atomic_load_u64(&d->status, TK_MO_ACQUIRE);
	for (i = 0; i < d->n; i++) {
		cur[0] = mine[0];
		cur[1] = mine[1];
		tk_cell_cas(&d->e[i]->cell, cur,
			    status == MCAS_SUCCEEDED ? d->new[i] : d->old[i]);
	}
}

struct step {
	struct mem_entry *e[TK__MULTI_MAX];
	uint64_t cell[TK__MULTI_MAX][2];
	const uint64_t *old[TK__MULTI_MAX];
	uint64_t *next[TK__MULTI_MAX];
	int persist[TK__MULTI_MAX];
	uint64_t expires[TK__MULTI_MAX];
	struct mem_block *fresh[TK__MULTI_MAX];
	uint64_t words[TK__STATE_WORDS_MAX];
};

/*
 * Find each key's entry and pin it; with @create, make the missing ones
 * (an empty state, expired from the start), so that a step that writes
 * has a cell for every key.  A read-only step creates nothing: a missing
 * key is one with no state.  Returns 0 or -errno.
 */
static int gather(struct mem_store *s, const struct tk__multi *m,
		  union probe *probe, const uint64_t *hash, uint64_t now,
		  int create, struct step *st)
{
	size_t i, j;
	int rc;

	for (i = 0; i < m->n; i++) {
		while (!(st->e[i] = tk__mem_lookup(s, hash[i], &probe[i].e)) &&
		       create) {
			rc = tk__mem_insert(s, hash[i], m->key[i], m->len[i],
					    m->words[i], m->alg[i], 0,
					    tk__mem_expiry(now), now);
			if (rc < 0)
				return rc;
		}
		if (!st->e[i])
			continue;
		if (st->e[i]->words != m->words[i] ||
		    st->e[i]->alg != m->alg[i])
			return -EPROTO;
		for (j = 0; j < i; j++)
			if (st->e[j] == st->e[i])
				return -EINVAL;
	}
	for (i = 0; i < m->n; i++)
		if (st->e[i])
			atomic_fetch_add_explicit(&st->e[i]->pins, 1,
						  TK_MO_SEQ_CST);
	return 0;
}

static void unpin(const struct tk__multi *m, struct step *st)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (st->e[i])
			atomic_fetch_sub_explicit(&st->e[i]->pins, 1,
						  TK_MO_RELEASE);
}

static int missing(const struct tk__multi *m, const struct step *st)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!st->e[i])
			return 1;
	return 0;
}

/* Untorn snapshots of every cell, helping steps in the way.  Returns 0,
 * or 1 if an entry died (start over). */
static int snapshot(struct mem_store *s, const struct tk__multi *m,
		    struct step *st)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (!st->e[i]) {
			st->cell[i][0] = 0;
			st->cell[i][1] = DEAD;
			continue;
		}
		for (;;) {
			tk_cell_load(&st->e[i]->cell, st->cell[i]);
			if (st->cell[i][1] != MARK)
				break;
			tk__mem_help(s, block_of_mcas(st->cell[i][0]));
		}
		if (st->cell[i][1] == DEAD)
			return 1;
	}
	return 0;
}

/* The state a cell holds for the transition: NULL if none. */
static const uint64_t *state_of(const struct step *st, size_t i, uint64_t now)
{
	if (!st->e[i] || st->cell[i][1] <= now)
		return NULL;
	return tk__mem_words(st->e[i], (uint64_t *)st->cell[i]);
}

static int unchanged(struct mem_store *s, const struct tk__multi *m,
		     union probe *probe, const uint64_t *hash, struct step *st)
{
	uint64_t snap[2];
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (!st->e[i]) {
			/* Still no state for this key? */
			if (tk__mem_lookup(s, hash[i], &probe[i].e))
				return 0;
			continue;
		}
		tk_cell_load(&st->e[i]->cell, snap);
		if (snap[0] != st->cell[i][0] || snap[1] != st->cell[i][1])
			return 0;
	}
	return 1;
}

/* Fill @d for the step's outcome; entries in address order. */
static int describe(const struct tk__multi *m, struct step *st, struct mcas *d)
{
	size_t i, j, k;
	uint64_t word;
	int rc;

	d->n = m->n;
	for (i = 0; i < m->n; i++) {
		for (k = i; k > 0 && d->e[k - 1] > st->e[i]; k--) {
			d->e[k] = d->e[k - 1];
			for (j = 0; j < 2; j++) {
				d->old[k][j] = d->old[k - 1][j];
				d->new[k][j] = d->new[k - 1][j];
			}
		}
		d->e[k] = st->e[i];
		d->old[k][0] = st->cell[i][0];
		d->old[k][1] = st->cell[i][1];
		d->new[k][0] = st->cell[i][0];
		d->new[k][1] = st->cell[i][1];
		if (!st->persist[i])
			continue;
		rc = tk__mem_word_for(m->words[i], st->next[i], &st->fresh[i],
				      &word);
		if (rc)
			return rc;
		d->new[k][0] = word;
		d->new[k][1] = tk__mem_expiry(st->expires[i]);
	}
	tk_atomic_store_u64(&d->status, MCAS_UNDECIDED, TK_MO_RELAXED);
	/* release: the fields above; pairs with tk__mem_help(). */
	tk_atomic_store_u32(&d->published, 1, TK_MO_RELEASE);
	return 0;
}

int tk__mem_apply_multi(struct tk_store *base, uint64_t now,
			const struct tk__multi *m)
{
	struct mem_store *s = (struct mem_store *)base;
	union probe probe[TK__MULTI_MAX];
	uint64_t hash[TK__MULTI_MAX];
	struct mcas *d = NULL;
	struct step *st;
	size_t i, off;
	int rc, create = 0;

	if (m->n < 1 || m->n > TK__MULTI_MAX)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (i = 0, off = 0; i < m->n; off += m->words[i++]) {
		rc = m->words[i] ? 0 : -EINVAL;
		if (!rc && off + m->words[i] > TK__STATE_WORDS_MAX)
			rc = -EINVAL;
		if (!rc)
			rc = tk__mem_probe(s, &probe[i], m->key[i], m->len[i],
					   &hash[i]);
		if (rc) {
			free(st);
			return rc;
		}
		st->next[i] = st->words + off;
	}
	tk__mem_before_apply(s);

	tk__rcu_read_lock();
	for (;;) {
		rc = gather(s, m, probe, hash, now, create, st);
		if (rc)
			break;
		if (snapshot(s, m, st)) {
			unpin(m, st);
			continue;
		}
		for (i = 0; i < m->n; i++)
			st->old[i] = state_of(st, i, now);
		memset(st->persist, 0, sizeof(st->persist));
		rc = m->fn(m->ctx, st->old, st->next, st->persist, st->expires);
		if (rc == TK__KEEP && unchanged(s, m, probe, hash, st)) {
			unpin(m, st);
			break;
		}
		if (rc < 0) {
			unpin(m, st);
			break;
		}
		if (rc == TK__KEEP || missing(m, st)) {
			/* Changed under us, or a key to create first. */
			create = rc == TK__PERSIST;
			unpin(m, st);
			continue;
		}
		if (!d && !(d = calloc(1, sizeof(*d)))) {
			unpin(m, st);
			rc = -ENOMEM;
			break;
		}
		rc = describe(m, st, d);
		if (rc) {
			unpin(m, st);
			break;
		}
		tk__mem_help(s, d);
		unpin(m, st);
		/* Helpers may still hold it: free it after a grace period. */
		tk__mem_retire_mcas(s, d);
		if (tk_atomic_load_u64(&d->status, TK_MO_ACQUIRE) !=
		    MCAS_SUCCEEDED) {
			d = NULL;
			continue;
		}
		d = NULL;
		for (i = 0; i < m->n; i++) {
			if (!st->persist[i] || m->words[i] == 1)
				continue;
			if (st->cell[i][0])
				tk__mem_retire_block(s,
						     block_of(st->cell[i][0]));
			st->fresh[i] = NULL; /* the cell owns it now */
		}
		rc = TK__PERSIST;
		break;
	}
	tk__rcu_read_unlock();
	for (i = 0; i < m->n; i++)
		free(st->fresh[i]);
	free(st);
	tk__mem_after_apply(s, now);
	return rc;
}
