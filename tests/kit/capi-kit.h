/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * capi-kit.h - the calls users of x/time/rate and governor reach for
 * (tk_limiter_wait() on every policy, reservations and their cancel, a
 * policy set at runtime, policies built from numbers), run on one store
 * through the public API, so that each runner lists CAPI_KIT_TESTS for its
 * stores: memory and zone (tests/unit/api/test_capi.c), Redis
 * (tests/unit/redis/test_redis_capi.c), PostgreSQL
 * (tests/unit/pg/test_pg_capi.c).
 */
#ifndef TK_CAPI_KIT_H
#define TK_CAPI_KIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <throttlekit.h>

struct capi_kit_target {
	const char *name;
	/* A fresh, empty store with @o (the kit's clock): 0 or an errno;
	 * skip() where this machine cannot run it. */
	int (*open)(struct tk_store **out, const struct tk_options *o);
};

/* The store the tests run on: a group's setup sets it. */
extern const struct capi_kit_target *capi_kit_target;

void capi_kit_wait_every_policy(void **state);
void capi_kit_wait_contention(void **state);
void capi_kit_set_policy(void **state);
void capi_kit_set_policy_group(void **state);
void capi_kit_reserve_cancel(void **state);
void capi_kit_set_policy_concurrent(void **state);
void capi_kit_built_policy(void **state);

/* A manual clock at the kits' start and a fresh store of the target on
 * it (@twin: a memory store instead), for the kits that build on this
 * one (group-kit.c). */
void capi_kit_open(struct tk_clock **clock, struct tk_store **store, int twin);
/* Fail, saying @what, unless decisions @a and @b agree in every field. */
void capi_kit_assert_same(const struct tk_decision *a,
			  const struct tk_decision *b, const char *what);

/* Every test, named @prefix and its name, run after @setup (which sets
 * capi_kit_target). */
#define CAPI_KIT_TEST(prefix, f, setup)                                        \
	{                                                                      \
		prefix #f, f, setup, NULL, NULL                                \
	}
#define CAPI_KIT_TESTS(prefix, setup)                                          \
	CAPI_KIT_TEST(prefix, capi_kit_wait_every_policy, setup),              \
		CAPI_KIT_TEST(prefix, capi_kit_wait_contention, setup),        \
		CAPI_KIT_TEST(prefix, capi_kit_set_policy, setup),             \
		CAPI_KIT_TEST(prefix, capi_kit_set_policy_group, setup),       \
		CAPI_KIT_TEST(prefix, capi_kit_reserve_cancel, setup),         \
		CAPI_KIT_TEST(prefix, capi_kit_set_policy_concurrent, setup),  \
		CAPI_KIT_TEST(prefix, capi_kit_built_policy, setup)

#endif
