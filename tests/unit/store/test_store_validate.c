/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_validate.c - tk_store_validate(): the error tk_store_open()
 * gives a spec's text, with the reason as a sentence that never quotes a
 * password; rediss:// refused with -ENOTSUP, and why, by a build without
 * hiredis_ssl (Debian 12's hiredis 0.14), taken with one.  Nothing here
 * connects: a Redis store connects on first use, not at open.
 */
#define _GNU_SOURCE /* strcasestr */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "config.h"
#include <throttlekit.h>

#include "asserts.h"

/* validate() and open() agree on @spec: @want; @why holds the reason. */
static void agree(const char *spec, int want, char *why, size_t len)
{
	struct tk_store *s = NULL;

	assert_rc(tk_store_validate(spec, why, len), want);
	assert_rc(tk_store_open(&s, spec, NULL), want);
	tk_store_close(s);
	if (want == 0)
		assert_string_equal(why, "");
	else
		assert_true(strlen(why) > 10);
}

static void test_local_specs(void **state)
{
	char why[256];

	(void)state;
	assert_rc(tk_store_validate("memory", why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* A valid name: nothing is opened, so no zone is needed. */
	assert_rc(tk_store_validate("shm:no-such-zone", why, sizeof(why)), 0);
	assert_rc(tk_store_validate("shm:.hidden", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "zone's name"));
	assert_rc(tk_store_validate("shm:", why, sizeof(why)), -EINVAL);
	assert_rc(tk_store_validate("memcached://h", why, sizeof(why)),
		  -EINVAL);
	assert_non_null(strstr(why, "expected memory, shm:NAME"));
	assert_non_null(strstr(why, "rediss://"));
}

static void test_arguments(void **state)
{
	char why[8];

	(void)state;
	assert_rc(tk_store_validate(NULL, why, sizeof(why)), -EINVAL);
	assert_rc(tk_store_validate("memory", NULL, 1), -EINVAL);
	assert_rc(tk_store_validate("memory", NULL, 0), 0);
	assert_rc(tk_store_validate("bogus", NULL, 0), -EINVAL);
	/* A short buffer holds the sentence's start, terminated. */
	assert_rc(tk_store_validate("bogus", why, sizeof(why)), -EINVAL);
	assert_int_equal(strlen(why), sizeof(why) - 1);
	assert_memory_equal(why, "expecte", 7);
}

static void test_redis_specs(void **state)
{
	static const char *const bad[] = {
		"redis://u:s3cret@127.0.0.1:1?bogus=1",
		"redis://:s3cret@127.0.0.1:99999",
		"redis://u:s3cret@127.0.0.1/x",
		"redis+unix://u:s3cret@relative/path",
		"redis://u:s3cret@127.0.0.1?timeout=0ms",
		"redis+cluster://u:s3cret@h:1/0",
	};
	char why[256];
	size_t i;

	(void)state;
#ifndef TK_HAVE_REDIS
	agree("redis://127.0.0.1:1", -ENOTSUP, why, sizeof(why));
	assert_non_null(strstr(why, "hiredis"));
	skip();
#endif
	agree("redis://u:s3cret@127.0.0.1:1/3?timeout=50ms&key_prefix=x:", 0,
	      why, sizeof(why));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		agree(bad[i], -EINVAL, why, sizeof(why));
		/* "byte N: expected ..." and never the password. */
		if (strncmp(why, "byte ", 5) != 0 || !strstr(why, "expected") ||
		    strstr(why, "s3cret"))
			fail_msg("%s: '%s'", bad[i], why);
	}
	/* The bound the message names is the one checked. */
	agree("redis://127.0.0.1/1073741823", 0, why, sizeof(why));
	agree("redis://127.0.0.1/1073741824", -EINVAL, why, sizeof(why));
	assert_string_equal(why,
			    "byte 18: expected a database number below 2^30");
	agree("redis://u:s3cret@127.0.0.1?tls_ca=/etc/ssl/ca.pem", -EINVAL, why,
	      sizeof(why));
	assert_non_null(strstr(why, "rediss:// only"));
}

/* TLS: a build without hiredis_ssl refuses rediss://, saying why. */
static void test_rediss(void **state)
{
	char why[256];

	(void)state;
#ifndef TK_HAVE_REDIS
	(void)why;
	skip();
#elif !defined(TK_HAVE_HIREDIS_SSL)
	agree("rediss://u:s3cret@127.0.0.1:6380", -ENOTSUP, why, sizeof(why));
	assert_string_equal(why, "rediss:// (TLS) needs a library built with "
				 "hiredis_ssl (hiredis 1.0 or later); this "
				 "one was built without it");
	agree("rediss://u:s3cret@127.0.0.1?tls_ca=/x.pem", -ENOTSUP, why,
	      sizeof(why));
	assert_null(strstr(why, "s3cret"));
#else
	agree("rediss://u:s3cret@127.0.0.1:6380/1?timeout=1s", 0, why,
	      sizeof(why));
	/* Files are loaded at open: one missing is named at once. */
	agree("rediss://u:s3cret@127.0.0.1?tls_ca=/nonexistent/ca.pem", -EINVAL,
	      why, sizeof(why));
	assert_non_null(strcasestr(why, "TLS"));
	assert_null(strstr(why, "s3cret"));
	agree("rediss://127.0.0.1?tls_ca=", -EINVAL, why, sizeof(why));
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_specs),
		cmocka_unit_test(test_arguments),
		cmocka_unit_test(test_redis_specs),
		cmocka_unit_test(test_rediss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
