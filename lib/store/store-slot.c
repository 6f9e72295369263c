/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-slot.c - the store on the slot table, written once for both
 * tables it runs on: a zone in shared memory (store-shm.c) and a private
 * table that grows (store-memory.c).
 *
 * - A key is its fingerprint: the low 56 bits of its keyed hash
 *   (tk__keyhash(), lib/hash/keyhash.c) under the store's secret, and the
 *   shape of its state (tk__slot_fp()).  A zone places it by a mix of the
 *   whole hash; a private table by a mix of the fingerprint alone, so
 *   that a growth can move it without the key (shm/grow.c).
 * - A state of one word that is its own expiry time lives in the key's
 *   slot; larger states in blocks; a composite's dimensions, and the
 *   members of a group, are block keys updated together by one multi-key
 *   step (shm/mcas.c), which moves a one-word state it meets in a slot
 *   to a block of one word, where single checks then update it.
 * - Every touch of a zone runs under its fault guard (tk__zone_enter(),
 *   _leave()): a file truncated under us gives -EPROTO, not SIGBUS.
 *   Every touch of a private table runs in an RCU read-side section
 *   (lib/rcu.h), since a growth frees the tables it leaves behind after
 *   grace periods.  These and the table's own calls are where the two
 *   kinds differ; each operation is compiled once per kind (the kind a
 *   constant), so that neither pays for the other on its hot path.
 * - Checks and denials are counted per thread (lib/store/tally.h); a zone's
 *   counts reach the zone's shared counters in batches.  A zone's check
 *   also writes its key's name in a ring of the zone's (shm/recent.h): every
 *   denial, and one check in about TK__RECENT_SAMPLE of each thread; a
 *   private table's checks write none.
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "clock.h"
#include "hash/keyhash.h"
#include "rcu.h"
#include "store/slot-store.h"
#include "store/tally.h"
#include "atomic.h"
#include "step.h"
#include "test-hooks.h"
#include "../../shm/hot.h"

/* The zone's in-place step hands a check's own results through. */
_Static_assert(TK__ZONE_NOT_HOT == TK__NOT_HOT &&
		       TK__ZONE_PERSIST == TK__PERSIST &&
		       TK__ZONE_KEEP == TK__KEEP,
	       "tk__check_inplace results");
_Static_assert(TK__MEMO_WORDS == TKZ_BLK_MEMO, "a memo fills a block's");

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#define ALWAYS static inline __attribute__((always_inline))

static struct tk__slot_store *slot_of(struct tk_store *base)
{
	return (struct tk__slot_store *)base;
}

/*
 * Start the reclaimer thread if the store has one and this process does
 * not run it yet.  The test made first is the one that settles it on
 * each kind's default: a memory store has a thread (is it running?), a
 * zone none (does it want one?).
 */
ALWAYS void before(struct tk__slot_store *s, int kind)
{
	if (kind == TK__SLOT_TABLE) {
		if (caa_likely(tk__reclaimer_running(&s->reclaimer)))
			return;
		if (s->use_thread)
			tk__reclaimer_start(&s->reclaimer);
	} else if (s->use_thread) {
		tk__reclaimer_ensure(&s->reclaimer);
	}
}

/* The table key of keyed hash @h. */
ALWAYS void key_at(int kind, uint64_t h, int block, uint32_t alg,
		   struct tk__zone_key *k)
{
	k->fp = tk__slot_fp(h, block, alg);
	/* A zone's position takes all 64 bits, so that two keys sharing a
	 * window still differ in ~56 fingerprint bits. */
	k->pos = kind == TK__SLOT_ZONE ? tk__zone_pos(h) : tk__table_pos(k->fp);
}

ALWAYS void key_of(const struct tk__slot_store *s, int kind,
		   const unsigned char *key, size_t len, int block,
		   uint32_t alg, struct tk__zone_key *k)
{
	key_at(kind, tk__keyhash_fast(&s->kh, key, len), block, alg, k);
}

/* The hash of @head + @key where tk__keyhash_join() leaves it to its
 * caller: CMAC's two blocks or SipHash's words in registers if they can
 * be, else the bytes joined in memory. */
static __attribute__((noinline)) uint64_t
hash_joined(const struct tk__slot_store *s, const struct tk__store_head *head,
	    const char *key, size_t key_len)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	uint64_t h;

	if (tk__keyhash_join2(&s->kh, head->w, head->len, key, key_len, &h) ||
	    tk__keyhash_join_sip13(&s->kh, head->w, head->len, key, key_len,
				   &h))
		return h;
	return tk__keyhash(&s->kh, buf,
			   tk__store_key_join(buf, head, key, key_len));
}

/* key_of() of the store key @head + @key, hashed as it comes.  @win (a
 * constant: a window's path) also takes CMAC's two blocks inline, as a
 * window's tag makes most of its keys longer than one block. */
ALWAYS void key_of_parts(const struct tk__slot_store *s, int kind,
			 const struct tk__store_head *head, const char *key,
			 size_t key_len, int block, uint32_t alg, int win,
			 struct tk__zone_key *k)
{
	uint64_t h;

	if (!tk__keyhash_join(&s->kh, head->w, head->len, key, key_len, &h) &&
	    !(win &&
	      tk__keyhash_join2(&s->kh, head->w, head->len, key, key_len, &h)))
		h = hash_joined(s, head, key, key_len);
	key_at(kind, h, block, alg, k);
}

/* Enter and leave a private table's RCU section (@light: the hot path's
 * light one, tk__rcu_light()); a zone needs none. */
ALWAYS unsigned long *section(int kind, int light)
{
	if (kind == TK__SLOT_ZONE)
		return NULL;
	if (light)
		return tk__rcu_light_lock();
	tk__rcu_read_lock();
	return NULL;
}

ALWAYS void section_end(int kind, int light, unsigned long *ctr)
{
	if (kind == TK__SLOT_ZONE)
		return;
	if (light)
		tk__rcu_light_unlock(ctr);
	else
		tk__rcu_read_unlock();
}

/* Enter and leave a zone's fault guard; a private table needs none.
 * guard() returns 0 or the zone's -EPROTO (then skip guard_end()). */
ALWAYS int guard(const struct tk__slot_store *s, int kind)
{
	return kind == TK__SLOT_ZONE ? tk__zone_enter(s->zone) : 0;
}

ALWAYS int guard_end(const struct tk__slot_store *s, int kind, int rc)
{
	return kind == TK__SLOT_ZONE ? tk__zone_leave(s->zone, rc) : rc;
}

/* The table keys are inserted in (in a section, as everything below). */
ALWAYS struct tk__zone *zone_of(struct tk__slot_store *s, int kind)
{
	return kind == TK__SLOT_ZONE ? s->zone : tk__table_zone(s->table);
}

/*
 * Checks of this thread left before the next one a zone's ring of sampled
 * checks records (shm/recent.h); below 0: record this one.  Initial-exec,
 * as tk__tally_slot: the allowed path pays one decrement and a branch.
 */
static __thread int sample_left __attribute__((tls_model("initial-exec")));

/* Record @key in the sampled ring and draw the next gap: 0 to
 * 2 * TK__RECENT_SAMPLE - 2 checks, so that keys checked in a fixed
 * rotation (two rules a request) are not always the same one sampled. */
static __attribute__((noinline, cold)) void
sampled(struct tk__zone *z, const volatile struct tk__slot_name *name)
{
	static __thread uint32_t x;
	const unsigned char *key = name->key;

	/* The key's last byte stirred in: fork() children start with their
	 * parent's state, and part as their requests do. */
	x ^= (uint32_t)key[name->len - 1] << 8 | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	sample_left = (int)(x % (2 * TK__RECENT_SAMPLE - 1));
	tk__slot_name_put(z, TKZ_RECENT_SAMPLED, name);
}

/* A name's bytes, joined into @buf if they come in two parts: their
 * length. */
static size_t name_bytes(const volatile struct tk__slot_name *name,
			 unsigned char *buf, const unsigned char **out)
{
	if (!name->head) {
		*out = name->key;
		return name->len;
	}
	*out = buf;
	return tk__store_key_join(buf, name->head, name->key, name->len);
}

void tk__slot_name_put(struct tk__zone *z, int id,
		       const volatile struct tk__slot_name *name)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	const unsigned char *key;
	size_t len = name_bytes(name, buf, &key);

	tk__zone_recent_put(z, id, key, len);
}

/* A denial's first record (tk__slot_name_deny()), out of line: the
 * key's buffer is not on a repeat's path. */
static __attribute__((noinline)) void
name_first(struct tkz_recent_ring *r, const volatile struct tk__slot_name *name,
	   uint64_t id)
{
	unsigned char buf[TK__STORE_KEY_MAX];
	const unsigned char *key;
	size_t len = name_bytes(name, buf, &key);

	tk__recent_first(r, id, key, len);
}

/*
 * This thread's pace of new denial records (tk__slot_name_deny()), the
 * theoretical arrival time of a GCRA: TK__DENY_BURST records at once,
 * then one every TK__DENY_GAP ns.  Initial-exec, as sample_left.
 */
static __thread uint64_t deny_tat __attribute__((tls_model("initial-exec")));

#if TK_TEST_HOOKS
int tk__deny_unpaced;
#endif

/* May this thread make a new denial record at @now? */
static int deny_paced(uint64_t now)
{
	const uint64_t tol = (TK__DENY_BURST - 1) * TK__DENY_GAP;
	uint64_t tat = deny_tat;

	if (tk__deny_unpaced)
		return 1;
	/* Under one clock that does not step back, tat is never more than
	 * tol + one gap ahead of now.  Further ahead, now is another clock's
	 * (a second limiter on a manual or coarse clock) or the system clock
	 * stepped back, and the pace starts afresh. */
	if (tat > now && tat - now > tol) {
		if (tat - now <= tol + TK__DENY_GAP)
			return 0;
		tat = now;
	}
	deny_tat = (tat > now ? tat : now) + TK__DENY_GAP;
	return 1;
}

void tk__slot_name_deny(struct tk__zone *z,
			const volatile struct tk__slot_name *name, uint64_t id,
			uint64_t now)
{
	struct tkz_recent_ring *r =
		&tk__zone_recent(z)->ring[TKZ_RECENT_DENIED];

	/* A repeat first: the bytes joined only for a record. */
	if (tk__recent_repeat(r, id,
			      name->head ? name->head->len + name->len
					 : name->len))
		return;
	if (deny_paced(now))
		name_first(r, name, id);
	else
		tk__recent_forget();
}

/* A check of @key decided (@denied: a denial), counted; a zone's batch
 * reaches its shared counters every TK__TALLY_FLUSH checks, and a sample
 * of its checks its ring of them (its denials: result(),
 * tk__slot_direct()). */
ALWAYS void counted(struct tk__slot_store *s, int kind, int denied,
		    const volatile struct tk__slot_name *name)
{
	int due;

	if (kind == TK__SLOT_TABLE) {
		tk__tally_add(s->tally, denied);
		return;
	}
	due = tk__tally_count(s->tally, denied);
	if (due >= 0)
		tk__tally_flush(s->zone, s->tally, due);
	if (__builtin_expect(--sample_left < 0, 0))
		sampled(s->zone, name);
}

/* After an insert may have grown a private table, or a pass shrunk it:
 * is it far now? */
ALWAYS void grown(struct tk__slot_store *s, int kind)
{
	uint64_t g;

	if (kind == TK__SLOT_ZONE)
		return;
	g = tk__table_growths(s->table);
	/* One load when nothing changed: applies come here by the million. */
	if (g == atomic_load_explicit(&s->growths, memory_order_relaxed))
		return;
	atomic_store_explicit(&s->growths, g, memory_order_relaxed);
	tk__slot_far_update(&s->base, tk__zone_geo(zone_of(s, kind))->capacity,
			    s->near_max);
}

/* What a table's step @rc (counted if it decided a check of @key, @flags
 * having TK__T_CHECK) means to the limiter. */
ALWAYS int result(struct tk__slot_store *s, int kind, uint32_t flags, int rc,
		  const unsigned char *key, size_t len,
		  const struct tk__zone_key *k, uint64_t now)
{
	struct tk__slot_name name = { NULL, key, len };

	if (rc >= 0 && (flags & TK__T_CHECK)) {
		counted(s, kind, rc == TK__ZONE_KEEP, &name);
		if (kind == TK__SLOT_ZONE && rc == TK__ZONE_KEEP)
			tk__slot_name_deny(s->zone, &name, k->fp & TKZ_FP_KEY,
					   now);
	}
	if (rc == -E2BIG)
		return -ENOTSUP; /* a state larger than a block holds */
	if (rc < 0)
		return rc;
	return rc == TK__ZONE_PERSIST ? TK__PERSIST : TK__KEEP;
}

ALWAYS int apply(struct tk_store *base, const unsigned char *key, size_t len,
		 uint64_t now, const struct tk__transform *t, int kind)
{
	struct tk__slot_store *s = slot_of(base);
	struct tk__zone_key k;
	unsigned long *ctr;
	int rc;

	before(s, kind);
	key_of(s, kind, key, len, tk__slot_block(t), t->alg, &k);
	ctr = section(kind, 0);
	rc = guard(s, kind);
	if (rc == 0) {
		rc = kind == TK__SLOT_ZONE
			     ? tk__zone_apply_hot(s->zone, &k, now, t->words,
						  t->fn, t->inplace, t->ctx)
			     : tk__table_apply_hot(s->table, &k, now, t->words,
						   t->fn, t->inplace, t->ctx);
		tk__zone_maybe_sweep(zone_of(s, kind), &k, now);
		grown(s, kind);
		rc = result(s, kind, t->flags, rc, key, len, &k, now);
		rc = guard_end(s, kind, rc);
	}
	section_end(kind, 0, ctr);
	return rc;
}

int tk__slot_zone_apply(struct tk_store *s, const unsigned char *key,
			size_t len, uint64_t now, const struct tk__transform *t)
{
	return apply(s, key, len, now, t, TK__SLOT_ZONE);
}

int tk__slot_table_apply(struct tk_store *s, const unsigned char *key,
			 size_t len, uint64_t now,
			 const struct tk__transform *t)
{
	return apply(s, key, len, now, t, TK__SLOT_TABLE);
}

/* The direct check (slot-store.h) of @key on @z, under the guard,
 * counted. */
ALWAYS int direct(struct tk__slot_store *s, int kind, struct tk__zone *z,
		  const volatile struct tk__slot_name *name,
		  const struct tk__zone_key *k, const struct tkz_cand *cand,
		  uint64_t now, const struct tk__policy *p, uint64_t cost,
		  struct tk_decision *d)
{
	int denied = 0, rc = guard(s, kind);

	if (rc)
		return rc;
	rc = tk__slot_direct(z, k, cand, now, p, cost, d, &denied,
			     kind == TK__SLOT_ZONE ? name : NULL);
	if (rc == 0)
		counted(s, kind, denied, name);
	return guard_end(s, kind, rc);
}

#if TK_TEST_HOOKS
__thread uint64_t tk__window_direct_decided;
#endif

/*
 * A window's direct check (try_window()) of @k on @z, under the guard,
 * counted: the key's slot found as tk__slot_direct() finds it, its state
 * stepped by the policy's own transition (tk__check_fn(), as apply()
 * runs it) and written as apply() writes it: a packed word in place
 * (update_word() in shm/slots.c), a block by tk__zone_block_step(),
 * in place where the admission changes its hot word alone.
 * What that does not decide is TK__NOT_HERE, nothing written.
 */
ALWAYS int window(struct tk__slot_store *s, int kind, struct tk__zone *z,
		  const volatile struct tk__slot_name *name,
		  const struct tk__zone_key *k, const struct tkz_cand *cand,
		  uint64_t now, const struct tk__policy *p, uint64_t cost,
		  struct tk_decision *d)
{
	struct tk__transform t;
	struct tk__step st;
	struct tk__zone_word w;
	struct tk__blk held;
	uint64_t next[1], exp;
	int round, holding = 0, rc = guard(s, kind);

	if (rc)
		return rc;
	tk__step_single(&st, TK__OP_CHECK, p, 0, now, cost, &t);
	rc = TK__NOT_HERE;
	for (round = 0; round < TK__SLOT_DIRECT_ROUNDS; round++) {
		if (!tk__zone_word_find(z, k, cand, now, &w)) {
			rc = TK__NOT_HERE;
			break;
		}
		if (w.w0 & TKZ_FP_BLOCK) {
			/* Most checks of a window: its memo decides. */
			rc = t.inplace
				     ? tkz_step_memo(z, w.slot, w.w0, w.w1, now,
						     tk__step_check_memo, &st)
				     : TK__ZONE_NOT_HOT;
			if (rc == TK__ZONE_NOT_HOT)
				rc = tk__zone_block_step(z, w.slot, w.w0, w.w1,
							 now, p->state_words,
							 t.fn, t.inplace, &st,
							 &held, &holding);
		} else {
			rc = tk__check_fn(&st, w.w1 ? &w.w1 : NULL, next, &exp);
			if (rc == TK__PERSIST)
				rc = tk__zone_word_put(&w, next[0]) ? rc
								    : -EAGAIN;
			else if (rc == TK__KEEP)
				rc = tk__zone_word_keep(&w) ? rc : -EAGAIN;
		}
		if (rc != -EAGAIN)
			break;
	}
	if (holding) /* a claim whose publish was lost: not the apply's */
		tk__blk_release(z, &held);
	if (rc == -EAGAIN || rc == TK__ZONE_NOT_PLAIN)
		rc = TK__NOT_HERE;
	if (rc == -E2BIG)
		rc = -ENOTSUP; /* as result() says it */
	/* What tk__step_done() counts after an apply, whatever it
	 * answered (an error too: a cost above the limit). */
	if (rc != TK__NOT_HERE && st.corrupt)
		tk_atomic_add_u64(&s->base.corrupt, 1, TK_MO_RELAXED);
	if (rc >= 0) {
#if TK_TEST_HOOKS
		tk__window_direct_decided++;
#endif
		if (kind == TK__SLOT_ZONE && rc == TK__KEEP)
			tk__slot_name_deny(z, name, k->fp & TKZ_FP_KEY, now);
		counted(s, kind, rc == TK__KEEP, name);
		*d = st.d;
		rc = 0;
	}
	return guard_end(s, kind, rc);
}

/*
 * try_check() (struct tk__store_ops): a check of a word key in place, at
 * @now, or, with @late, at the time read from @late once the key's slot
 * is prefetched (slot-store.h).  TK__NOT_HERE where the direct check does
 * not decide, or while a private table's keys move to a new one (apply()
 * pulls them first).  @light: the RCU section's kind.
 */
ALWAYS int check(struct tk_store *base, const struct tk__store_head *head,
		 const char *key, size_t len, uint64_t now,
		 struct tk__when *late, const struct tk__policy *p,
		 uint64_t cost, struct tk_decision *d, int kind, int light,
		 int win)
{
	struct tk__slot_store *s = slot_of(base);
	volatile struct tk__slot_name name; /* why: slot-store.h */
	struct tk__zone *z;
	struct tk__zone_key k;
	struct tkz_cand cand;
	unsigned long *ctr;
	int rc;

	if (kind == TK__SLOT_ZONE) {
		name.head = head;
		name.key = key;
		name.len = len;
	}
	before(s, kind);
	key_of_parts(s, kind, head, key, len,
		     win && (p->state_words != 1 || !p->word_is_expiry),
		     p->alg->id, win, &k);
	ctr = section(kind, light);
	z = zone_of(s, kind);
	if (kind == TK__SLOT_TABLE && tk__zone_old(z)) {
		rc = TK__NOT_HERE;
	} else if (!late) {
		rc = win ? window(s, kind, z, &name, &k, NULL, now, p, cost, d)
			 : direct(s, kind, z, &name, &k, NULL, now, p, cost, d);
	} else {
		rc = tk__slot_prefetch_then_read(z, &k, &cand, late);
		if (rc == 0)
			rc = win ? window(s, kind, z, &name, &k, &cand,
					  late->ns, p, cost, d)
				 : direct(s, kind, z, &name, &k, &cand,
					  late->ns, p, cost, d);
	}
	section_end(kind, light, ctr);
	return rc;
}

/* check() compiled apart for either time, so that neither carries the
 * other's registers and branches. */
ALWAYS int check_at(struct tk_store *s, const struct tk__store_head *head,
		    const char *key, size_t len, uint64_t now,
		    struct tk__when *late, const struct tk__policy *p,
		    uint64_t cost, struct tk_decision *d, int kind, int light,
		    int win)
{
	if (late)
		return check(s, head, key, len, 0, late, p, cost, d, kind,
			     light, win);
	return check(s, head, key, len, now, NULL, p, cost, d, kind, light,
		     win);
}

int tk__slot_zone_try(struct tk_store *s, const struct tk__store_head *head,
		      const char *key, size_t key_len, uint64_t now,
		      struct tk__when *late, const struct tk__policy *p,
		      uint64_t cost, struct tk_decision *d)
{
	return check_at(s, head, key, key_len, now, late, p, cost, d,
			TK__SLOT_ZONE, 0, 0);
}

int tk__slot_zone_window(struct tk_store *s, const struct tk__store_head *head,
			 const char *key, size_t key_len, uint64_t now,
			 struct tk__when *late, const struct tk__policy *p,
			 uint64_t cost, struct tk_decision *d)
{
	return check_at(s, head, key, key_len, now, late, p, cost, d,
			TK__SLOT_ZONE, 0, 1);
}

int tk__slot_table_try(struct tk_store *s, const struct tk__store_head *head,
		       const char *key, size_t key_len, uint64_t now,
		       struct tk__when *late, const struct tk__policy *p,
		       uint64_t cost, struct tk_decision *d)
{
	return check_at(s, head, key, key_len, now, late, p, cost, d,
			TK__SLOT_TABLE, 1, 0);
}

int tk__slot_table_window(struct tk_store *s, const struct tk__store_head *head,
			  const char *key, size_t key_len, uint64_t now,
			  struct tk__when *late, const struct tk__policy *p,
			  uint64_t cost, struct tk_decision *d)
{
	return check_at(s, head, key, key_len, now, late, p, cost, d,
			TK__SLOT_TABLE, 1, 1);
}

int tk__slot_fenced_try(struct tk_store *s, const struct tk__store_head *head,
			const char *key, size_t key_len, uint64_t now,
			struct tk__when *late, const struct tk__policy *p,
			uint64_t cost, struct tk_decision *d)
{
	return check_at(s, head, key, key_len, now, late, p, cost, d,
			TK__SLOT_TABLE, 0, 0);
}

int tk__slot_fenced_window(struct tk_store *s,
			   const struct tk__store_head *head, const char *key,
			   size_t key_len, uint64_t now, struct tk__when *late,
			   const struct tk__policy *p, uint64_t cost,
			   struct tk_decision *d)
{
	return check_at(s, head, key, key_len, now, late, p, cost, d,
			TK__SLOT_TABLE, 0, 1);
}

ALWAYS int apply_multi(struct tk__slot_store *s, int kind, uint64_t now,
		       const struct tk__multi *m)
{
	struct tk__zone_key k[TK__ZONE_MULTI_MAX];
	unsigned long *ctr;
	size_t i;
	int rc;

	if (m->n > TK__ZONE_MULTI_MAX)
		return -ENOTSUP;
	before(s, kind);
	for (i = 0; i < m->n; i++)
		key_of(s, kind, m->key[i], m->len[i], 1, m->alg[i], &k[i]);
	ctr = section(kind, 0);
	rc = guard(s, kind);
	if (rc == 0) {
		rc = kind == TK__SLOT_ZONE
			     ? tk__zone_apply_multi(s->zone, m->n, k, m->words,
						    now, m->fn, m->ctx)
			     : tk__table_apply_multi(s->table, m->n, k,
						     m->words, now, m->fn,
						     m->ctx);
		for (i = 0; i < m->n; i++)
			tk__zone_maybe_sweep(zone_of(s, kind), &k[i], now);
		grown(s, kind);
		/* A composite's records name its first dimension's key. */
		rc = guard_end(s, kind,
			       result(s, kind, m->flags, rc, m->key[0],
				      m->len[0], &k[0], now));
	}
	section_end(kind, 0, ctr);
	return rc;
}

/* Composites: every dimension's state in a block, one atomic step over
 * all of them. */
int tk__slot_apply_multi(struct tk_store *base, uint64_t now,
			 const struct tk__multi *m)
{
	struct tk__slot_store *s = slot_of(base);

	return s->kind == TK__SLOT_ZONE
		       ? apply_multi(s, TK__SLOT_ZONE, now, m)
		       : apply_multi(s, TK__SLOT_TABLE, now, m);
}

int tk__slot_reset(struct tk_store *base, const unsigned char *key, size_t len)
{
	struct tk__slot_store *s = slot_of(base);
	struct tk__zone_key k;
	int rc;

	/* Slots match by key, whatever the shape of the state they hold.
	 * A reset judges nothing by time (a move it makes reads every
	 * state as live): no clock. */
	key_of(s, s->kind, key, len, 0, TK__ALG_GCRA, &k);
	if (s->kind == TK__SLOT_ZONE) {
		rc = tk__zone_enter(s->zone);
		return rc ? rc
			  : tk__zone_leave(s->zone,
					   tk__zone_reset(s->zone, &k));
	}
	tk__rcu_read_lock();
	rc = tk__table_reset(s->table, &k, 0);
	tk__rcu_read_unlock();
	return rc;
}

static void synchronize(void)
{
	tk__rcu_synchronize();
}

/*
 * The reclaimer thread's pass: expired states (a broken zone is left
 * alone).  Of a private table, first the keys a growth left to move, if
 * the checks have not moved them all; after the states, the tables
 * growths retired (outside any section: it waits for grace periods);
 * then, if the table is mostly empty, a smaller one, its keys moved at
 * once (the next pass frees the table they left).
 */
static void sweep_everything(void *arg, uint64_t now)
{
	struct tk__slot_store *s = arg;

	if (s->kind == TK__SLOT_ZONE) {
		if (tk__zone_enter(s->zone) == 0) {
			tk__zone_sweep_all(s->zone, now);
			tk__zone_leave(s->zone, 0);
		}
		return;
	}
	tk__rcu_read_lock();
	(void)tk__table_move(s->table, now);
	tk__zone_sweep_all(tk__table_zone(s->table), now);
	tk__rcu_read_unlock();
	tk__table_reclaim(s->table, synchronize);
	tk__table_clear(s->table, synchronize);
	tk__rcu_read_lock();
	if (tk__table_shrink(s->table) == 1)
		(void)tk__table_move(s->table, now);
	grown(s, TK__SLOT_TABLE);
	tk__rcu_read_unlock();
}

void tk__slot_init(struct tk__slot_store *s, const struct tk_options *o,
		   int use_thread)
{
	struct tk__zone *z =
		s->kind == TK__SLOT_ZONE ? s->zone : tk__table_zone(s->table);

	s->base.clock = o->clock ? o->clock : tk_clock_system();
	s->near_max = tk__slot_near_max();
	tk__slot_far_update(&s->base, tk__zone_geo(z)->capacity, s->near_max);
	s->use_thread = use_thread;
	if (use_thread)
		tk__reclaimer_init(
			&s->reclaimer, sweep_everything, s, s->base.clock,
			o->reclaim_interval ? o->reclaim_interval
					    : TK__SLOT_RECLAIM_INTERVAL);
}

void tk__slot_stop(struct tk__slot_store *s)
{
	if (s->use_thread)
		tk__reclaimer_destroy(&s->reclaimer);
}
