/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-api-kit.h - the store conformance kit through the public API.
 *
 * The same properties as store-kit.h (persists, isolates keys, reset
 * clears, expires after its TTL, a read writes nothing, errors pass
 * through, concurrent checks land exactly), driven by real policies
 * through tk_limiter_*() on a manual clock, so that it runs on every
 * store: the memory store and zones, and the Redis store, which can only
 * run its server-side script for real policies.  A runner sets
 * store_api_kit_target and lists STORE_API_KIT_TESTS in its cmocka group.
 */
#ifndef TK_STORE_API_KIT_H
#define TK_STORE_API_KIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <throttlekit.h>

struct store_api_kit_target {
	const char *name;
	/*
	 * Open a fresh, empty store with @o (its clock, reclaim_grace and
	 * reclaim_interval are the kit's): 0 or a negative errno; skip()
	 * if this machine cannot run the store.
	 */
	int (*open)(struct tk_store **out, const struct tk_options *o);
	/* Keys holding state in @s now. */
	uint64_t (*keys)(struct tk_store *s);
	/*
	 * Let expired states go at (manual) time @now: sweep, or wait for
	 * the store's own expiry.  Called until keys() is 0, for at most
	 * a few seconds.  NULL: nothing to do.
	 */
	void (*settle)(struct tk_store *s, uint64_t now);
	/*
	 * The state's expiry is real time (Redis: a PTTL computed from the
	 * manual clock): the kit waits for it instead of stepping past it.
	 */
	int real_ttl;
	/* Forked processes share the store (the memory store does not). */
	int shared;
	unsigned int threads, per_thread, processes, per_process;
};

extern const struct store_api_kit_target *store_api_kit_target;

void store_api_kit_persists(void **state);
void store_api_kit_isolates_keys(void **state);
void store_api_kit_reset_clears(void **state);
void store_api_kit_expires_after_ttl(void **state);
void store_api_kit_keep_writes_nothing(void **state);
void store_api_kit_errors_pass_through(void **state);
void store_api_kit_policy_change(void **state);
void store_api_kit_concurrent_checks_land(void **state);
void store_api_kit_concurrent_processes_land(void **state);
/* The same properties of a user strategy (tk_strategy_register(3)). */
void store_api_kit_strategy_persists(void **state);
void store_api_kit_strategy_isolates(void **state);
void store_api_kit_strategy_reset(void **state);
void store_api_kit_strategy_expires(void **state);
void store_api_kit_strategy_composite(void **state);
void store_api_kit_strategy_threads_land(void **state);
void store_api_kit_strategy_processes_land(void **state);

#define STORE_API_KIT_TESTS                                                    \
	cmocka_unit_test(store_api_kit_persists),                              \
		cmocka_unit_test(store_api_kit_isolates_keys),                 \
		cmocka_unit_test(store_api_kit_reset_clears),                  \
		cmocka_unit_test(store_api_kit_expires_after_ttl),             \
		cmocka_unit_test(store_api_kit_keep_writes_nothing),           \
		cmocka_unit_test(store_api_kit_errors_pass_through),           \
		cmocka_unit_test(store_api_kit_policy_change),                 \
		cmocka_unit_test(store_api_kit_concurrent_checks_land),        \
		cmocka_unit_test(store_api_kit_concurrent_processes_land),     \
		cmocka_unit_test(store_api_kit_strategy_persists),             \
		cmocka_unit_test(store_api_kit_strategy_isolates),             \
		cmocka_unit_test(store_api_kit_strategy_reset),                \
		cmocka_unit_test(store_api_kit_strategy_expires),              \
		cmocka_unit_test(store_api_kit_strategy_composite),            \
		cmocka_unit_test(store_api_kit_strategy_threads_land),         \
		cmocka_unit_test(store_api_kit_strategy_processes_land)

#endif
