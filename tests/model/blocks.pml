/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * blocks.pml -- spin model of the state-block protocol of
 * docs/shm-protocol.md ("State blocks").  Run by tests/model/check-model.sh
 * (make check); see there for the configurations and the exact spin/pan
 * commands.
 *
 * THE SLOT
 *   One block key, in one slot: {w0, w1}.  w0 is only the ref bit (0/1):
 *   a publish sets it, the collector may clear it (second chance), so a
 *   publish CAS, which compares both words, can fail while w1 is
 *   unchanged.  w1 is
 *       1..127              "no state yet", a ticket (from tix; the key
 *                           starts committed with ticket 1)
 *       REF(b, g) >= 128    a reference to incarnation g of block b
 *   Tickets and gens only grow, so a w1 value never repeats.  A slot
 *   change is one d_step comparing and writing both words (the 16-byte
 *   CAS); an update reads w0 and w1 in two steps (torn reads happen), and
 *   the re-read that validates a state read is one step (w1).
 *
 * THE BLOCKS
 *   NB blocks of one class; a block is its header and ONE data cell (the
 *   state is one counter; the expiry cell 1 is left out: it is written and
 *   read exactly like the data cell, and only the reclaim judges it).
 *       header  hu[b] used bit, hg[b] gen, hbd[b] binding: the expected
 *               tag, i.e. the slot value the claim was computed from.  The
 *               real header keeps only the low 32 bits of that w1 value
 *               (and the bound slot's index: there is one slot here).  By
 *               default the model keeps the FULL value; -DTRUNC_TAG keeps
 *               what the low 32 bits keep: the gen of a reference (the
 *               block number is lost: REF(b1, 5) and REF(b2, 5) have the
 *               same tag, as in the code, where gens are small numbers and
 *               all blocks start at gen 0) and the ticket of a no-state.
 *               A free block is {free, gen, binding 0}.
 *       cell    ct[b] tag (the gen that wrote it), cv[b] value
 *   Every header and cell change is one d_step that compares and writes the
 *   whole 16 bytes.  A cell is read in two steps (tag, value: torn reads
 *   happen).  A header is read in ONE step: its readers use it only (a) to
 *   test "used, gen g", one word, and (b) as the expected value of a later
 *   CAS on the header; a torn header either is a value the header had at
 *   the second load, or one it never takes again (gens grow; a used
 *   header never comes back with full tags, nor with TRUNC_TAG and
 *   REBIND_NEWGEN), so tearing can only make that CAS fail.
 *
 * THE PROCESSES (flat state machines, one d_step per shared-memory step)
 *   - NU updaters, UPD updates of the key each.  An update: read the slot
 *     (w0, w1); if w1 is a reference (b, g): read b's header (used with gen
 *     g, else start again), read the cell's tag and value, re-read the slot
 *     (w1 unchanged, else start again); the new state is value + 1 (1 from
 *     "no state yet").  Then claim ANY free block (CAS {free, g} -> {used,
 *     g+1, bound to TAG(w1)}), or, if it still holds a claimed block from a
 *     failed publish, rebind it (CAS header from its binding to TAG(w1); if
 *     that fails the block was taken: claim another).  Write the cell as
 *     gen G (read {t, x}; t > G: the claim was lost, claim another; else
 *     CAS {t, x} -> {G, v}, read again if it fails), publish (CAS slot
 *     {w0, w1} -> {1, REF(b, G)}; on failure start again, keeping the
 *     block), then release the replaced block (CAS its header from the
 *     value read above to {free, same gen}).  An update gives up after
 *     TRIES restarts (its claimed block stays claimed): loops are bounded,
 *     the model checks safety, not progress.
 *     The first updater runs UPD0 updates.
 *   - one collector, NC actions.  Collect: read the header of any used
 *     block; read the slot's w1; it is this incarnation's reference ->
 *     live; its tag is the binding -> a claim whose publish may come:
 *     leave it; else release the block (CAS on the header read).  Clear
 *     the slot's ref bit (a CAS, as the evictor's second chance).  And NR
 *     times a reset: the key's state is dropped and the key re-inserted
 *     (reclaim, eviction or reset, then a new commit) collapsed into one
 *     CAS of the slot to "no state" with a FRESH ticket; the counter
 *     legitimately restarts (the ghost too); then release the block the
 *     slot referenced (CAS on the header read before the slot CAS).
 *     The collector stands for every process that collects (allocations,
 *     sweeps): which process runs a step does not matter.  The key never
 *     moves to another slot here, so the bound slot's index is left out.
 *   - DEATH: at every step each process may instead stop forever, leaving
 *     what it half did (a claimed block, an unreleased replaced block).
 *     -DNODEATH removes that branch; for safety a dead process is the same
 *     as one never scheduled again.
 *
 * THE PROPERTIES (asserted in the d_steps that write the slot, a header or
 * a cell; nothing else writes them or the ghost, so they hold in every
 * state)
 *   - P1, no lost update, no corruption: the ghost gcnt counts the updates
 *     published since the last reset; when the slot references (b, g), b's
 *     cell is {g, gcnt}; when it holds "no state yet", gcnt is 0; and every
 *     publish installs gcnt + 1 (computed from the true state).
 *   - P2, no torn state: a read validated by the re-read of the slot
 *     returned the published value, with the tag of the reference's gen.
 *   - P3, no dangling reference: a publish installs a reference only to a
 *     block used with that gen; the referenced block is always used with
 *     the reference's gen; a release never frees the block the slot
 *     references.
 *   - P4 (INPLACE), no lost in-place update: a successful in-place CAS
 *     either adds to the live state (the slot references the block, and
 *     the value read is the ghost's count) or to a state a reset dropped
 *     (that update is ordered before the reset, which forgets it with the
 *     state); never to one a publish replaced.
 *
 * FLAW IN THE PROTOCOL AS WRITTEN (32-BIT TAGS), AND THE FIX MODELLED HERE
 *   The collector releases a block by a CAS on the header it read BEFORE
 *   it read the slot; that is sound only if any rebind since then changed
 *   the header.  With the doc's 32-bit expected tag it need not: the tag
 *   of a reference is just the low 32 bits of its gen, so references to
 *   different blocks with the same gen (and tickets) share tags, and a
 *   rebind to a new slot value with the same tag is a CAS that writes the
 *   very value it read.  With -DTRUNC_TAG (the rule as documented) spin
 *   finds a referenced block freed in 30 steps (UPD0=1 UPD=1 NC=3, pan -i;
 *   ticket 1 and REF(1,1) both have tag 1):
 *       P1: reads the slot, no state (ticket 1).
 *       collector: reset, the slot is no state (ticket 2).
 *       P1: claims block 2, gen 1, bound to tag 1.
 *       collector: reads block 2's header {used, 1, tag 1}, then the slot:
 *          ticket 2, neither REF(2,1) nor tag 1 -> decides to release.
 *       P1: writes the cell; its publish fails (ticket 1 is gone).
 *       P0: claims block 1 (gen 1), publishes REF(1,1): tag 1.
 *       P1: reads REF(1,1), its state, rebinds block 2 from tag 1 to tag
 *          1 (the CAS succeeds and changes nothing), writes, publishes
 *          REF(2,1).
 *       collector: its CAS {used, 1, tag 1} -> {free, 1} succeeds: the
 *          block the slot references is free (P3), and its next claimer
 *          overwrites the live state.
 *   A rebind through another tag and back (1 -> 2 -> 1) is the same ABA.
 *   shm/blocks.c is worse: tk__blk_rebind() skips the CAS when the tag is
 *   equal, so the collector's release may even have completed: with
 *   -DREBIND_SHORTCUT the claimer publishes a block that is already free.
 *   FIX (-DREBIND_NEWGEN): a rebind is a new incarnation, CAS {used, G,
 *   tag} -> {used, G+1, new tag}, never skipped; the claimer writes its
 *   cells and publishes with G+1.  A used header then never comes back,
 *   so a collector's CAS on a header read before any rebind fails.
 *   With full tags (the default) the documented rule is sound: there a
 *   rebind that keeps the header keeps the slot value too.
 *
 * PAGES (-DPAGES): THE PAGE OF THE BLOCKS GOES BACK TO THE POOL
 *   The NB blocks are one page, with a page word pw (state OPEN, CLOSING,
 *   FORMAT or FREE, and an epoch) and a closed mark hm[b] (0, or epoch +
 *   1) in each free header.  A claim is three steps, as in shm/blocks.c:
 *   read the page word (OPEN) and a header; read the page word again
 *   (unchanged, else start again); CAS the header, free and unmarked or
 *   with a stale mark.  One pager, NP cycles, each step one d_step, may
 *   stop for ever anywhere: CAS OPEN -> CLOSING (without first looking:
 *   the marking decides); for each block read its header, check the word,
 *   then abort (CAS the word to OPEN in the next epoch) if the block is in
 *   use, or CAS the header to closed; CAS CLOSING -> FORMAT; read every
 *   header for f = max(gen + (binding or mark != 0)), check the word; for
 *   each cell (headers, then data cells) read it and check the word, then
 *   CAS it to {f, 0} unless its tag is at least f; CAS FORMAT -> FREE in
 *   the next epoch; then take the page again (FREE -> OPEN): the same
 *   block boundaries, so what is checked is that no CAS prepared in an
 *   earlier life of the page (a claim, a write, a release, a rebind)
 *   lands in a later one, and that no live block is formatted.
 *   Broken variants (each must be rejected):
 *     CLOSE_IGNORES_USED  marking skips a block in use instead of
 *                         aborting: the page is formatted under a live
 *                         state.
 *     FORMAT_ZERO         formatting writes {0, 0} (a fresh page) instead
 *                         of {f, 0}: gens start again, and a write or a
 *                         release prepared in the earlier life lands.
 *
 * IN-PLACE UPDATES (-DINPLACE)
 *   docs/shm-protocol.md, "In-place updates" (tkz_step_hot() in
 *   shm/hot.h): a window's check in its state's newest tick changes
 *   one cell, that bucket's count, by a CAS on that cell alone; the
 *   block's writer marked that cell hot.  Modelled here: NIP
 *   in-place updaters of IPU updates each (the process above the pager),
 *   and the updaters become replacers that FREEZE the cell before they
 *   compute from it: after the validated read (1), a CAS {RG(e), rv} ->
 *   {RG(e) | hot, rv} (or the cell found hot with rv already), else start
 *   again (the code freezes in tk__blk_publish(), before its claim, and
 *   at the read of a multi-key update or a move); a write (4) makes the
 *   cell unfrozen again with the new gen.  A
 *   reset (a reclaim, an eviction or a reset in the code) drops a state
 *   without freezing it.  P2 is asserted where the value is read (a cell
 *   may change after it while the slot holds e); P4 is the in-place
 *   updater's (below).
 *   Broken variants (each must be rejected):
 *     NO_FREEZE        replacers do not freeze: an in-place update between
 *                      a replacer's read and its publish is lost (P1).
 *     FREEZE_BLIND     the mark set without comparing the value read (a
 *                      fetch-or): the same loss.
 *     CAS_VALUE_ONLY   the in-place CAS compares the value word alone,
 *                      blind to the gen and the mark: the same loss.
 *   Not modelled: pages (a page is formatted only once none of its blocks
 *   is in use), and the in-place step inside mcas.pml and grow.pml: a
 *   multi-key update and a move freeze at their read, as the replacer
 *   here does before it computes.
 *
 * KNOBS (-D on the spin command line)
 *   NB blocks (2..3), NU updaters, UPD updates each (UPD0 the first one),
 *   TRIES restarts per update, NC collector actions, NR resets; NODEATH;
 *   NOHIDDEN; TRUNC_TAG (32-bit tags), REBIND_NEWGEN (the fix); INPLACE
 *   with NIP and IPU.
 *   Broken variants (each must be rejected):
 *     PLAIN_WRITES     cells written by plain stores, no tag check: a
 *                      claimer stopped between claim and write, whose block
 *                      was collected and published by someone else,
 *                      overwrites the live state (the "late write").
 *     COLLECT_PENDING  the collector also releases a claim whose binding
 *                      the slot still holds: the claimer then publishes a
 *                      free block.
 *     TRUNC_TAG        without REBIND_NEWGEN: the rule as documented with
 *                      32-bit tags (above).
 *     REBIND_SHORTCUT  (with TRUNC_TAG, even with REBIND_NEWGEN) a rebind to
 *                      an equal tag is skipped instead of CASed, as
 *                      tk__blk_rebind() in shm/blocks.c does: equal 32-bit
 *                      tags do not mean the slot never changed, and the
 *                      block may have been collected meanwhile.
 *     SLOT_FIRST       the collector reads the slot BEFORE the header: the
 *                      slot value may predate a claim and publish of the
 *                      block, which it then frees.
 */

#ifndef NB
#define NB 3
#endif
#ifndef NU
#define NU 2
#endif
#ifndef UPD
#define UPD 1
#endif
#ifndef UPD0
#define UPD0 2          /* updates of the first updater */
#endif
#ifndef TRIES
#define TRIES 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef NR
#define NR 1
#endif
#ifndef NP
#define NP 1            /* page cycles of the pager (PAGES) */
#endif
#ifndef NIP
#define NIP 1           /* in-place updaters (INPLACE) */
#endif
#ifndef IPU
#define IPU 2           /* updates of each in-place updater */
#endif

#define NONE 255
#define REF(b, g) (128 + 32 * (b) + (g))
#define ISREF(w) ((w) >= 128)
#define RB(w) (((w) - 128) / 32)
#define RG(w) (((w) - 128) % 32)
#define MAXGEN 31
#ifdef TRUNC_TAG
#define TAG(w) (ISREF(w) -> RG(w) : (w))
#else
#define TAG(w) (w)
#endif

#if NB == 2
#define ALLUSED (hu[0] && hu[1])
#elif NB == 3
#define ALLUSED (hu[0] && hu[1] && hu[2])
#else
#error "NB must be 2 or 3"
#endif

bit w0 = 1;             /* the slot: ref bit */
byte w1 = 1;            /* the slot: no state yet (ticket 1), or REF(b, g) */
byte tix = 1;           /* last ticket issued */
bit hu[NB];             /* block headers: used, gen, binding */
byte hg[NB];
byte hbd[NB];
byte ct[NB];            /* data cells: tag, value */
byte cv[NB];
byte gcnt;              /* ghost: updates published since the last reset */
#ifdef INPLACE
bit cf[NB];             /* data cells: the hot mark (a bit of the tag word) */
byte gdg[NB];           /* ghost: the gen of b a reset last dropped */
#define HOT(b) cf[b]
#else
#define HOT(b) 0
#endif
#ifdef PAGES
#define P_OPEN 0
#define P_CLOSING 1
#define P_FORMAT 2
#define P_FREE 3
#define PST(w) ((w) % 4)
#define PEP(w) ((w) / 4)
#define PW(st, ep) ((ep) * 4 + (st))
byte pw;                /* the page word: PW(state, epoch), OPEN in epoch 0 */
byte hm[NB];            /* closed mark of a free header: 0, or epoch + 1 */
#define MARK(b) hm[b]
#else
#define MARK(b) 0
#endif

#ifdef NOHIDDEN                 /* for pan -DBFS, which refuses hidden */
#define SCRATCH byte
#else
#define SCRATCH hidden byte
#endif
SCRATCH hj;             /* d_step scratch, never part of the state */

/* trail printing only (pan prints nothing while verifying): the slot as
 * ref bit:w1 and the ghost count, then each block as used:gen:binding:{tag,
 * value} */
inline show_state()
{
	hj = 0;
	if
	:: ISREF(w1) -> printf("      table: slot [%d:ref(%d,%d)] count %d; blocks",
	                       w0, RB(w1), RG(w1), gcnt)
	:: else -> printf("      table: slot [%d:nostate(%d)] count %d; blocks",
	                  w0, w1, gcnt)
	fi;
	do
	:: hj < NB ->
#ifdef INPLACE
		printf(" %d[%d:%d:%d:{%d,%d}%d]", hj, hu[hj], hg[hj], hbd[hj],
		       ct[hj], cv[hj], cf[hj]);
#else
		printf(" %d[%d:%d:%d:{%d,%d}]", hj, hu[hj], hg[hj], hbd[hj],
		       ct[hj], cv[hj]);
#endif
		hj++
	:: else -> break
	od;
	printf("\n")
}

/* P1 and P3, checked in every d_step that changes the slot, a header or a
 * cell (nothing else writes them or the ghost) */
inline check_inv()
{
	if
	:: ISREF(w1) ->
		hj = RB(w1);
		assert(hu[hj] == 1 && hg[hj] == RG(w1));       /* P3 */
		assert(ct[hj] == RG(w1) && cv[hj] == gcnt);     /* P1 */
	:: else ->
		assert(gcnt == 0)                               /* P1 */
	fi
}

/* P3: a release never frees the referenced block */
#define NOT_REFERENCED(b) assert(!(ISREF(w1) && RB(w1) == (b)))

/* updater phases: each names the next shared-memory step */
#define U_RD0 0         /* read slot w0 */
#define U_RD1 1         /* read slot w1 */
#define U_RH 2          /* read the referenced block's header */
#define U_RT 3          /* read its cell: tag */
#define U_RV 4          /* read its cell: value */
#define U_RS 5          /* re-read slot w1: validates the state read */
#define U_CLAIM 6       /* claim a free block */
#define U_REBIND 7      /* rebind the block held */
#define U_WT 8          /* write: read the cell's tag */
#define U_WV 9          /* write: read the cell's value */
#define U_WC 10         /* write: CAS the cell */
#define U_PUB 11        /* publish: CAS the slot */
#define U_REL 12        /* release the replaced block */
#define U_FIN 13        /* all updates done */
#define U_DEAD 14       /* killed */
#define U_CLP 15        /* PAGES claim: read the page word again */
#define U_CLC 16        /* PAGES claim: CAS the header read */
#define U_FRZ 17        /* INPLACE: mark the cell read hot (freeze it) */

#ifdef INPLACE
#define FORGET_WF wf = 0
#define WF_SAME (cf[my] == wf)
#else
#define FORGET_WF skip
#define WF_SAME true
#endif

/* ---- updater helpers; all run inside a d_step ---- */

inline forget_read()
{
	e0 = 0; e = 0; ob = 0; rt = 0; rv = 0; v = 0; wt = 0; wx = 0;
	FORGET_WF
}

/* this update is over (published, or gave up) */
inline next_upd()
{
	forget_read();
	my = NONE; G = 0; mb = 0;
	upd--;
	if
	:: upd > 0 -> tries = TRIES; phase = U_RD0
	:: else -> tries = 0; phase = U_FIN
	fi
}

/* start the update again from the slot read, keeping a claimed block */
inline retry()
{
	if
	:: tries == 0 -> next_upd()
	:: else -> tries--; forget_read(); phase = U_RD0
	fi
}

/* the new state v is computed from e: claim a block, or rebind ours */
inline computed()
{
	if
	:: my == NONE -> phase = U_CLAIM
	:: else -> phase = U_REBIND
	fi
}

/* lose the block held (taken from us), claim another */
inline lost_claim()
{
	my = NONE; G = 0; mb = 0; wt = 0; wx = 0; FORGET_WF;
	phase = U_CLAIM
}

#ifdef PAGES
/* claim (2), as shm/blocks.c does it in a page that may go back to the
 * pool: read the page word (OPEN) and header j; then (U_CLP) the page word
 * again; then (U_CLC) CAS the header as read */
#define CLAIM_OPT(j) \
	:: d_step { \
		phase == U_CLAIM && PST(pw) == P_OPEN -> \
		cj = j; cpw = pw; cu = hu[j]; cg = hg[j]; cb = hbd[j]; cm = hm[j]; \
		phase = U_CLP \
	}
#else
/* claim (2): CAS {free, g, 0} -> {used, g+1, TAG(e)}: any block free at
 * the CAS (a superset of "a free block seen by the allocation") */
#define CLAIM_OPT(j) \
	:: d_step { \
		phase == U_CLAIM && hu[j] == 0 -> \
		hu[j] = 1; hg[j]++; hbd[j] = TAG(e); \
		assert(hg[j] <= MAXGEN); \
		my = j; G = hg[j]; mb = hbd[j]; \
		printf("P%d claims block %d: gen %d bound %d\n", _pid, j, G, mb); \
		show_state(); check_inv(); \
		phase = U_WT \
	}
#endif

#ifdef PAGES
inline claim_done()
{
	cj = 0; cpw = 0; cu = 0; cg = 0; cb = 0; cm = 0
}
#endif

active [NU] proctype updater()
{
	byte phase = U_RD0;
	byte upd = (_pid == 0 -> UPD0 : UPD);
	byte tries = TRIES;
	bit e0;           /* the slot as read: w0, w1 (maybe torn) */
	byte e;
	byte ob;          /* binding of the referenced block's header, as read
	                     (used and gen are those of e) */
	byte rt, rv;      /* its cell, as read (maybe torn) */
	byte v;           /* the new state */
	byte my = NONE;   /* the block claimed, its gen and binding */
	byte G, mb;
	byte wt, wx;      /* the cell as read before writing it */
#ifdef INPLACE
	bit wf;           /* ... and its hot mark */
#endif
#ifdef PAGES
	byte cj, cpw, cg, cb, cm;   /* a claim's page word and header, read */
	bit cu;
#endif

end:
	do
	:: d_step {
		phase == U_RD0 ->
		e0 = w0; phase = U_RD1
	   }
	:: d_step {
		phase == U_RD1 ->
		e = w1;
		printf("P%d reads slot %d:%d\n", _pid, e0, e);
		if
		:: ISREF(e) -> phase = U_RH
		:: else -> v = 1; computed()
		fi
	   }
	:: d_step {
		/* read (1): the header must be used with the reference's gen */
		phase == U_RH ->
		if
		:: hu[RB(e)] == 1 && hg[RB(e)] == RG(e) ->
			ob = hbd[RB(e)]; phase = U_RT
		:: else -> retry()
		fi
	   }
	:: d_step {
		phase == U_RT -> rt = ct[RB(e)]; phase = U_RV
	   }
	:: d_step {
		phase == U_RV -> rv = cv[RB(e)];
#ifdef INPLACE
		/* P2 where a cell changes in place: a value read while the
		 * slot holds e is its state at that instant (the slot held e
		 * since it was read: w1 values never repeat) */
		if
		:: w1 == e -> assert(rt == RG(e) && rv == gcnt)  /* P2 */
		:: else -> skip
		fi;
#endif
		phase = U_RS
	   }
	:: d_step {
		/* read (1): the values read are the state of e only if the slot
		 * still holds e */
		phase == U_RS ->
		if
		:: w1 == e ->
			printf("P%d read state {%d,%d} of ref(%d,%d)\n", _pid,
			       rt, rv, RB(e), RG(e));
#if defined(INPLACE) && !defined(NO_FREEZE)
			phase = U_FRZ           /* rv may change in place yet */
#else
#ifndef INPLACE
			assert(rt == RG(e) && rv == gcnt);      /* P2 */
#endif
			v = rv + 1; rt = 0; rv = 0;
			computed()
#endif
		:: else -> retry()
		fi
	   }
#ifdef INPLACE
	:: d_step {
		/* freeze: CAS the cell {RG(e), rv} -> {RG(e) | hot, rv} (or
		 * find it so): in-place updates of it stop, so rv + 1 is what
		 * a publish still comparing e installs.  A failure: the
		 * value moved in place, or the block is not e's any more */
		phase == U_FRZ ->
#ifdef FREEZE_BLIND
		/* BROKEN: the mark set by a fetch-or, without the value */
		if
		:: ct[RB(e)] == RG(e) ->
#else
		if
		:: ct[RB(e)] == RG(e) && cv[RB(e)] == rv ->
#endif
			cf[RB(e)] = 1;
			printf("P%d freezes block %d at %d\n", _pid, RB(e), rv);
			show_state(); check_inv();
			v = rv + 1; rt = 0; rv = 0;
			computed()
		:: else ->
			printf("P%d freeze fails\n", _pid);
			retry()
		fi
	   }
#endif
	CLAIM_OPT(0)
	CLAIM_OPT(1)
#if NB > 2
	CLAIM_OPT(2)
#endif
	:: d_step {
		/* no block is free (in the code: allocate a page, evict) */
		phase == U_CLAIM && ALLUSED -> retry()
	   }
#ifdef PAGES
	:: d_step {
		/* the page is not open: look elsewhere (give up here) */
		phase == U_CLAIM && PST(pw) != P_OPEN -> retry()
	   }
	:: d_step {
		phase == U_CLP ->
		if
		:: pw == cpw -> phase = U_CLC
		:: else -> claim_done(); retry()
		fi
	   }
	:: d_step {
		/* a free header, unmarked or marked in an earlier epoch (no
		 * mark of this epoch exists while the page is open) */
		phase == U_CLC ->
		if
		:: cu == 0 && (cm == 0 || cm != PEP(cpw) + 1) &&
		   hu[cj] == cu && hg[cj] == cg && hbd[cj] == cb && hm[cj] == cm ->
			hu[cj] = 1; hg[cj] = cg + 1; hbd[cj] = TAG(e); hm[cj] = 0;
			assert(hg[cj] <= MAXGEN);
			my = cj; G = hg[cj]; mb = hbd[cj];
			printf("P%d claims block %d: gen %d bound %d\n", _pid, my, G, mb);
			show_state(); check_inv();
			claim_done();
			phase = U_WT
		:: else -> claim_done(); retry()
		fi
	   }
#endif
	:: d_step {
		/* rebind (3): CAS the header from our binding to TAG(e) */
		phase == U_REBIND ->
#ifdef REBIND_SHORTCUT
		if
		:: mb == TAG(e) ->
			printf("P%d rebind of block %d skipped: same tag %d\n",
			       _pid, my, mb);
			phase = U_WT
		:: else ->
#endif
		if
		:: hu[my] == 1 && hg[my] == G && hbd[my] == mb ->
#ifdef REBIND_NEWGEN
			hg[my]++; G = hg[my];   /* the fix: a rebind is a new gen */
			assert(G <= MAXGEN);
#endif
			hbd[my] = TAG(e); mb = hbd[my];
			printf("P%d rebinds block %d: gen %d bound %d\n", _pid, my, G, mb);
			show_state(); check_inv();
			phase = U_WT
		:: else ->
			printf("P%d lost block %d (rebind)\n", _pid, my);
			lost_claim()
		fi
#ifdef REBIND_SHORTCUT
		fi
#endif
	   }
#ifdef PLAIN_WRITES
	:: d_step {
		/* BROKEN: write (4) as a plain store, no tag check */
		phase == U_WT ->
		ct[my] = G; cv[my] = v;
		printf("P%d stores {%d,%d} in block %d\n", _pid, G, v, my);
		show_state(); check_inv();
		phase = U_PUB
	   }
#else
	:: d_step {
		phase == U_WT -> wt = ct[my];
#ifdef INPLACE
		wf = cf[my];    /* the tag word: gen and hot mark */
#endif
		phase = U_WV
	   }
	:: d_step {
		/* write (4): a newer tag -> the claim was lost */
		phase == U_WV ->
		wx = cv[my];
		if
		:: wt > G ->
			printf("P%d lost block %d (tag %d > gen %d)\n", _pid,
			       my, wt, G);
			lost_claim()
		:: else -> phase = U_WC
		fi
	   }
	:: d_step {
		/* write (4): CAS {t, x} -> {G, v}; read again if it fails */
		phase == U_WC ->
		if
		:: ct[my] == wt && cv[my] == wx && WF_SAME ->
			ct[my] = G; cv[my] = v;
#ifdef INPLACE
			cf[my] = 0;
#endif
			printf("P%d writes {%d,%d} in block %d\n", _pid, G, v, my);
			show_state(); check_inv();
			wt = 0; wx = 0;
			phase = U_PUB
		:: else ->
			wt = 0; wx = 0;
			phase = U_WT
		fi
	   }
#endif
	:: d_step {
		/* publish (5): CAS {e0, e} -> {1, REF(my, G)} */
		phase == U_PUB ->
		if
		:: w0 == e0 && w1 == e ->
			assert(hu[my] == 1 && hg[my] == G);     /* P3 */
			assert(v == gcnt + 1);                  /* P1 */
			w0 = 1; w1 = REF(my, G); gcnt = v;
			printf("P%d publishes ref(%d,%d) = %d\n", _pid, my, G, v);
			show_state(); check_inv();
			my = NONE; G = 0; mb = 0;
			if
			:: ISREF(e) -> phase = U_REL
			:: else -> next_upd()
			fi
		:: else ->
			printf("P%d publish fails\n", _pid);
			retry()
		fi
	   }
	:: d_step {
		/* release (6) the replaced block: CAS from the header read in (1)
		 * to {free, same gen} */
		phase == U_REL ->
		if
		:: hu[RB(e)] == 1 && hg[RB(e)] == RG(e) && hbd[RB(e)] == ob ->
			NOT_REFERENCED(RB(e));                  /* P3 */
			hu[RB(e)] = 0; hbd[RB(e)] = 0;
			printf("P%d releases block %d\n", _pid, RB(e));
			show_state(); check_inv()
		:: else -> skip
		fi;
		next_upd()
	   }
#ifndef NODEATH
	:: d_step {
		/* SIGKILL: stops forever; what it left stays */
		phase < U_FIN ->
		printf("P%d dies\n", _pid);
		forget_read(); my = NONE; G = 0; mb = 0; upd = 0; tries = 0;
#ifdef PAGES
		claim_done();
#endif
		phase = U_DEAD
	   }
#endif
	od
}

/* collector phases */
#define C_IDLE 0
#define C_SLOT 1        /* collect: read the slot's w1 */
#define C_REL 2         /* collect: release the block */
#define C_RH 3          /* reset: read the referenced block's header */
#define C_RS 4          /* reset: CAS the slot */
#define C_RREL 5        /* reset: release the block it referenced */
#define C_HDR 6         /* SLOT_FIRST collect: read the header */
#define C_DEAD 7

/* collect (8): read the header of block J, if it is used */
#ifdef SLOT_FIRST
#define COLLECT_OPT(J) \
	:: d_step { \
		cp == C_IDLE && n > 0 -> \
		n--; j = J; s = w1; cp = C_HDR \
	}
#else
#define COLLECT_OPT(J) \
	:: d_step { \
		cp == C_IDLE && n > 0 && hu[J] == 1 -> \
		n--; j = J; cg = hg[J]; cb = hbd[J]; cp = C_SLOT \
	}
#endif

inline cdone()
{
	j = 0; cg = 0; cb = 0; s = 0;
	cp = C_IDLE
}

/* the slot value s was read after (or, SLOT_FIRST, before) the header of
 * block j {used, cg, cb}: live, pending claim, or garbage */
inline judge()
{
	if
	:: s == REF(j, cg) -> cdone()                   /* live */
#ifndef COLLECT_PENDING
	:: s != REF(j, cg) && TAG(s) == cb -> cdone()   /* claim pending */
#endif
	:: else -> cp = C_REL
	fi
}

active proctype collector()
{
	byte cp = C_IDLE;
	byte n = NC;      /* collect and ref-clear actions left */
	byte nr = NR;     /* resets left */
	byte j, cg, cb;   /* block, and its header as read */
	byte s;           /* slot w1 as read */

end:
	do
	COLLECT_OPT(0)
	COLLECT_OPT(1)
#if NB > 2
	COLLECT_OPT(2)
#endif
#ifdef SLOT_FIRST
	:: d_step {
		cp == C_HDR ->
		if
		:: hu[j] == 1 ->
			cg = hg[j]; cb = hbd[j];
			printf("P%d (collector) slot w1 %d, block %d [1:%d:%d]\n",
			       _pid, s, j, cg, cb);
			judge()
		:: else -> cdone()
		fi
	   }
#endif
	:: d_step {
		cp == C_SLOT ->
		s = w1;
		printf("P%d (collector) block %d [1:%d:%d], slot w1 %d\n", _pid,
		       j, cg, cb, s);
		judge()
	   }
	:: d_step {
		/* collect (8): CAS on the header read -> {free, same gen} */
		cp == C_REL ->
		if
		:: hu[j] == 1 && hg[j] == cg && hbd[j] == cb ->
			NOT_REFERENCED(j);                      /* P3 */
			hu[j] = 0; hbd[j] = 0;
			printf("P%d (collector) collects block %d\n", _pid, j);
			show_state(); check_inv()
		:: else -> skip
		fi;
		cdone()
	   }
	:: d_step {
		/* second chance: CAS {1, w1} -> {0, w1} (a read and a CAS
		 * collapsed: this allows a superset of the behaviours) */
		cp == C_IDLE && n > 0 && w0 == 1 ->
		n--; w0 = 0;
		printf("P%d (collector) clears the ref bit\n", _pid)
	   }
	:: d_step {
		/* reset: read the slot */
		cp == C_IDLE && nr > 0 ->
		nr--; s = w1;
		if
		:: ISREF(s) -> j = RB(s); cp = C_RH
		:: else -> cp = C_RS
		fi
	   }
	:: d_step {
		/* reset: read the header of the block referenced (1) */
		cp == C_RH ->
		if
		:: hu[j] == 1 && hg[j] == RG(s) -> cg = hg[j]; cb = hbd[j]; cp = C_RS
		:: else -> cdone()
		fi
	   }
	:: d_step {
		/* reset: CAS the slot -> {1, no state, fresh ticket} (reclaim,
		 * eviction or reset, then a re-insert and its commit) */
		cp == C_RS ->
		if
		:: w1 == s ->
			tix++;
			w0 = 1; w1 = tix; gcnt = 0;
			printf("P%d (collector) resets the key: ticket %d\n", _pid, tix);
			show_state(); check_inv();
			if
			:: ISREF(s) ->
#ifdef INPLACE
				gdg[RB(s)] = RG(s);     /* dropped, not carried */
#endif
				cp = C_RREL
			:: else -> cdone()
			fi
		:: else -> cdone()
		fi
	   }
	:: d_step {
		/* reset: release (6) the block the slot held, CAS from (1) */
		cp == C_RREL ->
		if
		:: hu[j] == 1 && hg[j] == cg && hbd[j] == cb ->
			NOT_REFERENCED(j);                      /* P3 */
			hu[j] = 0; hbd[j] = 0;
			printf("P%d (collector) releases block %d\n", _pid, j);
			show_state(); check_inv()
		:: else -> skip
		fi;
		cdone()
	   }
#ifndef NODEATH
	:: d_step {
		cp != C_DEAD && (n > 0 || nr > 0 || cp != C_IDLE) ->
		printf("P%d (collector) dies\n", _pid);
		n = 0; nr = 0; j = 0; cg = 0; cb = 0; s = 0;
		cp = C_DEAD
	   }
#endif
	od
}

#ifdef INPLACE
#ifdef PAGES
#error "INPLACE is modelled without PAGES: a page is formatted only once no block of it is in use, and an in-place update writes only a published block's cell, whose tag a formatting changes"
#endif
/*
 * The in-place updater (INPLACE): a check of a window whose current tick
 * is its state's newest adds its cost to that bucket's count, the one
 * cell of the block that changes, by a CAS on that cell alone; no claim,
 * no publish.  Read as (1): the slot (a reference e, else the check goes
 * the replacing way: the updaters), the header (used with e's gen), the
 * cell (tag, hot mark, value), the slot again (w1 still e).  A hot cell
 * is a replacer's: go its way.  Then CAS {RG(e), cold, rv} ->
 * {RG(e), cold, rv + 1}; on failure read again.
 *
 * P4: a successful CAS either counts on the live state (the slot still
 * references the block: rv was the state, and the ghost counts it), or
 * lands on a block a reset dropped (gdg): that update is ordered before
 * the reset, which forgets it with the state.  It never lands on a block
 * a publish replaced: the replacer froze the cell first (else -DNO_FREEZE
 * loses the update: the publish installs rv + 1 over rv + 2, P1).
 */
#define I_RD 0          /* read slot w1 */
#define I_RH 1          /* read the referenced block's header */
#define I_RT 2          /* read its cell: tag and hot mark */
#define I_RV 3          /* read its cell: value */
#define I_RS 4          /* re-read slot w1 */
#define I_CAS 5         /* CAS the cell */
#define I_FIN 6
#define I_DEAD 7

inline idone()
{
	e = 0; rt = 0; rv = 0; rf = 0;
	upd--;
	if
	:: upd > 0 -> tries = TRIES; ip = I_RD
	:: else -> tries = 0; ip = I_FIN
	fi
}

inline iretry()
{
	if
	:: tries == 0 -> idone()
	:: else -> tries--; e = 0; rt = 0; rv = 0; rf = 0; ip = I_RD
	fi
}

active [NIP] proctype inplacer()
{
	byte ip = I_RD;
	byte upd = IPU;
	byte tries = TRIES;
	byte e, rt, rv;
	bit rf;

end:
	do
	:: d_step {
		ip == I_RD ->
		e = w1;
		if
		:: ISREF(e) -> ip = I_RH
		:: else -> idone()      /* no state: the replacing way */
		fi
	   }
	:: d_step {
		ip == I_RH ->
		if
		:: hu[RB(e)] == 1 && hg[RB(e)] == RG(e) -> ip = I_RT
		:: else -> iretry()
		fi
	   }
	:: d_step {
		ip == I_RT -> rt = ct[RB(e)]; rf = cf[RB(e)]; ip = I_RV
	   }
	:: d_step {
		ip == I_RV -> rv = cv[RB(e)]; ip = I_RS
	   }
	:: d_step {
		ip == I_RS ->
		if
		:: w1 == e && (rf || rt != RG(e)) -> idone() /* a replacer's */
		:: w1 == e && !rf && rt == RG(e) -> ip = I_CAS
		:: else -> iretry()
		fi
	   }
	:: d_step {
		ip == I_CAS ->
		if
#ifdef CAS_VALUE_ONLY
		/* BROKEN: an 8-byte CAS of the value word, blind to the tag
		 * word's gen and hot mark */
		:: cv[RB(e)] == rv ->
#else
		:: ct[RB(e)] == rt && cf[RB(e)] == 0 && cv[RB(e)] == rv ->
#endif
			if
			:: w1 == e ->
				assert(rv == gcnt);             /* P4 */
				gcnt++
			:: else ->
				assert(gdg[RB(e)] == RG(e))     /* P4 */
			fi;
			cv[RB(e)] = rv + 1;
			printf("P%d adds in place: block %d %d -> %d\n", _pid,
			       RB(e), rv, rv + 1);
			show_state(); check_inv();
			idone()
		:: else ->
			printf("P%d in-place CAS fails\n", _pid);
			iretry()
		fi
	   }
#ifndef NODEATH
	:: d_step {
		ip < I_FIN ->
		printf("P%d dies\n", _pid);
		e = 0; rt = 0; rv = 0; rf = 0; upd = 0; tries = 0;
		ip = I_DEAD
	   }
#endif
	od
}
#endif

#ifdef PAGES
/* pager phases */
#define G_IDLE 0
#define G_MH 1          /* mark: read header k */
#define G_MP 2          /* mark: check the page word */
#define G_MC 3          /* mark: abort, or CAS the header closed */
#define G_TOF 4         /* CAS CLOSING -> FORMAT */
#define G_FH 5          /* format: read header k for f */
#define G_FP 6          /* format: check the page word */
#define G_FR 7          /* format: read cell k, check the page word */
#define G_FC 8          /* format: CAS cell k to {f, 0} */
#define G_FREE 9        /* CAS FORMAT -> FREE */
#define G_TAKE 10       /* an allocation takes the page: FREE -> OPEN */
#define G_DEAD 11

inline gdone()
{
	k = 0; f = 0; gpw = 0; gu = 0; gg = 0; gb = 0; gm = 0;
	gs = G_IDLE
}

inline gnext_mark()
{
	gu = 0; gg = 0; gb = 0; gm = 0;
	k++;
	if
	:: k == NB -> k = 0; gs = G_TOF
	:: else -> gs = G_MH
	fi
}

active proctype pager()
{
	byte gs = G_IDLE;
	byte np = NP;
	byte k, f, gpw, gg, gb, gm;
	bit gu;

end:
	do
	:: d_step {
		/* close: OPEN(e) -> CLOSING(e) */
		gs == G_IDLE && np > 0 && PST(pw) == P_OPEN ->
		np--; pw = PW(P_CLOSING, PEP(pw)); gpw = pw; k = 0;
		printf("P%d (pager) closes the page: epoch %d\n", _pid, PEP(pw));
		gs = G_MH
	   }
	:: d_step {
		gs == G_MH ->
		gu = hu[k]; gg = hg[k]; gb = hbd[k]; gm = hm[k]; gs = G_MP
	   }
	:: d_step {
		gs == G_MP ->
		if
		:: pw == gpw -> gs = G_MC
		:: else -> gdone()
		fi
	   }
	:: d_step {
		gs == G_MC ->
		if
		:: gu == 1 ->
#ifdef CLOSE_IGNORES_USED
			gnext_mark()
#else
			if
			:: pw == gpw ->
				pw = PW(P_OPEN, PEP(gpw) + 1);
				printf("P%d (pager) aborts: block %d in use\n", _pid, k)
			:: else -> skip
			fi;
			gdone()
#endif
		:: gu == 0 && gm == PEP(gpw) + 1 -> gnext_mark()
		:: gu == 0 && gm != PEP(gpw) + 1 ->
			if
			:: hu[k] == gu && hg[k] == gg && hbd[k] == gb && hm[k] == gm ->
				hm[k] = PEP(gpw) + 1;
				printf("P%d (pager) marks block %d closed\n", _pid, k);
				gnext_mark()
			:: else -> gs = G_MH
			fi
		fi
	   }
	:: d_step {
		gs == G_TOF ->
		if
		:: pw == gpw ->
			pw = PW(P_FORMAT, PEP(gpw)); gpw = pw; k = 0; f = 0;
			printf("P%d (pager) formats the page\n", _pid);
			gs = G_FH
		:: else -> gdone()
		fi
	   }
	:: d_step {
		/* f: above every gen; a formatted header {f, 0} gives f */
		gs == G_FH ->
		if
		:: hu[k] == 0 && hbd[k] == 0 && hm[k] == 0 ->
			f = (hg[k] > f -> hg[k] : f)
		:: else ->
			f = (hg[k] + 1 > f -> hg[k] + 1 : f)
		fi;
		k++;
		if
		:: k == NB -> k = 0; gs = G_FP
		:: else -> skip
		fi
	   }
	:: d_step {
		gs == G_FP ->
		if
		:: pw == gpw -> assert(f <= MAXGEN); gs = G_FR
		:: else -> gdone()
		fi
	   }
	:: d_step {
		/* cell k: headers 0..NB-1, then data cells NB..2NB-1; read it,
		 * then check the page word (one step: the word is read last) */
		gs == G_FR ->
		if
		:: k < NB -> gu = hu[k]; gg = hg[k]; gb = hbd[k]; gm = hm[k]
		:: else -> gu = 0; gg = ct[k - NB]; gb = cv[k - NB]; gm = 0
		fi;
		if
		:: pw != gpw -> gdone()
#ifdef FORMAT_ZERO
		:: pw == gpw -> gs = G_FC
#else
		:: pw == gpw && (gu == 1 || gg >= f) ->
			/* at f or beyond: left */
			gu = 0; gg = 0; gb = 0; gm = 0;
			k++;
			if
			:: k == 2 * NB -> gs = G_FREE
			:: else -> skip
			fi
		:: pw == gpw && gu == 0 && gg < f -> gs = G_FC
#endif
		fi
	   }
	:: d_step {
		gs == G_FC ->
#ifdef FORMAT_ZERO
		f = 0;
#endif
		if
		:: k < NB && hu[k] == gu && hg[k] == gg && hbd[k] == gb &&
		   hm[k] == gm ->
			NOT_REFERENCED(k);                      /* P3 */
			hu[k] = 0; hg[k] = f; hbd[k] = 0; hm[k] = 0;
			show_state(); check_inv()
		:: k >= NB && ct[k - NB] == gg && cv[k - NB] == gb ->
			ct[k - NB] = f; cv[k - NB] = 0;
			show_state(); check_inv()
		:: else -> skip         /* changed: read it again */
		fi;
		if
		:: (k < NB && hu[k] == 0 && hg[k] == f && hbd[k] == 0 && hm[k] == 0) ||
		   (k >= NB && ct[k - NB] == f && cv[k - NB] == 0) ->
			k++;
			if
			:: k == 2 * NB -> gs = G_FREE
			:: else -> gs = G_FR
			fi
		:: else -> gs = G_FR
		fi;
		gu = 0; gg = 0; gb = 0; gm = 0
	   }
	:: d_step {
		gs == G_FREE ->
		if
		:: pw == gpw ->
			pw = PW(P_FREE, PEP(gpw) + 1);
			printf("P%d (pager) the page is in the pool\n", _pid);
			k = 0; f = 0; gpw = 0;
			gs = G_TAKE
		:: else -> gdone()
		fi
	   }
	:: d_step {
		gs == G_TAKE ->
		if
		:: PST(pw) == P_FREE -> pw = PW(P_OPEN, PEP(pw))
		:: else -> skip
		fi;
		gdone()
	   }
#ifndef NODEATH
	:: d_step {
		gs != G_DEAD && (np > 0 || gs != G_IDLE) ->
		printf("P%d (pager) dies\n", _pid);
		np = 0; k = 0; f = 0; gpw = 0; gu = 0; gg = 0; gb = 0; gm = 0;
		gs = G_DEAD
	   }
#endif
	od
}
#endif
