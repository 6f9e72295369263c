/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * group-kit.h - one state per limiter key, however it is checked: the
 * checks of tk_limiter_check_group() and tk_limiter_check() on one key
 * count together, in any order and from concurrent threads, on the store
 * capi_kit_target opens (capi-kit.h): the runners of the C API kit list
 * GROUP_KIT_TESTS beside CAPI_KIT_TESTS (memory, zone, Redis), and
 * tests/unit/pg/test_pg_conformance.c beside the store conformance kit.
 */
#ifndef TK_GROUP_KIT_H
#define TK_GROUP_KIT_H

#include "capi-kit.h"

void group_kit_group_then_single(void **state);
void group_kit_mixed_like_single(void **state);
void group_kit_threads_mixed(void **state);

#define GROUP_KIT_TESTS(prefix, setup)                                         \
	CAPI_KIT_TEST(prefix, group_kit_group_then_single, setup),             \
		CAPI_KIT_TEST(prefix, group_kit_mixed_like_single, setup),     \
		CAPI_KIT_TEST(prefix, group_kit_threads_mixed, setup)

#endif
