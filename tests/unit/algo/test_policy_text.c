/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_text.c - policy strings of the window algorithms:
 * parse errors and format/parse round trips; durations alone
 * (tk_duration_parse()), as bindings read them.
 *
 * Expectations come from shared/design/semantics.md, never from the
 * library's code (see algo-kit.h for the details it leaves open).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "algo-kit.h"

static void test_policy_parse_errors(void **state)
{
	static const struct {
		const char *text;
		int rc;
		size_t lo, hi; /* err.position within [lo, hi] */
	} cases[] = {
		{ "gcra:10/5x", -EINVAL, 8, 9 },
		{ "fixed-window:10/1q", -EINVAL, 16, 17 },
		{ "quota:5/fortnight", -EINVAL, 8, 8 },
		{ "sliding-log:5/1s,color=red", -EINVAL, 16, 17 },
		{ "quota:5/month,offset=+15:00", -EINVAL, 14, 26 },
		{ "quota:5/month,offset=+14:01", -EINVAL, 14, 26 },
		{ "quota:5/week,week-start=xyz", -EINVAL, 13, 24 },
		{ "fixed-window:10/0s", -EINVAL, 0, 18 },
		{ "fixed-window:0/1s", -EINVAL, 0, 17 },
		{ "sliding-window:10/1s,buckets=3", -EINVAL, 0, 30 },
		{ "sliding-log:100000/1s", -EINVAL, 0, 21 },
		{ "token-bucket:capacity=0,refill=1/s", -EINVAL, 0, 34 },
		{ "token-bucket:capacity=5,refill=3/2ns", -EINVAL, 0, 36 },
		{ "quota:0/day", -EINVAL, 0, 11 },
		{ "nosuch:1/s", -EINVAL, 0, 0 },
	};
	struct tk_parse_error err;
	struct tk_policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&err, 0, sizeof(err));
		err.position = 12345;
		kit_parse_fails(cases[i].text, cases[i].rc, &err);
		if (cases[i].rc == -EINVAL &&
		    (err.position < cases[i].lo || err.position > cases[i].hi))
			fail_msg("tk_policy_parse(\"%s\"): position %zu, want "
				 "within [%zu, %zu] (message \"%s\")",
				 cases[i].text, err.position, cases[i].lo,
				 cases[i].hi, err.message);
		if (cases[i].rc == -EINVAL && err.message[0] == '\0')
			fail_msg("tk_policy_parse(\"%s\"): empty message",
				 cases[i].text);
	}
	/* err may be NULL. */
	p = NULL;
	assert_rc(tk_policy_parse(&p, "gcra:10/5x", NULL), -EINVAL);
	tk_policy_free(p);
}

static void test_policy_round_trip(void **state)
{
	static const char *const texts[] = {
		"gcra:10/1s",
		"gcra:100/s",
		"gcra:10/1s,burst=5",
		"gcra:5/15m",
		"token-bucket:capacity=20,refill=5/1s",
		"token-bucket:capacity=3,refill=7/250ms",
		"fixed-window:100/1m",
		"fixed-window:5/13000000007ns",
		"sliding-window:10/1s",
		"sliding-window:10/1s,buckets=5",
		"sliding-window:10/7ns,buckets=7",
		"sliding-log:5/1s",
		"sliding-log:100/1h",
		"quota:1000/month",
		"quota:10/week",
		"quota:10/week,week-start=sun",
		"quota:10/day,offset=+05:30",
		"quota:10/day,offset=-14:00",
		"quota:10/month,offset=+14:00",
		"quota:7/1h,anchor=1700000000000000000",
		"quota:7/7777ns,anchor=5",
		"all(gcra:10/1s,burst=5,fixed-window:100/1m)",
		"any(sliding-log:5/1s,quota:100/day,offset=+01:00)",
		"all(sliding-window:10/1s,buckets=5,token-bucket:capacity=2,"
		"refill=1/s)",
	};
	struct tk_parse_error err;
	struct tk_policy *p, *q;
	char a[512], b[512], small[4];
	size_t i;
	int n, m, rc;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(texts); i++) {
		p = q = NULL;
		rc = tk_policy_parse(&p, texts[i], &err);
		if (rc != 0)
			fail_msg("tk_policy_parse(\"%s\") = %d (%s) at %zu: %s",
				 texts[i], rc, tk_strerrorname(rc),
				 err.position, err.message);
		n = tk_policy_format(p, a, sizeof(a));
		if (n <= 0 || (size_t)n != strlen(a))
			fail_msg("tk_policy_format(\"%s\") = %d, \"%s\"",
				 texts[i], n, a);
		rc = tk_policy_parse(&q, a, &err);
		if (rc != 0)
			fail_msg("\"%s\" formats as \"%s\", which does not "
				 "parse: %d (%s) at %zu: %s",
				 texts[i], a, rc, tk_strerrorname(rc),
				 err.position, err.message);
		m = tk_policy_format(q, b, sizeof(b));
		if (m != n || strcmp(a, b) != 0)
			fail_msg("\"%s\" formats as \"%s\", which formats as "
				 "\"%s\"",
				 texts[i], a, b);
		assert_int_equal(tk_policy_dimensions(p),
				 strncmp(texts[i], "all(", 4) == 0 ||
						 strncmp(texts[i], "any(", 4) ==
							 0
					 ? 2
					 : 1);
		/* snprintf semantics on a short buffer. */
		memset(small, 'x', sizeof(small));
		assert_int_equal(tk_policy_format(p, small, sizeof(small)), n);
		assert_int_equal(small[3], '\0');
		assert_memory_equal(small, a, 3);
		/* The formatted string opens a limiter too. */
		assert_rc(open_rc(a), 0);
		tk_policy_free(p);
		tk_policy_free(q);
	}

	/* A bare unit formats with an explicit count. */
	p = NULL;
	assert_rc(tk_policy_parse(&p, "gcra:100/s", &err), 0);
	tk_policy_format(p, a, sizeof(a));
	if (strstr(a, "100/1s") == NULL)
		fail_msg("\"gcra:100/s\" formats as \"%s\"", a);
	tk_policy_free(p);
	p = NULL;
	assert_rc(tk_policy_parse(&p, "sliding-log:5/s", &err), 0);
	tk_policy_format(p, a, sizeof(a));
	if (strstr(a, "5/1s") == NULL)
		fail_msg("\"sliding-log:5/s\" formats as \"%s\"", a);
	tk_policy_free(p);
}

/* The durations of policy strings, and nothing else. */
static void test_duration_parse(void **state)
{
	static const struct {
		const char *text;
		uint64_t ns;
	} good[] = {
		{ "1ns", 1 },
		{ "250us", 250000 },
		{ "500ms", 500000000 },
		{ "2s", 2000000000 },
		{ "1m", 60000000000 },
		{ "m", 60000000000 },
		{ "3h", 10800000000000 },
		{ "1d", 86400000000000 },
		{ "0s", 0 },
		{ "18446744073709551615ns", UINT64_MAX },
	};
	static const char *const bad[] = {
		"",	 "5",	"1mi",	"1 s",	" 1s",	 "1s ",	  "1S",
		"1.5s", "-1s", "s1",	"1sec", "1min", "213504d", "1s,",
		"18446744073709551616ns",
	};
	uint64_t ns;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = 7;
		if (tk_duration_parse(good[i].text, strlen(good[i].text),
				      &ns) != 0 ||
		    ns != good[i].ns)
			fail_msg("\"%s\": want %llu ns", good[i].text,
				 (unsigned long long)good[i].ns);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ns = 7;
		if (tk_duration_parse(bad[i], strlen(bad[i]), &ns) != -EINVAL ||
		    ns != 7)
			fail_msg("\"%s\" was taken", bad[i]);
	}
	/* The length bounds the text, and a NUL inside it is refused. */
	assert_int_equal(tk_duration_parse("2s5", 2, &ns), 0);
	assert_true(ns == 2000000000);
	assert_int_equal(tk_duration_parse("2s\0", 3, &ns), -EINVAL);
	assert_int_equal(tk_duration_parse(NULL, 0, &ns), -EINVAL);
	assert_int_equal(tk_duration_parse(NULL, 2, &ns), -EINVAL);
	assert_int_equal(tk_duration_parse("2s", 2, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_parse_errors),
		cmocka_unit_test(test_policy_round_trip),
		cmocka_unit_test(test_duration_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
