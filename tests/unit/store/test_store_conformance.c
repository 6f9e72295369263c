/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_conformance.c - the store conformance kit on every store
 * this build has: the memory store, and a zone (whose probe states, one
 * word that is not its own expiry, live in state blocks).
 */
#define _GNU_SOURCE
#include "store-kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int open_memory(struct tk_store **out, void *arg)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.flags = (unsigned int)(uintptr_t)arg;
	return tk_store_open(out, "memory", &o);
}

/* A fresh zone per test: the kit expects an empty store. */
static int open_zone(struct tk_store **out, void *arg)
{
	struct tk_options o = TK_OPTIONS_INIT;
	static int serial;
	char spec[64];

	(void)arg;
	o.zone_capacity = 1024;
	snprintf(spec, sizeof(spec), "shm:kit-%d", serial);
	tk_zone_destroy(spec + 4);
	serial++;
	snprintf(spec, sizeof(spec), "shm:kit-%d", serial);
	return tk_store_open(out, spec, &o);
}

/* The kit drives time by hand, decades behind the system clock: a
 * reclaimer thread on that clock would find every state long expired. */
static const struct store_kit_target memory_target = {
	.name = "memory",
	.open = open_memory,
	.arg = (void *)(uintptr_t)TK_OPT_NO_RECLAIMER,
	.threads = 4,
	.per_thread = 20000,
};

static const struct store_kit_target zone_target = {
	.name = "zone",
	.open = open_zone,
	.threads = 4,
	.per_thread = 5000,
};

/* The same on the shape of a user strategy's state (tk_strategy_register()):
 * six words, in a block whose zone slot records algorithm 0. */
static const struct store_kit_target memory_user_target = {
	.name = "memory, a strategy's state",
	.open = open_memory,
	.arg = (void *)(uintptr_t)TK_OPT_NO_RECLAIMER,
	.threads = 4,
	.per_thread = 20000,
	.alg = TK__ALG_USER,
	.words = 6,
};

static const struct store_kit_target zone_user_target = {
	.name = "zone, a strategy's state",
	.open = open_zone,
	.threads = 4,
	.per_thread = 5000,
	.alg = TK__ALG_USER,
	.words = 6,
};

static const struct store_kit_target *const targets[] = {
	&memory_target,
	&zone_target,
	&memory_user_target,
	&zone_user_target,
};

#define TARGETS (sizeof(targets) / sizeof(targets[0]))

static int use_target(void **state)
{
	store_kit_target = *state;
	return 0;
}

int main(void)
{
	const struct CMUnitTest kit[] = { STORE_KIT_TESTS };
	const size_t n = sizeof(kit) / sizeof(kit[0]);
	struct CMUnitTest tests[TARGETS * sizeof(kit) / sizeof(kit[0])];
	char dir[] = "/tmp/tk-kit-XXXXXX", cmd[64], *name;
	size_t i;
	int rc;

	if (!mkdtemp(dir) || setenv("TK_SHM_DIR", dir, 1) != 0)
		return 1;
	/* Every kit test on each store, in one plan. */
	for (i = 0; i < TARGETS * n; i++) {
		tests[i] = kit[i % n];
		tests[i].setup_func = use_target;
		tests[i].initial_state = (void *)targets[i / n];
		if (asprintf(&name, "%s: %s", targets[i / n]->name,
			     kit[i % n].name) < 0)
			return 1;
		tests[i].name = name;
	}
	rc = _cmocka_run_group_tests("store conformance", tests, TARGETS * n,
				     NULL, NULL);
	for (i = 0; i < TARGETS * n; i++)
		free((char *)tests[i].name);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc |= 1;
	return rc;
}
