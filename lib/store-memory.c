/*
 * store-memory.c - the in-process store: lock-free, multithreaded.
 *
 * Keys live in a liburcu lock-free hash table (cds_lfht), hashed with
 * SipHash-2-4 under a per-store random secret.  A key's whole mutable
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
 * Expiry costs O(expired keys): every entry sits in exactly one bucket of
 * a timing wheel (a lock-free LIFO per tick), keyed by the expires_at it
 * had when it was put there.  Processing a past tick examines only that
 * bucket: expired entries are killed, entries whose state moved on are
 * put into the bucket of their new expiry.  The wheel owns every entry's
 * memory: killed entries are freed when the wheel next meets them, after
 * an RCU grace period (synchronize_rcu() on a batch; see rcu.c for why
 * not call_rcu()).
 *
 * max_keys: each entry also holds a slot of a CLOCK ring of max_keys
 * slots; a new key takes a free slot, or the hand sweeps, clearing
 * reference bits and killing the first entry without one (second chance,
 * an O(1)-amortised approximation of LRU).  Keys can never outnumber the
 * slots.  Killed entries wait in the wheel for at most one rotation; when
 * more than max_keys of them wait, the sweeper drains the whole wheel, so
 * memory stays bounded by a small multiple of max_keys.
 *
 * Sweeping is done by a background thread, started lazily by the first
 * apply (never at open, so a preforked master starts none), or, with
 * TK_OPT_NO_RECLAIMER, by appliers in bounded chunks.  After fork() the
 * child notices the new fork generation and starts its own thread.
 */
#include "internal.h"
#include "atomic.h"
#include "rcu.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/rculfhash.h>

#define DEAD 0 /* expires_at of a killed entry */

#define WHEEL_SLOTS 512
#define WHEEL_TICK_SHIFT 27 /* a tick is 2^27 ns, about 134 ms */
#define SWEEP_BUDGET 64	    /* entries an applier sweeps per turn */
#define RETIRE_BATCH 128    /* retired entries freed per grace period */
#define DEFAULT_INTERVAL UINT64_C(1000000000)
#define INITIAL_BUCKETS 1024

/* A ring slot taken by an inserter that has not published its entry. */
#define RESERVED ((void *)1)

struct mem_entry {
	struct tk_cell cell; /* {state word, expires_at ns; DEAD} */
	struct cds_lfht_node node;
	struct mem_entry *wheel_next; /* owned by the wheel bucket */
	struct mem_entry *retire_next;
	/* Unlink steps left: table removal, ring slot; 0 = unreachable. */
	tk_atomic_u32 unlink_pending;
	tk_atomic_u32 referenced; /* CLOCK second-chance bit */
	tk_atomic_u32 published;  /* see published() */
	uint32_t ring_slot;
	uint32_t words;
	size_t key_len;
	unsigned char key[];
};

struct mem_store {
	struct tk_store base;
	struct cds_lfht *ht;
	uint64_t seed[2];
	uint64_t buckets;  /* current hash table size */
	uint64_t interval; /* ns between background sweeps */
	int use_thread;

	/* CLOCK ring; NULL when unbounded. */
	tk_atomic_ptr *ring;
	uint64_t ring_cap;
	tk_atomic_u64 hand;

	tk_atomic_ptr wheel[WHEEL_SLOTS];
	tk_atomic_u64 cursor;	    /* first tick not yet processed */
	tk_atomic_u64 drain_cursor; /* next slot of a draining pass */
	/* 0 when free, else (fork generation << 1) | 1 of the holder. */
	tk_atomic_u64 sweeper;

	tk_atomic_ptr retired;
	tk_atomic_u64 n_retired;
	tk_atomic_u64 dead_pending; /* killed entries still in the wheel */

	tk_atomic_u64 keys, inserts, expirations, evictions, resets;
	tk_atomic_u64 visited; /* wheel entries examined, for tests */

	/* Reclaimer thread: started by thread_gen's generation + 1. */
	tk_atomic_u64 thread_gen;
	pthread_t thread;
	pthread_mutex_t lock; /* guards stopping and the condition only */
	pthread_cond_t cond;
	int stopping;
};

static uint64_t tick_of(uint64_t ns)
{
	return ns >> WHEEL_TICK_SHIFT;
}

/*
 * cds_lfht already orders an entry's initialisation before its discovery
 * (rcu_dereference); this acquire, paired with the release in insert(),
 * restates that in C11 terms so that ThreadSanitizer, which cannot see
 * inside the uninstrumented liburcu, sees it too.  On x86 it is a plain
 * load of a line the caller is about to read anyway.
 */
static void published(struct mem_entry *e)
{
	(void)tk_atomic_load_u32(&e->published, TK_MO_ACQUIRE);
}

static int match_key(struct cds_lfht_node *node, const void *arg)
{
	struct mem_entry *e = caa_container_of(node, struct mem_entry, node);
	const struct mem_entry *k = arg;

	published(e);
	/* A DEAD entry never comes back, so skipping it is stable. */
	if (tk_atomic_load_u64(&e->cell.w[1], TK_MO_ACQUIRE) == DEAD)
		return 0;
	return e->key_len == k->key_len &&
	       memcmp(e->key, k->key, k->key_len) == 0;
}

static void wheel_push(struct mem_store *s, struct mem_entry *e, uint64_t tick)
{
	tk_atomic_ptr *head = &s->wheel[tick % WHEEL_SLOTS];
	void *old = tk_atomic_load_ptr(head, TK_MO_RELAXED);

	/* release: publishes e->wheel_next; pairs with wheel_take(). */
	do
		e->wheel_next = old;
	while (!tk_atomic_cas_ptr(head, &old, e, TK_MO_RELEASE));
}

static struct mem_entry *wheel_take(struct mem_store *s, uint64_t slot)
{
	/* acquire: pairs with the release in wheel_push(). */
	return tk_atomic_xchg_ptr(&s->wheel[slot], NULL, TK_MO_ACQUIRE);
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

	/* seq_cst: orders against the publisher's cell read in insert(). */
	if (tk_atomic_cas_ptr(&s->ring[e->ring_slot], &expect, NULL,
			      TK_MO_SEQ_CST))
		unlink_step(s, e);
}

/*
 * Kill @e if its cell still holds @cell.  Returns 1 if this call killed
 * it.  Call inside an RCU read-side critical section.
 */
static int kill_entry(struct mem_store *s, struct mem_entry *e,
		      uint64_t cell[2])
{
	uint64_t dead[2] = { cell[0], DEAD };

	if (cell[1] == DEAD || !tk_cell_cas(&e->cell, cell, dead))
		return 0;
	if (cds_lfht_del(s->ht, &e->node) == 0)
		unlink_step(s, e);
	if (s->ring)
		ring_clear(s, e);
	tk_atomic_sub_u64(&s->keys, 1, TK_MO_RELAXED);
	return 1;
}

static void retire(struct mem_store *s, struct mem_entry *e)
{
	void *old = tk_atomic_load_ptr(&s->retired, TK_MO_RELAXED);

	do
		e->retire_next = old;
	while (!tk_atomic_cas_ptr(&s->retired, &old, e, TK_MO_RELEASE));
	tk_atomic_add_u64(&s->n_retired, 1, TK_MO_RELAXED);
}

/* Free what was retired.  Never inside a read-side critical section. */
static void free_retired(struct mem_store *s)
{
	struct mem_entry *e, *next;
	uint64_t n = 0;

	e = tk_atomic_xchg_ptr(&s->retired, NULL, TK_MO_ACQUIRE);
	if (!e)
		return;
	/* Everything on the list was unreachable before this grace period. */
	tk__rcu_synchronize();
	for (; e; e = next, n++) {
		next = e->retire_next;
		free(e);
	}
	tk_atomic_sub_u64(&s->n_retired, n, TK_MO_RELAXED);
}

/* Handle one entry taken from the wheel at a tick already past. */
static void sweep_entry(struct mem_store *s, struct mem_entry *e, uint64_t now)
{
	uint64_t cell[2];

	tk_atomic_add_u64(&s->visited, 1, TK_MO_RELAXED);
	tk_cell_read(&e->cell, cell);
	for (;;) {
		if (cell[1] == DEAD) {
			if (tk_atomic_load_u32(&e->unlink_pending,
					       TK_MO_ACQUIRE) == 0) {
				tk_atomic_sub_u64(&s->dead_pending, 1,
						  TK_MO_RELAXED);
				retire(s, e);
			} else {
				/* Its killer is mid-way; meet it later. */
				wheel_push(s, e, tick_of(now) + 1);
			}
			return;
		}
		if (cell[1] > now) {
			wheel_push(s, e, tick_of(cell[1]));
			return;
		}
		if (kill_entry(s, e, cell)) {
			tk_atomic_add_u64(&s->expirations, 1, TK_MO_RELAXED);
			/* Re-read: the entry is DEAD now; retire it above. */
		}
		tk_cell_read(&e->cell, cell);
	}
}

static int sweeper_try_acquire(struct mem_store *s)
{
	uint64_t gen = tk__fork_generation();
	uint64_t cur = tk_atomic_load_u64(&s->sweeper, TK_MO_RELAXED);

	/* A holder from before a fork() is a thread this child lacks. */
	if (cur != 0 && (cur >> 1) == gen)
		return 0;
	return tk_atomic_cas_u64(&s->sweeper, &cur, (gen << 1) | 1,
				 TK_MO_ACQUIRE);
}

static void sweeper_release(struct mem_store *s)
{
	tk_atomic_store_u64(&s->sweeper, 0, TK_MO_RELEASE);
}

/*
 * Process one wheel slot with at most *@budget entries.  Returns 1 if the
 * slot was emptied, 0 if the budget ran out first.
 */
static int sweep_slot(struct mem_store *s, uint64_t slot, uint64_t now,
		      uint64_t *budget)
{
	struct mem_entry *e = wheel_take(s, slot), *next;

	for (; e && *budget > 0; e = next, (*budget)--) {
		next = e->wheel_next;
		sweep_entry(s, e, now);
	}
	if (!e)
		return 1;
	/* Out of budget: put the rest back where it was. */
	for (; e; e = next) {
		next = e->wheel_next;
		wheel_push(s, e, slot);
	}
	return 0;
}

/*
 * Process the ticks that are over, at most @budget entries.  The caller
 * holds the sweeper flag and an RCU read-side critical section.
 */
static void sweep_locked(struct mem_store *s, uint64_t now, uint64_t budget)
{
	uint64_t cur = tk_atomic_load_u64(&s->cursor, TK_MO_RELAXED);
	uint64_t end = tick_of(now), t, d, i;
	uint64_t drain_limit = s->ring_cap > 4096 ? s->ring_cap : 4096;

	/* A jump past a whole rotation: one pass over every slot is enough. */
	if (end > cur && end - cur > WHEEL_SLOTS)
		cur = end - WHEEL_SLOTS;
	for (t = cur; t < end; t++)
		if (!sweep_slot(s, t % WHEEL_SLOTS, now, &budget))
			break;
	if (t > cur)
		tk_atomic_store_u64(&s->cursor, t, TK_MO_RELAXED);
	/* Too many killed entries waiting in the future: drain the wheel. */
	for (i = 0;
	     i < WHEEL_SLOTS && budget > 0 &&
	     tk_atomic_load_u64(&s->dead_pending, TK_MO_RELAXED) > drain_limit;
	     i++) {
		d = tk_atomic_add_u64(&s->drain_cursor, 1, TK_MO_RELAXED);
		sweep_slot(s, d % WHEEL_SLOTS, now, &budget);
	}
}

static void grow_if_needed(struct mem_store *s)
{
	uint64_t keys = tk_atomic_load_u64(&s->keys, TK_MO_RELAXED);

	/* Only the sweeper resizes; a resize runs outside read sections. */
	if (keys > 2 * s->buckets && s->buckets < (UINT64_C(1) << 40)) {
		while (keys > 2 * s->buckets)
			s->buckets *= 2;
		cds_lfht_resize(s->ht, s->buckets);
	}
}

static void sweep(struct mem_store *s, uint64_t now, uint64_t budget)
{
	if (!sweeper_try_acquire(s))
		return;
	tk__rcu_read_lock();
	sweep_locked(s, now, budget);
	tk__rcu_read_unlock();
	grow_if_needed(s);
	sweeper_release(s);
	if (tk_atomic_load_u64(&s->n_retired, TK_MO_RELAXED) >=
	    (budget == UINT64_MAX ? 1 : RETIRE_BATCH))
		free_retired(s);
}

static void *reclaimer_main(void *arg)
{
	struct mem_store *s = arg;
	struct timespec deadline;
	uint64_t now;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		pthread_mutex_unlock(&s->lock);
		if (tk__clock_read(s->base.clock, &now) == 0)
			sweep(s, now, UINT64_MAX);
		pthread_mutex_lock(&s->lock);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += (time_t)(s->interval / 1000000000u);
		deadline.tv_nsec += (long)(s->interval % 1000000000u);
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		if (!s->stopping)
			pthread_cond_timedwait(&s->cond, &s->lock, &deadline);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Start the reclaimer in this process if it has none yet. */
static void ensure_reclaimer(struct mem_store *s)
{
	uint64_t want = tk__fork_generation() + 1;
	uint64_t cur = tk_atomic_load_u64(&s->thread_gen, TK_MO_RELAXED);

	if (cur == want)
		return;
	if (!tk_atomic_cas_u64(&s->thread_gen, &cur, want, TK_MO_ACQ_REL))
		return;
	if (cur != 0) {
		/* A parent's thread: the child has a copy of the locks it
		 * may have held, so make them fresh. */
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
	}
	if (pthread_create(&s->thread, NULL, reclaimer_main, s) != 0) {
		/* No thread: sweep on access instead. */
		s->use_thread = 0;
		tk_atomic_store_u64(&s->thread_gen, 0, TK_MO_RELEASE);
	}
}

static struct mem_entry *lookup(struct mem_store *s, uint64_t hash,
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
	published(e);
	return e;
}

/* Claim a ring slot, evicting by second chance if none is free. */
static int ring_claim(struct mem_store *s, uint64_t now, uint32_t *slot)
{
	uint64_t i, idx, cell[2];
	struct mem_entry *e;
	void *v, *expect;

	for (i = 0; i < 3 * s->ring_cap + 3; i++) {
		idx = tk_atomic_add_u64(&s->hand, 1, TK_MO_RELAXED) %
		      s->ring_cap;
		v = tk_atomic_load_ptr(&s->ring[idx], TK_MO_ACQUIRE);
		if (v == RESERVED)
			continue;
		if (v != NULL) {
			e = v;
			tk_cell_read(&e->cell, cell);
			if (cell[1] == DEAD)
				continue;
			if (cell[1] <= now) {
				if (kill_entry(s, e, cell))
					tk_atomic_add_u64(&s->expirations, 1,
							  TK_MO_RELAXED);
			} else if (tk_atomic_load_u32(&e->referenced,
						      TK_MO_RELAXED)) {
				tk_atomic_store_u32(&e->referenced, 0,
						    TK_MO_RELAXED);
				continue;
			} else if (kill_entry(s, e, cell)) {
				tk_atomic_add_u64(&s->evictions, 1,
						  TK_MO_RELAXED);
			}
		}
		expect = NULL;
		if (tk_atomic_cas_ptr(&s->ring[idx], &expect, RESERVED,
				      TK_MO_SEQ_CST)) {
			*slot = (uint32_t)idx;
			return 0;
		}
	}
	return -ENOSPC;
}

static struct mem_entry *new_entry(const unsigned char *key, size_t len,
				   uint32_t words, uint64_t word,
				   uint64_t expires, int in_ring)
{
	struct mem_entry *e;
	size_t size = sizeof(*e) + len;

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
	e->words = words;
	e->key_len = len;
	memcpy(e->key, key, len);
	return e;
}

/*
 * Insert a new key with its first state.  Returns 1 if inserted, 0 if
 * another thread inserted the key first (the caller retries), or -errno.
 */
static int insert(struct mem_store *s, uint64_t hash, const unsigned char *key,
		  size_t len, uint32_t words, uint64_t word, uint64_t expires,
		  uint64_t now)
{
	struct cds_lfht_node *node;
	struct mem_entry *e;
	uint32_t slot = 0;
	void *expect;
	int rc;

	e = new_entry(key, len, words, word, expires, s->ring != NULL);
	if (!e)
		return -ENOMEM;
	if (s->ring) {
		rc = ring_claim(s, now, &slot);
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
		 * ring CAS in kill_entry(): one of the two sees the other,
		 * so a key killed before its slot was published still gets
		 * its slot cleared exactly once.
		 */
		tk_atomic_cas_ptr(&s->ring[slot], &expect, e, TK_MO_SEQ_CST);
		if (tk_atomic_load_u64(&e->cell.w[1], TK_MO_SEQ_CST) == DEAD)
			ring_clear(s, e);
	}
	wheel_push(s, e, tick_of(expires));
	return 1;
}

/* A stack entry holding just a key: what match_key() compares against. */
union probe {
	struct mem_entry e;
	unsigned char bytes[sizeof(struct mem_entry) + 2 + TK_PREFIX_MAX +
			    TK_KEY_MAX];
};

static int make_probe(struct mem_store *s, union probe *p,
		      const unsigned char *key, size_t len, uint64_t *hash)
{
	if (len > sizeof(p->bytes) - sizeof(struct mem_entry))
		return -ENAMETOOLONG;
	p->e.key_len = len;
	memcpy(p->e.key, key, len);
	*hash = tk__siphash(s->seed, key, len);
	return 0;
}

static int memory_apply(struct tk_store *base, const unsigned char *key,
			size_t len, uint64_t now, const struct tk__transform *t)
{
	struct mem_store *s = (struct mem_store *)base;
	union probe probe;
	uint64_t hash, cell[2], snap[2], next[1], expires;
	struct mem_entry *e;
	int rc;

	if (t->words != 1)
		return -ENOTSUP;
	rc = make_probe(s, &probe, key, len, &hash);
	if (rc)
		return rc;
	if (s->use_thread)
		ensure_reclaimer(s);

	tk__rcu_read_lock();
	for (;;) {
		e = lookup(s, hash, &probe.e);
		if (!e) {
			expires = 0;
			rc = t->fn(t->ctx, NULL, next, &expires);
			if (rc != TK__PERSIST)
				break;
			rc = insert(s, hash, key, len, t->words, next[0],
				    expires ? expires : 1, now);
			if (rc == 0)
				continue;
			rc = rc < 0 ? rc : TK__PERSIST;
			break;
		}
		if (e->words != t->words) {
			rc = -EPROTO;
			break;
		}
		if (!tk_atomic_load_u32(&e->referenced, TK_MO_RELAXED))
			tk_atomic_store_u32(&e->referenced, 1, TK_MO_RELAXED);
		tk_cell_read(&e->cell, cell);
		for (;;) {
			if (cell[1] == DEAD)
				break;
			/* An expired state is no state. */
			rc = t->fn(t->ctx, cell[1] > now ? &cell[0] : NULL,
				   next, &expires);
			if (rc == TK__PERSIST) {
				uint64_t set[2] = { next[0],
						    expires ? expires : 1 };

				if (tk_cell_cas(&e->cell, cell, set))
					goto out;
				continue;
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
	if (!s->use_thread &&
	    tick_of(now) > tk_atomic_load_u64(&s->cursor, TK_MO_RELAXED))
		sweep(s, now, SWEEP_BUDGET);
	else if (!s->use_thread &&
		 tk_atomic_load_u64(&s->n_retired, TK_MO_RELAXED) >=
			 RETIRE_BATCH)
		sweep(s, now, SWEEP_BUDGET);
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

	rc = make_probe(s, &probe, key, len, &hash);
	if (rc)
		return rc;
	tk__rcu_read_lock();
	while ((e = lookup(s, hash, &probe.e)) != NULL) {
		tk_cell_read(&e->cell, cell);
		if (kill_entry(s, e, cell)) {
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
}

/* Every entry still allocated is in exactly one wheel bucket. */
static void memory_close(struct tk_store *base)
{
	struct mem_store *s = (struct mem_store *)base;
	struct mem_entry *e, *next, *all = NULL;
	uint64_t slot;

	if (tk_atomic_load_u64(&s->thread_gen, TK_MO_ACQUIRE) ==
	    tk__fork_generation() + 1) {
		pthread_mutex_lock(&s->lock);
		s->stopping = 1;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	free_retired(s);
	tk__rcu_read_lock();
	for (slot = 0; slot < WHEEL_SLOTS; slot++) {
		for (e = wheel_take(s, slot); e; e = next) {
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
		free(e);
	}
	cds_lfht_destroy(s->ht, NULL);
	free(s->ring);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

uint64_t tk__memory_visited(struct tk_store *base)
{
	struct mem_store *s = (struct mem_store *)base;

	return tk_atomic_load_u64(&s->visited, TK_MO_RELAXED);
}

static const struct tk__store_ops memory_ops = {
	.name = "memory",
	.apply = memory_apply,
	.reset = memory_reset,
	.stats = memory_stats,
	.close = memory_close,
};

int tk__memory_open(struct tk_store **out, const struct tk_options *o)
{
	struct mem_store *s;
	uint64_t now, buckets = INITIAL_BUCKETS;
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
	rc = tk__random_bytes(s->seed, sizeof(s->seed));
	if (rc)
		goto fail;
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
	s->ht = cds_lfht_new_flavor(buckets, buckets, 0, 0, &urcu_bp_flavor,
				    NULL);
	rc = -ENOMEM;
	if (!s->ht)
		goto fail;
	s->interval =
		o->reclaim_interval ? o->reclaim_interval : DEFAULT_INTERVAL;
	s->use_thread = !(o->flags & TK_OPT_NO_RECLAIMER);
	tk_atomic_store_u64(&s->cursor, tick_of(now), TK_MO_RELAXED);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	*out = &s->base;
	return 0;
fail:
	free(s->ring);
	free(s);
	return rc;
}
