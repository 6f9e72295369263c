/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-kit.h - the store conformance kit.
 *
 * Every store must pass these tests: they pin exactly what the limiter
 * relies on from apply().  A runner sets store_kit_target and lists
 * STORE_KIT_TESTS in its cmocka group.  The kit is white-box (it drives
 * the internal apply() with probe transitions), so runners link the
 * library statically.
 */
#ifndef TK_STORE_KIT_H
#define TK_STORE_KIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "store/store-ops.h"

struct store_kit_target {
	const char *name;
	/* Open a fresh, empty store. */
	int (*open)(struct tk_store **out, void *arg);
	void *arg;
	unsigned int threads; /* concurrent appliers in the atomicity test */
	unsigned int per_thread;
	/* The probe's state: its algorithm (TK__ALG_*, 0: none) and words
	 * (0: one, a word that is not its own expiry), so that a store runs
	 * the kit on the shape of each kind of state it keeps. */
	uint32_t alg, words;
};

extern const struct store_kit_target *store_kit_target;

void store_kit_persists(void **state);
void store_kit_isolates_keys(void **state);
void store_kit_reset_clears(void **state);
void store_kit_expires_after_ttl(void **state);
void store_kit_keep_writes_nothing(void **state);
void store_kit_errors_pass_through(void **state);
void store_kit_concurrent_applies_land(void **state);

#define STORE_KIT_TESTS                                                        \
	cmocka_unit_test(store_kit_persists),                                  \
		cmocka_unit_test(store_kit_isolates_keys),                     \
		cmocka_unit_test(store_kit_reset_clears),                      \
		cmocka_unit_test(store_kit_expires_after_ttl),                 \
		cmocka_unit_test(store_kit_keep_writes_nothing),               \
		cmocka_unit_test(store_kit_errors_pass_through),               \
		cmocka_unit_test(store_kit_concurrent_applies_land)

#endif
