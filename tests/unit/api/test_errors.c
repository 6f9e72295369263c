/* SPDX-License-Identifier: BSD-2-Clause */
/* test_errors.c - error text, names and the version. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <throttlekit.h>

static void test_names_and_text(void **state)
{
	(void)state;
	assert_string_equal(tk_strerrorname(-ERANGE), "ERANGE");
	assert_string_equal(tk_strerrorname(EINVAL), "EINVAL");
	assert_string_equal(tk_strerrorname(-ENAMETOOLONG), "ENAMETOOLONG");
	assert_string_equal(tk_strerrorname(-ENOTSUP), "ENOTSUP");
	assert_string_equal(tk_strerrorname(-EPROTO), "EPROTO");
	/* Store codes pass the public boundary as themselves, not -EIO. */
	assert_string_equal(tk_strerrorname(-EAGAIN), "EAGAIN");
	assert_string_equal(tk_strerrorname(-ETIMEDOUT), "ETIMEDOUT");
	assert_string_equal(tk_strerrorname(-ECONNRESET), "ECONNRESET");
	assert_string_equal(tk_strerrorname(-12345), "EUNKNOWN");
	assert_string_equal(tk_strerror(0), "Success");
	assert_string_equal(tk_strerror(-12345), "Unknown error");
	assert_true(strstr(tk_strerror(-ERANGE), "Cost") != NULL);
	assert_string_equal(tk_strerror(-EINVAL), tk_strerror(EINVAL));
}

static void test_version(void **state)
{
	(void)state;
	assert_string_equal(tk_version(), TK_VERSION_STRING);
	assert_int_equal(TK_VERSION_HEX, (TK_VERSION_MAJOR << 16) |
						 (TK_VERSION_MINOR << 8) |
						 TK_VERSION_PATCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_and_text),
		cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests_name("errors", tests, NULL, NULL);
}
