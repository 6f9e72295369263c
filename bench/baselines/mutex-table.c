/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mutex-table.c - the design users pick today for a shared limit: a hash
 * table in shared memory behind a process-shared mutex, as nginx's
 * limit_req zone (one ngx_shmtx per zone; this table is kinder, with one
 * lock per shard).  The mutexes are robust, so a process that dies holding
 * one does not wedge the others: the next locker gets EOWNERDEAD, marks it
 * consistent and goes on (a GCRA TAT is one aligned word, so nothing is
 * half-written).
 *
 * A check reads the clock, hashes the key, locks the key's shard, probes
 * for the key (comparing it in full), runs the same GCRA as the library,
 * and unlocks.  The clock is read before taking the lock, which keeps the
 * critical section short; max(TAT, now) makes the order harmless.
 */
#include "baselines.h"
#include "table.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#define SHARDS 16

struct shard {
	_Alignas(64) pthread_mutex_t mu; /* process-shared, robust */
};

struct segment {
	struct shard shard[SHARDS];
	struct bt_entry e[]; /* SHARDS runs of per-shard entries */
};

struct bench_mutex_table {
	struct segment *seg; /* MAP_SHARED: fork() children share it */
	size_t bytes;
	uint64_t capacity; /* entries, all shards */
	uint64_t per_mask; /* entries per shard - 1 */
	struct bench_gcra g;
};

int bench_mutex_open(struct bench_mutex_table **out, uint64_t capacity,
		     const struct bench_gcra *g)
{
	struct bench_mutex_table *t;
	pthread_mutexattr_t a;
	int i, rc = 0;

	if (capacity < SHARDS || (capacity & (capacity - 1)))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->capacity = capacity;
	t->per_mask = capacity / SHARDS - 1;
	t->g = *g;
	t->bytes = sizeof(struct segment) + capacity * sizeof(struct bt_entry);
	t->seg = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t->seg == MAP_FAILED) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutexattr_init(&a);
	if (pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) ||
	    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST))
		rc = -ENOTSUP;
	for (i = 0; i < SHARDS && rc == 0; i++)
		rc = -pthread_mutex_init(&t->seg->shard[i].mu, &a);
	pthread_mutexattr_destroy(&a);
	if (rc) {
		munmap(t->seg, t->bytes);
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void bench_mutex_close(struct bench_mutex_table *t)
{
	int i;

	if (!t)
		return;
	for (i = 0; i < SHARDS; i++)
		pthread_mutex_destroy(&t->seg->shard[i].mu);
	munmap(t->seg, t->bytes);
	free(t);
}

size_t bench_mutex_bytes(const struct bench_mutex_table *t)
{
	return t->bytes;
}

uint64_t bench_mutex_capacity(const struct bench_mutex_table *t)
{
	return t->capacity;
}

static void lock(pthread_mutex_t *mu)
{
	/* A previous owner died: its GCRA write was one word, all or
	 * nothing, so the shard is consistent as it stands. */
	if (pthread_mutex_lock(mu) == EOWNERDEAD)
		pthread_mutex_consistent(mu);
}

uint64_t bench_mutex_run(void *p, struct bench_cursor *c, uint64_t n)
{
	struct bench_mutex_table *t = p;
	char key[BENCH_KEY_LEN];
	uint64_t i, h, now, shard;
	int rc;

	for (i = 0; i < n; i++) {
		bench_key(key, bench_next(c));
		now = bench_realtime();
		h = bench_hash(key, sizeof(key));
		shard = h & (SHARDS - 1);
		lock(&t->seg->shard[shard].mu);
		rc = bt_check(t->seg->e + shard * (t->per_mask + 1),
			      t->per_mask, h, key, sizeof(key), now, &t->g);
		pthread_mutex_unlock(&t->seg->shard[shard].mu);
		if (rc > 0) {
			c->admitted++;
		} else if (rc < 0) {
			c->errors++;
			if (!c->first_error)
				c->first_error = rc;
		}
	}
	return n;
}
