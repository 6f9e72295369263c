/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-hooks.h - what the tests reach into: every variable a test sets
 * to steer the library, and every function only a test calls.  The
 * library defines them when TK_TEST_HOOKS is 1 (config.h; configure
 * --disable-test-hooks sets 0 for a production build without them, and
 * the library then behaves as with every hook left at 0).
 */
#ifndef TK_TEST_HOOKS_H
#define TK_TEST_HOOKS_H

#include "config.h"

#include <stdint.h>

#include <throttlekit.h>

#include "hash/keyhash.h"

#if TK_TEST_HOOKS
/* limiter.c: checks of @l by the store's apply() alone, never its
 * try_check() (tests compare the two). */
void tk__limiter_generic(struct tk_limiter *l);
/* limiter.c: single-policy checks of this thread that went to the
 * store's apply() (tests: that the fast path decides in place). */
extern __thread uint64_t tk__check_applied;

/* store.c.  Tests: if not zero, a store opened takes one less than this
 * for the most slots a table of it in the cache has (lib/store/slot-store.h).
 */
extern uint64_t tk__slot_near_test;

/* store-slot.c: checks this thread's try_window() decided (tests: that
 * the window's direct path is taken, not only that it agrees). */
extern __thread uint64_t tk__window_direct_decided;

/* store-slot.c.  Tests: non-zero makes every new denial record, not
 * paced (tk__slot_name_deny()), so that two zones one thread checks in
 * turn keep the same records. */
extern int tk__deny_unpaced;

/* The key hash of memory store @s, as prepared (tests). */
struct tk__keyhash_key;
const struct tk__keyhash_key *tk__memory_keyhash(struct tk_store *s);
/* The table of memory store @s (tests). */
struct tk__table;
struct tk__table *tk__memory_table(struct tk_store *s);
/* Tests: if not zero, the secret of every memory store opened, so that
 * two stores place and evict keys alike. */
extern uint64_t tk__memory_secret[2];
/* Test hook: non-zero makes tk__keyhash_aesni() answer 0, as on a CPU
 * without AES-NI.  Set before opening stores; never by the library. */
extern int tk__keyhash_no_aesni;
/* The primitives under a CMAC key, for the FIPS-197 and RFC 4493
 * vectors (tests): one AES-128 block, and the full 16-byte AES-CMAC of
 * any length, each by @k's implementation. */
void tk__aes128(const struct tk__keyhash_key *k, const unsigned char in[16],
		unsigned char out[16]);
void tk__aes_cmac(const struct tk__keyhash_key *k, const void *data, size_t len,
		  unsigned char tag[16]);
/* clock-tsc.c.  Tests: non-zero makes tk_clock_tsc() give the system
 * clock, as where the TSC is not invariant. */
extern int tk__tsc_no_tsc;
/* Tests: if not zero, the longest period of a TSC line (ns; else 1 s),
 * so that a test sees many re-anchorings.  Set before tk_clock_tsc(). */
extern uint64_t tk__tsc_period_cap_ns;
/* Tests: added to every CLOCK_REALTIME reading the TSC clock's
 * calibration and re-anchoring take, as if CLOCK_REALTIME stepped. */
extern int64_t tk__tsc_realtime_shift_ns;
/* Tests: prefixed to the paths of /proc/cpuinfo and of the kernel's
 * clock sources that decide whether the TSC is usable (else ""), so
 * that a test can give the calibration files of its own.  Set before
 * the first tk_clock_tsc(). */
extern const char *tk__tsc_root;
/* Tests: take (@hold non-zero) or release the TSC clock's writer lock,
 * as a thread re-anchoring would hold it: 0, or -EBUSY if held. */
int tk__tsc_hold_writer(int hold);
/* redis/xslot.c.  Tests: if set, called with tk__xslot_pause_arg after
 * a refused cross-slot all() consumed and before it refunds, so that
 * another client's check can land in between. */
extern void (*tk__xslot_pause)(void *arg);
extern void *tk__xslot_pause_arg;
/* store/store-tier.c.  Tests: if set, called with tk__tier_pause_arg
 * where a two-tier check has found the credit word empty, before the
 * lease's block (@where 0), and where a granted lease's claim is
 * recorded in the block and its credit not yet on the word (@where 1),
 * so that another check of the host can land in between. */
extern void (*tk__tier_pause)(void *arg, int where);
extern void *tk__tier_pause_arg;
/* pg/libpq.c.  Tests: if set before the first postgresql:// spec, the
 * file loaded in place of libpq.so.5 (a name that is absent fails the
 * load, as on a host without libpq5). */
extern const char *tk__libpq_soname;
/* pg/store.c.  Tests: if not zero, every single-key check of a
 * PostgreSQL store takes the locked path (a transaction with the row
 * locked) at once; if set, tk__pg_locked_pause(tk__pg_locked_pause_arg)
 * runs there, and in a composite's transaction, with the rows locked,
 * before the transition. */
extern int tk__pg_locked_only;
extern void (*tk__pg_locked_pause)(void *arg);
extern void *tk__pg_locked_pause_arg;
#else
#define tk__slot_near_test ((uint64_t)0)
#define tk__memory_secret ((const uint64_t[2]){ 0, 0 })
#define tk__keyhash_no_aesni 0
#define tk__deny_unpaced 0
#define tk__tsc_no_tsc 0
#define tk__tsc_period_cap_ns ((uint64_t)0)
#define tk__tsc_realtime_shift_ns ((int64_t)0)
#define tk__tsc_root ""
#define tk__xslot_pause ((void (*)(void *))0)
#define tk__xslot_pause_arg ((void *)0)
#define tk__tier_pause ((void (*)(void *, int))0)
#define tk__tier_pause_arg ((void *)0)
#define tk__libpq_soname ((const char *)0)
#define tk__pg_locked_only 0
#define tk__pg_locked_pause ((void (*)(void *))0)
#define tk__pg_locked_pause_arg ((void *)0)
#endif

#endif /* TK_TEST_HOOKS_H */
