/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_pg_load.c - libpq is loaded at run time (lib/pg/libpq.c): a
 * process that never takes a postgresql:// spec maps no libpq; the first
 * spec loads it and resolves every function the store calls; a host
 * without it (the test hook names an absent file) gets -ENOTSUP from
 * every way in, with the reason, and still -EINVAL for a spec that does
 * not parse.  Needs no server.  This program links no libpq itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "pg/libpq.h"
#include "test-hooks.h"

#define ABSENT "libtk-no-such-libpq.so.5"

/* Does this process map a file whose name has "libpq"? */
static int maps_libpq(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0, lines = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		if (strstr(line, "/libpq"))
			found = 1;
	}
	fclose(f);
	assert_true(lines > 0);
	return found;
}

static void check_memory(void)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char why[256];

	assert_rc(tk_store_validate("memory", why, sizeof(why)), 0);
	assert_rc(tk_limiter_open(&l, "gcra:1/1s", "memory", NULL), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	tk_limiter_close(l);
}

static void test_unmapped(void **state)
{
	(void)state;
	check_memory();
	assert_false(maps_libpq());
}

/* In a child, so that this process keeps libpq unloaded: the first spec
 * maps it, and every entry of the table is libpq's own function. */
static void loaded_child(void)
{
	char why[256];
	void *h;
	int bad = 0;

	if (tk_store_validate("postgresql://h/db", why, sizeof(why)) != 0) {
		fprintf(stderr, "validate: %s\n", why);
		_exit(2);
	}
	if (!maps_libpq())
		_exit(3);
	h = dlopen(TK__LIBPQ_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		_exit(4);
#define SAME(name)                                                             \
	if ((void *)tk__pq.name != dlsym(h, #name)) {                          \
		fprintf(stderr, "%s: not resolved\n", #name);                  \
		bad = 1;                                                       \
	}
	TK__LIBPQ_FUNCS(SAME)
#undef SAME
	dlclose(h);
	_exit(bad ? 5 : 0);
}

static void test_loaded(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		loaded_child();
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(maps_libpq());
}

static void assert_absent_why(const char *why)
{
	if (!strstr(why, ABSENT " not found: install libpq5"))
		fail_msg("reason: \"%s\"", why);
}

static void test_absent(void **state)
{
	struct tk_store *s = NULL;
	struct tk_limiter *l = NULL;
	char why[256];
	int i;

	(void)state;
	tk__libpq_soname = ABSENT;
	/* Twice: the failed load is remembered, with its reason. */
	for (i = 0; i < 2; i++) {
		why[0] = '\0';
		assert_rc(tk_store_validate("postgresql://u:pw@h/db", why,
					    sizeof(why)),
			  -ENOTSUP);
		assert_absent_why(why);
		assert_null(strstr(why, "pw"));
	}
	why[0] = '\0';
	assert_rc(tk_store_probe("postgresql://h/db", NULL, why, sizeof(why)),
		  -ENOTSUP);
	assert_absent_why(why);
	assert_rc(tk_store_open(&s, "postgresql://h/db", NULL), -ENOTSUP);
	assert_null(s);
	assert_rc(tk_limiter_open(&l, "gcra:1/1s", "postgresql://h/db", NULL),
		  -ENOTSUP);
	assert_null(l);
	/* The store's own options are checked without libpq. */
	assert_rc(tk_store_validate("postgresql://h/db?table=Bad", why,
				    sizeof(why)),
		  -EINVAL);
	assert_rc(tk_store_validate("postgresql://h", why, sizeof(why)),
		  -EINVAL);
	check_memory();
	assert_false(maps_libpq());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unmapped),
		cmocka_unit_test(test_loaded),
		cmocka_unit_test(test_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
