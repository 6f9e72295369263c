/*
 * test_store_conformance.c - the store conformance kit on every store
 * this build has.
 */
#include "store-kit.h"

static int open_memory(struct tk_store **out, void *arg)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.flags = (unsigned int)(uintptr_t)arg;
	return tk_store_open(out, "memory", &o);
}

static const struct store_kit_target memory_target = {
	.name = "memory",
	.open = open_memory,
	.threads = 4,
	.per_thread = 20000,
};

int main(void)
{
	const struct CMUnitTest tests[] = { STORE_KIT_TESTS };

	store_kit_target = &memory_target;
	return cmocka_run_group_tests_name("store conformance: memory", tests,
					   NULL, NULL);
}
