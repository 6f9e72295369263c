/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reclaimer.h - a background thread that sweeps a store periodically.
 *
 * Started lazily by the store's first apply in each process (never at
 * open, so a preforked master that opens a store starts no thread), and
 * again in a fork() child, which does not have its parent's thread: the
 * fork generation (rcu.c) tells.  Stopped and joined at close.
 */
#ifndef TK_RECLAIMER_H
#define TK_RECLAIMER_H

#include <pthread.h>

#include "atomic.h"
#include "config.h"

struct tk__reclaimer {
	void (*sweep)(void *arg, uint64_t now);
	void *arg;
	struct tk_clock *clock;
	uint64_t interval; /* ns between sweeps */
	tk_atomic_u64 gen; /* fork generation + 1 of the running thread */
	pthread_t thread;
	pthread_mutex_t lock; /* guards stopping and the condition only */
	pthread_cond_t cond;
	int stopping;
};

void tk__reclaimer_init(struct tk__reclaimer *r,
			void (*sweep)(void *arg, uint64_t now), void *arg,
			struct tk_clock *clock, uint64_t interval);
/* The slow half of tk__reclaimer_ensure(): start the thread. */
int tk__reclaimer_start(struct tk__reclaimer *r);

extern tk_atomic_u64 tk__fork_gen; /* rcu.c */

/* Whether this process runs @r's thread: never for one zeroed and never
 * started. */
static inline int tk__reclaimer_running(struct tk__reclaimer *r)
{
	return tk_atomic_load_u64(&r->gen, TK_MO_RELAXED) ==
	       tk_atomic_load_u64(&tk__fork_gen, TK_MO_RELAXED) + 1;
}

/* Start the thread in this process if it has none.  Returns 0, or -1 if
 * no thread could be started (the caller reclaims on access instead).
 * Inline: every apply of a store with a thread asks. */
static inline int tk__reclaimer_ensure(struct tk__reclaimer *r)
{
	if (tk_atomic_load_u64(&r->gen, TK_MO_RELAXED) ==
	    tk_atomic_load_u64(&tk__fork_gen, TK_MO_RELAXED) + 1)
		return 0;
	return tk__reclaimer_start(r);
}
/* Stop and join this process's thread, if any; free the resources. */
void tk__reclaimer_destroy(struct tk__reclaimer *r);

#endif /* TK_RECLAIMER_H */
