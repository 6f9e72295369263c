/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc.pml -- spin model of the "full" verdict of docs/shm-protocol.md
 * ("Finding a free block"; shm/blocks.c full_turn()).  Run by
 * tests/model/check-model.sh (make check).
 *
 * WHAT IT CHECKS
 *   A claim says "full" from a verdict only when every block free at that
 *   moment is one whose release is still in flight (begun and not ended:
 *   the release of a process that may yet die there).  And a claim never
 *   waits for anyone: every loop is bounded, and no step blocks.
 *
 * THE BLOCKS
 *   NB blocks of one class, free[b] (the header's used bit).  The other
 *   blocks, pages and classes only add releases to the counts, which the
 *   releasers here already do.
 *
 * THE COUNTS
 *   started and done, as the sums over the classes: a release adds 1 to
 *   started, frees its block by CAS (one step), then adds 1 to done.  The
 *   ghost inflight counts the releases past their CAS and not yet
 *   counted in done: those are the blocks a verdict may miss.
 *
 * THE VERDICT
 *   {vs, vi}: started when the turn began, and started - done then (the
 *   code packs both in one word: 48 + 16 bits), written by one CAS over
 *   the whole verdict; set = 0 before any.  The time in the code's second
 *   word is left out: the verdict here never lapses, which only makes it
 *   hold more.
 *
 * THE PROCESSES
 *   - NCL claimers, CL claims each.  A claim: read the verdict (one step:
 *     a 16-byte untorn load), read started, then done; if they match it,
 *     "full" (the assertion).  Otherwise a turn: read started then done
 *     (the verdict it would record), then look at every block once, from
 *     a cursor, claiming the first free one (CAS).  If none: read the
 *     counts again; if unchanged, CAS the verdict from what it read to
 *     the turn's.  A claimer that got a block may release it later.
 *   - NR releasers, each holding block b (used at the start).
 *
 * BROKEN VARIANTS (must be rejected)
 *   -DONE_COUNT    a verdict of started alone (no done): a release counted
 *                  before the turn began frees its block behind the turn
 *   -DDONE_FIRST   the claim reads done before started: a release begun
 *                  and ended between the reads goes unseen
 */
#ifndef NB
#define NB 3
#endif
#ifndef NCL
#define NCL 2
#endif
#ifndef CL
#define CL 2
#endif
#ifndef NR
#define NR 2
#endif

bool freeb[NB];
byte started, done, inflight;
byte vs, vi;
bool vset;
byte cursor;

inline nfree(n)
{
	n = 0;
	k = 0;
	do
	:: k < NB -> n = n + freeb[k]; k++
	:: else -> break
	od
}

/* Release block @b: count begun, free it, count ended. */
inline release(b)
{
	started++;
	d_step { freeb[b] = 1; inflight++ };
	d_step { done++; inflight-- }
}

/* Does a verdict read as {@hs, @hi, @hset} hold for counts @s and @df,
 * started - done? */
#ifdef ONE_COUNT
#define HOLDS(hs, hi, hset, s, df) (hset && (s) == (hs))
#else
#define HOLDS(hs, hi, hset, s, df) (hset && (s) == (hs) && (df) == (hi))
#endif

proctype claimer()
{
	byte c = 0, s, d, df, hs, hi, s0, d0, i, b, n, k, mine;
	bool hset, got;

	do
	:: c < CL ->
		c++;
		d_step { hs = vs; hi = vi; hset = vset };
#ifdef DONE_FIRST
		d = done;
		atomic {
			s = started;
			df = s - d;
			if
			:: HOLDS(hs, hi, hset, s, df) ->
				nfree(n);
				assert(n <= inflight);
			:: else -> skip
			fi
		}
#else
		s = started;
		atomic {
			d = done;
			df = s - d;
			if
			:: HOLDS(hs, hi, hset, s, df) ->
				nfree(n);
				assert(n <= inflight);
			:: else -> skip
			fi
		}
#endif
		if
		:: HOLDS(hs, hi, hset, s, df) -> goto next
		:: else -> skip
		fi;
		/* The turn. */
		s0 = started;
		d0 = done;
		got = 0;
		i = 0;
		b = cursor;
		do
		:: i < NB && !got ->
			d_step {
				if
				:: freeb[b] -> freeb[b] = 0; got = 1; mine = b
				:: else -> skip
				fi
			};
			b = (b + 1) % NB;
			i++
		:: else -> break
		od;
		cursor = b;
		if
		:: got ->
			/* Keep it, or give it back later. */
			if
			:: release(mine)
			:: skip
			fi
		:: else ->
			s = started;
			d = done;
			if
			:: s == s0 && d == d0 ->
				d_step {
					if
					:: vs == hs && vi == hi && vset == hset ->
						vs = s0; vi = s0 - d0; vset = 1
					:: else -> skip
					fi
				}
			:: else -> skip
			fi
		fi;
next:		skip
	:: else -> break
	od
}

proctype releaser(byte b)
{
	release(b)
}

init
{
	byte r;

	atomic {
		r = 0;
		do
		:: r < NCL -> run claimer(); r++
		:: else -> break
		od;
		r = 0;
		do
		:: r < NR -> run releaser(r % NB); r++
		:: else -> break
		od
	}
}
