/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcu.c - the liburcu flavour, and surviving fork() without exec().
 *
 * We use the "bulletproof" flavour (urcu-bp): threads register themselves
 * on their first read-side critical section, so callers of the library
 * never register anything.  Preforked servers fork without exec, so the
 * flavour's own fork handlers are installed once with pthread_atfork(3);
 * they hold the reader registry across fork() and prune the threads the
 * child does not have.
 *
 * We deliberately use no call_rcu() worker thread: such threads do not
 * exist in a child after fork(), and liburcu's documentation warns against
 * its call_rcu fork handlers when callbacks call free().  Our reclaimers
 * batch retired memory and call synchronize_rcu() themselves instead.
 *
 * The fork generation lets process-local state notice, with one relaxed
 * load, that it now lives in a child (threads to restart, flags held by a
 * thread the child does not have).
 */
#include "fork.h"
#include "atomic.h"
#include "rcu.h"
#include "store/tally.h"

#include <pthread.h>

#ifdef TK__TSAN
char tk__rcu_tsan_sync;
#endif

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
/* Read inline where every check asks (tally.h). */
tk_atomic_u64 tk__fork_gen;

static void after_fork_child(void)
{
	urcu_bp_after_fork_child();
	tk_atomic_add_u64(&tk__fork_gen, 1, TK_MO_RELAXED);
	tk__tally_after_fork();
}

static void setup(void)
{
	pthread_atfork(urcu_bp_before_fork, urcu_bp_after_fork_parent,
		       after_fork_child);
}

void tk__rcu_setup(void)
{
	pthread_once(&setup_once, setup);
}

uint64_t tk__fork_generation(void)
{
	return tk_atomic_load_u64(&tk__fork_gen, TK_MO_RELAXED);
}
