/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fork.h - rcu.c's setup of liburcu, and the count of forks that
 * per-process state (reclaimers, tally shards) compares against.
 */
#ifndef TK_FORK_H
#define TK_FORK_H

#include "config.h"
#include "atomic.h"

#include <stdint.h>

/* rcu.c: the liburcu flavour and fork handling, in one place. */
void tk__rcu_setup(void);
uint64_t tk__fork_generation(void);
/* What tk__fork_generation() reads, for an inline read. */
extern tk_atomic_u64 tk__fork_gen;

#endif /* TK_FORK_H */
