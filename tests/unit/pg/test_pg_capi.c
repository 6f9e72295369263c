/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_pg_capi.c - the calls of tests/kit/capi-kit.h on a real
 * PostgreSQL server started by the test (tests/kit/pg-kit.c); skipped
 * without one (failed with TK_REQUIRE_POSTGRES=1).
 */
#include "capi-kit.h"

#include "asserts.h"
#include "pg-kit.h"

static struct pg_kit kit;

/* A fresh, empty table per test. */
static int open_pg(struct tk_store **out, const struct tk_options *o)
{
	return tk_store_open(out, pg_kit_fresh(&kit), o);
}

static const struct capi_kit_target target = { "postgresql", open_pg };

static int on_pg(void **state)
{
	(void)state;
	capi_kit_target = &target;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = { CAPI_KIT_TESTS("postgresql: ",
							   on_pg) };
	int rc = cmocka_run_group_tests_name("C API (postgresql)", tests, NULL,
					     NULL);

	pg_kit_destroy(&kit);
	return rc;
}
