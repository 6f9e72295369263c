/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_pg_conformance.c - the store conformance kit through the public
 * API (tests/kit/store-api-kit.c), and group and single checks of one
 * key (tests/kit/group-kit.c), on the PostgreSQL store, against a real
 * PostgreSQL server started by the test (tests/kit/pg-kit.c).  Without
 * one the tests skip (fail with TK_REQUIRE_POSTGRES=1).
 */
#define _GNU_SOURCE /* asprintf */
#include "store-api-kit.h"

#include "group-kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg-kit.h"

static struct pg_kit kit;

/* A fresh, empty table per test: the store makes it at first use. */
static int open_pg(struct tk_store **out, const struct tk_options *o)
{
	return tk_store_open(out, pg_kit_fresh(&kit), o);
}

/* Rows not reset; expired ones count until settle() deletes them. */
static uint64_t pg_keys(struct tk_store *s)
{
	long long n =
		pg_kit_sql(&kit, "SELECT count(*) FROM "
				 "throttlekit_state WHERE expires_at > 0");

	(void)s;
	/* No table yet: nothing written. */
	return n < 0 ? 0 : (uint64_t)n;
}

/*
 * The sweep the store does not do yet, as the memory store's reclaimer:
 * rows expired at @now for longer than the kit's grace (300 ms,
 * store-api-kit.c's reclaim_grace).
 */
static void pg_settle(struct tk_store *s, uint64_t now)
{
	char sql[128];

	(void)s;
	snprintf(sql, sizeof(sql),
		 "DELETE FROM throttlekit_state WHERE expires_at <= %llu",
		 (unsigned long long)(now - 300000000));
	assert_true(pg_kit_sql(&kit, sql) >= 0);
}

static const struct store_api_kit_target target = {
	.name = "postgresql",
	.open = open_pg,
	.keys = pg_keys,
	.settle = pg_settle,
	.shared = 1,
	.threads = 4,
	.per_thread = 100,
	.processes = 4,
	.per_process = 100,
};

static const struct capi_kit_target groups = { "postgresql", open_pg };

static int use_target(void **state)
{
	(void)state;
	store_api_kit_target = &target;
	capi_kit_target = &groups;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pg_kit_destroy(&kit);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		STORE_API_KIT_TESTS,
		GROUP_KIT_TESTS("", NULL),
	};

	return cmocka_run_group_tests_name("store conformance (PostgreSQL)",
					   tests, use_target, teardown);
}
