/*
 * store-memory.c - the in-process store: lock-free, multithreaded.
 *
 * Keys live in a liburcu lock-free hash table (cds_lfht), hashed with
 * tk__keyhash() (AES-CMAC with AES-NI, else SipHash-1-3; lib/keyhash.c)
 * under a per-store random secret.  A key's whole mutable
 * state is one 16-byte cell {state word, expires_at} changed only by a
 * 16-byte CAS, so concurrent applies on one key serialise on that CAS and
 * no update is ever lost.  expires_at == 0 marks an entry DEAD: the
 * terminal state of a key that is being removed.
 *
 * Removal ("kill") is the lost-update trap of every expiring table: if a
 * reclaimer judged a state expired and then deleted the entry, an update
 * landing in between would vanish.  So removal first CASes the exact cell
 * it judged, {word, expires} -> {word, DEAD}; an update in between makes
 * that CAS fail.  Whoever wins the DEAD CAS removes the node from the
 * table and its CLOCK ring slot; appliers that meet a DEAD entry look the
 * key up again and insert a fresh one (lookups skip DEAD entries).
 *
 * Reclamation (the expiry wheel, CLOCK eviction for max_keys, freeing
 * after RCU grace periods, the reclaimer thread) is in memory-reclaim.c;
 * atomic steps over several keys (composite policies) in memory-mcas.c.
 */
#include "store-memory.h"
#include "gcra.h"
#include "keyhash.h"
#include "rcu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(offsetof(struct mem_entry, wheel_next) == 64,
	       "a lookup reads an entry's first 64 bytes");
_Static_assert(2 + TK_PREFIX_MAX + TK_KEY_MAX <= UINT16_MAX,
	       "key_len holds every store key's length");

/*
 * cds_lfht calls this only for a node whose reverse hash (all 64 bits of
 * the key's hash) equals the key's: a mismatch here is rare.
 */
static int match_key(struct cds_lfht_node *node, const void *arg)
{
	struct mem_entry *e = caa_container_of(node, struct mem_entry, node);
	const struct mem_entry *k = arg;

	published(&e->published);
	/* A DEAD entry never comes back, so skipping it is stable. */
	if (tk_atomic_load_u64(&e->cell.w[1], TK_MO_ACQUIRE) == DEAD)
		return 0;
	if (e->key_len != k->key_len || e->head[0] != k->head[0] ||
	    e->head[1] != k->head[1])
		return 0;
	return k->key_len <= KEY_HEAD ||
	       memcmp(e->key, k->key, k->key_len - KEY_HEAD) == 0;
}

/* A key as an entry holds it: head (zero after the key) and tail. */
static inline __attribute__((always_inline)) void
set_key(struct mem_entry *e, const unsigned char *key, size_t len)
{
	e->key_len = (uint16_t)len;
	if (len >= KEY_HEAD) {
		memcpy(e->head, key, KEY_HEAD);
		memcpy(e->key, key + KEY_HEAD, len - KEY_HEAD);
		return;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (len > 8) {
		/* The last 8 bytes, shifted down past the ones in head[0]. */
		memcpy(&e->head[0], key, 8);
		memcpy(&e->head[1], key + len - 8, 8);
		e->head[1] >>= 8 * (KEY_HEAD - len);
		return;
	}
#endif
	e->head[0] = e->head[1] = 0;
	memcpy(e->head, key, len);
}

static void unlink_step(struct mem_store *s, struct mem_entry *e)
{
	/* The last step makes e unreachable: the wheel may then retire it. */
	if (atomic_fetch_sub_explicit(&e->unlink_pending, 1, TK_MO_ACQ_REL) ==
	    1)
		tk_atomic_add_u64(&s->dead_pending, 1, TK_MO_RELAXED);
}

static void ring_clear(struct mem_store *s, struct mem_entry *e)
{
	void *expect = e;

	/* seq_cst: orders against the publisher's cell read in
	 * tk__mem_insert(). */
	if (tk_atomic_cas_ptr(&s->ring[e->ring_slot], &expect, NULL,
			      TK_MO_SEQ_CST))
		unlink_step(s, e);
}

/*
 * Kill @e if its cell still holds @cell.  Returns 1 if this call killed
 * it.  Call inside an RCU read-side critical section.
 */
int tk__mem_kill(struct mem_store *s, struct mem_entry *e, uint64_t cell[2])
{
	uint64_t dead[2] = { cell[0], DEAD };

	/* A cell a multi-key step holds is not ours to judge. */
	if (cell[1] == DEAD || cell[1] == MARK ||
	    !tk_cell_cas(&e->cell, cell, dead))
		return 0;
	if (cds_lfht_del(s->ht, &e->node) == 0)
		unlink_step(s, e);
	if (s->ring)
		ring_clear(s, e);
	tk_atomic_sub_u64(&s->keys, 1, TK_MO_RELAXED);
	return 1;
}

/* An entry and, for a multi-word state, the block its cell names. */
void tk__mem_free_entry(struct mem_entry *e)
{
	if (e->words > 1)
		free(block_of(
			tk_atomic_load_u64(&e->cell.w[0], TK_MO_RELAXED)));
	free(e);
}

struct mem_entry *tk__mem_lookup(struct mem_store *s, uint64_t hash,
				 const struct mem_entry *k)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	struct mem_entry *e;

	cds_lfht_lookup(s->ht, hash, match_key, k, &iter);
	node = cds_lfht_iter_get_node(&iter);
	if (!node)
		return NULL;
	e = caa_container_of(node, struct mem_entry, node);
	published(&e->published);
	return e;
}

static struct mem_entry *new_entry(const unsigned char *key, size_t len,
				   uint32_t words, uint32_t alg, uint64_t word,
				   uint64_t expires, int in_ring)
{
	struct mem_entry *e;
	size_t size = offsetof(struct mem_entry, key) +
		      (len > KEY_HEAD ? len - KEY_HEAD : 0);

	e = aligned_alloc(_Alignof(struct mem_entry),
			  (size + _Alignof(struct mem_entry) - 1) &
				  ~(_Alignof(struct mem_entry) - 1));
	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	tk_cell_init(&e->cell, word, expires);
	cds_lfht_node_init(&e->node);
	atomic_init(&e->unlink_pending, in_ring ? 2 : 1);
	atomic_init(&e->referenced, 0);
	e->words = (uint16_t)words;
	e->alg = (uint16_t)alg;
	set_key(e, key, len);
	return e;
}

/*
 * Insert a new key with its first state.  Returns 1 if inserted, 0 if
 * another thread inserted the key first (the caller retries), or -errno.
 */
int tk__mem_insert(struct mem_store *s, uint64_t hash, const unsigned char *key,
		   size_t len, uint32_t words, uint32_t alg, uint64_t word,
		   uint64_t expires, uint64_t now)
{
	struct cds_lfht_node *node;
	struct mem_entry *e;
	uint32_t slot = 0;
	void *expect;
	int rc;

	e = new_entry(key, len, words, alg, word, expires, s->ring != NULL);
	if (!e)
		return -ENOMEM;
	if (s->ring) {
		rc = tk__mem_ring_claim(s, now, &slot);
		if (rc) {
			free(e);
			return rc;
		}
		e->ring_slot = slot;
	}
	tk_atomic_store_u32(&e->published, 1, TK_MO_RELEASE);
	/* Counted before it is visible, so a kill never takes keys below 0. */
	tk_atomic_add_u64(&s->keys, 1, TK_MO_RELAXED);
	node = cds_lfht_add_unique(s->ht, hash, match_key, e, &e->node);
	if (node != &e->node) {
		tk_atomic_sub_u64(&s->keys, 1, TK_MO_RELAXED);
		if (s->ring)
			tk_atomic_store_ptr(&s->ring[slot], NULL,
					    TK_MO_RELEASE);
		/* Never reachable by anyone: no grace period needed. */
		free(e);
		return 0;
	}
	tk_atomic_add_u64(&s->inserts, 1, TK_MO_RELAXED);
	if (s->ring) {
		expect = RESERVED;
		/*
		 * seq_cst store then cell read here, against cell CAS then
		 * ring CAS in tk__mem_kill(): one of the two sees the other,
		 * so a key killed before its slot was published still gets
		 * its slot cleared exactly once.
		 */
		tk_atomic_cas_ptr(&s->ring[slot], &expect, e, TK_MO_SEQ_CST);
		if (tk_atomic_load_u64(&e->cell.w[1], TK_MO_SEQ_CST) == DEAD)
			ring_clear(s, e);
	}
	tk__mem_wheel_push(s, e, tick_of(reclaim_at(s, expires)));
	return 1;
}

int tk__mem_probe(struct mem_store *s, union probe *p, const unsigned char *key,
		  size_t len, uint64_t *hash)
{
	if (len > sizeof(p->bytes) - offsetof(struct mem_entry, key))
		return -ENAMETOOLONG;
	set_key(&p->e, key, len);
	*hash = tk__keyhash_fast(&s->kh, key, len) | s->hash_or;
	return 0;
}

/* The words of a state as a cell holds them; @cell is a local copy. */
const uint64_t *tk__mem_words(const struct mem_entry *e, uint64_t *cell)
{
	struct mem_block *b;

	if (e->words == 1)
		return &cell[0];
	/* An entry a multi-key step created has no block yet: no state. */
	if (cell[0] == 0)
		return NULL;
	b = block_of(cell[0]);
	published(&b->published);
	return b->w;
}

/* The cell word for new state @next: itself, or a block holding it. */
int tk__mem_word_for(uint32_t words, const uint64_t *next,
		     struct mem_block **fresh, uint64_t *word)
{
	if (words == 1) {
		*word = next[0];
		return 0;
	}
	if (!*fresh) {
		*fresh = malloc(sizeof(**fresh) + words * sizeof(uint64_t));
		if (!*fresh)
			return -ENOMEM;
	}
	memcpy((*fresh)->w, next, words * sizeof(uint64_t));
	/* release: the words above; pairs with tk__mem_words(). */
	tk_atomic_store_u32(&(*fresh)->published, 1, TK_MO_RELEASE);
	*word = (uintptr_t)*fresh;
	return 0;
}

/*
 * A GCRA check decided on cell @cell of its entry with the algorithm's
 * own step (gcra.h) instead of a transition, the decision in *@d: the
 * same CAS, or untorn read, as the generic loop of memory_apply().  Returns
 * 0, -ERANGE, or TK__DIRECT_NO (nothing written) where the generic loop
 * must decide: a state that does not validate, a cell that changed.
 */
static inline __attribute__((always_inline)) int
direct(struct mem_entry *e, uint64_t *cell, uint64_t now,
       const struct tk__policy *p, uint64_t cost, struct tk_decision *d)
{
	/* An expired state is no state. */
	uint64_t state = cell[1] > now ? cell[0] : 0, set[2], snap[2];
	struct tk_decision dd;
	int rc;

	if (!tk__gcra_valid(p, 1, &state))
		return TK__DIRECT_NO;
	memset(&dd, 0, sizeof(dd));
	rc = tk__gcra_check(p, &state, now, cost, &set[0], &dd);
	if (rc < 0)
		return rc;
	if (rc == TK__PERSIST) {
		set[1] = tk__mem_expiry(tk__gcra_expires(set));
		if (!tk_cell_cas(&e->cell, cell, set))
			return TK__DIRECT_NO;
	} else {
		tk_cell_load(&e->cell, snap);
		if (snap[0] != cell[0] || snap[1] != cell[1])
			return TK__DIRECT_NO;
	}
	*d = dd;
	return 0;
}

static int memory_apply(struct tk_store *base, const unsigned char *key,
			size_t len, uint64_t now, const struct tk__transform *t)
{
	struct mem_store *s = (struct mem_store *)base;
	uint64_t next[TK__STATE_WORDS_MAX];
	struct mem_block *fresh = NULL;
	uint64_t hash, cell[2], snap[2], set[2], expires;
	union probe probe;
	struct mem_entry *e;
	int rc;

	if (t->words < 1 || t->words > TK__STATE_WORDS_MAX)
		return -EINVAL;
	rc = tk__mem_probe(s, &probe, key, len, &hash);
	if (rc)
		return rc;
	tk__mem_before_apply(s);

	tk__rcu_read_lock();
	for (;;) {
		e = tk__mem_lookup(s, hash, &probe.e);
		if (!e) {
			expires = 0;
			rc = t->fn(t->ctx, NULL, next, &expires);
			if (rc != TK__PERSIST)
				break;
			rc = tk__mem_word_for(t->words, next, &fresh, &set[0]);
			if (rc)
				break;
			rc = tk__mem_insert(s, hash, key, len, t->words, t->alg,
					    set[0], tk__mem_expiry(expires),
					    now);
			if (rc == 0)
				continue;
			if (rc > 0) {
				fresh = NULL; /* the entry owns it now */
				rc = TK__PERSIST;
			}
			break;
		}
		if (e->words != t->words || e->alg != t->alg) {
			rc = -EPROTO;
			break;
		}
		if (!tk_atomic_load_u32(&e->referenced, TK_MO_RELAXED))
			tk_atomic_store_u32(&e->referenced, 1, TK_MO_RELAXED);
		tk_cell_read(&e->cell, cell);
		for (;;) {
			if (cell[1] == DEAD)
				break;
			if (cell[1] == MARK) {
				tk__mem_help(s, block_of_mcas(cell[0]));
				tk_cell_read(&e->cell, cell);
				continue;
			}
			/* An expired state is no state. */
			rc = t->fn(t->ctx,
				   cell[1] > now ? tk__mem_words(e, cell)
						 : NULL,
				   next, &expires);
			if (rc == TK__PERSIST) {
				uint64_t was = cell[0];

				rc = tk__mem_word_for(t->words, next, &fresh,
						      &set[0]);
				if (rc)
					goto out;
				set[1] = tk__mem_expiry(expires);
				if (!tk_cell_cas(&e->cell, cell, set))
					continue;
				if (t->words > 1) {
					tk__mem_retire_block(s, block_of(was));
					fresh = NULL;
				}
				rc = TK__PERSIST;
				goto out;
			}
			if (rc < 0)
				goto out;
			/* A read-only outcome must come from an untorn cell. */
			tk_cell_load(&e->cell, snap);
			if (snap[0] == cell[0] && snap[1] == cell[1])
				goto out;
			cell[0] = snap[0];
			cell[1] = snap[1];
		}
		/* The entry died under us: find or create its successor. */
	}
out:
	tk__rcu_read_unlock();
	free(fresh); /* never published */
	tk__mem_after_apply(s, now);
	return rc;
}

/* Rounds of the direct path before the generic loop decides. */
#define DIRECT_ROUNDS 2

static int memory_check_gcra(struct tk_store *base, const unsigned char *key,
			     size_t len, uint64_t now,
			     const struct tk__policy *p, uint64_t cost,
			     struct tk_decision *d)
{
	struct mem_store *s = (struct mem_store *)base;
	uint64_t hash, cell[2];
	union probe probe;
	struct mem_entry *e;
	int round, rc = TK__DIRECT_NO;

	if (tk__mem_probe(s, &probe, key, len, &hash))
		return TK__DIRECT_NO; /* apply() answers it */
	tk__mem_before_apply(s);
	tk__rcu_read_lock();
	e = tk__mem_lookup(s, hash, &probe.e);
	if (e && e->words == 1 && e->alg == p->alg->id) {
		if (!tk_atomic_load_u32(&e->referenced, TK_MO_RELAXED))
			tk_atomic_store_u32(&e->referenced, 1, TK_MO_RELAXED);
		for (round = 0; round < DIRECT_ROUNDS && rc == TK__DIRECT_NO;
		     round++) {
			tk_cell_read(&e->cell, cell);
			if (cell[1] == DEAD || cell[1] == MARK)
				break;
			rc = direct(e, cell, now, p, cost, d);
		}
	}
	tk__rcu_read_unlock();
	if (rc != TK__DIRECT_NO)
		tk__mem_after_apply(s, now);
	return rc;
}

static int memory_reset(struct tk_store *base, const unsigned char *key,
			size_t len)
{
	struct mem_store *s = (struct mem_store *)base;
	union probe probe;
	struct mem_entry *e;
	uint64_t hash, cell[2];
	int rc;

	rc = tk__mem_probe(s, &probe, key, len, &hash);
	if (rc)
		return rc;
	tk__rcu_read_lock();
	while ((e = tk__mem_lookup(s, hash, &probe.e)) != NULL) {
		tk_cell_read(&e->cell, cell);
		if (cell[1] == MARK)
			tk__mem_help(s, block_of_mcas(cell[0]));
		else if (tk__mem_kill(s, e, cell)) {
			tk_atomic_add_u64(&s->resets, 1, TK_MO_RELAXED);
			break;
		}
	}
	tk__rcu_read_unlock();
	return 0;
}

static void memory_stats(struct tk_store *base, struct tk_stats *out)
{
	struct mem_store *s = (struct mem_store *)base;

	out->keys = tk_atomic_load_u64(&s->keys, TK_MO_RELAXED);
	out->capacity = s->ring_cap;
	out->inserts = tk_atomic_load_u64(&s->inserts, TK_MO_RELAXED);
	out->expirations = tk_atomic_load_u64(&s->expirations, TK_MO_RELAXED);
	out->evictions = tk_atomic_load_u64(&s->evictions, TK_MO_RELAXED);
	out->resets = tk_atomic_load_u64(&s->resets, TK_MO_RELAXED);
	out->backlog = tk_atomic_load_u64(&s->dead_pending, TK_MO_RELAXED) +
		       tk_atomic_load_u64(&s->n_retired, TK_MO_RELAXED);
}

/* Every entry still allocated is in exactly one wheel bucket. */
static void memory_close(struct tk_store *base)
{
	struct mem_store *s = (struct mem_store *)base;
	struct mem_entry *e, *next, *all = NULL;
	uint64_t slot;

	if (s->use_thread)
		tk__reclaimer_destroy(&s->reclaimer);
	tk__mem_free_retired(s);
	tk__rcu_read_lock();
	for (slot = 0; slot < WHEEL_SLOTS; slot++) {
		for (e = tk__mem_wheel_take(s, slot); e; e = next) {
			next = e->wheel_next;
			/* -ENOENT for an entry a kill already removed. */
			(void)cds_lfht_del(s->ht, &e->node);
			e->wheel_next = all;
			all = e;
		}
	}
	tk__rcu_read_unlock();
	tk__rcu_synchronize();
	for (e = all; e; e = next) {
		next = e->wheel_next;
		tk__mem_free_entry(e);
	}
	cds_lfht_destroy(s->ht, NULL);
	free(s->ring);
	free(s);
}

uint64_t tk__memory_visited(struct tk_store *base)
{
	struct mem_store *s = (struct mem_store *)base;

	return tk_atomic_load_u64(&s->visited, TK_MO_RELAXED);
}

void tk__memory_collide(struct tk_store *base)
{
	((struct mem_store *)base)->hash_or = UINT64_MAX;
}

static const struct tk__store_ops memory_ops = {
	.name = "memory",
	.apply = memory_apply,
	.check_gcra = memory_check_gcra,
	.apply_multi = tk__mem_apply_multi,
	.reset = memory_reset,
	.stats = memory_stats,
	.close = memory_close,
};

static void sweep_everything(void *arg, uint64_t now)
{
	tk__mem_sweep(arg, now, UINT64_MAX);
}

int tk__memory_open(struct tk_store **out, const struct tk_options *o)
{
	struct mem_store *s;
	uint64_t now, buckets = INITIAL_BUCKETS;
	unsigned char secret[16];
	int rc;

	if (o->max_keys > UINT32_MAX)
		return -EINVAL;
	tk__rcu_setup();
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &memory_ops;
	s->base.clock = o->clock ? o->clock : tk_clock_system();
	rc = tk__clock_read(s->base.clock, &now);
	if (rc)
		goto fail;
	rc = tk__random_bytes(secret, sizeof(secret));
	if (rc)
		goto fail;
	/* Private to this process: AES-CMAC only where AES-NI makes it
	 * cheaper than SipHash-1-3 (lib/keyhash.c). */
	tk__keyhash_setup(&s->kh, secret,
			  tk__keyhash_aesni() ? TK__KEYHASH_CMAC
					      : TK__KEYHASH_SIP13);
	explicit_bzero(secret, sizeof(secret));
	if (o->max_keys) {
		s->ring_cap = o->max_keys;
		s->ring = calloc(s->ring_cap, sizeof(*s->ring));
		rc = -ENOMEM;
		if (!s->ring)
			goto fail;
		while (buckets < s->ring_cap && buckets < (UINT64_C(1) << 30))
			buckets *= 2;
	}
	s->buckets = buckets;
	tk_atomic_store_u64(&s->grow_at, 2 * buckets, TK_MO_RELAXED);
	s->ht = cds_lfht_new_flavor(buckets, buckets, 0, 0, &urcu_bp_flavor,
				    NULL);
	rc = -ENOMEM;
	if (!s->ht)
		goto fail;
	s->use_thread = !(o->flags & TK_OPT_NO_RECLAIMER);
	s->grace = o->reclaim_grace ? o->reclaim_grace : DEFAULT_GRACE;
	tk_atomic_store_u64(&s->cursor, tick_of(now), TK_MO_RELAXED);
	if (s->use_thread)
		tk__reclaimer_init(&s->reclaimer, sweep_everything, s,
				   s->base.clock,
				   o->reclaim_interval ? o->reclaim_interval
						       : DEFAULT_INTERVAL);
	*out = &s->base;
	return 0;
fail:
	free(s->ring);
	free(s);
	return rc;
}
