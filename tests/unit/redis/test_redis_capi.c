/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_capi.c - the calls of tests/kit/capi-kit.h and
 * tests/kit/group-kit.h on a real
 * redis-server started by the test (tests/kit/redis-kit.c); skipped
 * without one (failed with TK_REQUIRE_REDIS=1).
 */
#include "group-kit.h"

#include <stdio.h>

#include "asserts.h"
#include "redis-kit.h"

static struct redis_kit kit;

static int open_redis(struct tk_store **out, const struct tk_options *o)
{
	redis_kit_need(&kit);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FLUSHALL"), 0);
	return tk_store_open(out, redis_kit_manual(kit.spec), o);
}

static const struct capi_kit_target target = { "redis", open_redis };

static int on_redis(void **state)
{
	(void)state;
	capi_kit_target = &target;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		CAPI_KIT_TESTS("redis: ", on_redis),
		GROUP_KIT_TESTS("redis: ", on_redis),
	};

	return cmocka_run_group_tests_name("C API (redis)", tests, NULL,
					   teardown);
}
