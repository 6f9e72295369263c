/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * grow.pml -- spin model of growing a private slot table: the move of the
 * keys of a table T into its successor T' (rules R1..R4), a reset that
 * stays made (R6) and the count of inserts across it (R7), on top of the
 * slot protocol of docs/shm-protocol.md that tests/model/slots.pml models.
 * Run by tests/model/check-model.sh (make check); see there for the
 * configurations and the exact spin/pan commands.
 *
 * THE TABLES
 *   One array of N + M slots: T is slots 0..N-1, T' slots N..N+M-1.  Every
 *   key's candidates are the whole of its table, in index order, as in
 *   slots.pml; slots and their changes are slots.pml's (w0 = state + 4*ref
 *   + 8*fp, a CAS is one d_step comparing and writing both words, a read is
 *   w0 then w1 in two steps, tickets from one counter, the settle rule with
 *   the previous scan's {slot, ticket}).  FROZEN is w0's bit 7 (the note's
 *   bit 56): {FROZEN, 0} for a frozen EMPTY, COL or INS, {w0|FROZEN, w1}
 *   for a frozen MEM.  Its fingerprint (w0 / 8 >= 16) matches no key and
 *   it is not EMPTY, so the base protocol sees a slot of another key, and
 *   no transition has a frozen value as its expected value.
 *   nxt is T->next != NULL (set by R2), old is T'->old != NULL (cleared by
 *   the migrator when R4 is done).  T' is published with its old set.
 *
 * THE KEYS AND THE STATE WORD (the abstraction)
 *   Key K (fp 1); with -DKEY2 also key K2 (fp 2), resident in T's last slot
 *   with state 1, which nobody applies but the migrator moves to T' (it
 *   fills slots of both tables).  There is no clock: a state word is the
 *   count of admissions of its one window, 0 (no state) .. L.  An update:
 *   s < L -> s + 1 (admitted, CAS), else denied (no write, validated by an
 *   untorn re-read).  -DINITK=1 (default): T starts with {MEM|1|K, 1} in
 *   slot 0 (one admission already made), so that moving a state matters;
 *   -DINITK=0: K starts absent and the old workers insert it in T first.
 *
 * THE PROCESSES (flat state machines, one d_step per shared-memory step)
 *   - NO old workers: one apply of K on T with slots.pml's protocol (scan
 *     torn; MEM(K) -> update it by CAS, colliding an own INS first; else
 *     INS(K) -> collide the later ones, commit the earliest, on a scan that
 *     started after it was seen; else claim an EMPTY slot; any failed CAS
 *     -> scan again, at most SCANS scans), plus R1: the load of T->next is
 *     its own step before the claim CAS and before the commit CAS (after
 *     the collides); if it is set the apply stops on T (an own INS stays
 *     there) and continues on T' as below.
 *   - NN new workers: once R2 is done, on T': load T'->old; if set, pull
 *     K (R3); then one apply of K on T' (the base protocol, no R1:
 *     T'->next stays NULL by R5).  A worker whose pull cannot finish (T' full,
 *     SCANS spent) drops its request: the real code fails it.
 *   - NR resetters (default 0), R6: once R2 is done, on T': if T'->old is
 *     set, pull K (R3); then take K's frozen MEM with a state in T, if
 *     any (one step: a frozen value changes only by a take), then drop
 *     K's MEM in T', if any (one step: found and freed by one CAS, the
 *     removal counted; K's true state becomes "none").  A resetter whose
 *     pull cannot finish stops there, as the code's reset fails.
 *   - R3, the pull of key k: read T''s slots, each by one untorn read
 *     (load16): a MEM(k) with a state -> done.  Else, for each slot of T
 *     in order, one step: frozen -> next slot; else CAS it to its frozen
 *     value.  The value V of k's frozen MEM is noted as its slot is frozen
 *     (or found frozen): a frozen value changes only by the take below,
 *     so that is what the note's later read of the frozen MEM reads until
 *     then.  V != 0 -> an apply on T' of "no state -> V, a state -> keep"
 *     (the keep validated by an untorn re-read, like a denial).  Once it
 *     has installed V or kept a state, the pull takes k's frozen MEM: a
 *     CAS of the value noted to {FROZEN, 0} (docs rule 6: a later pull
 *     finds nothing to copy).  As the code's copy does, the install keeps
 *     once that frozen MEM is taken: checked at the end of a scan that
 *     found no slot of k (so before it claims one) and in the step of its
 *     CAS (the code checks just before that CAS, after the read the CAS
 *     compares with; the gap is rule 6's race of word keys, which needs
 *     a reset, an insert of k into the same slot and a copy in flight,
 *     and is left out).  Its INS is a copy's, marked in its ticket (+64):
 *     whoever would commit it first checks, in a step of its own, that
 *     k's frozen MEM with a state is still in T, and collides the INS if
 *     not (R7).  Then the worker's own apply on T'.
 *   - R7, the count: a commit in T counts an insert; a commit of a marked
 *     INS in T' counts none; any other commit in T' is followed by a step
 *     that takes k's frozen MEM of no state in T (a key frozen before
 *     its first write, counted there) or else counts an insert.
 *   - one migrator (R4), started by R2: for each slot of T in order, one
 *     step: a MEM of key k (frozen or not), not yet pulled for this slot:
 *     pull k as in R3 (a pull that cannot install V is tried again MPULLS
 *     times, then the migrator stalls for ever: it must not finish without
 *     V in T'); else frozen -> next slot; else freeze it.  Then old = NULL.
 *     (R4's chunks: one migrator; other threads' pulls run beside it.)
 *   ONE STEP: the code reads a slot (two loads) and then CASes it to its
 *   frozen value, re-reading on failure.  A CAS that succeeds finds the
 *   value read, so it is the same as reading and CASing at its instant; a
 *   failed one changes nothing (a stutter); the skip of a frozen slot is
 *   decided on w0 alone, and its w1 is then frozen too.  So read + CAS is
 *   one step here, which keeps the search small; the apply's scans, whose
 *   torn pairs feed decisions, stay two steps a slot.
 *   - one starter: R2, T->next = T' (old already set), at any time.
 *   - NJ janitor actions (default 0), each on any slot of either table,
 *     read torn, then (if unfrozen) one CAS: free a COL; clear a MEM's ref bit;
 *     free a {MEM|0|fp, 0} (the first-sweep free of a key committed and
 *     never updated).  Collisions make the COLs; the model commits with
 *     the ref bit set, the janitor clears it, so both commit flavours of
 *     the doc are covered.
 *   - -DDEATH: any worker (and the migrator) may stop for ever at any step,
 *     leaving what it half did (an INS, a part of T frozen, a MEM(K, 0) in
 *     T' waiting for its V).  One thread of a process cannot die alone, but
 *     a thread stalled for ever is the same for safety.
 *
 * WHAT IS LEFT OUT, AND WHY THAT IS SOUND
 *   - The clock, state reclaims and evictions.  Growth only adds the
 *     frozen bit, and every one of those transitions is a CAS on an exact
 *     unfrozen value, so each fails on a frozen slot: exactly like the
 *     updates, which the model has.  slots.pml checks them against the
 *     base protocol.  The janitor keeps the free of a never-updated key
 *     (it makes "a MEM(k) in T'" come and go during a pull) and COL frees.
 *     The code no longer frees a MEM of no state in a private table
 *     (shm/slots.c reclaim() leaves it to its inserter), and a copy's
 *     such MEM is counted nowhere, so once the janitor has freed one the
 *     counts are no longer compared with what is held (ghost swept).
 *     (An eviction in T' of a pulled key, while T'->old is set, lets a
 *     later pull put back the frozen V: an older state, stricter than the
 *     nothing eviction leaves; the ghosts here would call that a lost
 *     update, so it stays out.)
 *   - Candidate windows: all slots are every key's candidates, so a pull
 *     of any key freezes all of T.  Partial overlaps (K2's pull freezing
 *     K's slot) only freeze a slot of K earlier, which K's own pull and R1
 *     already face from the migrator's pass here.
 *   - R5 (no growth of T' while its old is set): T' never grows here.
 *   - One apply per worker; more workers instead of more requests.
 *
 * THE PROPERTIES (asserted in the d_step of every CAS that can break them;
 * nothing else writes the table or the ghosts, so they hold in every state)
 *   g[k] is k's true state: the value of its last admitted update (its
 *   initial state for INITK and K2); ac[k] the admissions (<= L).
 *   - no lost update: every admitted update, on either table, was
 *     computed from g[k]; every pull installs V == g[k]; a live state
 *     equals g[k], where live is an unfrozen MEM(k) of T, or a MEM(k) of
 *     T' with a state (T' holds MEM(k, 0) while a pull installs V);
 *   - limit: ac[k] <= L;
 *   - P1, never two live states: no unfrozen MEM(k) of T with a state while
 *     T' holds a MEM(k) with a state;
 *   - P3, P4: no key in two MEM slots of T' (of T, frozen or not);
 *   - P5: when the migrator sets T'->old = NULL (after which nobody
 *     pulls), T' holds every key's true state (asserted there);
 *   - R7: ni[k] inserts and nr[k] removals (resets, janitor frees)
 *     counted: at every count ni[k] <= nr[k] + 1 (never counted twice);
 *     once every worker is done (a checker process), ni[k] == nr[k] +
 *     held (a MEM(k) in T', unfrozen in T, or frozen in T and not taken),
 *     and, unless a worker died or gave up, no MEM(k) of no state in T'
 *     (nobody would write it: a key that was never inserted).
 *
 * A GAP IN R3 AS WRITTEN, AND THE FIX MODELLED HERE
 *   R3 starts with "if T' holds a MEM(K) with a state, nothing" and does
 *   not say how that is read.  Taken from a scan's torn pair, it is wrong
 *   once T' is swept while the move runs.  -DHAS_TORN models that; with
 *   the configuration grow-sweep spin finds, among others, this lost
 *   update:
 *       R2.  The migrator (P2) pulls K: freezes T's slot 0 ({MEM|K, 1})
 *            and slot 1, claims T' slot 2 and commits it: {MEM|K, 0}.
 *       The janitor clears its ref bit.
 *       P1 (old worker; K's slot is frozen, so it goes to claim, and R1
 *            sends it to T') starts R3: reads w0 of T' slot 2: MEM(K).
 *       The janitor frees slot 2 (a never-updated key, first sweep).
 *       P2 (its next scan finds K absent) claims slot 2: {INS|K, 66}
 *            (ticket 2, marked a copy's).
 *       P1 reads w1 of slot 2: 66.  {MEM|K, 66} looks like a state: P1
 *            skips the pull, helps commit slot 2 (K's state is still
 *            frozen in T) and admits 0 -> 1, though that state is 1
 *            (limit + 1).
 *   FIX (the default): the decision is taken on an untorn read of the
 *   slot (load16), as every read-only decision of the base protocol is
 *   ("Why the races are safe": a torn read only feeds a CAS or a decision
 *   confirmed by an untorn re-read).  (Not modelled: for a block key,
 *   "no state yet" is {MEM|fp, 2^63|t}, which R3 must not take for a
 *   state either.)
 *
 * BROKEN VARIANTS (each must be rejected; the trails are check-model.sh's
 * configurations, shortest found by pan -i)
 *   -DPULL_NO_FREEZE  R3 reads k's MEM in T without freezing anything
 *                     (grow-move, 48 steps): R2; the migrator reads T's
 *                     {MEM|K, 1} without freezing it; P1 (old worker)
 *                     admits 1 -> 2 there; the migrator's install finds
 *                     the value it noted changed and keeps, freezes T and
 *                     sets T'->old = NULL with K's state only in T (P5).
 *                     With a new worker's pull instead, T and T' both
 *                     hold a live state (P1).
 *   -DNO_NEXT_CHECK   R1 is skipped (grow-insert, 46 steps): R2; P1 and
 *                     P2 (old workers) find K absent and claim slots 0 and
 *                     1; P1 commits slot 0 (its scan read slot 1 before
 *                     P2's claim); the migrator pulls K and freezes slot 0;
 *                     P2's scan sees slot 0 as another key's and its own
 *                     INS alone, and commits slot 1: T holds K twice, one
 *                     frozen (P4); P2 goes on updating slot 1 beside the
 *                     state a pull may already have moved.  A frozen MEM
 *                     is invisible to the base protocol's scans: only R1
 *                     keeps inserts out of T.
 *   -DFREEZE_ONE      R3 freezes only the MEM(k) it finds (grow-insert,
 *                     57 steps): P1 claims slot 0; P2 sees that INS in two
 *                     scans and loads T->next: NULL; R2; P1 loads T->next,
 *                     goes to T' and pulls K: no MEM(K) in T, nothing
 *                     frozen; P1 inserts K in T' (counted); P2 commits
 *                     slot 0 of T: an unfrozen {MEM|K, 0} beside K in T',
 *                     counted a second time (R7; left to go on, P1 admits
 *                     0 -> 1 in T' and P2 0 -> 1 in T: the note's "why
 *                     freeze every candidate").  Not rejected with
 *                     -DINITK=1 (expected: K's MEM stays visible in T
 *                     until it is frozen, so no old worker inserts K
 *                     there; the race needs K absent).
 *   -DHAS_TORN        above.
 *   -DPULL_FAIL_ON    a pull whose install fails (its apply gives up: the
 *                     code's -EIO) counts as done: the worker goes on to
 *                     its own apply on T', the migrator to the next slot
 *                     (grow-move, 43 steps: R2; the migrator freezes T,
 *                     the claims of its install fail, it sets T'->old =
 *                     NULL with K's state only in the frozen T: P5).  The
 *                     note does not say what a failed pull does; the
 *                     default fails the worker's operation and has the
 *                     migrator pull again (or stall), never go on.
 *   The three below in grow-reset (a new worker, a resetter, the
 *   migrator):
 *   -DCOUNT_AFTER     the first version of R7: nothing is marked, and
 *                     every commit in T' asks after it whether k's frozen
 *                     MEM with a state is still in T (a copy's: no count)
 *                     (47 steps): R2; the resetter's pull freezes T; the
 *                     new worker's pull claims and commits K in T'; the
 *                     resetter's pull installs 1 there and takes K's
 *                     frozen MEM; the new worker asks: not in T, so it
 *                     counts K a second time.
 *   -DNO_STALE_CHECK  a marked INS commits without the check (78 steps):
 *                     R2; the migrator freezes T and decides to install
 *                     (K has no slot in T'); the resetter's pull installs
 *                     1 and takes K's frozen MEM, the reset drops K; the
 *                     migrator claims and commits K (its mark: no count)
 *                     and keeps (its frozen MEM is taken); the new worker
 *                     admits 0 -> 1 on that MEM: K held, its insert
 *                     counted nowhere (and alone, a MEM of no state left).
 *   -DOWNER_CHECK     only the INS's own apply checks (89 steps): the
 *                     migrator's stale INS of K is committed by the new
 *                     worker, as a helper, after the reset: K held and
 *                     counted nowhere.
 *
 * A SMALLER SUCCESSOR
 *   A shrink (docs "Shrinking a private table") moves keys into a T'
 *   of fewer slots than T, by the same rules: -DN=3 -DM=2 -DKEY2 (the
 *   configuration grow-shrink) moves K and K2 from three slots into two,
 *   which they fill.  Nothing in R1..R4 depends on the sizes: a key's
 *   candidates are a whole table here, and a table of any size in the
 *   code (its position derives from its fingerprint alone).
 *
 * KNOBS (-D on the spin command line)
 *   N (2..3) slots of T, M (2..3) slots of T', NO old workers, NN new
 *   workers, NR resetters, NOMIG (no migrator), MPULLS, SCANS scans per
 *   apply, NJ janitor actions, L limit, INITK, KEY2, DEATH, NOHIDDEN (for
 *   pan -DBFS); the broken variants above.
 */

#ifndef N
#define N 2
#endif
#ifndef M
#define M 2
#endif
#ifndef NO
#define NO 2
#endif
#ifndef NN
#define NN 1
#endif
#ifndef SCANS
#define SCANS 3
#endif
#ifndef NJ
#define NJ 0
#endif
#ifndef L
#define L 2
#endif
#ifndef INITK
#define INITK 1
#endif

#ifndef MPULLS
#define MPULLS 1
#endif
#ifndef NR
#define NR 0
#endif

#define NS (N + M)      /* slots of both tables */
#define NK 2            /* fingerprints in the ghost arrays */
#define K 1             /* the workers' key */
#define K2 2            /* the second key (-DKEY2) */

#define S_EMPTY 0
#define S_INS 1
#define S_MEM 2
#define S_COL 3
#define FROZEN 128
#define CPY 64          /* the mark of a copy's INS, in its ticket */
#define MARKED(t) ((t) >= CPY)
#define MKW0(st, r, fp) ((st) + 4 * (r) + 8 * (fp))
#define ST(w) ((w) & 3)
#define REF(w) (((w) / 4) & 1)
#define FP(w) ((w) / 8)         /* >= 16 for a frozen w0: no key */
#define FRZ(w) ((w) / FROZEN)
#define UNF(w) ((w) % FROZEN)   /* w0 without its frozen bit */
#define ISMEM(w, k) (ST(w) == S_MEM && FP(UNF(w)) == (k))
#define ISMEMU(w, k) (ST(w) == S_MEM && FP(w) == (k))   /* and unfrozen */
/* the frozen value of an unfrozen {w0, w1} */
#define FRZ0(a) (ST(a) == S_MEM -> (a) + FROZEN : FROZEN)
#define FRZ1(a, b) (ST(a) == S_MEM -> (b) : 0)
#define NONE 255

/* the apply of worker phases: each names the next shared-memory step */
#define P_SCAN0 0       /* read w0 of slot i */
#define P_SCAN1 1       /* read w1 of slot i */
#define P_DROP 2        /* collide own INS: a MEM(k) exists */
#define P_UPD 3         /* update the MEM(k) seen, or validate a denial */
#define P_COLL 4        /* collide the later INS(k) in slot i */
#define P_NEXTC 5       /* R1: load T->next before the commit CAS */
#define P_COMMIT 6      /* commit the earliest INS(k), in slot hi */
#define P_NEXTL 7       /* R1: load T->next before the claim CAS */
#define P_CLAIM 8       /* claim an EMPTY slot */
/* the growth */
#define P_WAIT 9        /* migrator: wait for R2 */
#define P_OLD 10        /* R3: load T'->old (a new worker: once R2 is done) */
#define P_HAS 11        /* R3: read slot j of T': a state of k? */
#define P_HAS1 12       /* (-DHAS_TORN: its w1) */
#define P_FRZ 13        /* R3: freeze slot j of T */
#define P_MIG 14        /* R4: move slot mj of T */
#define P_MEND 15       /* R4: T'->old = NULL */
#define P_FIN 16        /* done */
#define P_DEAD 17       /* stopped for ever */
#define P_TAKE 18       /* R3: take the frozen MEM(k) whose V was copied */
#define P_STANDS 19     /* R7: a copy's INS: is its frozen MEM(k) untaken? */
#define P_STALE 20      /* R7: no: collide it */
#define P_CARRY 21      /* R7: after another commit in T': take a carried
			 * MEM(k) of T, or count the insert */
#define P_FORGET 22     /* reset: take k's frozen MEM with a state */
#define P_RDROP 23      /* reset: drop k's MEM in T' */

#define R_OLD 0
#define R_NEW 1
#define R_MIG 2
#define R_RST 3

byte w0[NS];
byte w1[NS];
byte tix;               /* the ticket counter: last ticket issued */
bit nxt;                /* T->next != NULL */
bit old = 1;            /* T'->old != NULL */
byte g[NK + 1];         /* ghost: each key's true state word */
byte ac[NK + 1];        /* ghost: its admissions */
byte ni[NK + 1];        /* ghost: its inserts counted */
byte nr[NK + 1];        /* ghost: its removals counted (resets, frees) */
byte running;           /* ghost: workers not finished (nor dead) */
bit quit;               /* ghost: a worker died or gave up */
bit swept;              /* ghost: the janitor freed a MEM of no state */
#ifdef NOHIDDEN                 /* for pan -DBFS, which refuses hidden */
#define SCRATCH byte
#else
#define SCRATCH hidden byte
#endif
SCRATCH hj;             /* d_step scratch, never part of the state */
SCRATCH hk;
SCRATCH hb;
SCRATCH ht;
SCRATCH hp;
SCRATCH hc;

/* trail printing only: T | T', each slot as state:ref:fp:w1, F = frozen */
inline show_table()
{
	hj = 0;
	printf("      table:");
	do
	:: hj < NS ->
		if
		:: hj == N -> printf(" |")
		:: else -> skip
		fi;
		if
		:: FRZ(w0[hj]) -> printf(" F")
		:: else -> printf(" ")
		fi;
		printf("[%d:%d:%d:%d]", ST(w0[hj]), REF(w0[hj]), FP(UNF(w0[hj])),
		       w1[hj]);
		hj++
	:: else -> break
	od;
	printf("   next %d old %d g %d ac %d\n", nxt, old, g[K], ac[K])
}

/* the global invariant, checked in the d_step of every successful CAS
 * that can break it */
inline check_inv()
{
	hj = 0;
	ht = 0;         /* keys with a live state in T, as bits 1 << k */
	hp = 0;         /* in T' */
	do
	:: hj < NS ->
		/* P3, P4: one MEM slot per key and table (T: frozen or not) */
		hk = hj + 1;
		do
		:: hk < NS ->
			assert(!(ST(w0[hj]) == S_MEM && ST(w0[hk]) == S_MEM &&
			         (hj < N) == (hk < N) &&
			         FP(UNF(w0[hj])) == FP(UNF(w0[hk]))));
			hk++
		:: else -> break
		od;
		hb = FP(UNF(w0[hj]));
		if
		:: hj < N && ISMEMU(w0[hj], hb) ->
			/* no lost update: a live state of T is the true one */
			assert(w1[hj] == g[hb]);
			if
			:: w1[hj] != 0 -> ht = ht | (1 << hb)
			:: else -> skip
			fi
		:: hj >= N && ST(w0[hj]) == S_MEM && w1[hj] != 0 ->
			/* and so is one of T' */
			assert(w1[hj] == g[hb]);
			hp = hp | (1 << hb)
		:: else -> skip
		fi;
		hj++
	:: else -> break
	od;
	assert((ht & hp) == 0);         /* P1: never two live states */
	ht = 0;
	hp = 0
}

/* R7: an insert of key kk counted; never twice for one live key */
inline count_insert(kk)
{
	ni[kk]++;
	printf("      insert of %d counted: %d, removals %d\n", kk, ni[kk],
	       nr[kk]);
	assert(ni[kk] <= nr[kk] + 1)
}

/* is k's frozen MEM with a state still in T, not taken?  into hb */
inline frozen_state(kk)
{
	hb = 0;
	hj = 0;
	do
	:: hj < N ->
		if
		:: FRZ(w0[hj]) && ISMEM(w0[hj], kk) && w1[hj] != 0 -> hb = 1
		:: else -> skip
		fi;
		hj++
	:: else -> break
	od
}

/* ---- worker helpers; all run inside a d_step ---- */

#define LO (tb -> N : 0)        /* the apply's table: slots LO..HI-1 */
#define HI (tb -> NS : N)

inline clear_scan()
{
	i = LO; a = 0; mi = NONE; m0 = 0; m1 = 0; hi = NONE;
	hj = 0;
	do
	:: hj < NS -> s1[hj] = 0; hj++
	:: else -> break
	od
}

/* a new apply of key k on table tbl; mode 0 the worker's update, 1 the
 * pull's "no state -> pv, a state -> keep" */
inline start_apply(tbl, mode)
{
	tb = tbl; md = mode;
	tries = SCANS - 1;
	own = NONE; t = 0; pi = NONE; pt = 0;
	clear_scan();
	phase = P_SCAN0
}

/* R3 from its start */
inline start_pull()
{
	j = N; a = 0; b = 0; pv = 0; ps = NONE; pw = 0;
	phase = P_HAS
}

/* the pull is over (V installed or kept, or nothing to install) */
inline pull_over()
{
	j = 0; a = 0; b = 0; pv = 0; ps = NONE; pw = 0;
	if
	:: role == R_MIG -> mp = 1; phase = P_MIG
	:: role == R_RST -> phase = P_FORGET
	:: else -> start_apply(1, 0)
	fi
}

/* the worker is done */
inline finish()
{
	phase = P_FIN;
	running--
}

/* the apply is over: ok = admitted, denied, installed or kept */
inline apply_over(ok)
{
	if
	:: !ok -> printf("P%d gives up (SCANS spent)\n", _pid); quit = 1
	:: else -> skip
	fi;
	tb = 0; own = NONE; t = 0; pi = NONE; pt = 0; tries = 0;
	clear_scan();
	i = 0;
	if
	:: md == 1 && ok -> md = 0; phase = P_TAKE
#ifdef PULL_FAIL_ON
	:: md == 1 && !ok -> md = 0; pull_over()        /* as if installed */
#endif
	:: md == 1 && !ok && role == R_MIG && mt > 0 ->
		/* the migrator must not finish without V in T': pull again */
		md = 0; mt--; start_pull()
	:: else -> md = 0; pv = 0; ps = NONE; pw = 0; k = 0; finish()
	fi
}

/* a CAS failed or a step is done: look up again (bounded) */
inline rescan()
{
	if
	:: tries == 0 -> apply_over(0)
	:: else -> tries--; clear_scan(); phase = P_SCAN0
	fi
}

/* R1 found T->next set: leave T (an own INS stays there), go to T' */
inline to_next()
{
	tb = 0; own = NONE; t = 0; pi = NONE; pt = 0; tries = 0;
	clear_scan();
	i = 0;
	phase = P_OLD
}

/* collide the next later INS(k) seen at or after slot 'from', or commit */
inline next_collide(from)
{
	i = from;
	do
	:: i < HI && s1[i] == 0 -> i++
	:: else -> break
	od;
	if
	:: i < HI -> phase = P_COLL
	:: else ->
		i = 0;
#ifdef NO_NEXT_CHECK
		phase = P_COMMIT
#else
		phase = (tb -> P_COMMIT : P_NEXTC)
#endif
	fi
}

/* end of a scan: choose what to do, as in "An apply (check) runs" */
inline decide()
{
	i = 0;
	if
	:: mi != NONE ->
		pi = NONE; pt = 0;
		if
		:: own != NONE -> phase = P_DROP
		:: else -> phase = P_UPD
		fi
	:: mi == NONE && hi != NONE ->
		if
		:: (hi == own && s1[hi] == t + 1) || (hi == pi && s1[hi] == pt + 1) ->
			if
#if defined(OWNER_CHECK)
			:: tb && MARKED(s1[hi] - 1) && hi == own -> phase = P_STANDS
#elif !defined(NO_STALE_CHECK)
			:: tb && MARKED(s1[hi] - 1) -> phase = P_STANDS
#endif
			:: else -> next_collide(hi + 1)
			fi
		:: else ->
			pi = hi; pt = s1[hi] - 1;
			rescan()
		fi
	:: else ->
		pi = NONE; pt = 0;
		if
		:: own != NONE -> t = 0     /* published once: never reuse it */
		:: else -> skip
		fi;
		own = NONE;
		if
		:: md == 1 && (w0[ps] != pw || w1[ps] != pv) ->
			/* the copy's check before it writes (and so before it
			 * claims): its frozen MEM was taken, keep */
			printf("P%d: the frozen MEM of %d is taken, keeps\n", _pid, k);
			apply_over(1)
		:: else ->
#ifdef NO_NEXT_CHECK
			phase = P_CLAIM
#else
			phase = (tb -> P_CLAIM : P_NEXTL)
#endif
		fi
	fi
}

/* R3: slot j of T is done; after the last one, install V if there is one */
inline next_frz()
{
	a = 0; b = 0;
	j++;
	if
	:: j < N -> phase = P_FRZ
	:: else ->
		j = 0;
		if
		:: pv != 0 -> start_apply(1, 1)
		:: else -> pull_over()
		fi
	fi
}

/* R4: slot mj of T is done */
inline next_mig()
{
	a = 0; b = 0; mp = 0; k = 0;
	mj++;
	if
	:: mj < N -> phase = P_MIG
	:: else -> mj = 0; phase = P_MEND
	fi
}

/* a copy's INS is marked (R7); the first version marked nothing */
#ifdef COUNT_AFTER
#define MARK 0
#else
#define MARK (md -> CPY : 0)
#endif

/* transition 2, claim, CAS {0,0} -> {INS|k,t} on any slot of the apply's
 * table that is EMPTY at the CAS; a fresh ticket per published INS */
#define CLAIM_OPT(x) \
	:: d_step { \
		phase == P_CLAIM && ((x) >= N) == tb && w0[x] == 0 && w1[x] == 0 -> \
		if \
		:: t == 0 -> tix++; t = tix + MARK \
		:: else -> skip \
		fi; \
		w0[x] = MKW0(S_INS, 0, k); w1[x] = t; own = x; \
		printf("P%d claims slot %d: w1 %d\n", _pid, x, t); show_table(); \
		check_inv(); \
		rescan() \
	}

proctype worker(byte role)
{
	byte phase;
	byte k;           /* the key of the apply or pull */
	bit tb;           /* the apply's table: 0 T, 1 T' */
	bit md;           /* 0 the worker's update, 1 a pull's install of pv */
	byte pv;          /* V: the state of k's frozen MEM (0 none) */
	byte ps = NONE;   /* R3: the slot of T holding that MEM, and its w0 */
	byte pw;
	byte tries;
	byte i;           /* slot being read, collided */
	byte a, b;        /* words just read (two steps: may be torn) */
	byte mi = NONE;   /* first MEM(k) seen: slot and both words */
	byte m0, m1;
	byte s1[NS];      /* 1 + w1 of each INS(k) seen in this scan */
	byte hi = NONE;   /* earliest INS(k) seen in this scan */
	byte pi = NONE;   /* earliest INS(k) of the previous scan, and its w1 */
	byte pt;
	byte own = NONE;  /* own published INS: slot and ticket */
	byte t;
	byte j;           /* R3: slot of T' read, slot of T frozen */
	byte mj;          /* R4: slot of T moved */
	bit mp;           /* R4: slot mj's key was pulled */
	byte mt = MPULLS; /* R4: pulls left to retry before stalling for ever */

	d_step {
		if
		:: role == R_OLD -> k = K; start_apply(0, 0)
		:: role == R_NEW || role == R_RST -> k = K; phase = P_OLD
		:: else -> phase = P_WAIT
		fi
	}
end:
	do
	/* ---- the apply (slots.pml's worker, with R1 on T) ---- */
	:: d_step {
		phase == P_SCAN0 ->
		a = w0[i];
		printf("P%d read w0[%d] = %d:%d:%d frozen %d\n", _pid, i, ST(a),
		       REF(a), FP(UNF(a)), FRZ(a));
		phase = P_SCAN1
	   }
	:: d_step {
		phase == P_SCAN1 ->
		hb = w1[i];
		printf("P%d read w1[%d] = %d\n", _pid, i, hb);
		if
		:: FP(a) == k && ST(a) == S_MEM && mi == NONE ->
			mi = i; m0 = a; m1 = hb
		:: FP(a) == k && ST(a) == S_INS ->
			s1[i] = hb + 1;
			if
			:: hi == NONE -> hi = i
			:: else -> skip
			fi
		:: else -> skip
		fi;
		a = 0;
		i++;
		if
		:: i < HI -> phase = P_SCAN0
		:: else -> decide()
		fi
	   }
	:: d_step {
		/* transition 4 on the own INS: {INS|k,t} -> {COL|k,t} */
		phase == P_DROP ->
		if
		:: w0[own] == MKW0(S_INS, 0, k) && w1[own] == t ->
			w0[own] = MKW0(S_COL, 0, k);
			printf("P%d collides own INS in slot %d\n", _pid, own);
			show_table()
		:: else -> skip
		fi;
		own = NONE; t = 0;
		phase = P_UPD
	   }
	:: d_step {
		/* transition 1 on the word read: the worker's update (admitted ->
		 * CAS, denied -> an untorn re-read), or the pull's install (no
		 * state and its frozen MEM not taken -> CAS to pv; else keep,
		 * an untorn re-read) */
		phase == P_UPD ->
		if
		:: md == 0 && m1 < L -> hb = m1 + 1
		:: md == 1 && m1 == 0 && w0[ps] == pw && w1[ps] == pv -> hb = pv
		:: else -> hb = 0
		fi;
		if
		:: hb != 0 && w0[mi] == m0 && w1[mi] == m1 ->
			w0[mi] = MKW0(S_MEM, 1, k);
			w1[mi] = hb;
			if
			:: md == 0 ->
				printf("P%d admitted: slot %d %d -> %d\n", _pid, mi, m1, hb);
				assert(g[k] == m1);     /* computed from the true state */
				g[k] = hb;
				ac[k]++;
				assert(ac[k] <= L)      /* never more admitted than L */
			:: else ->
				printf("P%d installs V: slot %d %d -> %d\n", _pid, mi, m1, hb);
				assert(g[k] == pv)      /* the pull moves the true state */
			fi;
			show_table();
			check_inv();
			apply_over(1)
		:: hb == 0 && w0[mi] == m0 && w1[mi] == m1 ->
			printf("P%d denied (md 0) or keeps (md 1): md %d, slot %d = %d\n",
			       _pid, md, mi, m1);
			apply_over(1)
		:: else ->
			rescan()
		fi
	   }
	:: d_step {
		/* transition 4: collide, CAS {INS|k,t} -> {COL|k,t} */
		phase == P_COLL ->
		if
		:: w0[i] == MKW0(S_INS, 0, k) && w1[i] == s1[i] - 1 ->
			w0[i] = MKW0(S_COL, 0, k);
			printf("P%d collides INS %d in slot %d\n", _pid, s1[i] - 1, i);
			show_table();
			next_collide(i + 1)
		:: else ->
			rescan()
		fi
	   }
	:: d_step {
		/* R1 before the commit CAS */
		phase == P_NEXTC ->
		if
		:: nxt ->
			printf("P%d: T->next is set, not committing\n", _pid);
			to_next()
		:: else ->
			printf("P%d: T->next is NULL, committing\n", _pid);
			phase = P_COMMIT
		fi
	   }
	:: d_step {
		/* transition 3: commit, CAS {INS|k,t} -> {MEM|1|k,0} */
		phase == P_COMMIT ->
		if
		:: w0[hi] == MKW0(S_INS, 0, k) && w1[hi] == s1[hi] - 1 ->
			w0[hi] = MKW0(S_MEM, 1, k);
			w1[hi] = 0;
			printf("P%d commits INS %d in slot %d\n", _pid, s1[hi] - 1, hi);
			show_table();
			check_inv();
			if
			:: !tb -> count_insert(k)       /* T counts every insert */
			:: tb && MARKED(s1[hi] - 1) ->  /* a copy's: counted in T */
				skip
			:: else -> hc = 1               /* decided after it */
			fi
		:: else -> skip
		fi;
		pi = NONE; pt = 0;
		if
		:: hc -> hc = 0; phase = P_CARRY
		:: else -> rescan()
		fi
	   }
	:: d_step {
		/* R7, after a commit in T' (not a copy's): take k's frozen MEM
		 * of no state in T (a key T froze before its first write,
		 * counted there), or count the insert.  -DCOUNT_AFTER: the
		 * first version, where nothing is marked, and a commit whose
		 * key has a frozen MEM with a state in T is a copy's */
		phase == P_CARRY ->
#ifdef COUNT_AFTER
		frozen_state(k);
#else
		hb = 0;
#endif
		if
		:: hb -> printf("P%d: a copy's commit, counted in T\n", _pid)
		:: else ->
			hk = NONE;
			hj = 0;
			do
			:: hj < N ->
				if
				:: hk == NONE && FRZ(w0[hj]) && ISMEM(w0[hj], k) &&
				   w1[hj] == 0 -> hk = hj
				:: else -> skip
				fi;
				hj++
			:: else -> break
			od;
			if
			:: hk != NONE ->
				w0[hk] = FROZEN;
				printf("P%d takes the carried slot %d\n", _pid, hk);
				show_table()
			:: else -> count_insert(k)
			fi
		fi;
		hb = 0; hk = 0; hj = 0;
		rescan()
	   }
	:: d_step {
		/* R7: a copy's INS commits only while the state it copies is
		 * frozen in T, not taken: asked before the commit (before the
		 * collides, as the code does), by whoever commits */
		phase == P_STANDS ->
		frozen_state(k);
		if
		:: hb -> next_collide(hi + 1)
		:: else ->
			printf("P%d: the copy's INS in slot %d is stale\n", _pid, hi);
			phase = P_STALE
		fi;
		hb = 0; hj = 0
	   }
	:: d_step {
		/* R7: a stale copy's INS goes: {INS|k,t} -> {COL|k,t} */
		phase == P_STALE ->
		if
		:: w0[hi] == MKW0(S_INS, 0, k) && w1[hi] == s1[hi] - 1 ->
			w0[hi] = MKW0(S_COL, 0, k);
			printf("P%d collides the stale INS in slot %d\n", _pid, hi);
			show_table()
		:: else -> skip
		fi;
		pi = NONE; pt = 0;
		rescan()
	   }
	:: d_step {
		/* R1 before the claim CAS */
		phase == P_NEXTL ->
		if
		:: nxt ->
			printf("P%d: T->next is set, not claiming\n", _pid);
			to_next()
		:: else ->
			printf("P%d: T->next is NULL, claiming\n", _pid);
			phase = P_CLAIM
		fi
	   }
	CLAIM_OPT(0)
	CLAIM_OPT(1)
#if N > 2
	CLAIM_OPT(2)
#endif
	CLAIM_OPT(N)
	CLAIM_OPT(N + 1)
#if M > 2
	CLAIM_OPT(N + 2)
#endif
	:: d_step {
		/* the claim CAS failed: the slot was taken meanwhile */
		phase == P_CLAIM ->
		printf("P%d: claim CAS failed\n", _pid);
		rescan()
	   }
	/* ---- R3, the pull ---- */
	:: d_step {
		phase == P_WAIT && nxt -> mj = 0; phase = P_MIG
	   }
	:: d_step {
		phase == P_OLD && nxt ->
		if
		:: old -> start_pull()
		:: !old && role == R_RST -> phase = P_FORGET
		:: else -> start_apply(1, 0)
		fi
	   }
#ifndef HAS_TORN
	:: d_step {
		/* an untorn read of slot j of T' */
		phase == P_HAS ->
		printf("P%d read T' slot %d (untorn) = %d:%d:%d:%d\n", _pid, j,
		       ST(w0[j]), REF(w0[j]), FP(UNF(w0[j])), w1[j]);
		if
		:: ISMEMU(w0[j], k) && w1[j] != 0 ->
			printf("P%d: T' slot %d holds a state of %d\n", _pid, j, k);
			pull_over()
		:: else ->
			j++;
			if
			:: j < NS -> skip
			:: else -> j = 0; phase = P_FRZ
			fi
		fi
	   }
#else
	:: d_step {
		phase == P_HAS ->
		a = w0[j];
		printf("P%d read w0[%d] = %d:%d:%d\n", _pid, j, ST(a), REF(a),
		       FP(UNF(a)));
		phase = P_HAS1
	   }
	:: d_step {
		/* the decision on a torn pair, not confirmed */
		phase == P_HAS1 ->
		printf("P%d read w1[%d] = %d\n", _pid, j, w1[j]);
		if
		:: ISMEMU(a, k) && w1[j] != 0 ->
			printf("P%d: T' slot %d read as a state of %d: %d\n", _pid, j, k,
			       w1[j]);
			pull_over()
		:: else ->
			a = 0;
			j++;
			if
			:: j < NS -> phase = P_HAS
			:: else -> j = 0; phase = P_FRZ
			fi
		fi
	   }
#endif
	:: d_step {
		/* slot j of T: frozen -> note k's V; else CAS it to its frozen
		 * value (see "one step" in the header) */
		phase == P_FRZ ->
		a = w0[j]; b = w1[j];
		if
		:: FRZ(a) ->
			if
			:: ISMEM(a, k) -> pv = b; ps = j; pw = a
			:: else -> skip
			fi
#if defined(PULL_NO_FREEZE)
		:: else ->
			if
			:: ISMEMU(a, k) -> pv = b; ps = j; pw = a
			:: else -> skip
			fi
#else
#if defined(FREEZE_ONE)
		:: !ISMEMU(a, k) && !FRZ(a) -> skip
#endif
		:: else ->
			w0[j] = FRZ0(a);
			w1[j] = FRZ1(a, b);
			if
			:: ISMEMU(a, k) -> pv = b; ps = j; pw = w0[j]
			:: else -> skip
			fi;
			printf("P%d freezes slot %d\n", _pid, j);
			show_table()
#endif
		fi;
		next_frz()
	   }
	:: d_step {
		/* R3, rule 6: the copy landed, or T' had a state: take the
		 * frozen MEM it copied, {w0, V} -> {FROZEN, 0}, a CAS of the
		 * value noted (it fails if another pull took it first) */
		phase == P_TAKE ->
		if
		:: FRZ(pw) && w0[ps] == pw && w1[ps] == pv ->
			w0[ps] = FROZEN;
			w1[ps] = 0;
			printf("P%d takes slot %d\n", _pid, ps);
			show_table();
			check_inv()
		:: else -> skip
		fi;
		pull_over()
	   }
	/* ---- R4, the migrator ---- */
	:: d_step {
		/* slot mj of T: a MEM, frozen or not, whose key is not pulled
		 * yet -> pull it; frozen -> next slot; else freeze it */
		phase == P_MIG ->
		a = w0[mj]; b = w1[mj];
		if
		:: ST(a) == S_MEM && !mp ->
			k = FP(UNF(a));
			printf("P%d (migrator) pulls key %d of slot %d\n", _pid, k, mj);
			start_pull()
		:: FRZ(a) && (mp || ST(a) != S_MEM) -> next_mig()
		:: else ->
			w0[mj] = FRZ0(a);
			w1[mj] = FRZ1(a, b);
			printf("P%d (migrator) freezes slot %d\n", _pid, mj);
			show_table();
			next_mig()
		fi
	   }
	:: d_step {
		phase == P_MEND ->
		old = 0;
		printf("P%d (migrator): T'->old = NULL\n", _pid);
		/* P5: from now on no pull runs, so T' holds every true state */
		hk = 1;
		do
		:: hk <= NK ->
			hb = 0;
			hj = N;
			do
			:: hj < NS ->
				if
				:: ISMEMU(w0[hj], hk) && w1[hj] == g[hk] -> hb = 1
				:: else -> skip
				fi;
				hj++
			:: else -> break
			od;
			assert(g[hk] == 0 || hb);
			hk++
		:: else -> break
		od;
		finish()
	   }
	/* ---- a reset of k on T' (after its pull) ---- */
	:: d_step {
		/* rule 6: take k's frozen MEM with a state in T, so that no
		 * copy in flight brings it back */
		phase == P_FORGET ->
		hj = 0;
		do
		:: hj < N ->
			if
			:: FRZ(w0[hj]) && ISMEM(w0[hj], k) && w1[hj] != 0 ->
				w0[hj] = FROZEN;
				w1[hj] = 0;
				printf("P%d (reset) takes slot %d\n", _pid, hj);
				show_table()
			:: else -> skip
			fi;
			hj++
		:: else -> break
		od;
		phase = P_RDROP
	   }
	:: d_step {
		/* drop k's MEM in T', if any: no state, a removal counted */
		phase == P_RDROP ->
		hj = N;
		do
		:: hj < NS ->
			if
			:: ISMEMU(w0[hj], k) ->
				w0[hj] = 0;
				w1[hj] = 0;
				nr[k]++;
				g[k] = 0;
				ac[k] = 0;
				printf("P%d resets %d in slot %d\n", _pid, k, hj);
				show_table();
				check_inv()
			:: else -> skip
			fi;
			hj++
		:: else -> break
		od;
		k = 0;
		finish()
	   }
#ifdef DEATH
	:: d_step {
		phase < P_FIN ->
		printf("P%d dies\n", _pid);
		tb = 0; md = 0; pv = 0; ps = NONE; pw = 0; own = NONE; t = 0;
		pi = NONE; pt = 0;
		tries = 0; clear_scan(); i = 0; j = 0; mj = 0; mp = 0; k = 0;
		b = 0;
		phase = P_DEAD;
		running--;
		quit = 1
	   }
#endif
	od
}

proctype starter()
{
	d_step {
		nxt = 1;
		printf("P%d: R2, T->next = T'\n", _pid);
		show_table()
	}
}

#if NJ > 0
/* COL frees, ref-bit clears and first-sweep frees of {MEM|0|fp, 0}: NJ
 * actions, each on any slot of either table */
#define JREAD(x) \
	:: d_step { \
		jp == 0 && n > 0 -> \
		n--; i = x; a = w0[x]; jp = 1 \
	}

proctype janitor()
{
	byte n = NJ;
	byte jp;          /* 0 pick a slot and read w0, 1 read w1, 2 act */
	byte i, a, b;

end:
	do
	JREAD(0)
	JREAD(1)
#if N > 2
	JREAD(2)
#endif
	JREAD(N)
	JREAD(N + 1)
#if M > 2
	JREAD(N + 2)
#endif
	:: d_step {
		jp == 1 -> b = w1[i]; jp = 2
	   }
	:: d_step {
		/* transition 5: free COL */
		jp == 2 && ST(a) == S_COL && !FRZ(a) ->
		if
		:: w0[i] == a && w1[i] == b ->
			w0[i] = 0; w1[i] = 0;
			printf("P%d frees COL in slot %d\n", _pid, i); show_table()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* clear the ref bit of a MEM */
		jp == 2 && ST(a) == S_MEM && !FRZ(a) && REF(a) == 1 ->
		if
		:: w0[i] == a && w1[i] == b ->
			w0[i] = a - 4;
			printf("P%d clears ref of slot %d\n", _pid, i); show_table()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* transition 6, first sweep: {MEM|0|fp,0} -> EMPTY */
		jp == 2 && ST(a) == S_MEM && !FRZ(a) && REF(a) == 0 && b == 0 ->
		if
		:: w0[i] == a && w1[i] == b ->
			w0[i] = 0; w1[i] = 0;
			nr[FP(a)]++;
			swept = 1;
			printf("P%d frees MEM (no state) in slot %d\n", _pid, i);
			show_table();
			check_inv()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* nothing to do with what was read */
		jp == 2 && (FRZ(a) || ST(a) == S_EMPTY || ST(a) == S_INS ||
		            (ST(a) == S_MEM && REF(a) == 0 && b != 0)) ->
		jp = 0; i = 0; a = 0; b = 0
	   }
	od
}
#endif

/*
 * R7 once every worker is done: each key counted as often as it is held
 * (inserts less removals; held: a MEM of it in T', unfrozen in T, or
 * frozen in T and not taken), and, unless a worker died or gave up, no
 * MEM of "no state yet" left in T' (nobody would write it).
 */
proctype checker()
{
end:
	d_step {
		running == 0 ->
		hk = 1;
		do
		:: hk <= NK ->
			hb = 0;
			hp = 0;
			hj = 0;
			do
			:: hj < NS ->
				if
				:: ISMEM(w0[hj], hk) -> hb = 1
				:: else -> skip
				fi;
				if
				:: hj >= N && ISMEMU(w0[hj], hk) && w1[hj] == 0 ->
					hp = 1
				:: else -> skip
				fi;
				hj++
			:: else -> break
			od;
			printf("checker: key %d inserts %d removals %d held %d\n",
			       hk, ni[hk], nr[hk], hb);
			assert(swept || ni[hk] == nr[hk] + hb);
			assert(quit || !hp);
			hk++
		:: else -> break
		od;
		hb = 0; hp = 0; hk = 0; hj = 0
	}
}

/* the initial tables, then every process */
init {
	atomic {
#if INITK
		w0[0] = MKW0(S_MEM, 1, K); w1[0] = 1; g[K] = 1; ac[K] = 1;
		ni[K] = 1;
#endif
#ifdef KEY2
		w0[N - 1] = MKW0(S_MEM, 1, K2); w1[N - 1] = 1; g[K2] = 1; ac[K2] = 1;
		ni[K2] = 1;
#endif
		running = NO + NN + NR;
#ifndef NOMIG
		running++;
#endif
		hj = 0;
		do
		:: hj < NO -> run worker(R_OLD); hj++
		:: else -> break
		od;
		hj = 0;
		do
		:: hj < NN -> run worker(R_NEW); hj++
		:: else -> break
		od;
		hj = 0;
		do
		:: hj < NR -> run worker(R_RST); hj++
		:: else -> break
		od;
		hj = 0;
#ifndef NOMIG
		run worker(R_MIG);
#endif
		run starter();
		run checker();
#if NJ > 0
		run janitor();
#endif
		skip
	}
}
