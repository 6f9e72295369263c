/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_window_direct.c - the window's direct path (try_window(): window()
 * in lib/store/store-slot.c, shm/direct.c) decides and writes exactly as
 * the generic apply() with its transition callback.
 *
 * The comparisons of test_direct_path.c, run on window policies: a
 * sliding window of 10 buckets and one of 100 (block keys), a fixed
 * window that packs into its slot's word and one whose 10 ms windows do
 * not (a block of two words).  The same generated timeline runs on a
 * direct-path zone and a generic copy of it (clock steps both ways,
 * sweeps, a flood of keys evicting blocks, resets, slots damaged by
 * hand: broken references, another algorithm's shape, "no state yet"),
 * and after every step the slot tables are byte-identical and every
 * answer equal; at the end the whole files (the block arena included)
 * are.  Also on two memory stores, with tables near and far.  Then
 * exactness under contention: threads (zone and memory store) and
 * processes (a zone) checking one hot key at limit L admit exactly L,
 * whichever path each takes.
 *
 * In-place updates of a window's hot word (docs/shm-protocol.md): seen
 * in the zone's bytes (the reference kept within a tick, the count in the
 * marked cell, the replaced block's hot cell frozen with its count); a
 * frozen cell left by a killed process never wedges a key; processes
 * whose clocks cross ticks at different paces (in-place updates racing
 * replacements, steps back) and a memory store growing under two threads
 * admit exactly L; a group check freezes the hot word of a state it
 * writes, and of no other; a fixed window in a block counts in place.
 *
 * Memos (docs/shm-protocol.md, "Memos"): a block published for a check
 * carries one of its tick, in the zone's bytes; checks within the tick
 * decide from it and the hot word alone; a memo cell of another gen or
 * out of bounds is none; a state with no room for one has none.
 *
 * White-box: linked statically for tk__limiter_generic().
 */
#define DIRECT_POLICIES                                                        \
	"sliding-window:10/1s", "sliding-window:50/10s,buckets=100",           \
		"fixed-window:4/2s", "fixed-window:7/10ms"
#define DIRECT_LIMITS 10, 50, 4, 7
/* Admissions all along (the limit is most of the checks), and long
 * enough that the threads overlap on a loaded machine: a few ms of
 * checks fit in one time slice. */
#define DIRECT_RACE_POLICY "sliding-window:60000/1h"
#define DIRECT_RACE_LIMIT 60000
#define DIRECT_RACE_CHECKS 30000
#define DIRECT_BLOCKS 1
/* Checks the direct side's try_window() decided: about half to three
 * quarters of them on these timelines (the rest met an insert, a sweep
 * due, damage, a flood key's expired state), so a path that declined
 * every check would fail. */
#define DIRECT_TAKEN(n) (tk__window_direct_decided > (n) / 3)
#define DIRECT_RESET() (tk__window_direct_decided = 0)
/* Unbounded: a memory store bounded this tight answers -EIO to block
 * keys after a second of retries (either path: the generic one too). */
#define DIRECT_MAX_KEYS 0
#define DIRECT_EXTRA_TESTS                                                     \
	cmocka_unit_test(test_processes_exact),                                \
		cmocka_unit_test(test_fixed_block_exact),                      \
		cmocka_unit_test(test_inplace_keeps_block),                    \
		cmocka_unit_test(test_frozen_never_wedges),                    \
		cmocka_unit_test(test_processes_ticking_exact),                \
		cmocka_unit_test(test_growth_exact),                           \
		cmocka_unit_test(test_format_by_gen),                          \
		cmocka_unit_test(test_marks_read_bounded),                     \
		cmocka_unit_test(test_memo_decides),                           \
		cmocka_unit_test(test_memo_needs_room),                        \
		cmocka_unit_test(test_group_freezes_what_it_writes),           \
		cmocka_unit_test(test_fixed_block_in_place),                   \
		cmocka_unit_test(test_memo_stays_in_block),                    \
		cmocka_unit_test(test_memo_mark_disagrees),
static void test_processes_exact(void **state);
static void test_fixed_block_exact(void **state);
static void test_inplace_keeps_block(void **state);
static void test_frozen_never_wedges(void **state);
static void test_processes_ticking_exact(void **state);
static void test_growth_exact(void **state);
static void test_format_by_gen(void **state);
static void test_marks_read_bounded(void **state);
static void test_memo_decides(void **state);
static void test_memo_needs_room(void **state);
static void test_group_freezes_what_it_writes(void **state);
static void test_fixed_block_in_place(void **state);
static void test_memo_stays_in_block(void **state);
static void test_memo_mark_disagrees(void **state);

#include "test_direct_path.c"

#define PROCS 3
#define PROC_CHECKS 30000

/*
 * A child's @checks checks of key "hot" through @policy on store @spec,
 * its clock moving from T0 across @span ns as it goes (0: standing still),
 * its admissions added to the shared count; the long way if @generic.
 */
static void proc_checks(const char *spec, const char *policy, int checks,
			uint64_t span, int generic)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_clock *c;
	struct tk_store *s;
	uint64_t n = 0;
	int k;

	KIT_CHILD_CHECK(1, tk_clock_manual_new(&c, T0) == 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	KIT_CHILD_CHECK(2, tk_store_open(&s, spec, &o) == 0);
	o.store = s;
	KIT_CHILD_CHECK(3, tk_limiter_open(&l, policy, NULL, &o) == 0);
	if (generic)
		tk__limiter_generic(l);
	for (k = 0; k < checks; k++) {
		KIT_CHILD_CHECK(
			4,
			tk_clock_set(c, T0 + (uint64_t)k * span /
							(uint64_t)checks) == 0);
		KIT_CHILD_CHECK(5, tk_limiter_check(l, "hot", 3, 1, &d) == 0);
		n += d.allowed;
	}
	atomic_fetch_add(&kit_shared()->allowed, n);
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(c);
}

/* One process the long way: both paths race on one state. */
static void proc_worker(int i)
{
	proc_checks("shm:race-p", DIRECT_RACE_POLICY, PROC_CHECKS, 0,
		    i == PROCS - 1);
}

/* @n processes @worker on a fresh zone @name admit @limit in all. */
static void procs_admit(const char *name, int n, void (*worker)(int),
			uint64_t limit)
{
	struct tk_options o = TK_OPTIONS_INIT;

	tk_zone_destroy(name);
	o.zone_capacity = CAP;
	assert_rc(tk_zone_create(name, &o), 0);
	assert_non_null(kit_shared());
	kit_shared_reset(T0);
	kit_run_workers(n, worker);
	assert_int_equal(atomic_load(&kit_shared()->allowed), limit);
	assert_rc(tk_zone_destroy(name), 0);
}

/* Processes on one zone check one hot key of a sliding window whose
 * window no check leaves (a manual clock that stands still): exactly
 * L admitted in all. */
static void test_processes_exact(void **state)
{
	(void)state;
	procs_admit("race-p", PROCS, proc_worker, DIRECT_RACE_LIMIT);
}

/* A fixed window in a block (windows of 10 ms do not pack), raced by
 * threads as contended() races the sliding window; the first thread the
 * long way. */
static void fixed_block_race(const char *spec)
{
	race_on(spec, "fixed-window:60000/10ms", 0, -1, DIRECT_RACE_LIMIT);
}

static void test_fixed_block_exact(void **state)
{
	(void)state;
	fixed_block_race("shm:race");
	fixed_block_race("memory");
}

/*
 * In-place updates (docs/shm-protocol.md, "In-place updates"), seen in
 * the zone's bytes: the one block key of zone "inplace".
 */
struct seen {
	struct tk__zone *z;
	struct tkz_slot *s;
	uint64_t w1;	    /* its reference */
	struct tkz_cell *c; /* its block's cells */
};

static void look_at(struct seen *v)
{
	uint64_t i, n;

	assert_int_equal(tk__zone_attach(&v->z, "inplace", NULL, 0), 0);
	n = tk__zone_geo(v->z)->capacity;
	v->s = NULL;
	for (i = 0; i < n; i++) {
		struct tkz_slot *s = &tk__zone_slots(v->z)[i];

		if (tkz_state(s->w[0]) == TKZ_MEM && (s->w[0] & TKZ_FP_BLOCK)) {
			assert_null(v->s);
			v->s = s;
		}
	}
	assert_non_null(v->s);
	v->w1 = v->s->w[1];
	assert_true(tkz_is_ref(v->w1));
	v->c = &tk__zone_cells(v->z)[tkz_ref_cell(v->w1)];
}

/* The hot mark of @v's block: the index + 1 of its hot word. */
static uint32_t mark_of(const struct seen *v)
{
	return (uint32_t)(v->c[1].w[0] >> TKZ_CELL_HOT_SHIFT) &
	       TKZ_CELL_HOT_MAX;
}

/* Forge @v's block's hot mark (a corrupt zone), its gen kept. */
static void set_mark(const struct seen *v, uint32_t mark)
{
	v->c[1].w[0] = (v->c[1].w[0] & TKZ_BLK_GEN_MASK) |
		       (uint64_t)mark << TKZ_CELL_HOT_SHIFT;
}

static void admit(struct tk_limiter *l, uint64_t remaining)
{
	struct tk_decision d;

	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, remaining);
}

/* A zone "inplace" of CAP slots, a manual clock at T0, a store on it and
 * a limiter of @policy. */
struct inplace {
	struct tk_clock *c;
	struct tk_store *s;
	struct tk_limiter *l;
};

static void open_inplace(struct inplace *f, const char *policy)
{
	struct tk_options o = TK_OPTIONS_INIT;

	tk_zone_destroy("inplace");
	o.zone_capacity = CAP;
	assert_rc(tk_zone_create("inplace", &o), 0);
	assert_rc(tk_clock_manual_new(&f->c, T0), 0);
	o.clock = f->c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_store_open(&f->s, "shm:inplace", &o), 0);
	o.store = f->s;
	assert_rc(tk_limiter_open(&f->l, policy, NULL, &o), 0);
}

/* open_inplace(), a first admission of key "k" (@remaining after it),
 * and @v on its block. */
static void open_looking(struct inplace *f, struct seen *v, const char *policy,
			 uint64_t remaining)
{
	open_inplace(f, policy);
	admit(f->l, remaining);
	look_at(v);
}

static void close_inplace(struct inplace *f)
{
	tk_limiter_close(f->l);
	tk_store_close(f->s);
	tk_clock_free(f->c);
	assert_rc(tk_zone_destroy("inplace"), 0);
}

/*
 * The admission that leaves @v's block's time (@remaining after it)
 * replaces it, its hot cell (mark @m) frozen with the @count it carried,
 * and the next goes in place in the new block, seen into @w.
 */
static void replaced(struct inplace *f, const struct seen *v, uint32_t m,
		     uint64_t count, uint64_t remaining, struct seen *w)
{
	admit(f->l, remaining);
	look_at(w);
	assert_true(w->w1 != v->w1);
	assert_true(v->c[1 + m].w[0] & TKZ_CELL_FROZEN);
	assert_int_equal(v->c[1 + m].w[1], count);
	admit(f->l, remaining - 1);
	assert_int_equal(w->s->w[1], w->w1);
}

/*
 * Within a tick every admission after the first adds to the block's hot
 * word in place: the slot keeps its reference and the count is in the
 * marked cell.  The next tick's admission replaces the block and freezes
 * the old one's hot cell, value kept; then in place again.
 */
static void test_inplace_keeps_block(void **state)
{
	struct inplace f;
	struct seen v, w;
	uint32_t m;
	int i;

	(void)state;
	open_looking(&f, &v, "sliding-window:100/10s", 99);
	m = mark_of(&v);
	/* The count of the bucket of T0's tick (a 1 s bucket). */
	assert_true(m >= 2 && m % 2 == 0 && m <= 22);
	assert_int_equal(v.c[1 + m].w[1], 1);
	for (i = 2; i <= 20; i++) {
		assert_rc(tk_clock_set(f.c, T0 + (uint64_t)i * 1000000), 0);
		/* An evictor's second chance: the next use marks it again. */
		if (i == 10)
			assert_true(tkz_cas_slot(v.s, v.s->w[0], v.w1,
						 v.s->w[0] & ~TKZ_REF, v.w1));
		admit(f.l, (uint64_t)(100 - i));
		assert_true(v.s->w[0] & TKZ_REF);
		assert_int_equal(v.s->w[1], v.w1);
		assert_int_equal(v.c[1 + m].w[1], (uint64_t)i);
		assert_int_equal(v.c[1 + m].w[0] & TKZ_CELL_FROZEN, 0);
	}
	assert_rc(tk_clock_set(f.c, T0 + SEC), 0);
	replaced(&f, &v, m, 20, 79, &w);
	assert_int_equal(mark_of(&w), m == 22 ? 2 : m + 2);
	tk__zone_detach(v.z);
	tk__zone_detach(w.z);
	close_inplace(&f);
}

/*
 * A process killed between its freeze and its publish leaves the hot
 * cell frozen in the published block: checks go on exactly (the next one
 * replaces the block), then in place again.  Also at the limit: no
 * admission more than L.
 */
static void test_frozen_never_wedges(void **state)
{
	struct inplace f;
	uint64_t words[TKZ_STATE_WORDS_MAX], exp;
	struct tk_decision d;
	struct seen v, w;
	int i;

	(void)state;
	open_inplace(&f, "sliding-window:10/10s");
	admit(f.l, 9);
	admit(f.l, 8);
	look_at(&v);
	assert_true(tk__blk_read_carried(v.z, v.s, v.s->w[0], v.w1, words,
					 TKZ_STATE_WORDS_MAX, &exp) > 0);
	assert_true(v.c[1 + mark_of(&v)].w[0] & TKZ_CELL_FROZEN);
	admit(f.l, 7);
	look_at(&w);
	assert_true(w.w1 != v.w1);
	assert_int_equal(w.c[1 + mark_of(&w)].w[0] & TKZ_CELL_FROZEN, 0);
	for (i = 6; i >= 0; i--) {
		admit(f.l, (uint64_t)i);
		assert_int_equal(w.s->w[1], w.w1);
	}
	assert_rc(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	tk__zone_detach(v.z);
	tk__zone_detach(w.z);
	close_inplace(&f);
}

#define TICK_PROCS 3
#define TICK_CHECKS 20000
#define TICK_LIMIT 30000

/* A worker whose clock crosses 50 one-second ticks as it checks: its
 * admissions in a tick go in place, the first of each tick replaces the
 * block, and other processes at other ticks do both at once; the last
 * the long way. */
static void tick_worker(int i)
{
	proc_checks("shm:inplace", "sliding-window:30000/100s,buckets=100",
		    TICK_CHECKS, 50 * SEC, i == TICK_PROCS - 1);
}

/*
 * Processes racing in-place updates against replacements of one key's
 * state, each at its own tick (so some step back): every admission lies
 * within the 100 s window of every check, so exactly L are admitted.  A
 * replacement that carried a count an in-place update had moved past
 * would admit more.
 */
static void test_processes_ticking_exact(void **state)
{
	(void)state;
	procs_admit("inplace", TICK_PROCS, tick_worker, TICK_LIMIT);
}

/*
 * A memory store's table grows (and moves its keys) while two threads
 * change one key's hot word in place: a move reads the state it carries
 * with its hot word frozen, so no admission lands behind it.  Exactly L.
 */
static void test_growth_exact(void **state)
{
	(void)state;
	/* Most of the two threads' 60,000 checks admit. */
	race_on("memory", "sliding-window:50000/100s", -1, 2, 50000);
}

/*
 * A page whose blocks held in-place states (a hot mark in cell 1's tag, a
 * frozen hot cell in the block a tick replaced) goes back to the pool
 * once its key is reset and a sweep passes: formatting judges a cell by
 * its gen alone, so every cell of the page is then {g, 0}, the bits
 * above the gen gone with the rest.
 */
static void test_format_by_gen(void **state)
{
	struct inplace f;
	struct seen v;
	uint64_t pw, g, i;
	int frozen = 0;

	(void)state;
	open_inplace(&f, "sliding-window:100/10s");
	admit(f.l, 99);
	admit(f.l, 98);
	look_at(&v);
	assert_true(mark_of(&v) > 0);
	assert_rc(tk_clock_set(f.c, T0 + SEC), 0);
	admit(f.l, 97);
	assert_rc(tk_limiter_reset(f.l, "k", 1), 0);
	/* Both blocks were in page 0; the first's hot cell is frozen. */
	for (i = 0; i < TKZ_PAGE_CELLS; i++)
		frozen |= !!(tk__zone_cells(v.z)[i].w[0] & TKZ_CELL_FROZEN);
	assert_true(frozen);
	assert_rc(tk_zone_sweep("inplace", T0 + SEC), 0);
	pw = tk__zone_pagetable(v.z)[0];
	assert_int_equal(tkz_page_size(pw), 0);
	assert_int_equal(pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT), 0);
	g = tk__zone_cells(v.z)[0].w[0];
	assert_true(g > 0 && g <= TKZ_BLK_GEN_MASK);
	for (i = 0; i < TKZ_PAGE_CELLS; i++) {
		assert_int_equal(tk__zone_cells(v.z)[i].w[0], g);
		assert_int_equal(tk__zone_cells(v.z)[i].w[1], 0);
	}
	tk__zone_detach(v.z);
	close_inplace(&f);
}

/*
 * A hot mark is believed only within what a read checked: past the
 * state's words it makes the reference broken (no write reaches a cell
 * beyond the block); past the words a caller read, the read reports no
 * hot word (a caller that read less carries nothing forward, and freezes
 * no cell whose gen it did not check).
 */
static void test_marks_read_bounded(void **state)
{
	struct inplace f;
	uint64_t words[TKZ_STATE_WORDS_MAX], exp, tag;
	struct tk__blk_hot hot;
	struct seen v;
	uint32_t m;

	(void)state;
	open_looking(&f, &v, "sliding-window:100/10s", 99);
	m = mark_of(&v);
	tag = v.c[1].w[0];
	assert_int_equal(tk__blk_read(v.z, v.s, v.s->w[0], v.w1, words,
				      TKZ_STATE_WORDS_MAX, &exp, &hot),
			 22);
	assert_int_equal(hot.mark, m);
	assert_int_equal(hot.value, 1);
	/* Read up to the word before the hot one: none reported. */
	assert_int_equal(tk__blk_read(v.z, v.s, v.s->w[0], v.w1, words, m - 1,
				      &exp, &hot),
			 22);
	assert_int_equal(hot.mark, 0);
	/* A mark past the state's 22 words: broken. */
	set_mark(&v, 23);
	assert_int_equal(tk__blk_read(v.z, v.s, v.s->w[0], v.w1, words,
				      TKZ_STATE_WORDS_MAX, &exp, &hot),
			 -EBADMSG);
	assert_int_equal(hot.mark, 0);
	set_mark(&v, 22);
	assert_int_equal(tk__blk_read(v.z, v.s, v.s->w[0], v.w1, words,
				      TKZ_STATE_WORDS_MAX, &exp, &hot),
			 22);
	v.c[1].w[0] = tag;
	tk__zone_detach(v.z);
	close_inplace(&f);
}

/* The memo cells of @v's block of @n words: {tick, width, the counts in
 * full but the hot one, the bucket half out} (sliding-window.c). */
static void assert_memo(const struct seen *v, uint32_t n, uint64_t tick,
			uint64_t width, uint64_t others, uint64_t old)
{
	const struct tkz_cell *m = &v->c[TKZ_BLK_OVERHEAD + n];
	uint64_t g = v->c[0].w[0] & TKZ_BLK_GEN_MASK, i;

	for (i = 0; i < TKZ_BLK_MEMO; i++)
		assert_int_equal(m[i].w[0], g);
	assert_int_equal(m[0].w[1], tick);
	assert_int_equal(m[1].w[1], width);
	assert_int_equal(m[2].w[1], others);
	assert_int_equal(m[3].w[1], old);
}

/*
 * The memo (docs/shm-protocol.md, "Memos"): a block published for a
 * check carries one of its tick, and checks within that tick decide from
 * it and the hot word alone.  Seen by a state word's cell made of another
 * gen: the memo's checks never read it (the block is kept, the count
 * goes on), where a read of the state finds the reference broken and
 * replaces it.  A memo cell of another gen, or a memo out of bounds, is
 * no memo: the check reads the state, and finds that cell.
 */
static void test_memo_decides(void **state)
{
	struct inplace f;
	struct seen v, w;
	uint32_t m, j;
	uint64_t keep;

	(void)state;
	open_looking(&f, &v, "sliding-window:100/10s", 99);
	m = mark_of(&v);
	assert_memo(&v, 22, T0 / SEC, SEC, 0, 0);
	/* A state word that is not the hot one, of another gen. */
	j = m == 2 ? 2 : 1;
	v.c[1 + j].w[0] ^= 1;
	admit(f.l, 98);
	admit(f.l, 97);
	assert_int_equal(v.s->w[1], v.w1);
	assert_int_equal(v.c[1 + m].w[1], 3);
	/* Out of bounds: more than 10 buckets of 2^48 each. */
	keep = v.c[TKZ_BLK_OVERHEAD + 22 + 2].w[1];
	v.c[TKZ_BLK_OVERHEAD + 22 + 2].w[1] = UINT64_C(10) << 48 | 1;
	admit(f.l, 99); /* a broken reference: no state */
	look_at(&w);
	assert_true(w.w1 != v.w1);
	v.c[TKZ_BLK_OVERHEAD + 22 + 2].w[1] = keep;
	tk__zone_detach(v.z);
	v = w;
	/* A memo cell of another gen. */
	m = mark_of(&v);
	assert_memo(&v, 22, T0 / SEC, SEC, 0, 0);
	admit(f.l, 98);
	assert_int_equal(v.s->w[1], v.w1);
	v.c[TKZ_BLK_OVERHEAD + 22 + 3].w[0] ^= 1;
	v.c[1 + j].w[0] ^= 1;
	admit(f.l, 99);
	look_at(&w);
	assert_true(w.w1 != v.w1);
	tk__zone_detach(v.z);
	/* The next tick: a memo of it, the last tick's count in full. */
	assert_rc(tk_clock_set(f.c, T0 + SEC), 0);
	admit(f.l, 98);
	tk__zone_detach(w.z);
	look_at(&w);
	assert_memo(&w, 22, T0 / SEC + 1, SEC, 1, 0);
	admit(f.l, 97);
	assert_int_equal(w.s->w[1], w.w1);
	/* Ten ticks on: that count is half out of the window. */
	assert_rc(tk_clock_set(f.c, T0 + 11 * SEC), 0);
	admit(f.l, 97);
	tk__zone_detach(w.z);
	look_at(&w);
	assert_memo(&w, 22, T0 / SEC + 11, SEC, 0, 2);
	tk__zone_detach(w.z);
	close_inplace(&f);
}

/*
 * A memo takes no more room than the state's class has spare: a window
 * whose state fills its class with no 4 cells to spare (14 buckets: 30
 * words and 2 cells of overhead in 32) has none, and goes in place from
 * its state read whole, as before.
 */
static void test_memo_needs_room(void **state)
{
	struct inplace f;
	struct seen v;
	uint64_t g;
	int i;

	(void)state;
	open_looking(&f, &v, "sliding-window:100/14s,buckets=14", 99);
	assert_int_equal(tkz_page_size(tk__zone_pagetable(
				 v.z)[tkz_ref_cell(v.w1) / TKZ_PAGE_CELLS]),
			 32);
	g = v.c[0].w[0] & TKZ_BLK_GEN_MASK;
	for (i = 0; i < TKZ_BLK_MEMO; i++)
		assert_true((v.c[32 + i].w[0] & TKZ_BLK_GEN_MASK) != g ||
			    v.c[32 + i].w[1] != T0 / SEC);
	admit(f.l, 98);
	admit(f.l, 97);
	assert_int_equal(v.s->w[1], v.w1);
	assert_int_equal(v.c[1 + mark_of(&v)].w[1], 3);
	tk__zone_detach(v.z);
	close_inplace(&f);
}

/*
 * A group check (a multi-key update, shm/mcas.c) freezes the hot word of
 * a state it writes, before it stages anything computed from it, and of
 * no other: one denied by its other limiter leaves the window's hot word
 * as it was, and the single checks after it go on in place.  One that
 * admits replaces the window's block, its old hot cell frozen with the
 * count it carried.
 */
static void test_group_freezes_what_it_writes(void **state)
{
	struct inplace f;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_key keys[2] = { { "k", 1 }, { "k", 1 } };
	struct tk_limiter *ls[2];
	struct tk_decision d;
	struct seen v;
	uint32_t m;

	(void)state;
	open_inplace(&f, "sliding-window:100/10s");
	o.clock = f.c;
	o.store = f.s;
	o.prefix = "g";
	ls[0] = f.l;
	assert_rc(tk_limiter_open(&ls[1], "gcra:1/1h", NULL, &o), 0);
	admit(f.l, 99);
	admit(f.l, 98);
	look_at(&v);
	m = mark_of(&v);
	assert_rc(tk_limiter_check(ls[1], "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0), 0);
	assert_false(d.allowed);
	assert_int_equal(v.c[1 + m].w[0] & TKZ_CELL_FROZEN, 0);
	admit(f.l, 97);
	assert_int_equal(v.s->w[1], v.w1);
	assert_int_equal(v.c[1 + m].w[1], 3);
	/* The other limiter's hour over: the group admits, and writes. */
	assert_rc(tk_clock_set(f.c, T0 + 3600 * SEC), 0);
	assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0), 0);
	assert_true(d.allowed);
	assert_true(v.s->w[1] != v.w1);
	assert_true(v.c[1 + m].w[0] & TKZ_CELL_FROZEN);
	assert_int_equal(v.c[1 + m].w[1], 3);
	tk_limiter_close(ls[1]);
	tk__zone_detach(v.z);
	close_inplace(&f);
}

/*
 * A fixed window in a block (windows under 16.8 ms do not pack) counts in
 * place within its window: the block kept, the count in the marked cell
 * (word 1).  The next window's admission replaces the block, the old
 * count frozen.
 */
static void test_fixed_block_in_place(void **state)
{
	struct inplace f;
	struct seen v, w;
	int i;

	(void)state;
	open_looking(&f, &v, "fixed-window:100/10ms", 99);
	assert_int_equal(mark_of(&v), 2);
	for (i = 2; i <= 5; i++) {
		admit(f.l, (uint64_t)(100 - i));
		assert_int_equal(v.s->w[1], v.w1);
		assert_int_equal(v.c[3].w[1], (uint64_t)i);
	}
	assert_rc(tk_clock_set(f.c, T0 + 10 * MS), 0);
	replaced(&f, &v, 2, 5, 99, &w);
	tk__zone_detach(v.z);
	tk__zone_detach(w.z);
	close_inplace(&f);
}

/*
 * A writer bounds its memo by the class its claim was made in, never by
 * the page word: one stopped since its claim may find the page reopened
 * for larger blocks (here forged so), and must write nothing past its own
 * block.  A state of 6 buckets (14 words) fills its 16 cells but 2: no
 * memo.
 */
static void test_memo_stays_in_block(void **state)
{
	uint64_t words[14] = { 0 }, memo[TKZ_BLK_MEMO] = { 1, 2, 3, 4 };
	uint64_t *pw, was, after[2 * TKZ_BLK_MEMO];
	struct inplace f;
	struct tk__blk b;
	struct seen v;
	int i;

	(void)state;
	open_looking(&f, &v, "sliding-window:60/6s,buckets=6", 59);
	assert_int_equal(tk__blk_claim(v.z, 14,
				       (uint64_t)(v.s - tk__zone_slots(v.z)),
				       v.s->w[1], T0, &b),
			 0);
	pw = &tk__zone_pagetable(v.z)[b.cell / TKZ_PAGE_CELLS];
	assert_int_equal(tkz_page_size(*pw), 16);
	was = *pw;
	*pw = (was & ~TKZ_PAGE_SIZE_MASK) | 32;
	memcpy(after, &tk__zone_cells(v.z)[b.cell + 16], sizeof(after));
	assert_int_equal(tk__blk_write(v.z, &b, T0 + SEC, words, 2, memo), 0);
	for (i = 0; i < TKZ_BLK_MEMO; i++) {
		assert_int_equal(tk__zone_cells(v.z)[b.cell + 16 + i].w[0],
				 after[2 * i]);
		assert_int_equal(tk__zone_cells(v.z)[b.cell + 16 + i].w[1],
				 after[2 * i + 1]);
	}
	*pw = was;
	tk__blk_release(v.z, &b);
	tk__zone_detach(v.z);
	close_inplace(&f);
}

/*
 * A block whose mark names another word than its memo's check means (a
 * corrupt zone) is read whole, for a denial as for an admission: here the
 * mark forged onto the current bucket's tick, whose value, taken for a
 * count, would deny a check the state admits.
 */
static void test_memo_mark_disagrees(void **state)
{
	struct inplace f;
	struct seen v;

	(void)state;
	open_looking(&f, &v, "sliding-window:2/10s", 1);
	/* The word before the count: its bucket's tick. */
	assert_int_equal(v.c[mark_of(&v)].w[1], T0 / SEC);
	set_mark(&v, mark_of(&v) - 1);
	admit(f.l, 0);
	tk__zone_detach(v.z);
	close_inplace(&f);
}
