/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcas.pml -- spin model of the multi-key update protocol of
 * docs/shm-protocol.md ("Multi-key updates", with the block collector of
 * "State blocks"), as shm/mcas.c implements it: install(), finish(),
 * complete(), tk__desc_help(), tk__desc_garbage(), attempt(), and the
 * collect()/bound_to() rule of shm/blocks.c.  Run by
 * tests/model/check-model.sh (make check); see there for the
 * configurations and the exact spin/pan commands.
 *
 * THE SLOTS
 *   Two block keys in two slots {w0, w1} (slot 0 < slot 1: the install
 *   order).  w0 is only the ref bit (0/1): a publish or a SUCCEEDED finish
 *   sets it; the collector may clear it (the second chance of make_room()
 *   in shm/slots.c, which cleared it on any MEM slot, one holding a
 *   descriptor too, until eviction took the coldest key instead; kept, it
 *   only adds behaviours), so a CAS that compares both words can fail
 *   while w1 is unchanged.  w1 is
 *       INIT = 1              the key's first state (counter 0)
 *       REF(b, g) 16..127     a reference to incarnation g of block b
 *       DREF(c, g) >= 128     a reference to incarnation g of descriptor
 *                             cell c
 *   Tags are the whole value (a 32-bit hash collision only ever makes the
 *   collector keep more).  Gens only grow, so a w1 value never repeats,
 *   except that an aborted descriptor puts its expected values back.  A
 *   slot change is one d_step comparing and writing both words (the
 *   16-byte CAS).  Where the code reads both words (install(), finish(),
 *   a single update) the model reads w0, then w1, in two steps (torn
 *   reads); where it loads w1 alone (the collector, a state read) it
 *   reads w1 in one step.
 *
 * THE STATE BLOCKS (the abstraction)
 *   A key's state is one counter, kept in a block: header {hu used, hg
 *   gen, hbd binding = the slot value the block was staged from} and the
 *   counter bv.  Block 2p+s is initiator p's staged block for slot s,
 *   block SB = 2*NI the single updater's (slot 0).  A claim or rebind and
 *   the writes of its cells are one d_step (a new gen each time): cell
 *   tags, late writes and torn cell reads are blocks.pml's business, and
 *   a block here is only ever claimed by its one owner.  Reading a key's
 *   state is one step, the load of w1 (a referenced block is valid, by P4,
 *   so the counter read is the one of that instant; the code's re-read of
 *   the slot only makes such a read fail).  A release of a replaced block
 *   (tk__blk_release_ref(): read the header, CAS it to free if used with
 *   the reference's gen) is one d_step: gens grow, so the header cannot
 *   change and come back in between.
 *
 * THE DESCRIPTORS
 *   NDC descriptor cells: header {du used, dg gen, dbd binding = the
 *   expected value of slot 0}, status cell {dstg tag, dst UNDECIDED /
 *   SUCCEEDED / FAILED}, the entries (de[] expected, dn[] new w1 per
 *   slot) and a ghost owner downer.  An initiator claims ANY cell free at
 *   the CAS (dg + 1: a new incarnation, so cells are reused by whoever
 *   comes) and writes all of it in the same d_step.  (The entries are
 *   tagged with the gen and validated by desc_read(); a collector that
 *   meets a claimed, unwritten descriptor either keeps it for its binding
 *   or frees a descriptor that can never be installed, its first slot
 *   having moved on.)  A freed cell keeps its status {gen, status} until
 *   it is claimed again: a late decide CAS with the old gen still hits it
 *   until then, and fails after.  desc_read() of DREF(c, g) succeeds iff
 *   cell c is used with gen g (the entries read are then g's, whatever
 *   happens meanwhile); status_of() fails if the status cell's tag is not
 *   g.  A failed read means "gone", as in the code.
 *
 * THE PROCESSES (flat state machines, one d_step per shared-memory step)
 *   - NI (1..2) initiators P0, P1, each running one all() update that
 *     increments both counters, in at most TRIES attempts (rounds) of
 *     attempt(): read slot 0, then slot 1 (a descriptor there: help it,
 *     and the attempt fails; one that cannot be read: no state, as
 *     read_part() does); stage both new states (block 2p+s bound to the
 *     expected value) and build a descriptor (no free cell: give up, as
 *     the claim's -ENOSPC); install, for each slot in order: read w0, w1;
 *     the own reference: next slot; own status not UNDECIDED (or gone):
 *     got = -1; the expected value: CAS {w0, e} -> {w0, DREF}, read again
 *     if it fails; another descriptor: help it (abort) and read again, or
 *     got = i if it is gone; anything else: got = i.  Decide: got == 2 and
 *     the own CAS UNDECIDED -> SUCCEEDED gives ok, else CAS UNDECIDED ->
 *     FAILED; finish(ok), retrying each slot while it holds the own
 *     reference.  Then release the descriptor (no slot holds it and only
 *     its initiator installs it); on success also the replaced blocks;
 *     on failure retry.
 *   - NS (0/1) single updater of slot 0 (shm/slots.c update()): read w0,
 *     w1 (a descriptor: help it, retry; gone: no state), stage block SB,
 *     publish CAS, release the replaced block; STRIES tries.
 *   - one collector of NC actions, each one of: collect block b (read its
 *     header; read its slot's w1 once: its own reference, any descriptor
 *     or its binding -> keep; else CAS the header to free); collect
 *     descriptor cell c (tk__desc_garbage(): read the header; read slot 0:
 *     any descriptor or the binding -> keep; desc_read(): gone -> free;
 *     for each entry read its slot: this descriptor -> complete it and
 *     keep; any descriptor or the expected value -> keep; then CAS the
 *     header to free); help the descriptor in a slot (any transition that
 *     meets one: update, reclaim, eviction, sweep); clear a slot's ref bit
 *     (make_room(); -DNOCLEAR_DESC: not while it holds a descriptor).
 *   - helping is tk__desc_help(): desc_read() (gone: "stale"), decide
 *     FAILED (CAS), status_of(), finish(status).  finish(ok): for each
 *     slot read w0, w1; if w1 is the descriptor, CAS {w0, DREF} -> {1,
 *     new} (ok) or {w0, expected}; if that CAS fails, read again (THE FIX,
 *     below; -DAS_CODED: go on to the next slot, as the first version of shm/mcas.c did).
 *   - DEATH: at every step each process may instead stop forever, leaving
 *     what it half did (staged blocks, a descriptor installed in some
 *     slots, undecided, or decided and not finished).  -DNODEATH removes
 *     that branch; for safety a dead process is the same as one never
 *     scheduled again, and one stopped for a while is a late interleaving
 *     (the late install: an initiator reads its status UNDECIDED, stops,
 *     is aborted and its expected value put back, then CASes its install).
 *   Steps merged into one d_step, each sound because the later read or
 *   CAS cannot give an outcome the earlier instant cannot (statuses only
 *   leave UNDECIDED, gens only grow) or touches what no one else reads:
 *   staging both blocks and building the descriptor; install()'s load of
 *   w1 and its status_of(); the initiator's SUCCEEDED CAS and its
 *   decide(FAILED); complete()'s decide(FAILED) and status_of() (if the
 *   descriptor is freed in between, no slot holds it and the finish that
 *   a later read would skip changes nothing); the collector's read of the
 *   binding slot and desc_read(); the releases of both replaced blocks.
 *
 * THE PROPERTIES (asserted in every d_step that writes a slot, a status, a
 * block header or a descriptor header; nothing else writes them or the
 * ghosts, so they hold in every state)
 *   Ghosts: lc[s], the logical counter of slot s; nsingle, the single
 *   updates published; napp[p], the updates of initiator p applied (by a
 *   SUCCEEDED decision on one of its descriptors).  A slot's logical
 *   value is its w1, or, for a descriptor reference, the entry's new value
 *   if the status is SUCCEEDED, else its expected value.
 *   - P1, no partial consumption, no lost update: lc[0] == lc[1] + nsingle
 *     (lc[] move only at a SUCCEEDED decision, both at once, and only
 *     while both slots hold that descriptor), and every slot's logical
 *     value holds the counter lc[s]; a publish installs lc + 1.
 *   - P2, the initiator's outcome: one that returns success has napp == 1
 *     (applied exactly once), one that returns failure (and retries or
 *     gives up) has napp == 0.
 *   - P3, no dangling descriptor: a slot never holds DREF(c, g) unless cell
 *     c is used with gen g.  (The code treats a reference to a gone
 *     descriptor as no state, or drops the slot: the key's value is lost.)
 *   - P4, no dangling block: a slot's logical value never references a
 *     block that is free or has another gen (a staged block collected
 *     while its descriptor can still succeed, a rebind of a live block).
 *
 * FLAW IN shm/mcas.c AS WRITTEN, AND THE FIX MODELLED HERE
 *   finish() CASes each slot still holding the descriptor ONCE, with the
 *   w0 it read; if the ref bit changed between its read and its CAS (or
 *   the two loads straddled the change), the CAS fails and the slot keeps
 *   the reference.  A helper's miss is harmless (the next visitor
 *   completes the descriptor again, and the collector keeps it while a
 *   slot holds it), but after SUCCEEDED with every entry persisted,
 *   attempt() releases the descriptor itself.  -DAS_CODED: spin finds it
 *   in 20 steps (NI=2 NS=0 NC=2, pan -i):
 *       P0: reads slot 0 and slot 1 (INIT, INIT), stages blocks 0 and 1,
 *           builds descriptor cell 1 (gen 1), installs it in slot 0 and
 *           slot 1, CASes its status UNDECIDED -> SUCCEEDED (its update
 *           takes effect) and finishes slot 0.
 *       P0: finish reads slot 1: {1, DREF(1,1)}.
 *       collector: clears slot 1's ref bit (make_room(), second chance).
 *       P0: its CAS {1, DREF(1,1)} -> {1, REF(1,1)} fails; it goes on,
 *           returns success and releases descriptor cell 1.
 *       -> slot 1 holds DREF(1,1), a free cell (P3).  The next visitor's
 *          tk__desc_help() fails, and read_part(), update() and drop()
 *          treat the slot as no state (or drop it): slot 1's half of the
 *          SUCCEEDED update, and its whole state, are lost.
 *   FIX (the default): finish() reads a slot again after a failed CAS,
 *   until the slot no longer holds the descriptor:
 *       for (;;) { read; if (w1 != d->ref) break; if (cas(...)) break; }
 *   (lock-free: the CAS fails only if another process changed the slot).
 *   -DAS_CODED -DNOCLEAR_DESC (make_room() leaving slots that hold a
 *   descriptor alone, as the doc's rule 5 says every transition should:
 *   then nothing changes w0 while w1 holds a live descriptor) holds too.
 *
 * KNOBS (-D on the spin command line)
 *   NI initiators (1..2), TRIES attempts each, NS single updaters (0/1),
 *   STRIES its tries, NDC descriptor cells (2..3), NC collector actions;
 *   NODEATH; NOHIDDEN (for pan -DBFS); NOCLEAR_DESC (above);
 *   RELEASE_IF_UNKNOWN (the initiator releases its descriptor only after
 *   SUCCEEDED or a failure before its first install, the first version's
 *   rule; the default releases it after its own finish() whatever the
 *   outcome, as shm/mcas.c does: both hold).
 *   AS_CODED         finish() as first written (one CAS): must be rejected.
 *   Broken variants (each must be rejected; shortest trails by pan -i):
 *     READ_OUTCOME   the initiator learns its outcome by reading its
 *                    status after complete() instead of from its own CAS:
 *                    the collector frees the descriptor once its slots
 *                    hold the new values, the other initiator's build
 *                    reuses the cell, the read fails ("gone": failed) and
 *                    the initiator retries an applied update (P2; NI=2,
 *                    27 steps).
 *     HELPERS_DECIDE helpers (and the collector) that see the descriptor
 *                    in both slots decide SUCCEEDED (Harris): the
 *                    initiator's own CAS then fails and its finish(FAILED)
 *                    puts an expected value back over a SUCCEEDED update
 *                    (P1; NI=2, 18 steps).  With READ_OUTCOME (Harris's
 *                    way to learn the outcome) the status may be gone, as
 *                    above (27 steps).
 *     FREE_UNREFERENCED the collector frees a descriptor as soon as none of
 *                    its slots holds it (no binding rule, no expected-value
 *                    or any-descriptor rule): it judges while the slots
 *                    still hold the expected values, the initiator
 *                    installs, the collector frees (P3; 11 steps).
 *     FREE_BOUND_ONLY the collector keeps a descriptor for its binding
 *                    (slot 0) and its references only, not for a later
 *                    slot's expected value or descriptor: the descriptor
 *                    is aborted after its install in slot 0, the single
 *                    updater moves slot 0 on, the collector judges, the
 *                    initiator (which read its status UNDECIDED before the
 *                    abort) installs in slot 1, the collector frees (P3;
 *                    needs NS=1: with two all() updates of the same keys
 *                    slot 0 never moves on alone; 26 steps).
 *     COLLECT_THROUGH_DESC the collector does not keep a staged block
 *                    while its slot holds a descriptor: it frees the
 *                    staged block of an installed, undecided descriptor,
 *                    which then succeeds (P4; 13 steps).
 */

#ifndef NI
#define NI 2
#endif
#ifndef NDC
#define NDC 2
#endif
#ifndef TRIES
#define TRIES 2
#endif
#ifndef NS
#define NS 0
#endif
#ifndef STRIES
#define STRIES 2
#endif
#ifndef NC
#define NC 2
#endif

#define NONE 255
#define INIT 1
#define REF(b, g) (16 * ((b) + 1) + (g))
#define ISREF(w) ((w) >= 16 && (w) < 128)
#define RB(w) ((w) / 16 - 1)
#define RG(w) ((w) % 16)
#define DREF(c, g) (128 + 16 * (c) + (g))
#define ISDESC(w) ((w) >= 128)
#define DC(w) (((w) - 128) / 16)
#define DG(w) ((w) % 16)
#define MAXGEN 15

#define UNDECIDED 0
#define SUCCEEDED 1
#define FAILED 2

#define SB (2 * NI)      /* the single updater's block */
#define NBLK (2 * NI + NS)
#define BSLOT(b) ((b) == SB -> 0 : (b) % 2)

#if NDC < 2 || NDC > 3
#error "NDC must be 2 or 3"
#endif
#if NDC == 2
#define ALLDESC (du[0] == 1 && du[1] == 1)
#else
#define ALLDESC (du[0] == 1 && du[1] == 1 && du[2] == 1)
#endif
#if NS > 1
#error "NS must be 0 or 1"
#endif
#if NI < 1 || NI > 2
#error "NI must be 1 or 2"
#endif

bit w0[2] = 1;          /* the slots: ref bit */
byte w1[2] = INIT;      /* the slots: INIT, REF(b, g) or DREF(c, g) */
bit hu[NBLK];           /* blocks: used, gen, binding, counter */
byte hg[NBLK];
byte hbd[NBLK];
byte bv[NBLK];
bit du[NDC];            /* descriptor cells: header */
byte dg[NDC];
byte dbd[NDC];
byte dstg[NDC];         /* status cell: tag, status */
byte dst[NDC];
byte de[2 * NDC];       /* entries: expected, new w1 of each slot */
byte dn[2 * NDC];
byte downer[NDC];       /* ghost: the initiator that built it */
byte lc[2];             /* ghost: logical counters */
byte nsingle;           /* ghost: single updates published */
byte napp[2];           /* ghost: updates of each initiator applied */

#ifdef NOHIDDEN                 /* for pan -DBFS, which refuses hidden */
#define SCRATCH byte
#else
#define SCRATCH hidden byte
#endif
SCRATCH hv;             /* d_step scratch, never part of the state */
SCRATCH hc;
SCRATCH ij;             /* show_state() and check_inv() scratch */
SCRATCH iv;
SCRATCH ic;

/* trail printing only: each slot as ref bit:w1, then the used blocks
 * (used:gen:binding:counter) and descriptor cells (used:gen:binding:
 * {status tag, status}:expected/new) */
inline show_state()
{
	printf("      table: slots [%d:%d] [%d:%d] counters %d %d; blocks",
	       w0[0], w1[0], w0[1], w1[1], lc[0], lc[1]);
	ij = 0;
	do
	:: ij < NBLK ->
		printf(" %d[%d:%d:%d:%d]", ij, hu[ij], hg[ij], hbd[ij], bv[ij]);
		ij++
	:: else -> break
	od;
	printf("; descs");
	ij = 0;
	do
	:: ij < NDC ->
		printf(" %d[%d:%d:%d:{%d,%d}:%d,%d/%d,%d]", ij, du[ij], dg[ij],
		       dbd[ij], dstg[ij], dst[ij], de[2 * ij], de[2 * ij + 1],
		       dn[2 * ij], dn[2 * ij + 1]);
		ij++
	:: else -> break
	od;
	printf("\n")
}

/* P1, P3, P4: checked in every d_step that changes a slot, a status, a
 * block header or a descriptor header (nothing else writes them or the
 * ghosts) */
inline check_inv()
{
	assert(lc[0] == lc[1] + nsingle);                       /* P1 */
	ij = 0;
	do
	:: ij < 2 ->
		iv = w1[ij];
		if
		:: ISDESC(iv) ->
			ic = DC(iv);
			assert(du[ic] == 1 && dg[ic] == DG(iv));        /* P3 */
			if
			:: dstg[ic] == DG(iv) && dst[ic] == SUCCEEDED ->
				iv = dn[2 * ic + ij]
			:: else -> iv = de[2 * ic + ij]
			fi
		:: else -> skip
		fi;
		if
		:: iv == INIT -> assert(lc[ij] == 0)                 /* P1 */
		:: else ->
			assert(ISREF(iv));
			ic = RB(iv);
			assert(hu[ic] == 1 && hg[ic] == RG(iv));        /* P4 */
			assert(bv[ic] == lc[ij])                        /* P1 */
		fi;
		ij++
	:: else -> break
	od;
	iv = 0; ic = 0
}

/* a SUCCEEDED decision on descriptor c (gen DG(d)): the linearization
 * point of its update */
inline succeeded(d)
{
	/* decided only while installed in both slots */
	assert(w1[0] == d && w1[1] == d);                       /* P1 */
	lc[0]++; lc[1]++;
	napp[downer[DC(d)]]++;
	printf("P%d decides SUCCEEDED: desc %d gen %d of P%d\n", _pid,
	       DC(d), DG(d), downer[DC(d)]);
	show_state(); check_inv()
}

/* ---- helping: tk__desc_help() = desc_read(); complete() = decide
 * FAILED, status_of(), finish().  Each process that helps has the locals
 * phase, hd (the descriptor reference), he0/he1 (expected), hn0/hn1
 * (new), hok (finish with new values), hi (slot being finished), hw0/hw1
 * (slot as read), hall (HELPERS_DECIDE: installed in every slot seen),
 * hret (phase to return to) and hres (1: the descriptor was gone). ---- */

#define H_READ 40       /* desc_read() */
#define H_HD0 41        /* HELPERS_DECIDE: read slot 0's w1 */
#define H_HD1 42        /* HELPERS_DECIDE: read slot 1's w1 */
#define H_DEC 43        /* decide: CAS status UNDECIDED -> FAILED, and
                           status_of() */
#define H_FR0 45        /* finish: read w0 of slot hi */
#define H_FR1 46        /* finish: read w1 of slot hi */
#define H_FC 47         /* finish: CAS slot hi */
#ifdef HELPERS_DECIDE
#define H_DECIDE H_HD0
#else
#define H_DECIDE H_DEC
#endif

inline help_ret()
{
	hd = 0; he0 = 0; he1 = 0; hn0 = 0; hn1 = 0; hok = 0; hi = 0;
	hw0 = 0; hw1 = 0; hall = 0;
	phase = hret; hret = 0
}

/* finish: the next slot, or return */
inline finish_next()
{
	hw0 = 0; hw1 = 0;
	if
	:: hi == 0 -> hi = 1; phase = H_FR0
	:: else -> help_ret()
	fi
}

#define HELP_STEPS \
	:: d_step { \
		/* desc_read(): gone unless used with the reference's gen */ \
		phase == H_READ -> \
		hc = DC(hd); \
		if \
		:: du[hc] == 1 && dg[hc] == DG(hd) -> \
			he0 = de[2 * hc]; he1 = de[2 * hc + 1]; \
			hn0 = dn[2 * hc]; hn1 = dn[2 * hc + 1]; \
			hres = 0; phase = H_DECIDE \
		:: else -> \
			printf("P%d: desc %d gen %d is gone\n", _pid, hc, DG(hd)); \
			hres = 1; help_ret() \
		fi; \
		hc = 0 \
	} \
	:: d_step { \
		phase == H_HD0 -> hall = (w1[0] == hd); phase = H_HD1 \
	} \
	:: d_step { \
		phase == H_HD1 -> hall = hall && (w1[1] == hd); phase = H_DEC \
	} \
	:: d_step { \
		/* decide(): CAS {g, UNDECIDED} -> {g, FAILED} (HELPERS_DECIDE: \
		 * SUCCEEDED if seen in every slot); then status_of(), in the \
		 * same step (a status never changes once decided; if the cell \
		 * is freed meanwhile, no slot holds the reference any more and \
		 * the finish that a later read would skip changes nothing) */ \
		phase == H_DEC -> \
		hc = DC(hd); \
		if \
		:: dstg[hc] == DG(hd) && dst[hc] == UNDECIDED -> \
			if \
			:: hall -> \
				dst[hc] = SUCCEEDED; \
				succeeded(hd) \
			:: else -> \
				dst[hc] = FAILED; \
				printf("P%d aborts desc %d gen %d\n", _pid, hc, DG(hd)); \
				show_state(); check_inv() \
			fi \
		:: else -> skip \
		fi; \
		hall = 0; \
		if \
		:: dstg[hc] == DG(hd) && dst[hc] != UNDECIDED -> \
			hok = (dst[hc] == SUCCEEDED); hi = 0; phase = H_FR0 \
		:: else -> help_ret() \
		fi; \
		hc = 0 \
	} \
	:: d_step { \
		phase == H_FR0 -> hw0 = w0[hi]; phase = H_FR1 \
	} \
	:: d_step { \
		phase == H_FR1 -> \
		hw1 = w1[hi]; \
		if \
		:: hw1 == hd -> phase = H_FC \
		:: else -> finish_next() \
		fi \
	} \
	:: d_step { \
		/* finish(): CAS {w0, DREF} -> {1, new} or {w0, expected} */ \
		phase == H_FC -> \
		if \
		:: w0[hi] == hw0 && w1[hi] == hd -> \
			if \
			:: hok -> w0[hi] = 1; w1[hi] = (hi == 0 -> hn0 : hn1) \
			:: else -> w1[hi] = (hi == 0 -> he0 : he1) \
			fi; \
			printf("P%d finishes slot %d: %d\n", _pid, hi, w1[hi]); \
			show_state(); check_inv(); \
			finish_next() \
		:: else -> \
			printf("P%d: finish CAS of slot %d fails\n", _pid, hi); \
			FINISH_RETRY \
		fi \
	}

#ifdef AS_CODED
#define FINISH_RETRY finish_next()              /* one CAS per slot */
#else
#define FINISH_RETRY hw0 = 0; hw1 = 0; phase = H_FR0    /* the fix */
#endif

#define HELP_LOCALS \
	byte hd, he0, he1, hn0, hn1; \
	bit hok, hi, hall, hres; \
	byte hw1, hret; \
	bit hw0

/* initiator phases: each names the next shared-memory step */
#define I_RD 0          /* read w1 of slot i (and its state) */
#define I_RDH 1         /* returned from helping a descriptor read */
#define I_BUILD 2       /* stage both new states, build a descriptor */
#define I_IR0 4         /* install slot i: read w0 */
#define I_IR1 5         /* install slot i: read w1, then status_of(own) */
#define I_ICAS 7        /* install slot i: CAS */
#define I_IHELP 8       /* returned from helping the descriptor met */
#define I_DEC 9         /* CAS own status UNDECIDED -> SUCCEEDED, or
                           -> FAILED */
#define I_OUT 11        /* READ_OUTCOME: read own status */
#define I_AFTER 12      /* after finish() */
#define I_RELB 13       /* release the replaced blocks */
#define I_RELD 14       /* release the own descriptor */
#define I_FIN 15        /* done */
#define I_DEAD 16       /* killed */

/* ---- initiator helpers; all run inside a d_step ---- */

/* the new values: the own staged blocks (only their owner changes their
 * gens, so these are what stage() made in this attempt) */
#define n0 REF(2 * _pid, hg[2 * _pid])
#define n1 REF(2 * _pid + 1, hg[2 * _pid + 1])

inline forget_attempt()
{
	i = 0; e0 = 0; e1 = 0; c0 = 0; c1 = 0;
	dc = 0; dgn = 0; got = 0; ok = 0; rw0 = 0; rw1 = 0
}

/* attempt() returns -EAGAIN: its update must not have been applied */
inline attempt_failed()
{
	printf("P%d: attempt fails\n", _pid);
	assert(napp[_pid] == 0);                                /* P2 */
	forget_attempt();
	tries--;
	if
	:: tries > 0 -> phase = I_RD
	:: else -> phase = I_FIN
	fi
}

/* attempt() returns success: applied exactly once */
inline attempt_succeeded()
{
	printf("P%d: update done\n", _pid);
	assert(napp[_pid] == 1);                                /* P2 */
	forget_attempt();
	tries = 0;
	phase = I_FIN
}

/* the state read of slot i is v (counter k) */
inline have_read(v, k)
{
	if
	:: i == 0 -> e0 = v; c0 = k; i = 1; phase = I_RD
	:: else -> e1 = v; c1 = k; i = 0; phase = I_BUILD
	fi
}

/* the counter of the state value v (a valid block, by P4) */
#define CNT(v) ((v) == INIT -> 0 : bv[RB(v)])

/* install: slot i holds the own descriptor */
inline installed()
{
	rw0 = 0; rw1 = 0;
	if
	:: i == 0 -> i = 1; phase = I_IR0
	:: else -> i = 0; got = 2; phase = I_DEC
	fi
}

/* tk__blk_release_ref(v): free the block v references if it is used
 * with v's gen (reading the header and the CAS collapsed: gens grow, so
 * the header cannot change and come back in between) */
inline release_ref(v)
{
	if
	:: ISREF(v) && hu[RB(v)] == 1 && hg[RB(v)] == RG(v) ->
		hu[RB(v)] = 0; hbd[RB(v)] = 0;
		printf("P%d releases block %d\n", _pid, RB(v));
		show_state(); check_inv()
	:: else -> skip
	fi
}

/* go to finish(ok) of the own descriptor, then I_AFTER */
inline own_finish()
{
	hd = DREF(dc, dgn); he0 = e0; he1 = e1; hn0 = n0; hn1 = n1;
	hok = ok; hi = 0; hret = I_AFTER;
	phase = H_FR0
}

/* stage(): claim or rebind block B (a new gen either way), bound to the
 * expected value e, holding counter k + 1 */
inline stage(B, e, k)
{
	hu[B] = 1; hg[B]++; assert(hg[B] <= MAXGEN);
	hbd[B] = e; bv[B] = k + 1;
	printf("P%d stages block %d gen %d: %d\n", _pid, B, hg[B], bv[B])
}

/* stage both new states, then claim descriptor cell C (any cell free at
 * the CAS) and write it: one step (the staged blocks are private, only the
 * collector reads them, and nothing it does depends on the order) */
#define BUILD_OPT(C) \
	:: d_step { \
		phase == I_BUILD && du[C] == 0 -> \
		stage(2 * _pid, e0, c0); stage(2 * _pid + 1, e1, c1); \
		c0 = 0; c1 = 0; \
		du[C] = 1; dg[C]++; assert(dg[C] <= MAXGEN); \
		dbd[C] = e0; \
		dstg[C] = dg[C]; dst[C] = UNDECIDED; \
		de[2 * C] = e0; de[2 * C + 1] = e1; \
		dn[2 * C] = n0; dn[2 * C + 1] = n1; \
		downer[C] = _pid; \
		dc = C; dgn = dg[C]; \
		printf("P%d builds desc %d gen %d: %d,%d -> %d,%d\n", _pid, C, \
		       dgn, e0, e1, n0, n1); \
		show_state(); check_inv(); \
		i = 0; phase = I_IR0 \
	}

active [NI] proctype initiator()
{
	byte phase = I_RD;
	byte tries = TRIES;
	bit i;            /* the slot being read, staged, installed */
	byte e0, e1;      /* expected values (as read) */
	byte c0, c1;      /* their counters (until staged) */
	byte dc, dgn;     /* own descriptor: cell, gen */
	byte got;         /* install()'s result: 0..2, NONE = -1 */
	bit ok;           /* the outcome */
	bit rw0;          /* the slot as read by install() */
	byte rw1;
	HELP_LOCALS;

end:
	do
	:: d_step {
		/* read_part(): the slot's w1 and the state it references */
		phase == I_RD ->
		hv = w1[i];
		printf("P%d reads slot %d: %d\n", _pid, i, hv);
		if
		:: ISDESC(hv) -> rw1 = hv; hd = hv; hret = I_RDH; phase = H_READ
		:: else -> have_read(hv, CNT(hv))
		fi;
		hv = 0
	   }
	:: d_step {
		/* a descriptor was read: helped -> -EAGAIN; gone -> no state */
		phase == I_RDH ->
		if
		:: hres == 0 -> attempt_failed()
		:: else -> hres = 0; have_read(rw1, 0)
		fi;
		rw1 = 0
	   }
	BUILD_OPT(0)
	BUILD_OPT(1)
#if NDC > 2
	BUILD_OPT(2)
#endif
	:: d_step {
		/* no descriptor cell free: the claim fails (-ENOSPC) */
		phase == I_BUILD && ALLDESC ->
		printf("P%d: no descriptor cell\n", _pid);
		assert(napp[_pid] == 0);                        /* P2 */
		forget_attempt(); tries = 0; phase = I_FIN
	   }
	:: d_step {
		phase == I_IR0 -> rw0 = w0[i]; phase = I_IR1
	   }
	:: d_step {
		/* install(): read w1; the own reference -> next slot; else
		 * status_of(own) (read in the same step: a later read of a status
		 * that only leaves UNDECIDED adds no outcome), then the expected
		 * value, another descriptor, or anything else */
		phase == I_IR1 ->
		rw1 = w1[i];
		if
		:: rw1 == DREF(dc, dgn) -> installed()
		:: rw1 != DREF(dc, dgn) && dstg[dc] == dgn &&
		   dst[dc] == UNDECIDED ->
			if
			:: rw1 == (i == 0 -> e0 : e1) -> phase = I_ICAS
			:: else ->
				if
				:: ISDESC(rw1) -> hd = rw1; hret = I_IHELP; phase = H_READ
				:: else -> got = i; phase = I_DEC
				fi;
				rw0 = 0; rw1 = 0
			fi
		:: else ->
			printf("P%d: own desc aborted (or gone)\n", _pid);
			got = NONE; rw0 = 0; rw1 = 0; phase = I_DEC
		fi
	   }
	:: d_step {
		/* install(): CAS {w0, expected} -> {w0, DREF} */
		phase == I_ICAS ->
		if
		:: w0[i] == rw0 && w1[i] == rw1 ->
			w1[i] = DREF(dc, dgn);
			printf("P%d installs desc %d gen %d in slot %d\n", _pid, dc,
			       dgn, i);
			show_state(); check_inv();
			installed()
		:: else -> rw0 = 0; rw1 = 0; phase = I_IR0
		fi
	   }
	:: d_step {
		/* helped the descriptor met: re-read the slot; gone: got = i */
		phase == I_IHELP ->
		if
		:: hres == 0 -> phase = I_IR0
		:: else -> hres = 0; got = i; phase = I_DEC
		fi
	   }
	:: d_step {
		/* decide: only the initiator decides SUCCEEDED, and knows its
		 * outcome from this CAS; if not ok, decide(FAILED) (the same
		 * step: the status it compares only leaves UNDECIDED, and the
		 * abort it may do is one a helper could do at the same time) */
		phase == I_DEC ->
		ok = 0;
		if
		:: got == 2 && dstg[dc] == dgn && dst[dc] == UNDECIDED ->
			dst[dc] = SUCCEEDED; ok = 1;
			succeeded(DREF(dc, dgn))
		:: else -> skip
		fi;
#ifdef READ_OUTCOME
		/* complete(): decide(FAILED), status_of(), finish(status); the
		 * outcome is read after (I_OUT) */
		hd = DREF(dc, dgn); he0 = e0; he1 = e1; hn0 = n0; hn1 = n1;
		hret = I_OUT; phase = H_DEC
#else
		if
		:: !ok && dstg[dc] == dgn && dst[dc] == UNDECIDED ->
			dst[dc] = FAILED;
			printf("P%d aborts its own desc %d gen %d\n", _pid, dc, dgn);
			show_state(); check_inv()
		:: else -> skip
		fi;
		own_finish()
#endif
	   }
	:: d_step {
		/* READ_OUTCOME: the outcome from the status; gone -> failed */
		phase == I_OUT ->
		ok = (dstg[dc] == dgn && dst[dc] == SUCCEEDED);
		printf("P%d reads its outcome: %d\n", _pid, ok);
		phase = I_AFTER
	   }
	:: d_step {
		phase == I_AFTER ->
		if
		:: ok -> phase = I_RELB
#ifdef RELEASE_IF_UNKNOWN
		:: !ok && got == 0 -> phase = I_RELD
		:: else -> attempt_failed()
#else
		/* shm/mcas.c: after its own finish() no slot holds it, and
		 * only it installs: it releases it whatever the outcome */
		:: !ok -> phase = I_RELD
#endif
		fi
	   }
	:: d_step {
		/* tk__blk_release_ref() of both replaced states (one step: two
		 * CASes on two headers that nothing reads in between but the
		 * collector, which judges each alone) */
		phase == I_RELB ->
		release_ref(e0); release_ref(e1);
		phase = I_RELD
	   }
	:: d_step {
		/* tk__blk_release() of the own descriptor: CAS on its header as
		 * claimed, after its own finish() (-DRELEASE_IF_UNKNOWN: only
		 * after SUCCEEDED, or a failure with got == 0, never
		 * installed: the first version's rule) */
		phase == I_RELD ->
		if
		:: du[dc] == 1 && dg[dc] == dgn && dbd[dc] == e0 ->
			du[dc] = 0; dbd[dc] = 0;
			printf("P%d releases desc %d gen %d\n", _pid, dc, dgn);
			show_state(); check_inv()
		:: else -> skip
		fi;
		if
		:: ok -> attempt_succeeded()
		:: else -> attempt_failed()
		fi
	   }
	HELP_STEPS
#ifndef NODEATH
	:: d_step {
		/* SIGKILL or SIGSTOP for ever: what it left stays */
		phase != I_FIN && phase != I_DEAD ->
		printf("P%d dies\n", _pid);
		forget_attempt(); tries = 0;
		hret = 0; help_ret(); hres = 0;
		phase = I_DEAD
	   }
#endif
	od
}

#if NS > 0
/* single updater phases */
#define S_R0 0          /* read w0 of slot 0 */
#define S_R1 1          /* read w1 of slot 0 (and its state) */
#define S_RH 2          /* returned from helping */
#define S_STAGE 3       /* claim/rebind block SB */
#define S_PUB 4         /* publish: CAS the slot */
#define S_REL 5         /* release the replaced block */
#define S_FIN 6
#define S_DEAD 7

inline s_retry()
{
	sw0 = 0; se = 0; sc = 0;
	tries--;
	if
	:: tries > 0 -> phase = S_R0
	:: else -> phase = S_FIN
	fi
}

active proctype single()
{
	byte phase = S_R0;
	byte tries = STRIES;
	bit sw0;          /* slot 0 as read */
	byte se;
	byte sc;          /* its counter */
	HELP_LOCALS;

end:
	do
	:: d_step {
		phase == S_R0 -> sw0 = w0[0]; phase = S_R1
	   }
	:: d_step {
		phase == S_R1 ->
		se = w1[0];
		printf("P%d (single) reads slot 0: %d:%d\n", _pid, sw0, se);
		if
		:: ISDESC(se) -> hd = se; hret = S_RH; phase = H_READ
		:: else -> sc = CNT(se); phase = S_STAGE
		fi
	   }
	:: d_step {
		/* helped -> -EAGAIN; gone -> a broken reference: no state */
		phase == S_RH ->
		if
		:: hres == 0 -> s_retry()
		:: else -> hres = 0; sc = 0; phase = S_STAGE
		fi
	   }
	:: d_step {
		phase == S_STAGE ->
		hu[SB] = 1; hg[SB]++; assert(hg[SB] <= MAXGEN);
		hbd[SB] = se; bv[SB] = sc + 1;
		printf("P%d (single) stages block %d gen %d: %d\n", _pid, SB, hg[SB],
		       bv[SB]);
		show_state(); check_inv();
		phase = S_PUB
	   }
	:: d_step {
		/* publish: CAS {w0, e} -> {1, REF(SB, g)} */
		phase == S_PUB ->
		if
		:: w0[0] == sw0 && w1[0] == se ->
			assert(bv[SB] == lc[0] + 1);                     /* P1 */
			w0[0] = 1; w1[0] = REF(SB, hg[SB]);
			lc[0]++; nsingle++;
			printf("P%d (single) publishes %d\n", _pid, w1[0]);
			show_state(); check_inv();
			phase = S_REL
		:: else -> s_retry()
		fi
	   }
	:: d_step {
		phase == S_REL ->
		release_ref(se);
		sw0 = 0; se = 0; sc = 0; tries = 0;
		phase = S_FIN
	   }
	HELP_STEPS
#ifndef NODEATH
	:: d_step {
		phase != S_FIN && phase != S_DEAD ->
		printf("P%d (single) dies\n", _pid);
		sw0 = 0; se = 0; sc = 0; tries = 0;
		hret = 0; help_ret(); hres = 0;
		phase = S_DEAD
	   }
#endif
	od
}
#endif

/* collector phases */
#define C_IDLE 0
#define C_BSLOT 1       /* block: read its slot's w1 */
#define C_BREL 2        /* block: CAS its header -> free */
#define C_DBND 3        /* descriptor: read slot 0 (its binding), then
                           desc_read() */
#define C_DSLOT 5       /* descriptor: read the slot of entry ci */
#define C_DREL 6        /* descriptor: CAS its header -> free */
#define C_DEAD 7

inline cdone()
{
	j = 0; cg = 0; cb = 0; ci = 0; cs = 0; hres = 0;
	phase = C_IDLE
}

/* collect(): read the header of used block B */
#define COLLECT_BLK(B) \
	:: d_step { \
		phase == C_IDLE && n > 0 && hu[B] == 1 -> \
		hres = 0; n--; j = B; cg = hg[B]; cb = hbd[B]; phase = C_BSLOT \
	}

/* tk__desc_garbage(): read the header of used descriptor cell C */
#define COLLECT_DESC(C) \
	:: d_step { \
		phase == C_IDLE && n > 0 && du[C] == 1 -> \
		hres = 0; n--; j = C; cg = dg[C]; cb = dbd[C]; phase = C_DBND \
	}

/* help the descriptor in slot S (any transition that meets one) */
#define HELP_SLOT(S) \
	:: d_step { \
		phase == C_IDLE && n > 0 && ISDESC(w1[S]) -> \
		hres = 0; n--; hd = w1[S]; hret = C_IDLE; phase = H_READ \
	}

/* make_room(): second chance, CAS {1, w1} -> {0, w1} (read and CAS
 * collapsed: the CAS compares all the read saw) */
#ifdef NOCLEAR_DESC
#define CLEARABLE(S) (w0[S] == 1 && !ISDESC(w1[S]))
#else
#define CLEARABLE(S) (w0[S] == 1)
#endif
#define CLEAR_REF(S) \
	:: d_step { \
		phase == C_IDLE && n > 0 && CLEARABLE(S) -> \
		hres = 0; n--; w0[S] = 0; \
		printf("P%d (collector) clears the ref bit of slot %d\n", _pid, S) \
	}

active proctype collector()
{
	byte phase = C_IDLE;
	byte n = NC;      /* actions left */
	byte j, cg, cb;   /* block or descriptor cell, its header as read */
	bit ci;           /* entry being judged */
	byte cs;          /* slot w1 as read */
	HELP_LOCALS;

end:
	do
	COLLECT_BLK(0)
	COLLECT_BLK(1)
#if NBLK > 2
	COLLECT_BLK(2)
#endif
#if NBLK > 3
	COLLECT_BLK(3)
#endif
#if NBLK > 4
	COLLECT_BLK(4)
#endif
	COLLECT_DESC(0)
	COLLECT_DESC(1)
#if NDC > 2
	COLLECT_DESC(2)
#endif
	HELP_SLOT(0)
	HELP_SLOT(1)
	CLEAR_REF(0)
	CLEAR_REF(1)
	:: d_step {
		/* bound_to(), with the block's own reference: one read */
		phase == C_BSLOT ->
		cs = w1[BSLOT(j)];
		printf("P%d (collector) block %d [1:%d:%d], slot %d w1 %d\n", _pid,
		       j, cg, cb, BSLOT(j), cs);
		if
		:: cs == REF(j, cg) -> cdone()                  /* live */
#ifndef COLLECT_THROUGH_DESC
		:: ISDESC(cs) -> cdone()        /* a descriptor may publish it */
#endif
		:: cs == cb -> cdone()          /* its publish may come */
		:: else -> phase = C_BREL
		fi
	   }
	:: d_step {
		/* release: CAS the header as read -> {free, same gen} */
		phase == C_BREL ->
		if
		:: hu[j] == 1 && hg[j] == cg && hbd[j] == cb ->
			hu[j] = 0; hbd[j] = 0;
			printf("P%d (collector) collects block %d\n", _pid, j);
			show_state(); check_inv()
		:: else -> skip
		fi;
		cdone()
	   }
	:: d_step {
		/* tk__blk_bound(): slot 0 holds a descriptor or the binding ->
		 * keep; then desc_read() in the same step (valid later means
		 * valid now, with the same gen; gone later: the free CAS on the
		 * header read fails, as a judgement made now may end) */
		phase == C_DBND ->
		cs = w1[0];
		printf("P%d (collector) desc %d [1:%d:%d], slot 0 w1 %d\n", _pid,
		       j, cg, cb, cs);
		if
#ifndef FREE_UNREFERENCED
		:: ISDESC(cs) || cs == cb -> cdone()
		:: else ->
#else
		:: true ->
#endif
			cs = 0;
			if
			:: du[j] == 1 && dg[j] == cg ->
				he0 = de[2 * j]; he1 = de[2 * j + 1];
				hn0 = dn[2 * j]; hn1 = dn[2 * j + 1];
				ci = 0; phase = C_DSLOT
			:: else -> phase = C_DREL     /* gone: never finished */
			fi
		fi
	   }
	:: d_step {
		/* entry ci: this descriptor -> complete it; any descriptor or
		 * the expected value -> its initiator may still install it */
		phase == C_DSLOT ->
		cs = w1[ci];
		printf("P%d (collector) desc %d entry %d: slot w1 %d\n", _pid, j,
		       ci, cs);
		if
		:: cs == DREF(j, cg) ->
			hd = cs; hret = C_IDLE; phase = H_DECIDE;
			j = 0; cg = 0; cb = 0; ci = 0; cs = 0
#if !defined(FREE_UNREFERENCED) && !defined(FREE_BOUND_ONLY)
		:: cs != DREF(j, cg) && (ISDESC(cs) ||
		                         cs == (ci == 0 -> he0 : he1)) ->
			he0 = 0; he1 = 0; hn0 = 0; hn1 = 0;
			cdone()
#endif
		:: else ->
			cs = 0;
			if
			:: ci == 0 -> ci = 1
			:: else ->
				ci = 0; he0 = 0; he1 = 0; hn0 = 0; hn1 = 0;
				phase = C_DREL
			fi
		fi
	   }
	:: d_step {
		/* collect(): CAS the header as read -> {free, same gen} */
		phase == C_DREL ->
		if
		:: du[j] == 1 && dg[j] == cg && dbd[j] == cb ->
			du[j] = 0; dbd[j] = 0;
			printf("P%d (collector) frees desc %d gen %d\n", _pid, j, cg);
			show_state(); check_inv()
		:: else -> skip
		fi;
		cdone()
	   }
	HELP_STEPS
#ifndef NODEATH
	:: d_step {
		phase != C_DEAD && (n > 0 || phase != C_IDLE) ->
		printf("P%d (collector) dies\n", _pid);
		n = 0; hret = 0; help_ret(); cdone();
		phase = C_DEAD
	   }
#endif
	od
}
