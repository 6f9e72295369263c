/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_hugepage.c - a zone of 2 MiB or more is mapped with
 * MADV_HUGEPAGE (its area shows "hg" in /proc/self/smaps), works as any
 * other, and a smaller one is not advised.
 *
 * The advice shows in VmFlags wherever the kernel has transparent huge
 * pages, whatever tmpfs and shmem_enabled allow.  Whether huge pages
 * then back the zone depends on the tmpfs the zone lives on: when
 * TK_TEST_HUGE_TMPFS names a directory on a tmpfs mounted huge=advise
 * (mount -t tmpfs -o huge=advise tmpfs DIR), the zones live there and a
 * big zone in use must have huge pages mapped (ShmemPmdMapped); without
 * it that part is not checked, as /dev/shm is usually mounted
 * huge=never.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

/* What smaps says of the area that maps a file. */
struct area {
	int found;
	int advised;	      /* "hg" in VmFlags */
	unsigned long pmd_kb; /* ShmemPmdMapped + FilePmdMapped */
	unsigned long size_kb;
};

static char dir[4096];

/* The area of /proc/self/smaps that maps @path (the first, if several). */
static struct area find_area(const char *path)
{
	struct area a = { 0 };
	char line[1024], *name;
	unsigned long kb;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		/* An area's first line: "start-end perms offset dev inode
		 * path", in lowercase hex; its fields' lines start with a
		 * capitalised name. */
		if ((line[0] >= '0' && line[0] <= '9') ||
		    (line[0] >= 'a' && line[0] <= 'f')) {
			if (a.found)
				break;
			name = strchr(line, '/');
			in = name && strcmp(name, path) == 0;
			a.found = in;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Size: %lu kB", &kb) == 1)
			a.size_kb = kb;
		else if (sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1 ||
			 sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1)
			a.pmd_kb += kb;
		else if (strncmp(line, "VmFlags:", 8) == 0)
			a.advised = strstr(line, " hg") != NULL;
	}
	fclose(f);
	return a;
}

/* Does the kernel have transparent huge pages (and so MADV_HUGEPAGE)? */
static int have_thp(void)
{
	return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

static struct tk_limiter *open_zone(const char *zone, uint64_t capacity)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[64];

	o.zone_capacity = capacity;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	assert_int_equal(tk_limiter_open(&l, "gcra:3/1h", spec, &o), 0);
	return l;
}

/* @n keys, each admitted 3 times and denied the 4th. */
static void use_keys(struct tk_limiter *l, int n)
{
	struct tk_decision d;
	char key[24];
	int k, r;

	for (k = 0; k < n; k++) {
		snprintf(key, sizeof(key), "key-%d", k);
		for (r = 0; r < 4; r++) {
			assert_int_equal(
				tk_limiter_check(l, key, strlen(key), 1, &d),
				0);
			assert_int_equal(d.allowed, r < 3);
		}
	}
}

/*
 * Open zone @name of @capacity slots (creating it), check @keys keys
 * there, and return its area (which must exist) with the limiter in *@l.
 */
static struct area zone_in_use(const char *name, uint64_t capacity, int keys,
			       struct tk_limiter **l)
{
	char path[4200];
	struct area a;

	*l = open_zone(name, capacity);
	use_keys(*l, keys);
	kit_zone_path(path, sizeof(path), name);
	a = find_area(path);
	assert_true(a.found);
	return a;
}

/* A zone of 65536 slots (a 3 MiB file) is advised and works. */
static void test_big_zone_advised(void **state)
{
	struct tk_zone_info info;
	struct tk_limiter *l;
	/* 16384 keys touch about every 4 KiB page of the slots. */
	struct area a = zone_in_use("big", 65536, 16384, &l);

	(void)state;
	assert_true(a.size_kb >= 2048);
	if (have_thp())
		assert_true(a.advised);
	else
		assert_false(a.advised);
	if (getenv("TK_TEST_HUGE_TMPFS")) {
		fprintf(stderr, "# %lu of %lu kB mapped by huge pages\n",
			a.pmd_kb, a.size_kb);
		assert_true(a.pmd_kb >= 2048);
	}
	assert_int_equal(tk_zone_verify("big", &info, sizeof(info)), 0);
	assert_int_equal(info.keys, 16384);
	assert_int_equal(info.violations, 0);
	tk_limiter_close(l);
	assert_int_equal(tk_zone_destroy("big"), 0);
}

/* A zone below 2 MiB could hold no huge page: not advised. */
static void test_small_zone_not_advised(void **state)
{
	struct tk_limiter *l;
	struct area a = zone_in_use("small", 1024, 100, &l);

	(void)state;
	assert_true(a.size_kb < 2048);
	assert_false(a.advised);
	assert_int_equal(a.pmd_kb, 0);
	tk_limiter_close(l);
	assert_int_equal(tk_zone_destroy("small"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_zone_advised),
		cmocka_unit_test(test_small_zone_not_advised),
	};
	const char *base = getenv("TK_TEST_HUGE_TMPFS");

	snprintf(dir, sizeof(dir), "%s/tk-zhuge-XXXXXX",
		 base && *base ? base : "/tmp");
	if (kit_zone_dir(dir) != 0)
		return 99;
	return cmocka_run_group_tests_name("zone_hugepage", tests, NULL,
					   kit_zone_dir_remove);
}
