/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_capi.c - the calls of tests/kit/capi-kit.h (waits on every
 * policy, reservations, a policy set at runtime) and tests/kit/group-kit.h
 * (group and single checks of one key) on the memory store and on a
 * zone; tests/unit/redis/test_redis_capi.c runs them on Redis.
 */
#include "group-kit.h"

#include <stdio.h>

#include "asserts.h"
#include "workers.h"

static char zone_dir[] = "/tmp/tk-capi-XXXXXX";
static char zone_name[32];

static int open_memory(struct tk_store **out, const struct tk_options *o)
{
	return tk_store_open(out, "memory", o);
}

/* A fresh zone per test. */
static int open_zone(struct tk_store **out, const struct tk_options *o)
{
	return kit_fresh_zone(out, o, "capi", zone_name, sizeof(zone_name));
}

static const struct capi_kit_target memory = { "memory", open_memory },
				    zone = { "zone", open_zone };

static int on_memory(void **state)
{
	(void)state;
	capi_kit_target = &memory;
	return 0;
}

static int on_zone(void **state)
{
	(void)state;
	capi_kit_target = &zone;
	return 0;
}

static int teardown(void **state)
{
	if (zone_name[0])
		tk_zone_destroy(zone_name);
	return kit_zone_dir_remove(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		CAPI_KIT_TESTS("memory: ", on_memory),
		CAPI_KIT_TESTS("zone: ", on_zone),
		GROUP_KIT_TESTS("memory: ", on_memory),
		GROUP_KIT_TESTS("zone: ", on_zone),
	};

	if (kit_zone_dir(zone_dir) != 0)
		return 1;
	return cmocka_run_group_tests_name("C API (memory, zone)", tests, NULL,
					   teardown);
}
