/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zone.h - the shared-memory zone as the rest of the library sees it.
 *
 * shm/ knows nothing of policies or keys: callers hand it a 61-bit
 * fingerprint and a position hash, and a pure transition over a state of
 * a fixed number of words.  Nothing here includes lib/ headers.
 */
#ifndef TK_SHM_ZONE_H
#define TK_SHM_ZONE_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include <ck_pr.h>

#include "layout.h"

struct tk__zone; /* a process's mapping of one zone */

struct tk__zone_config {
	uint64_t capacity; /* slots; 0: 65536 */
	unsigned int mode; /* file mode; 0: 0600 */
	/* Owner and group of the file at creation, and trusted at attach;
	 * (uid_t)-1 and (gid_t)-1: none named (the creator's). */
	uid_t uid;
	gid_t gid;
	uint64_t flags; /* TKZ_FLAG_* */
	uint64_t grace; /* ns; 0: 60 s */
	uint64_t arena; /* bytes of state blocks; 0: 32 per slot */
	uint64_t now;	/* creation time, ns */
	/* A private table's bound on live keys (tk__zone_over_keys()); 0:
	 * none.  A zone has none. */
	uint64_t max_keys;
};

/* segment.c */
#define TK__ZONE_CREATE 0x1 /* create the zone if it does not exist */
#define TK__ZONE_EXCL 0x2   /* with CREATE: -EEXIST if it exists */

/*
 * Attach to zone @name (creating it from @cfg with TK__ZONE_CREATE; @cfg
 * also names the trusted owner and group, and may be NULL).  Returns 0,
 * -EINVAL (bad name; wrong magic; a world-writable mode to create),
 * -EPROTO (other version, truncated, corrupt or inconsistent header),
 * -EACCES (a file the trust rules refuse, see segment.c, or one we may
 * not read and write), -ENOENT (absent, without create), -ENOMEM, -EIO.
 */
int tk__zone_attach(struct tk__zone **out, const char *name,
		    const struct tk__zone_config *cfg, int flags);
void tk__zone_detach(struct tk__zone *z);
/*
 * A private table: a zone's layout in this process's anonymous memory,
 * for its threads only, keys hashed under @seed.  No file, no name, no
 * trust rules.  0, -EINVAL (capacity), -ENOMEM.  Freed by
 * tk__zone_detach().
 */
int tk__zone_private(struct tk__zone **out, const struct tk__zone_config *cfg,
		     const uint64_t seed[2]);
/*
 * May an open with @cfg share @z: is its file still the one its name
 * leads to (not destroyed, replaced, nor TK_SHM_DIR changed), and do the
 * trust rules with @cfg accept it now?  1 or 0.  If not, @z's users keep
 * it, and the open attaches the name afresh (and is judged so).
 */
int tk__zone_current(const struct tk__zone *z,
		     const struct tk__zone_config *cfg);
/* Is @name a zone's name (1 to 200 of [A-Za-z0-9._-], no leading '.')? */
int tk__zone_name_valid(const char *name);
/* Remove zone @name if the trust rules accept its file (as attach). */
int tk__zone_destroy(const char *name, const struct tk__zone_config *cfg);
/*
 * Would attaching @name with @cfg pass the trust rules?  0, or the error
 * an attach would return, with a sentence saying why in @why (if @len).
 */
int tk__zone_access(const char *name, const struct tk__zone_config *cfg,
		    char *why, size_t len);

/*
 * The zone's geometry as validated at attach, in the process's own
 * memory: the shared header may be overwritten later (a bug, an attacker
 * with write access), and nothing may then crash; the shared header is
 * used only for what changes (counters, shard lines, cursors).
 */
struct tkz_geo {
	uint64_t capacity, shards, pages, grace, flags;
	uint64_t per_shard; /* capacity / shards: no division per check */
	/* shards - 1, and per_shard / TKZ_WINDOW - 1: the masks of a
	 * key's shard and windows (all powers of two), kept ready. */
	uint64_t shard_mask, window_mask;
	uint64_t seed[2];
	uint64_t segment_size, created;
	uint32_t window;
};

struct tk__table;

/* The first members of a struct tk__zone (segment.c), read inline on
 * the hot path. */
struct tk__zone_head {
	struct tkz_geo geo;
	/* 1 once a fault showed the file truncated; set by the SIGBUS
	 * handler (guard.c), which then maps zero pages over the zone. */
	int broken;
	/* Where the mapping's header and slot table are (fixed at attach;
	 * a fault maps zero pages at the same addresses). */
	struct tkz_header *h;
	struct tkz_slot *slots;
	/* A private table that grows (grow.c): its successor, set once
	 * when a growth starts; its predecessor while that one's keys move
	 * here; and whether a full arena asks for a growth (see
	 * tk__zone_when_full()).  A zone has none of them. */
	struct tk__zone *next; /* __atomic, acquire and release (not ck_pr: */
	struct tk__zone *old;  /* ThreadSanitizer sees what they publish) */
	int may_grow;
	/* While old's keys move here: chunks of old claimed, and done;
	 * which are done.  Its place among the tables of its table: 0 for
	 * the first, its old's + 1 (grow.c). */
	uint64_t move_cursor, move_done;
	uint8_t *moved;
	uint64_t index;
	/* A private table's table (a zone has none), and how many of its
	 * frozen slots are MEMs of "no state yet" whose keys no successor
	 * has inserted since (ck_pr; see tk__zone_carry()). */
	struct tk__table *table;
	uint64_t carried;
	/* Whether full windows ask for a growth (tk__zone_when_slots_full());
	 * and while old's keys move here, what new keys may still take of
	 * this table: keys, and cells of blocks (ck_pr, signed; grow.c). */
	int may_grow_slots;
	uint64_t budget[2];
	/* The live keys a private table holds at most (0: no bound; a zone
	 * has none): see tk__zone_over_keys(). */
	uint64_t max_keys;
	/* The arena's page table and cells, and the rings of recent keys
	 * (fixed at attach). */
	uint64_t *pagetable;
	struct tkz_cell *cells;
	struct tkz_recent *recent;
};

static inline const struct tkz_geo *tk__zone_geo(const struct tk__zone *z)
{
	return &((const struct tk__zone_head *)(const void *)z)->geo;
}

static inline struct tkz_header *tk__zone_header(struct tk__zone *z)
{
	return ((struct tk__zone_head *)(void *)z)->h;
}

static inline struct tkz_slot *tk__zone_slots(struct tk__zone *z)
{
	return ((struct tk__zone_head *)(void *)z)->slots;
}

static inline uint64_t *tk__zone_pagetable(struct tk__zone *z)
{
	return ((struct tk__zone_head *)(void *)z)->pagetable;
}

static inline struct tkz_cell *tk__zone_cells(struct tk__zone *z)
{
	return ((struct tk__zone_head *)(void *)z)->cells;
}

/*
 * Between rounds of an update that lost a race (@lost: the rounds this
 * update has lost so far; a round that made a step of its own does not
 * count, see slots.c).  A lost round usually means another process just
 * committed, so the first 8 retry at once.  An update that keeps losing
 * is slower than its rivals' whole cycles (more processes than CPUs, a
 * longer transition): the next 8 yield the CPU, and from the 16th lost
 * round on each sleeps, 1 us doubling up to 1 ms, so that the first 128
 * rounds span real time even where a yield returns at once.  Rounds
 * 16 to 127 request 1 + 2 + ... + 512 us, then 102 x 1 ms: about 103 ms
 * in all (TK__ZONE_SLEEP_MAX_NS), plus what the scheduler adds to each
 * wake-up.  Then the update goes on, sleeping 1 ms per lost round, for
 * TK__ZONE_GIVE_UP_NS more of real time before -EIO (slots.c, go_on()):
 * contention ends, a livelock does not.  Nothing waits for anyone: a
 * rival that dies changes nothing here.
 */
#define TK__ZONE_YIELD_FROM 8
#define TK__ZONE_SLEEP_FROM 16
#define TK__ZONE_SLEEP_MIN_NS 1000		  /* the first sleep */
#define TK__ZONE_SLEEP_CAP_NS 1000000		  /* the longest one */
#define TK__ZONE_SLEEP_MAX_NS UINT64_C(103023000) /* all of them */
#define TK__ZONE_GIVE_UP_NS UINT64_C(1000000000)  /* after them */

/* slots.c: the slow part of tk__zone_backoff(). */
void tk__zone_pause(int lost);

static inline void tk__zone_backoff(int lost)
{
	if (lost >= TK__ZONE_YIELD_FROM)
		tk__zone_pause(lost);
}

static inline struct tk__zone *tk__zone_next(struct tk__zone *z)
{
	return __atomic_load_n(&((struct tk__zone_head *)(void *)z)->next,
			       __ATOMIC_ACQUIRE);
}

static inline struct tk__zone *tk__zone_old(struct tk__zone *z)
{
	return __atomic_load_n(&((struct tk__zone_head *)(void *)z)->old,
			       __ATOMIC_ACQUIRE);
}

/* grow.c: see tk__zone_carry(). */
int tk__table_carry(struct tk__zone *z, uint64_t fp);

/* Is @z a private table that grows (grow.c), not a zone? */
static inline int tk__zone_private_table(struct tk__zone *z)
{
	return ((struct tk__zone_head *)(void *)z)->table != NULL;
}

/*
 * After a commit of key @fp's insert in @z, not a copy's: 1 if it brings
 * over a key that a table @z grew from counted already (a key frozen
 * there before its first write), and so counts no insert; else 0
 * (docs/shm-protocol.md, "Growing a private table", rule 7).  A zone
 * brings nothing over.
 */
static inline int tk__zone_carry(struct tk__zone *z, uint64_t fp)
{
	return tk__zone_private_table(z) ? tk__table_carry(z, fp) : 0;
}

/*
 * grow.c: before a commit of a copy's insert of key @fp in the private
 * table @z (an INS marked TKZ_COPY, see tk__zone_copy()), 1 if the state
 * it copies is still frozen in the table @z's keys come from, so that the
 * commit brings it over (and counts no insert); 0 if that state was taken
 * (the key landed by another copy, or was reset), and the INS must go.
 */
int tk__table_copy_stands(struct tk__zone *z, uint64_t fp);

/*
 * What a private table's operations may return besides a transition's
 * results and errors: below every errno, so that no transition's error
 * (a quota's -EOVERFLOW, say) is taken for one.  grow.c acts on them,
 * and sizes the successor by what was full; a zone never returns them.
 */
#define TK__ZONE_GROW (-4096 - 1)	/* no block for a state: grow */
#define TK__ZONE_MOVED (-4096 - 2)	/* it has grown: use its successor */
#define TK__ZONE_GROW_SLOTS (-4096 - 3) /* a key's windows are full: grow */
/* A new key would pass max_keys while keys move from a predecessor: end
 * the move, then look again (an eviction waits for it: a move in flight
 * could bring an evicted state back). */
#define TK__ZONE_MOVE_FIRST (-4096 - 4)
#define TK__ZONE_NOT_PLAIN (-4096 - 5) /* tk__zone_block_step(): not here */
/* A tk__zone_hot_fn: more changes.  The limiter's TK__NOT_HOT (status.h). */
#define TK__ZONE_NOT_HOT (-4096 - 18)

/*
 * What a full arena does instead of evicting (blocks.c): 0 (evict),
 * TK__ZONE_GROW (a private table whose arena is below its largest size),
 * or TK__ZONE_MOVED (it has grown).  A table that may grow never evicts,
 * so no key is evicted while it moves; the flag is set at creation and
 * never changes.
 */
static inline int tk__zone_when_full(struct tk__zone *z)
{
	if (!((struct tk__zone_head *)(void *)z)->may_grow)
		return 0;
	return tk__zone_next(z) ? TK__ZONE_MOVED : TK__ZONE_GROW;
}

/* The same for full windows (slots.c), with TK__ZONE_GROW_SLOTS: a
 * private table of fewer slots than its largest size. */
static inline int tk__zone_when_slots_full(struct tk__zone *z)
{
	if (!((struct tk__zone_head *)(void *)z)->may_grow_slots)
		return 0;
	return tk__zone_next(z) ? TK__ZONE_MOVED : TK__ZONE_GROW_SLOTS;
}

/* grow.c: the live keys of @z's table, counted: inserts less the keys
 * reclaimed, evicted and reset, over every table of it. */
uint64_t tk__table_keys_counted(struct tk__zone *z);

/*
 * Would a new key in private table @z pass its bound on live keys?  Live
 * keys are those inserted and not reclaimed, evicted or reset, counted
 * over the table's successive sizes (tk__table_keys_counted()); keys
 * whose inserts are in flight are not among them yet, so concurrent
 * inserts may each see room for one more.  Read only by inserts.
 */
static inline int tk__zone_over_keys(struct tk__zone *z)
{
	uint64_t most = ((struct tk__zone_head *)(void *)z)->max_keys;

	return most && tk__table_keys_counted(z) >= most;
}

/* Has a fault shown the zone's file truncated?  Then the mapping holds
 * zeros, not the zone, for good. */
static inline int tk__zone_broken(const struct tk__zone *z)
{
	return ck_pr_load_int(
		&((struct tk__zone_head *)(uintptr_t)(const void *)z)->broken);
}

/*
 * tk__zone_run() in two halves, for a caller whose code between them is
 * inline rather than a callback: tk__zone_enter() returns -EPROTO if the
 * zone is broken already (then run nothing and skip the leave), else 0;
 * tk__zone_leave() returns @rc, or -EPROTO if a fault broke the zone
 * meanwhile.
 */
static inline int tk__zone_enter(struct tk__zone *z)
{
	return tk__zone_broken(z) ? -EPROTO : 0;
}

static inline int tk__zone_leave(struct tk__zone *z, int rc)
{
	/* Pairs with the store fence of the SIGBUS handler (guard.c): a
	 * call that read its zero pages sees the mark. */
	ck_pr_fence_load();
	return tk__zone_broken(z) ? -EPROTO : rc;
}

/*
 * Run @fn(@ctx), which touches @z's mapping: a fault on it (the file was
 * truncated: SIGBUS) lets @fn finish on zero pages instead of killing the
 * process, and makes this return -EPROTO; so does a zone broken before
 * (then @fn does not run).  Otherwise @fn's result.  Whatever @fn wrote
 * after the fault stays in this process.
 */
static inline int tk__zone_run(struct tk__zone *z, int (*fn)(void *ctx),
			       void *ctx)
{
	int rc = tk__zone_enter(z);

	return rc ? rc : tk__zone_leave(z, fn(ctx));
}
const char *tk__zone_name(const struct tk__zone *z);
/* Owner, group and permission bits of the zone's file. */
int tk__zone_file_owner(struct tk__zone *z, uint32_t *uid, uint32_t *gid,
			uint32_t *mode);
/* Check word of a header: a hash of its first 120 bytes. */
uint64_t tk__zone_header_check(const struct tkz_header *h);
/* Validate a header against a file of @size bytes owned as in @st. */
int tk__zone_validate(const struct tkz_header *h, uint64_t size);
int tk__zone_check_geo(const struct tkz_geo *g, uint64_t size);

/* slots.c */
#define TK__ZONE_KEEP 0
#define TK__ZONE_PERSIST 1

/*
 * A transition over a key's state: @old is NULL for "no state", else
 * @words words.  Returns TK__ZONE_PERSIST with @next (and, for block keys,
 * *@expires) set, TK__ZONE_KEEP, or a negative errno.  It may run several
 * times for one apply.
 */
typedef int (*tk__zone_fn)(void *ctx, const uint64_t *old, uint64_t *next,
			   uint64_t *expires);
/*
 * The same transition where it changes one word of @old alone (an
 * in-place update: tk__zone_block_step()): TK__ZONE_PERSIST with *@word
 * that word's index, *@value its value after and *@expires the state's
 * expiry after; TK__ZONE_KEEP; a negative errno; or TK__ZONE_NOT_HOT
 * where it changes more, for the tk__zone_fn to run.
 */
typedef int (*tk__zone_hot_fn)(void *ctx, const uint64_t *old, uint32_t *word,
			       uint64_t *value, uint64_t *expires);
/* (*@word is set whatever the answer: the word to mark hot in a state
 * written for this check, or UINT32_MAX for none; @old may be NULL.) */

/*
 * The in-place steps of a check (docs/shm-protocol.md, "In-place updates"
 * and "Memos"): @step is a tk__zone_hot_fn.  @memo (NULL: none) writes
 * TKZ_BLK_MEMO words that a check at this time needs of @next beside its
 * hot word, and returns 1, or 0 where @next is no state @step would change
 * in place.  @step_memo is @step on the state such a memo was made of, its
 * hot word now @value: the same answers, with *@after the hot word's new
 * value; TK__ZONE_NOT_HOT also where the memo is not of this time.
 */
typedef int (*tk__zone_memo_fn)(void *ctx, const uint64_t *memo, uint64_t value,
				uint32_t *word, uint64_t *after,
				uint64_t *expires);
struct tk__zone_inplace {
	tk__zone_hot_fn step;
	int (*memo)(void *ctx, const uint64_t *next, uint64_t *memo);
	tk__zone_memo_fn step_memo;
};

struct tk__zone_key {
	uint64_t fp;  /* 61 bits, never 0; TKZ_FP_BLOCK: a block key */
	uint64_t pos; /* chooses the shard and the windows */
};

/*
 * Run @fn atomically on @k's state of @words words (1 for a word key,
 * whose word is its own expiry time).  Returns @fn's result or -ENOSPC,
 * -E2BIG (too many words for a block), -EIO (no progress).
 */
int tk__zone_apply(struct tk__zone *z, const struct tk__zone_key *k,
		   uint64_t now, uint32_t words, tk__zone_fn fn, void *ctx);
/* tk__zone_apply() with the in-place steps of a block key's state where
 * @ip (if not NULL) finds one (tkz_step_hot(), hot.h). */
int tk__zone_apply_hot(struct tk__zone *z, const struct tk__zone_key *k,
		       uint64_t now, uint32_t words, tk__zone_fn fn,
		       const struct tk__zone_inplace *ip, void *ctx);
/* As tk__zone_apply(), for the copy of a state frozen in @z's
 * predecessor (grow.c): an insert it makes is marked TKZ_COPY, and
 * commits only while that state is frozen there, counting no insert
 * (tk__table_copy_stands()).  A private table's only. */
int tk__zone_copy(struct tk__zone *z, const struct tk__zone_key *k,
		  uint64_t now, uint32_t words, tk__zone_fn fn, void *ctx);
int tk__zone_reset(struct tk__zone *z, const struct tk__zone_key *k);
/* Tests: if set, called by an insert of @k with the candidate @at it
 * claimed, before it settles (@settled 0) and after (1). */
extern void (*tk__zone_insert_hook)(struct tk__zone *z,
				    const struct tk__zone_key *k, int at,
				    int settled);
/* Tests: if set, called by whoever commits an insert of key @fp in @z,
 * once the commit has landed and before the insert is counted. */
extern void (*tk__zone_commit_hook)(struct tk__zone *z, uint64_t fp);
/* The MEM slot of @k (with @create, inserted "no state yet" if absent):
 * its global index and value, the state in either shape (block or word)
 * as long as @k's algorithm wrote it.  0, -ENOENT, -ENOSPC, -EIO, -EPROTO
 * (another algorithm's). */
int tk__zone_locate(struct tk__zone *z, const struct tk__zone_key *k,
		    uint64_t now, int create, uint64_t *idx, uint64_t *w0,
		    uint64_t *w1);
/* Word key @k's MEM slot @idx, seen as {@w0, @w1}, made a block key of
 * the same state (slots.c).  0, -EAGAIN (it changed), or a claim's
 * error. */
int tk__zone_to_block(struct tk__zone *z, const struct tk__zone_key *k,
		      uint64_t idx, uint64_t w0, uint64_t w1, uint64_t now);
/* Sweep up to @budget slots of the shard of @k if a sweep is due. */
void tk__zone_maybe_sweep(struct tk__zone *z, const struct tk__zone_key *k,
			  uint64_t now);
void tk__zone_sweep_all(struct tk__zone *z, uint64_t now);

struct tk__zone_census {
	uint64_t empty, ins, mem, col; /* slots in each state */
	uint64_t violations;	       /* duplicate keys, bad slots */
	uint64_t blocks;	       /* state blocks in use */
	uint64_t block_bytes;	       /* bytes of those blocks */
	uint64_t invalid;	       /* states that @valid refused */
	/* Set by the caller (or NULL): may algorithm @alg have written
	 * @state, @words words long?  shm/ knows no algorithm. */
	int (*valid)(unsigned int alg, uint32_t words, const uint64_t *state);
};

/* The zone's event counters, as enum tkz_counter indexes them. */
void tk__zone_counters(struct tk__zone *z, uint64_t out[TKZ_COUNTERS]);

/* A full scan: counts slots and checks the invariants.  0 or -ENOMEM. */
int tk__zone_census(struct tk__zone *z, struct tk__zone_census *c);
/* Call @fn for every MEM slot (@state: its w1); stops if it returns
 * non-zero. */
int tk__zone_walk(struct tk__zone *z,
		  int (*fn)(void *ctx, uint64_t index, uint64_t fp,
			    uint64_t state),
		  void *ctx);

/* blocks.c: the arena of state blocks (docs/shm-protocol.md). */
struct tk__blk {
	uint64_t cell;	 /* its header cell */
	uint64_t h0, h1; /* its header as claimed */
};

/* Size class (index) of a state of @words words; -E2BIG if none. */
int tk__blk_class(uint32_t words);
/*
 * The one word of a state that may change in place, as a read found it
 * (docs/shm-protocol.md, "In-place updates"): @mark its index + 1 (0:
 * none), @cell its cell, @gen the block's, @value what the read saw.
 */
struct tk__blk_hot {
	uint32_t mark;
	uint64_t cell, gen, value;
};

/*
 * The state slot @s references as {@w0, @w1}: fills @words (if not NULL),
 * *@expires and, if not NULL, *@hot.  Returns the state's word count,
 * -EAGAIN if the slot changed (look again), or -EBADMSG if the reference
 * is not valid.  A caller that carries the state forward freezes @hot
 * before it publishes anything computed from it.
 */
int tk__blk_read(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
		 uint64_t w1, uint64_t *words, uint32_t max, uint64_t *expires,
		 struct tk__blk_hot *hot);
/*
 * Freeze the hot word @hot found, if any: no in-place update changes it
 * after this.  0; -EAGAIN if it changed since it was read (read again).
 */
int tk__blk_freeze(struct tk__zone *z, const struct tk__blk_hot *hot);
/* tk__blk_read() and tk__blk_freeze(): a state read to carry it forward
 * (a move to a grown table). */
int tk__blk_read_carried(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
			 uint64_t w1, uint64_t *words, uint32_t max,
			 uint64_t *expires);
/* Claim a free block for a state of @words words computed from value
 * @e of slot @slot.  0, -ENOSPC. */
int tk__blk_claim(struct tk__zone *z, uint32_t words, uint64_t slot, uint64_t e,
		  uint64_t now, struct tk__blk *b);
/* Claim a block of @cells cells for a descriptor (mcas.c). */
int tk__blk_claim_desc(struct tk__zone *z, uint32_t cells, uint64_t slot,
		       uint64_t e, uint64_t now, struct tk__blk *b);
/* May a claim bound as @h1 still be published? */
int tk__blk_bound(struct tk__zone *z, uint64_t h1);
/* Bind a claim to a new slot value; -ESTALE if the claim was lost. */
int tk__blk_rebind(struct tk__zone *z, struct tk__blk *b, uint64_t slot,
		   uint64_t e);
/* Write cell @c as gen @g, never over a newer gen's; -ESTALE if one. */
int tk__blk_put(struct tkz_cell *c, uint64_t g, uint64_t v);
/* Write the expiry and the words of a claim, word @mark - 1 marked hot
 * (0: none), and @memo's TKZ_BLK_MEMO words after them where the block has
 * room (@memo NULL: none); -ESTALE if the claim was lost. */
int tk__blk_write(struct tk__zone *z, const struct tk__blk *b, uint64_t expires,
		  const uint64_t *words, uint32_t mark, const uint64_t *memo);
/*
 * direct.c: check the block key in MEM slot @s seen as {@w0, @w1} at
 * @now by @fn (as tk__zone_apply() runs it on a state of @words words),
 * in the plain case: where @ip (if not NULL) finds that the check
 * changes the state's hot word alone, by a CAS of its cell (an in-place
 * update); else by @fn and a new block, the word @ip named marked hot,
 * with @ip's memo.  Its caller has asked the block's memo first
 * (tkz_step_memo(), hot.h).  Returns @fn's TK__ZONE_PERSIST (published) or
 * TK__ZONE_KEEP (confirmed), its negative result, -EAGAIN if the slot
 * changed (look again), -ENOSPC if no block was had (tk__zone_apply()'s
 * answer too), or TK__ZONE_NOT_PLAIN where tk__zone_apply() must decide
 * (having written nothing but, if a table must grow, a claim's turn).  @held
 * and *@holding as tk__blk_publish() keeps them: a caller that looks again
 * hands them back, and releases @held once done if *@holding.
 */
int tk__zone_block_step(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
			uint64_t w1, uint64_t now, uint32_t words,
			tk__zone_fn fn, const struct tk__zone_inplace *ip,
			void *ctx, struct tk__blk *held, int *holding);
/*
 * Publish @words words @next expiring at @expires as the state of MEM
 * slot @idx seen as {@w0, @w1}: a claim (or *@holding's @held, rebound),
 * its cells written, the slot's CAS, the replaced block released
 * (docs/shm-protocol.md, "State blocks", 2 to 6), after @hot (the
 * replaced state's hot word as read, or NULL) is frozen; word @mark - 1
 * of @next is marked hot (0: none), @memo (NULL: none) written after it
 * where its class has room.  0; -EAGAIN if the slot changed, the hot word
 * moved or the claim was lost (look again; *@holding says whether @held
 * is still this caller's, to rebind or release); or the claim's error.
 */
int tk__blk_publish(struct tk__zone *z, uint64_t idx, uint64_t w0, uint64_t w1,
		    uint64_t now, uint32_t words, const uint64_t *next,
		    uint64_t expires, const struct tk__blk_hot *hot,
		    uint32_t mark, const uint64_t *memo, struct tk__blk *held,
		    int *holding);
uint64_t tk__blk_ref(const struct tk__blk *b);
void tk__blk_release(struct tk__zone *z, const struct tk__blk *b);
/* Release the block incarnation @w1 references, if still that one. */
void tk__blk_release_ref(struct tk__zone *z, uint64_t w1);
/* Collect up to @budget blocks from the arena sweep cursor. */
void tk__blk_sweep(struct tk__zone *z, uint64_t budget);
/* Census of the arena; counts violations of blocks of MEM slots. */
void tk__blk_census(struct tk__zone *z, struct tk__zone_census *c);

/*
 * mcas.c: one atomic step over the states of several block keys (the
 * dimensions of a composite policy), by a multi-word CAS over their slots
 * with a descriptor in the arena that any process can complete.
 */
typedef int (*tk__zone_multi_fn)(void *ctx, const uint64_t *const *old,
				 uint64_t *const *next, int *persist,
				 uint64_t *expires);

#define TK__ZONE_MULTI_MAX 8

/*
 * Run @fn atomically over the states of the @n block keys @k (@words
 * words each, at most 1024 in all).  Returns @fn's result, or -ENOSPC,
 * -EIO.
 */
int tk__zone_apply_multi(struct tk__zone *z, size_t n,
			 const struct tk__zone_key *k, const uint32_t *words,
			 uint64_t now, tk__zone_multi_fn fn, void *ctx);
/*
 * Complete the multi-key update that slot value @dref, met in slot
 * @slot, names: 0, or -ESTALE if it names none (gone since the slot was
 * read, or corrupt) or one that does not list @slot.
 */
int tk__desc_help(struct tk__zone *z, uint64_t dref, uint64_t slot);
int tk__desc_valid(struct tk__zone *z, uint64_t dref);
/* May descriptor block @cell, read as {@h0, @h1}, be released? */
int tk__desc_garbage(struct tk__zone *z, uint64_t cell, uint64_t h0,
		     uint64_t h1);

/*
 * table.c and grow.c: a private table that grows.  Its keys' positions derive
 * from their fingerprints (tk__table_pos()), so that a key moves to a larger
 * table without its hash; a key's fingerprint never has TKZ_FROZEN.  The
 * operations below set k->pos themselves.
 *
 * Concurrency: every function below but tk__table_new(), _free() and
 * _reclaim() runs inside a read-side critical section of the caller's
 * RCU (lib/rcu.h), from any number of threads, and so does every use of
 * a table tk__table_zone() returned: a retired table is freed after a
 * grace period.
 */
struct tk__table;

/* What tk__table_zone() reads of a table: its first member (table.h). */
struct tk__table_head {
	struct tk__zone *cur; /* where to start looking for the newest */
};

/* A bijective mix of 64 bits: MurmurHash3's fmix64 finaliser. */
static inline uint64_t tk__zone_mix(uint64_t m)
{
	m ^= m >> 33;
	m *= UINT64_C(0xff51afd7ed558ccd);
	m ^= m >> 33;
	m *= UINT64_C(0xc4ceb9fe1a85ec53);
	m ^= m >> 33;
	return m;
}

/*
 * Position of a zone's key of keyed hash @h: the two halves of @h times an
 * odd constant, folded (a multiply-fold, as in wyhash).  Every bit of @h
 * reaches the window bits through the high half, so that keys sharing a
 * window still differ in ~56 fingerprint bits; one multiply on the chain
 * from the hash to the slot's load, where fmix64 took two and three
 * shifts (bench/README.md, "2026-11-28 morning").  The zone's format
 * (TKZ_VERSION 11).
 */
#define TKZ_POS_MUL UINT64_C(0x9e3779b97f4a7c15) /* 2^64 / phi, odd */

static inline uint64_t tk__zone_pos(uint64_t h)
{
	unsigned __int128 p = (unsigned __int128)h * TKZ_POS_MUL;

	return (uint64_t)p ^ (uint64_t)(p >> 64);
}

/* Position of a key of fingerprint @fp: its key bits, uniform already (a
 * keyed hash's), times an odd constant, which keeps bits 0-55 a bijection
 * of them (shard, windows) and carries them to the top (the turn): one
 * multiply where a mix took two on the chain from the hash to the slot's
 * load.  In-process tables only: a zone's placement is its format. */
static inline uint64_t tk__table_pos(uint64_t fp)
{
	return (fp & TKZ_FP_KEY) * TKZ_POS_MUL;
}

/* A table of @cfg->capacity slots and @cfg->arena bytes of blocks that
 * grows when full (its slots up to @max_capacity, its arena up to the
 * bytes per slot it starts with at that size, or TKZ_PAGES_MAX pages),
 * sizing its successor by what was full, and evicts beyond.  0, -EINVAL,
 * -ENOMEM. */
int tk__table_new(struct tk__table **out, const struct tk__zone_config *cfg,
		  uint64_t max_capacity, const uint64_t seed[2]);
/* Frees every table, retired or not.  No operation may run. */
void tk__table_free(struct tk__table *t);
/*
 * Free the tables retired before the call once no operation can reach
 * them; @synchronize waits for a grace period of the RCU the operations'
 * read-side sections belong to.  Returns how many were freed.  Outside
 * any read-side section, and one call at a time (of this and of
 * tk__table_clear() and _shrink(): the reclaimer's); operations run
 * meanwhile.
 */
uint64_t tk__table_reclaim(struct tk__table *t, void (*synchronize)(void));
/* What a reclaim leaves for its next grace period: the entries of the
 * freed tables made ready for later ones.  As tk__table_reclaim(). */
void tk__table_clear(struct tk__table *t, void (*synchronize)(void));
/*
 * Publish a smaller successor if fewer than an eighth of the newest
 * table's slots hold keys, or of its arena pages blocks, no key came in
 * while they were counted, and every retired table is freed and cleared
 * (tk__table_reclaim(), then tk__table_clear()): 1 if it did, 0 if not,
 * -ENOMEM.  Its keys move as a growth's do; tk__table_move() moves them
 * all.  In a read-side section; the reclaimer's, one call at a time.
 */
int tk__table_shrink(struct tk__table *t);
/* Move every key a growth or shrink of the newest table has not moved
 * yet: 1 if some could not be (no room: they wait), else 0.  In a
 * read-side section. */
int tk__table_move(struct tk__table *t, uint64_t now);
/* Retired tables freed so far, and retired tables still in retired[]
 * (allocated, or being freed by tk__table_reclaim()). */
uint64_t tk__table_freed(struct tk__table *t);
uint64_t tk__table_retired(struct tk__table *t);
/* Bytes of every table allocated (retired ones not freed yet included),
 * and of those in use: the newest, and its old while keys move. */
uint64_t tk__table_reserved(struct tk__table *t);
uint64_t tk__table_live(struct tk__table *t);
/* The newest table: where keys are inserted (census, walk, sweeps).
 * Inline: every check of the memory store asks. */
static inline struct tk__zone *tk__table_zone(struct tk__table *t)
{
	/* Acquire: pairs with the release of complete()'s CAS (grow.c). */
	struct tk__zone *z = __atomic_load_n(
				&((struct tk__table_head *)(void *)t)->cur,
				__ATOMIC_ACQUIRE),
			*n;

	while ((n = tk__zone_next(z)) != NULL)
		z = n;
	return z;
}
/* Successors published (shrinks included), and shrinks. */
uint64_t tk__table_growths(struct tk__table *t);
uint64_t tk__table_shrinks(struct tk__table *t);
/* Tests: if set, called by a growth's completion of @t before each of
 * its steps (@step 0 to 4, see complete() in grow.c), and by a copy of
 * @k's state to @nz: where @nz has no state of @k, before it writes (and,
 * with no slot of @k there, inserts) the copy (@landed 0), and once it
 * has landed, before it takes the frozen state (1). */
extern void (*tk__table_complete_hook)(struct tk__table *t, int step);
extern void (*tk__table_copy_hook)(struct tk__zone *nz,
				   const struct tk__zone_key *k, int landed);
/* Tests: if set, called by a growth's freeze of slot @idx of @z between
 * its read of the slot and its CAS, so that a rival's write can land. */
extern void (*tk__table_freeze_hook)(struct tk__zone *z, uint64_t idx);
/* The event counters of all its tables, a moved key counted once. */
void tk__table_counters(struct tk__table *t, uint64_t out[TKZ_COUNTERS]);
/* Keys held, in the newest table and not moved yet out of its predecessor:
 * a count, not a census. */
uint64_t tk__table_keys(struct tk__table *t);
/* As tk__zone_apply(), _apply_multi() and _reset(), on the table. */
int tk__table_apply(struct tk__table *t, const struct tk__zone_key *k,
		    uint64_t now, uint32_t words, tk__zone_fn fn, void *ctx);
int tk__table_apply_hot(struct tk__table *t, const struct tk__zone_key *k,
			uint64_t now, uint32_t words, tk__zone_fn fn,
			const struct tk__zone_inplace *ip, void *ctx);
int tk__table_reset(struct tk__table *t, const struct tk__zone_key *k,
		    uint64_t now);
int tk__table_apply_multi(struct tk__table *t, size_t n,
			  const struct tk__zone_key *k, const uint32_t *words,
			  uint64_t now, tk__zone_multi_fn fn, void *ctx);

#endif /* TK_SHM_ZONE_H */
