/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-kit.c - conformance tests for any store.
 *
 * Two probe transitions drive apply(): a counter (old + 1, or 1 for no
 * state, living for a given TTL) and a read (reports the counter, writes
 * nothing).  A non-atomic read-modify-write loses increments under
 * concurrency; an atomic one lands exactly N of N.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "store-kit.h"

const struct store_kit_target *store_kit_target;

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)

struct probe {
	uint64_t now;
	uint64_t ttl;
	int fail;      /* return this error instead */
	int keep;      /* read only */
	uint64_t seen; /* counter before the step; 0 = no state */
	unsigned int runs;
};

static int probe_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires_at)
{
	struct probe *p = ctx;

	p->runs++;
	p->seen = old ? old[0] : 0;
	if (p->fail)
		return p->fail;
	if (p->keep)
		return TK__KEEP;
	next[0] = p->seen + 1;
	*expires_at = p->now + p->ttl;
	return TK__PERSIST;
}

static struct tk_store *open_store(void)
{
	struct tk_store *s = NULL;

	assert_int_equal(store_kit_target->open(&s, store_kit_target->arg), 0);
	assert_non_null(s);
	return s;
}

static int apply_at(struct tk_store *s, const char *key, uint64_t now,
		    struct probe *p)
{
	struct tk__transform t = {
		.fn = probe_fn,
		.ctx = p,
		.words = store_kit_target->words ? store_kit_target->words : 1,
		.alg = store_kit_target->alg,
	};

	p->now = now;
	if (!p->ttl)
		p->ttl = 60 * SEC;
	return s->ops->apply(s, (const unsigned char *)key, strlen(key), now,
			     &t);
}

static uint64_t bump(struct tk_store *s, const char *key, uint64_t now)
{
	struct probe p = { 0 };

	assert_int_equal(apply_at(s, key, now, &p), TK__PERSIST);
	return p.seen + 1;
}

static uint64_t read_at(struct tk_store *s, const char *key, uint64_t now)
{
	struct probe p = { .keep = 1 };

	assert_int_equal(apply_at(s, key, now, &p), TK__KEEP);
	return p.seen;
}

void store_kit_persists(void **state)
{
	struct tk_store *s = open_store();

	(void)state;
	assert_int_equal(read_at(s, "k", T0), 0);
	assert_int_equal(bump(s, "k", T0), 1);
	assert_int_equal(bump(s, "k", T0), 2);
	assert_int_equal(bump(s, "k", T0 + 1), 3);
	assert_int_equal(read_at(s, "k", T0 + 2), 3);
	s->ops->close(s);
}

void store_kit_isolates_keys(void **state)
{
	struct tk_store *s = open_store();

	(void)state;
	bump(s, "a", T0);
	bump(s, "a", T0);
	bump(s, "b", T0);
	assert_int_equal(read_at(s, "a", T0), 2);
	assert_int_equal(read_at(s, "b", T0), 1);
	/* Keys are bytes: a prefix of a key is another key. */
	assert_int_equal(read_at(s, "ab", T0), 0);
	s->ops->close(s);
}

void store_kit_reset_clears(void **state)
{
	struct tk_store *s = open_store();

	(void)state;
	bump(s, "k", T0);
	bump(s, "k", T0);
	bump(s, "other", T0);
	assert_int_equal(s->ops->reset(s, (const unsigned char *)"k", 1), 0);
	assert_int_equal(read_at(s, "k", T0), 0);
	assert_int_equal(read_at(s, "other", T0), 1);
	/* Resetting an absent key is not an error. */
	assert_int_equal(s->ops->reset(s, (const unsigned char *)"zz", 2), 0);
	assert_int_equal(bump(s, "k", T0), 1);
	s->ops->close(s);
}

void store_kit_expires_after_ttl(void **state)
{
	struct tk_store *s = open_store();
	struct probe p = { .ttl = SEC };

	(void)state;
	assert_int_equal(apply_at(s, "k", T0, &p), TK__PERSIST);
	assert_int_equal(read_at(s, "k", T0 + SEC - 1), 1);
	/* expires_at is the first instant at which the state is gone. */
	assert_int_equal(read_at(s, "k", T0 + SEC), 0);
	assert_int_equal(bump(s, "k", T0 + SEC), 1);
	s->ops->close(s);
}

void store_kit_keep_writes_nothing(void **state)
{
	struct tk_store *s = open_store();
	struct probe p = { .keep = 1 };

	(void)state;
	/* A read of an absent key creates nothing. */
	assert_int_equal(apply_at(s, "k", T0, &p), TK__KEEP);
	assert_int_equal(p.seen, 0);
	assert_int_equal(bump(s, "k", T0), 1);
	assert_int_equal(read_at(s, "k", T0), 1);
	assert_int_equal(read_at(s, "k", T0), 1);
	s->ops->close(s);
}

void store_kit_errors_pass_through(void **state)
{
	struct tk_store *s = open_store();
	struct probe p = { .fail = -ERANGE };

	(void)state;
	bump(s, "k", T0);
	assert_int_equal(apply_at(s, "k", T0, &p), -ERANGE);
	assert_int_equal(apply_at(s, "new", T0, &p), -ERANGE);
	assert_int_equal(read_at(s, "k", T0), 1);
	assert_int_equal(read_at(s, "new", T0), 0);
	s->ops->close(s);
}

struct worker {
	struct tk_store *s;
	unsigned int n;
	int failures;
};

static void *apply_many(void *arg)
{
	struct worker *w = arg;
	struct probe p;
	unsigned int i;

	for (i = 0; i < w->n; i++) {
		memset(&p, 0, sizeof(p));
		if (apply_at(w->s, "hot", T0, &p) != TK__PERSIST)
			w->failures++;
	}
	return NULL;
}

void store_kit_concurrent_applies_land(void **state)
{
	struct tk_store *s = open_store();
	unsigned int nt = store_kit_target->threads, i;
	pthread_t th[64];
	struct worker w[64];

	(void)state;
	assert_true(nt >= 2 && nt <= 64);
	for (i = 0; i < nt; i++) {
		w[i] = (struct worker){ s, store_kit_target->per_thread, 0 };
		assert_int_equal(
			pthread_create(&th[i], NULL, apply_many, &w[i]), 0);
	}
	for (i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	assert_int_equal(read_at(s, "hot", T0),
			 (uint64_t)nt * store_kit_target->per_thread);
	s->ops->close(s);
}
