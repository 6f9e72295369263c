/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * baselines.h - what the library is measured against, in the same run.
 *
 *   floor        the least one check can cost: read the clock the library
 *                reads, then one CAS on a 64-bit word in shared memory (one
 *                word per key, so large key sets pay their cache misses).
 *   mutex table  a shared-memory hash table, one process-shared robust
 *                mutex per shard, running the same GCRA: the design of
 *                nginx's limit_req zone.
 *   per-process  each process keeps its own private table, as per-child
 *                Apache modules do: no sharing, so N processes admit N
 *                times the limit.
 *
 * Each baseline's inner loop lives in its own file with the check inlined
 * into it, so the baselines pay no call per check (the library pays one).
 */
#ifndef TK_BENCH_BASELINES_H
#define TK_BENCH_BASELINES_H

#include "../bench.h"

/* The loop alone: stream, key bytes, no check.  @w is ignored. */
uint64_t bench_harness_run(void *w, struct bench_cursor *c, uint64_t n);

/* floor.c: @nkeys words in a MAP_SHARED mapping, visible after fork(). */
struct bench_floor;
int bench_floor_open(struct bench_floor **out, uint32_t nkeys);
void bench_floor_close(struct bench_floor *f);
uint64_t bench_floor_run(void *f, struct bench_cursor *c, uint64_t n);
/* One clock reading per @batch checks: the floor of a check_many batch. */
uint64_t bench_floor_run_batch(struct bench_floor *f, struct bench_cursor *c,
			       uint64_t n, unsigned int batch);
size_t bench_floor_bytes(const struct bench_floor *f);

/*
 * mutex-table.c: a shared table of @capacity entries (a power of two, at
 * least 2 x the keys it will hold) in 16 shards.  Returns 0 or -errno.
 */
struct bench_mutex_table;
int bench_mutex_open(struct bench_mutex_table **out, uint64_t capacity,
		     const struct bench_gcra *g);
void bench_mutex_close(struct bench_mutex_table *t);
uint64_t bench_mutex_run(void *t, struct bench_cursor *c, uint64_t n);
size_t bench_mutex_bytes(const struct bench_mutex_table *t);
uint64_t bench_mutex_capacity(const struct bench_mutex_table *t);

/* per-process.c: a private table of @capacity entries, no lock. */
struct bench_private_table;
int bench_private_open(struct bench_private_table **out, uint64_t capacity,
		       const struct bench_gcra *g);
void bench_private_close(struct bench_private_table *t);
uint64_t bench_private_run(void *t, struct bench_cursor *c, uint64_t n);
size_t bench_private_bytes(const struct bench_private_table *t);

#endif /* TK_BENCH_BASELINES_H */
