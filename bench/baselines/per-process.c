/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * per-process.c - the other design users pick: every process keeps its
 * own table (per-child Apache modules, a limiter linked into each worker).
 * No lock, no atomic, no sharing: as fast as a table can be, and wrong
 * by design, because N processes admit N times the limit.  tk-bench
 * reports its admitted count next to the shared designs'.
 *
 * Each worker process builds its own table after fork(), as a preforked
 * child would, so no run pays copy-on-write faults on an inherited one.
 */
#include "baselines.h"
#include "table.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

struct bench_private_table {
	struct bt_entry *e; /* MAP_PRIVATE: this process's alone */
	size_t bytes;
	uint64_t mask; /* entries - 1 */
	struct bench_gcra g;
};

int bench_private_open(struct bench_private_table **out, uint64_t capacity,
		       const struct bench_gcra *g)
{
	struct bench_private_table *t;

	if (capacity == 0 || (capacity & (capacity - 1)))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->mask = capacity - 1;
	t->g = *g;
	t->bytes = capacity * sizeof(struct bt_entry);
	t->e = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->e == MAP_FAILED) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void bench_private_close(struct bench_private_table *t)
{
	if (!t)
		return;
	munmap(t->e, t->bytes);
	free(t);
}

size_t bench_private_bytes(const struct bench_private_table *t)
{
	return t->bytes;
}

uint64_t bench_private_run(void *p, struct bench_cursor *c, uint64_t n)
{
	struct bench_private_table *t = p;
	char key[BENCH_KEY_LEN];
	uint64_t i, now;
	int rc;

	for (i = 0; i < n; i++) {
		bench_key(key, bench_next(c));
		now = bench_realtime();
		rc = bt_check(t->e, t->mask, bench_hash(key, sizeof(key)), key,
			      sizeof(key), now, &t->g);
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
