/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_hostile.c - the library used as a careless operator or a hostile
 * local user would: zones destroyed or replaced under their users, times
 * no clock can read, and the like.  Each case is a defect once found.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <throttlekit.h>

static char dir[] = "/tmp/tk-hostile-XXXXXX";

static struct tk_limiter *open_limiter(const char *policy, const char *zone)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[128];

	o.flags = TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	assert_int_equal(tk_limiter_open(&l, policy, spec, &o), 0);
	return l;
}

static int allowed(struct tk_limiter *l, const char *key)
{
	struct tk_decision d;

	assert_int_equal(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
	return d.allowed;
}

/*
 * A zone destroyed (and made again) while this process still has it open:
 * the old limiter keeps its mapping, as documented, but a new open is a
 * new attach and must see the new file, as every other process does, not
 * the removed zone this process happens to have mapped.
 */
static void test_open_after_destroy_sees_new_zone(void **state)
{
	struct tk_limiter *old, *fresh;
	struct tk_zone_info info;

	(void)state;
	tk_zone_destroy("swap");
	old = open_limiter("gcra:1/1h", "swap");
	assert_true(allowed(old, "k"));
	assert_false(allowed(old, "k"));

	/* Replaced: destroyed and made again, as by another process. */
	assert_int_equal(tk_zone_destroy("swap"), 0);
	assert_int_equal(tk_zone_create("swap", NULL), 0);
	fresh = open_limiter("gcra:1/1h", "swap");
	assert_true(allowed(fresh, "k"));
	/* The new key is in the file every other process sees. */
	assert_int_equal(tk_zone_info("swap", &info, sizeof(info)), 0);
	assert_int_equal(info.keys, 1);
	assert_int_equal(info.inserts, 1);
	/* The old limiter still decides on the zone it had. */
	assert_false(allowed(old, "k"));

	/* Destroyed with no new zone: a new open must not find the old. */
	tk_limiter_close(fresh);
	assert_int_equal(tk_zone_destroy("swap"), 0);
	{
		struct tk_options o = TK_OPTIONS_INIT;
		struct tk_limiter *l = NULL;

		o.flags = TK_OPT_ZONE_NO_CREATE;
		assert_int_equal(
			tk_limiter_open(&l, "gcra:1/1h", "shm:swap", &o),
			-ENOENT);
	}
	tk_limiter_close(old);
}

/*
 * TK_SHM_DIR names where zones are: missing, it is -ENOENT (nothing is
 * made elsewhere); changed between two opens of one name, the second
 * open uses the zone of the new directory, not the one mapped from the
 * old.
 */
static void test_zone_directory_moves(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *first, *second;
	struct tk_store *s = NULL;
	char other[64], missing[96], path[128];

	(void)state;
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	assert_int_equal(mkdir(other, 0700), 0);

	setenv("TK_SHM_DIR", missing, 1);
	assert_int_equal(tk_store_open(&s, "shm:moved", &o), -ENOENT);

	setenv("TK_SHM_DIR", dir, 1);
	first = open_limiter("gcra:1/1h", "moved");
	assert_true(allowed(first, "k"));
	setenv("TK_SHM_DIR", other, 1);
	second = open_limiter("gcra:1/1h", "moved");
	snprintf(path, sizeof(path), "%s/throttlekit.moved", other);
	assert_int_equal(access(path, F_OK), 0);
	assert_true(allowed(second, "k"));
	tk_limiter_close(second);
	assert_int_equal(tk_zone_destroy("moved"), 0);
	setenv("TK_SHM_DIR", dir, 1);
	tk_limiter_close(first);
	assert_int_equal(tk_zone_destroy("moved"), 0);
}

/*
 * A sweep at a time no clock can read (2^63 ns or more) would find every
 * state expired and wipe the zone: refused, and the keys stay.
 */
static void test_sweep_at_impossible_time(void **state)
{
	struct tk_limiter *l;
	struct tk_zone_info info;

	(void)state;
	tk_zone_destroy("sweep");
	l = open_limiter("gcra:1/1h", "sweep");
	assert_true(allowed(l, "k"));
	assert_int_equal(tk_zone_sweep("sweep", UINT64_MAX), -EINVAL);
	assert_int_equal(tk_zone_sweep("sweep", UINT64_C(1) << 63), -EINVAL);
	assert_int_equal(tk_zone_info("sweep", &info, sizeof(info)), 0);
	assert_int_equal(info.keys, 1);
	assert_false(allowed(l, "k"));
	tk_limiter_close(l);
	assert_int_equal(tk_zone_destroy("sweep"), 0);
}

/*
 * The trust rules judge every open: a zone this process trusted once,
 * because one open named its owner, is not handed to a later open that
 * names no owner (it gets -EACCES, as it would in a process of its own),
 * nor to one after the file was made writable by every user.
 */
static void test_every_open_judged(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *trusted = NULL, *s = NULL;
	char path[256];

	(void)state;
	if (geteuid() != 0)
		skip(); /* only root gives a zone another owner */
	tk_zone_destroy_opts("theirs", &o);
	o.flags = TK_OPT_ZONE_UID;
	o.zone_uid = 65534;
	o.zone_capacity = 64;
	assert_int_equal(tk_zone_create("theirs", &o), 0);
	assert_int_equal(tk_store_open(&trusted, "shm:theirs", &o), 0);

	assert_int_equal(tk_store_open(&s, "shm:theirs", NULL), -EACCES);
	/* Our own zone, then made writable by every user. */
	assert_int_equal(tk_zone_create("ours", NULL), 0);
	assert_int_equal(tk_store_open(&s, "shm:ours", NULL), 0);
	snprintf(path, sizeof(path), "%s/throttlekit.ours", dir);
	assert_int_equal(chmod(path, 0666), 0);
	{
		struct tk_store *again = NULL;

		assert_int_equal(tk_store_open(&again, "shm:ours", NULL),
				 -EACCES);
	}
	tk_store_close(s);
	tk_store_close(trusted);
	assert_int_equal(tk_zone_destroy_opts("theirs", &o), 0);
	o.zone_uid = 0;
	assert_int_equal(tk_zone_destroy_opts("ours", &o), 0);
}

/* The empty prefix is no prefix, as tk_limiter_open(3) says. */
static void test_empty_prefix_is_none(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *none = NULL, *empty = NULL;
	struct tk_store *s = NULL;

	(void)state;
	assert_int_equal(tk_store_open(&s, "memory", NULL), 0);
	o.store = s;
	assert_int_equal(tk_limiter_open(&none, "gcra:1/1h", NULL, &o), 0);
	o.prefix = "";
	assert_int_equal(tk_limiter_open(&empty, "gcra:1/1h", NULL, &o), 0);
	assert_true(allowed(none, "k"));
	assert_false(allowed(empty, "k"));
	tk_limiter_close(empty);
	tk_limiter_close(none);
	tk_store_close(s);
}

/* Any int is an error code to describe: INT_MIN has no positive twin
 * (negating it overflowed; UBSan aborts). */
static void test_strerror_of_any_int(void **state)
{
	(void)state;
	assert_string_equal(tk_strerror(INT_MIN), "Unknown error");
	assert_string_equal(tk_strerrorname(INT_MIN), "EUNKNOWN");
	assert_string_equal(tk_strerrorname(INT_MAX), "EUNKNOWN");
	assert_string_equal(tk_strerrorname(-EPROTO), "EPROTO");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_after_destroy_sees_new_zone),
		cmocka_unit_test(test_zone_directory_moves),
		cmocka_unit_test(test_sweep_at_impossible_time),
		cmocka_unit_test(test_every_open_judged),
		cmocka_unit_test(test_empty_prefix_is_none),
		cmocka_unit_test(test_strerror_of_any_int),
	};
	int rc;

	if (!mkdtemp(dir))
		return 99;
	setenv("TK_SHM_DIR", dir, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			rc = rc ? rc : 1;
	}
	return rc;
}
