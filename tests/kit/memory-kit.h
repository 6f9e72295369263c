/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memory-kit.h - a memory store, a limiter on it and a manual clock, for
 * the memory store's tests (cmocka's headers first).
 */
#ifndef TK_TESTS_MEMORY_KIT_H
#define TK_TESTS_MEMORY_KIT_H

#include <string.h>

#include <throttlekit.h>

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)

struct fixture {
	struct tk_clock *clock;
	struct tk_store *store;
	struct tk_limiter *lim;
};

/* Reclaim 1 s after expiry, so that the tests need not wait a minute. */
#define GRACE SEC

static inline void open_fixture(struct fixture *f, const char *policy,
				uint64_t max_keys, unsigned int flags,
				uint64_t interval)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.reclaim_grace = GRACE;
	assert_int_equal(tk_clock_manual_new(&f->clock, T0), 0);
	o.clock = f->clock;
	o.max_keys = max_keys;
	o.flags = flags;
	o.reclaim_interval = interval;
	assert_int_equal(tk_store_open(&f->store, "memory", &o), 0);
	o.store = f->store;
	assert_int_equal(tk_limiter_open(&f->lim, policy, NULL, &o), 0);
}

static inline void close_fixture(struct fixture *f)
{
	tk_limiter_close(f->lim);
	tk_store_close(f->store);
	tk_clock_free(f->clock);
}

static inline struct tk_stats stats_of(struct fixture *f)
{
	struct tk_stats st;

	assert_int_equal(tk_store_stats(f->store, &st, sizeof(st)), 0);
	return st;
}

static inline int check(struct fixture *f, const char *key, uint64_t cost)
{
	struct tk_decision d;

	assert_int_equal(tk_limiter_check(f->lim, key, strlen(key), cost, &d),
			 0);
	return d.allowed;
}

#endif /* TK_TESTS_MEMORY_KIT_H */
