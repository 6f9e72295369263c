/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slots.pml -- spin model of the shared-memory slot protocol of
 * docs/shm-protocol.md ("Slots", "Transitions", "An apply (check) runs").
 * Run by tests/model/check-model.sh (make check); see there for the
 * configurations and the exact spin/pan commands.
 *
 * THE TABLE
 *   N slots; every key's two windows are the whole table, and the slot
 *   index is the total order of candidate positions ("earliest" = lowest
 *   index).  A slot is two words:
 *       w0 = state + 4*ref + 8*fp      state 0 EMPTY 1 INS 2 MEM 3 COL
 *       w1 = the key's state word (MEM), or a ticket (INS, COL)
 *   EMPTY is {0,0}; the table starts all EMPTY.  Every change of a slot is
 *   one d_step that compares BOTH words and writes both (the 16-byte CAS).
 *   Every read of a slot is two steps, w0 then w1, so torn pairs happen.
 *   Tickets come from one shared counter (the shard's fetch-and-add), and a
 *   ticket that was published in an INS is never used again.
 *
 * THE PROCESSES
 *   - NW workers, each running REQS applies of key K, as the doc says: scan
 *     all slots (torn); MEM(K) seen -> update it, colliding an own INS
 *     first; else INS(K) seen -> collide every later INS(K) seen, commit the
 *     earliest, scan again; else claim an EMPTY slot (any slot EMPTY at the
 *     CAS, or a failed claim) and scan again.  Any failed CAS -> scan again.
 *     An apply gives up after SCANS scans: loops are bounded, and the model
 *     checks safety, not progress.  Each worker is a flat state machine
 *     (phase = its next shared-memory step), one d_step per step.
 *   - DEATH: at every phase a worker may instead take the "dies" step and
 *     stop forever, leaving whatever it half did (its INS, a COL, a fresh
 *     {MEM|1|fp,0}) in the table.  (-DNODEATH removes that branch; for
 *     safety a dead process is the same as one never scheduled again.)
 *   - one janitor: NJ actions, each on any slot, read torn, then one CAS:
 *     free a COL; reclaim an expired MEM (the grace rule below); clear the
 *     ref bit of a MEM (first sweep visit of {MEM|1|fp,0}); free a
 *     {MEM|0|fp,s} (second sweep visit when s = 0, eviction otherwise; the
 *     real eviction frees {MEM|r|fp,s}, s != 0, in one CAS, which a clear
 *     and a free in a row cover).  Eviction is allowed at any time and of
 *     any live key, not only of the coldest when the table is full: more
 *     behaviours than the real code, so sound.
 *   - a clock that ticks once (now: 0 -> 1).
 *
 * THE STATE WORD, THE LIMITER AND THE GRACE (the abstraction)
 *   Slots only hold state words that are their own expiry time (a TAT).
 *   The model keeps what the protocol relies on with a tiny fixed-window
 *   limiter:   w1 = 0               no state yet (fresh commit)
 *              w1 = 1 + (c-1) + L*e c admissions (1..L) in window e (0..1)
 *   An update computes, from the word read and the clock:
 *       w1 == 0 or window < now  ->  c = 1 in window now     admitted
 *       c < L                    ->  c + 1                   admitted
 *       else                     ->  denied: writes nothing, validated by
 *                                    an untorn re-read of the same slot
 *   A word is "expired for the grace" iff its window is older than now.
 *   Like a TAT: expiry depends only on the word and the clock and is
 *   monotone in time; an expired word is equivalent to no state (the next
 *   update restarts exactly as from 0), so a reclaim changes no decision;
 *   and a key's expired word never comes back (a later incarnation's words
 *   carry window >= now: the doc's "an old {w0,w1} never comes back").
 *   Reclaim (transition 6) is allowed only on a word expired by this rule,
 *   the model's "s != 0 and s + grace <= now".
 *
 * THE PROPERTIES (asserted in the d_step of every CAS that can break them;
 * nothing else writes the table or the ghosts, so they hold in every state)
 *   - no duplicate key: never two MEM slots with one fingerprint;
 *   - no lost update: the ghost g[fp], set only by successful update CASes
 *     and reset in the same d_step as the reclaim/eviction that removes the
 *     key, equals the state word of every MEM(fp) slot; and every admitted
 *     update was computed from g[fp];
 *   - limit: ac[fp] counts the successful admissions in the current window
 *     while the key stays resident (reset with g on removal): <= L;
 *   - grace: a reclaim frees a key only when its true (ghost) state is
 *     expired: no admitted request is forgotten before its grace.
 *
 * FLAW IN THE PROTOCOL AS WRITTEN, AND THE FIX MODELLED HERE
 *   The doc lets a helper commit the earliest INS(fp) that its lookup scan
 *   saw.  But that scan may have read another slot BEFORE the INS was
 *   claimed, so "no other INS(fp)/MEM(fp) seen" held at no single instant.
 *   -DAS_DOCUMENTED models the doc's rule; with 3 workers on 2 slots spin
 *   finds a duplicate in 27 steps:
 *       P2, P1: lookup, key absent (all EMPTY).
 *       P0: lookup starts, reads slot 0: EMPTY.
 *       P2: claims slot 0, scans (nothing else), commits slot 0 -> MEM.
 *       P1: claims slot 1 (INS t2).
 *       P0: reads slot 1 = INS t2, the only INS/MEM it saw -> commits it.
 *       -> MEM(fp) in slots 0 and 1 (P1 would have collided its own INS on
 *          its next scan, too late).
 *   An owner's commit is safe because its scan starts after its claim; two
 *   inserters alone never show the bug (the doc's argument is pairwise).
 *   FIX (the default): commit an INS only on a scan that STARTED after that
 *   INS was seen: the own INS (claimed before the scan), or the {slot,
 *   ticket} that was already the earliest INS(fp) of the previous scan of
 *   the same apply; otherwise remember it and scan again.  This is sound
 *   only with a fresh ticket per published INS: -DTICKET_PER_APPLY (one
 *   ticket per apply, reused by a re-claim after the own INS was collided,
 *   a literal reading of "once per new key") lets the confirming scan match
 *   a NEW incarnation {INS|fp,t} in the same slot (ABA) and spin finds a
 *   duplicate again.
 *
 * KNOBS (-D on the spin command line)
 *   N slots (2..4), NW workers, REQS applies per worker, SCANS scans per
 *   apply, NJ janitor actions, L limit; NODEATH; NOHIDDEN (for pan -DBFS);
 *   broken variants: AS_DOCUMENTED, TICKET_PER_APPLY, NOCOLLIDE (commit
 *   without colliding the later INS), NAIVE (slots-naive.pml: find absent,
 *   then claim an EMPTY slot and write MEM directly).
 */

#ifndef N
#define N 3
#endif
#ifndef NW
#define NW 3
#endif
#ifndef REQS
#define REQS 1
#endif
#ifndef SCANS
#define SCANS 3
#endif
#ifndef NJ
#define NJ 2
#endif
#ifndef L
#define L 2
#endif

#define NK 1            /* fingerprints in the ghost arrays */
#define K 1             /* the workers' key */

#define S_EMPTY 0
#define S_INS 1
#define S_MEM 2
#define S_COL 3
#define MKW0(st, r, fp) ((st) + 4 * (r) + 8 * (fp))
#define ST(w) ((w) & 3)
#define REF(w) (((w) / 4) & 1)
#define FP(w) ((w) / 8)
#define NONE 255

/* state words: 0 = none, else c admissions (1..L) in window e (0..1) */
#define WIN(s) (((s) - 1) / L)
#define CNT(s) (((s) - 1) % L + 1)
#define EXPIRED(s) ((s) != 0 && WIN(s) < now)

/* worker phases: each names the next shared-memory step */
#define P_SCAN0 0       /* read w0 of slot i */
#define P_SCAN1 1       /* read w1 of slot i */
#define P_DROP 2        /* collide own INS: a MEM(K) exists */
#define P_UPD 3         /* update the MEM(K) seen, or validate a denial */
#define P_COLL 4        /* collide the later INS(K) in slot i */
#define P_COMMIT 5      /* commit the earliest INS(K), in slot hi */
#define P_CLAIM 6       /* claim an EMPTY slot */
#define P_FIN 7         /* all requests done */
#define P_DEAD 8        /* killed */

byte w0[N];
byte w1[N];
byte tix;               /* the shard's ticket counter: last ticket issued */
bit now;                /* abstract clock */
byte g[NK + 1];         /* ghost: the key's true state word while resident */
byte ac[NK + 1];        /* ghost: admissions in window ae[], this residency */
bit ae[NK + 1];
#ifdef NOHIDDEN                 /* for pan -DBFS, which refuses hidden */
#define SCRATCH byte
#else
#define SCRATCH hidden byte
#endif
SCRATCH hj;             /* d_step scratch, never part of the state */
SCRATCH hk;
SCRATCH hb;

/* trail printing only (pan prints nothing while verifying): the table,
 * each slot as state:ref:fp:w1, state 0 EMPTY 1 INS 2 MEM 3 COL */
inline show_table()
{
	hj = 0;
	printf("      table:");
	do
	:: hj < N ->
		printf(" [%d:%d:%d:%d]", ST(w0[hj]), REF(w0[hj]), FP(w0[hj]), w1[hj]);
		hj++
	:: else -> break
	od;
	printf("\n")
}

/* The global invariant, checked in the d_step of every successful CAS that
 * can break it (nothing else writes the table or the ghosts). */
inline check_inv()
{
	hj = 0;
	do
	:: hj < N ->
		hk = hj + 1;
		do
		:: hk < N ->
			/* no duplicate key */
			assert(!(ST(w0[hj]) == S_MEM && ST(w0[hk]) == S_MEM &&
			         FP(w0[hj]) == FP(w0[hk])));
			hk++
		:: else -> break
		od;
		hj++
	:: else -> break
	od;
	hj = 0;
	do
	:: hj < N ->
		/* no lost update: a resident key's slot holds its ghost state */
		assert(ST(w0[hj]) != S_MEM || w1[hj] == g[FP(w0[hj])]);
		hj++
	:: else -> break
	od
}

/* reclaim or eviction removed key fp: the ghosts forget it with it */
inline forget(fp)
{
	g[fp] = 0;
	ac[fp] = 0;
	ae[fp] = 0
}

/* ---- worker helpers; all run inside a d_step ---- */

inline clear_scan()
{
	i = 0; a = 0; mi = NONE; m0 = 0; m1 = 0; hi = NONE;
	hj = 0;
	do
	:: hj < N -> s1[hj] = 0; hj++
	:: else -> break
	od
}

/* this apply is over (admitted, denied, or gave up) */
inline finish_req()
{
	clear_scan();
	own = NONE; t = 0; pi = NONE; pt = 0;
	reqs--;
	if
	:: reqs > 0 -> tries = SCANS - 1; phase = P_SCAN0
	:: else -> tries = 0; phase = P_FIN
	fi
}

/* a CAS failed or a step is done: look up again (bounded) */
inline rescan()
{
	if
	:: tries == 0 -> finish_req()
	:: else -> tries--; clear_scan(); phase = P_SCAN0
	fi
}

/* collide the next later INS(K) seen at or after slot 'from', or commit */
inline next_collide(from)
{
#ifdef NOCOLLIDE
	i = N;
#else
	i = from;
#endif
	do
	:: i < N && s1[i] == 0 -> i++
	:: else -> break
	od;
	if
	:: i < N -> phase = P_COLL
	:: else -> i = 0; phase = P_COMMIT
	fi
}

/* end of a scan: choose what to do, as in "An apply (check) runs" */
inline decide()
{
	i = 0;
	if
	:: mi != NONE ->
		/* MEM(K) exists: update it; an own INS is garbage (transition 4) */
		pi = NONE; pt = 0;
		if
		:: own != NONE -> phase = P_DROP
		:: else -> phase = P_UPD
		fi
	:: mi == NONE && hi != NONE ->
		/* INS(K) exists: collide the later ones, commit the earliest */
#ifdef AS_DOCUMENTED
		next_collide(hi + 1)
#else
		if
		:: (hi == own && s1[hi] == t + 1) || (hi == pi && s1[hi] == pt + 1) ->
			next_collide(hi + 1)
		:: else ->
			/* seen first in this scan: confirm it by a whole new scan */
			pi = hi; pt = s1[hi] - 1;
			rescan()
		fi
#endif
	:: else ->
		/* K absent: claim an EMPTY slot */
		pi = NONE; pt = 0;
#ifndef TICKET_PER_APPLY
		if
		:: own != NONE -> t = 0     /* published once: never reuse it */
		:: else -> skip
		fi;
#endif
		own = NONE;
		phase = P_CLAIM
	fi
}

/* transition 2, claim, CAS {0,0} -> {INS|fp,t}: any slot that is EMPTY at
 * the CAS (a superset of "an EMPTY slot seen in the scan"); the ticket is
 * drawn from the shared counter the first time it is needed */
#ifdef NAIVE
#define CLAIMED_W0 MKW0(S_MEM, 1, K)
#define CLAIMED_W1 0
#else
#define CLAIMED_W0 MKW0(S_INS, 0, K)
#define CLAIMED_W1 t
#endif
#define CLAIM_OPT(j) \
	:: d_step { \
		phase == P_CLAIM && w0[j] == 0 && w1[j] == 0 -> \
		if \
		:: t == 0 -> tix++; t = tix \
		:: else -> skip \
		fi; \
		w0[j] = CLAIMED_W0; w1[j] = CLAIMED_W1; own = j; \
		printf("P%d claims slot %d: w1 %d\n", _pid, j, w1[j]); show_table(); \
		check_inv(); \
		rescan() \
	}

active [NW] proctype worker()
{
	byte phase = P_SCAN0;
	byte reqs = REQS;
	byte tries = SCANS - 1;
	byte i;           /* slot being read, collided */
	byte a;           /* w0 just read (a read is w0, then w1: may be torn) */
	byte mi = NONE;   /* first MEM(K) seen: slot and both words */
	byte m0, m1;
	byte s1[N];       /* 1 + w1 of each INS(K) seen in this scan, 0 = none
	                     (a torn read may give any w1, even 0) */
	byte hi = NONE;   /* earliest INS(K) seen in this scan */
	byte pi = NONE;   /* earliest INS(K) of the previous scan, and its w1 */
	byte pt;
	byte own = NONE;  /* own published INS: slot and ticket */
	byte t;

end:
	do
	:: d_step {
		phase == P_SCAN0 ->
		a = w0[i];
		printf("P%d read w0[%d] = %d:%d:%d\n", _pid, i, ST(a), REF(a), FP(a));
		phase = P_SCAN1
	   }
	:: d_step {
		phase == P_SCAN1 ->
		hb = w1[i];
		printf("P%d read w1[%d] = %d\n", _pid, i, hb);
		if
		:: FP(a) == K && ST(a) == S_MEM && mi == NONE ->
			mi = i; m0 = a; m1 = hb
		:: FP(a) == K && ST(a) == S_INS ->
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
		:: i < N -> phase = P_SCAN0
		:: else -> decide()
		fi
	   }
	:: d_step {
		/* transition 4 on the own INS: {INS|fp,t} -> {COL|fp,t} */
		phase == P_DROP ->
		if
		:: w0[own] == MKW0(S_INS, 0, K) && w1[own] == t ->
			w0[own] = MKW0(S_COL, 0, K);
			printf("P%d collides own INS in slot %d\n", _pid, own);
			show_table()
		:: else -> skip
		fi;
		own = NONE;
#ifndef TICKET_PER_APPLY
		t = 0;
#endif
		phase = P_UPD
	   }
	:: d_step {
		/* transition 1: the policy step, on the state word read and the
		 * clock; admitted -> CAS {MEM|r|fp,s} -> {MEM|1|fp,s'}; denied ->
		 * validated by an untorn re-read of the slot */
		phase == P_UPD ->
		if
		:: m1 == 0 || WIN(m1) < now -> hb = 1 + L * now
		:: else ->
			if
			:: CNT(m1) < L -> hb = m1 + 1
			:: else -> hb = 0
			fi
		fi;
		if
		:: hb != 0 && w0[mi] == m0 && w1[mi] == m1 ->
			w0[mi] = MKW0(S_MEM, 1, K);
			w1[mi] = hb;
			printf("P%d admitted: slot %d %d -> %d\n", _pid, mi, m1, hb);
			show_table();
			assert(g[K] == m1);     /* computed from the true state */
			g[K] = hb;
			if
			:: ac[K] == 0 || ae[K] != WIN(hb) ->
				assert(ac[K] == 0 || ae[K] < WIN(hb));
				ac[K] = 1; ae[K] = WIN(hb)
			:: else -> ac[K]++
			fi;
			assert(ac[K] <= L);     /* never more admitted than L */
			check_inv();
			finish_req()
		:: hb == 0 && w0[mi] == m0 && w1[mi] == m1 ->
			printf("P%d denied: slot %d = %d\n", _pid, mi, m1);
			finish_req()
		:: else ->
			rescan()
		fi
	   }
	:: d_step {
		/* transition 4: collide, CAS {INS|fp,t} -> {COL|fp,t} */
		phase == P_COLL ->
		if
		:: w0[i] == MKW0(S_INS, 0, K) && w1[i] == s1[i] - 1 ->
			w0[i] = MKW0(S_COL, 0, K);
			printf("P%d collides INS %d in slot %d\n", _pid, s1[i] - 1, i);
			show_table();
			next_collide(i + 1)
		:: else ->
			rescan()
		fi
	   }
	:: d_step {
		/* transition 3: commit, CAS {INS|fp,t} -> {MEM|1|fp,0} */
		phase == P_COMMIT ->
		if
		:: w0[hi] == MKW0(S_INS, 0, K) && w1[hi] == s1[hi] - 1 ->
			w0[hi] = MKW0(S_MEM, 1, K);
			w1[hi] = 0;
			printf("P%d commits INS %d in slot %d\n", _pid, s1[hi] - 1, hi);
			show_table();
			check_inv()
		:: else -> skip
		fi;
		pi = NONE; pt = 0;
		rescan()
	   }
	CLAIM_OPT(0)
	CLAIM_OPT(1)
#if N > 2
	CLAIM_OPT(2)
#endif
#if N > 3
	CLAIM_OPT(3)
#endif
	:: d_step {
		/* the claim CAS failed: the slot was taken meanwhile */
		phase == P_CLAIM -> rescan()
	   }
#ifndef NODEATH
	:: d_step {
		/* SIGKILL: stops forever; what it left in the table stays */
		phase < P_FIN ->
		printf("P%d dies\n", _pid);
		reqs = 0; tries = 0; clear_scan(); own = NONE; t = 0;
		pi = NONE; pt = 0;
		phase = P_DEAD
	   }
#endif
	od
}

/* The sweeper/reclaimer and the evictor: NJ actions, each on any slot. */
#define JREAD(j) \
	:: d_step { \
		jp == 0 && n > 0 -> \
		n--; i = j; a = w0[j]; jp = 1 \
	}

active proctype janitor()
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
#if N > 3
	JREAD(3)
#endif
	:: d_step {
		jp == 1 -> b = w1[i]; jp = 2;
		printf("P%d (janitor) read slot %d = %d:%d:%d:%d\n", _pid, i,
		       ST(a), REF(a), FP(a), b)
	   }
	:: d_step {
		/* transition 5: free COL */
		jp == 2 && ST(a) == S_COL ->
		if
		:: w0[i] == a && w1[i] == b ->
			w0[i] = 0; w1[i] = 0;
			printf("P%d frees COL in slot %d\n", _pid, i); show_table()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* transition 6: reclaim an expired state word */
		jp == 2 && ST(a) == S_MEM && EXPIRED(b) ->
		if
		:: w0[i] == a && w1[i] == b ->
			assert(EXPIRED(g[FP(a)]));      /* the grace */
			w0[i] = 0; w1[i] = 0;
			forget(FP(a));
			printf("P%d reclaims slot %d\n", _pid, i); show_table();
			check_inv()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* transition 6, first visit of a never-updated MEM, and the first
		 * half of transition 7: {MEM|1|fp,s} -> {MEM|0|fp,s} */
		jp == 2 && ST(a) == S_MEM && REF(a) == 1 ->
		if
		:: w0[i] == a && w1[i] == b ->
			w0[i] = a - 4;
			printf("P%d clears ref of slot %d\n", _pid, i); show_table()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* transition 6, later visit: {MEM|0|fp,0} -> EMPTY, and transition
		 * 7, eviction (drops live state, by design): {MEM|0|fp,s} -> EMPTY */
		jp == 2 && ST(a) == S_MEM && REF(a) == 0 ->
		if
		:: w0[i] == a && w1[i] == b ->
			w0[i] = 0; w1[i] = 0;
			forget(FP(a));
			printf("P%d frees MEM (ref 0) in slot %d\n", _pid, i); show_table();
			check_inv()
		:: else -> skip
		fi;
		jp = 0; i = 0; a = 0; b = 0
	   }
	:: d_step {
		/* nothing to do with what was read */
		jp == 2 && ST(a) != S_COL && ST(a) != S_MEM ->
		jp = 0; i = 0; a = 0; b = 0
	   }
	od
}

active proctype clock()
{
	d_step { now = 1; printf("P%d clock ticks: now = 1\n", _pid) }
}
