/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_spec_redact.c - tk_spec_redact(): a password never reaches the
 * text, whatever the spec holds (an '@', '/' or '?' in the password,
 * percent-encoding, a socket path, several cluster nodes, an unknown
 * scheme), and the result is cut short as snprintf(3) cuts it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"

static const struct {
	const char *spec, *shown;
} cases[] = {
	{ "memory", "memory" },
	{ "shm:api.zone", "shm:api.zone" },
	{ "", "" },
	{ "redis://localhost:6379/2", "redis://localhost:6379/2" },
	{ "redis://u:secret@host:6379/0", "redis://u:***@host:6379/0" },
	{ "redis://:secret@host", "redis://:***@host" },
	{ "redis://u:@host", "redis://u:***@host" },
	/* A user alone is no password. */
	{ "redis://someone@host", "redis://someone@host" },
	/* Raw '@', '/', '?' in a password: the library refuses the last
	 * two, and still no message may show them. */
	{ "redis://u:sec@ret@host", "redis://u:***@host" },
	{ "redis://u:sec/ret@host/1", "redis://u:***@host/1" },
	{ "redis://u:sec?ret@host", "redis://u:***@host" },
	{ "redis://u:se:cret@host", "redis://u:***@host" },
	/* Raw '/', '?', '@', ':' and '%' together, in every form: the
	 * password runs to the last '@', not the first. */
	{ "redis://:Sup3r/Secret@host", "redis://:***@host" },
	{ "redis://:s3cr@t/pw@host", "redis://:***@host" },
	{ "redis://u:p@:/?%ret@host:6379/2", "redis://u:***@host:6379/2" },
	{ "redis://u:p@ss@:/?%ret@host?timeout=1s",
	  "redis://u:***@host?timeout=1s" },
	{ "rediss://:p@:/?%ret@host", "rediss://:***@host" },
	{ "redis+unix://u:p@:/?%ret@/run/redis.sock",
	  "redis+unix://u:***@/run/redis.sock" },
	{ "redis+cluster://:p@:/?%ret@h1:7000,h2:7001",
	  "redis+cluster://:***@h1:7000,h2:7001" },
	{ "redis:/u:p@:/?%ret@host", "redis:***@host" },
	{ "redis://u:sec%40ret%2F@host", "redis://u:***@host" },
	{ "redis://us%3Aer:secret@[::1]:6380",
	  "redis://us%3Aer:***@[::1]:6380" },
	{ "rediss://u:secret@host?tls_ca=/etc/ca.pem",
	  "rediss://u:***@host?tls_ca=/etc/ca.pem" },
	{ "redis+unix://u:secret@/run/redis.sock?timeout=1s",
	  "redis+unix://u:***@/run/redis.sock?timeout=1s" },
	{ "redis+unix:///run/re@dis.sock", "redis+unix:///run/re@dis.sock" },
	{ "redis+cluster://u:secret@h1:7000,h2:7001,h3:7002?timeout=1s",
	  "redis+cluster://u:***@h1:7000,h2:7001,h3:7002?timeout=1s" },
	{ "redis+cluster://h1:7000,h2:7001",
	  "redis+cluster://h1:7000,h2:7001" },
	/* More than the password, never less: an '@' in an option. */
	{ "redis://u:secret@host?key_prefix=a@b", "redis://u:***@b" },
	{ "redis://host:6379?key_prefix=a@b", "redis://host:***@b" },
	/* libpq takes a password as an option too. */
	{ "postgresql://u:secret@h:5432/db?table=t",
	  "postgresql://u:***@h:5432/db?table=t" },
	{ "postgresql://u@h/db?password=secret&sslmode=require",
	  "postgresql://u@h/db?password=***&sslmode=require" },
	{ "postgresql://h/db?user=u&password=secret",
	  "postgresql://h/db?user=u&password=***" },
	{ "postgresql://h/db?password=a&password=secret",
	  "postgresql://h/db?password=***&password=***" },
	/* A name libpq decodes; a '%' in a value is no name's. */
	{ "postgresql://h/db?table=t&pass%77ord=secret&sslmode=require",
	  "postgresql://h/db?table=t&pass%77ord=***&sslmode=require" },
	{ "postgresql://h/db?application_name=a%20b&%70assword=secret",
	  "postgresql://h/db?application_name=a%20b&%70assword=***" },
	{ "postgresql://h/db?sslpassword=secret",
	  "postgresql://h/db?sslpassword=***" },
	/* A scheme the library does not know, or mistyped: no "://". */
	{ "memcache://u:secret@host", "memcache://u:***@host" },
	{ "u:secret@host", "u:***@host" },
	{ "redis:/u:secret@host", "redis:***@host" },
	{ "shm:zone@x", "shm:***@x" },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static void test_cases(void **state)
{
	char buf[256];
	size_t i;

	(void)state;
	for (i = 0; i < N_CASES; i++) {
		int n = tk_spec_redact(cases[i].spec, buf, sizeof(buf));

		if (n != (int)strlen(cases[i].shown) ||
		    strcmp(buf, cases[i].shown) != 0)
			fail_msg("%s: \"%s\" (%d), want \"%s\"", cases[i].spec,
				 buf, n, cases[i].shown);
		assert_null(strstr(buf, "secret"));
		assert_null(strstr(buf, "ret"));
	}
}

/* Every buffer size: the whole length returned, a NUL-terminated prefix
 * written, nothing past @len touched. */
static void test_every_length(void **state)
{
	char buf[128];
	size_t i, len, want;

	(void)state;
	for (i = 0; i < N_CASES; i++) {
		want = strlen(cases[i].shown);
		for (len = 0; len <= want + 2; len++) {
			memset(buf, 'X', sizeof(buf));
			assert_int_equal(
				tk_spec_redact(cases[i].spec, buf, len),
				(int)want);
			if (len == 0) {
				assert_int_equal(buf[0], 'X');
				continue;
			}
			assert_int_equal(strlen(buf),
					 want < len ? want : len - 1);
			assert_memory_equal(buf, cases[i].shown, strlen(buf));
			assert_int_equal(buf[len], 'X');
		}
	}
}

static void test_hostile_arguments(void **state)
{
	char buf[8] = "XXXXXXX";

	(void)state;
	assert_rc(tk_spec_redact(NULL, buf, sizeof(buf)), -EINVAL);
	assert_rc(tk_spec_redact("memory", NULL, 4), -EINVAL);
	assert_int_equal(buf[0], 'X');
	/* Only the length, as snprintf(NULL, 0, ...). */
	assert_int_equal(tk_spec_redact("redis://u:pw@h", NULL, 0), 15);
	assert_int_equal(tk_spec_redact("redis://u:pw@h", buf, 1), 15);
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_every_length),
		cmocka_unit_test(test_hostile_arguments),
	};

	return cmocka_run_group_tests_name("spec_redact", tests, NULL, NULL);
}
