/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy.c - policy strings: the exact canonical string of every
 * algorithm, with and without its optional parts, and exact error
 * positions and messages where a lenient parser would be easy to write
 * (a character after a composite, a number of 2^64 or more, an unknown
 * algorithm).
 *
 * Expectations come from tk_policy_parse(3) ("Canonical form", "Error
 * positions"), not from the library's code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"
#include "parse-kit.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void test_canonical_forms(void **state)
{
	static const struct {
		const char *text, *canonical;
	} cases[] = {
		/* gcra: burst only when it is not the limit. */
		{ "gcra:10/s", "gcra:10/1s" },
		{ "gcra:10/1s,burst=10", "gcra:10/1s" },
		{ "gcra:10/1s,burst=5", "gcra:10/1s,burst=5" },
		{ "gcra:10/s,burst=0020", "gcra:10/1s,burst=20" },
		{ "gcra:0010/1000ms", "gcra:10/1s" },
		{ "gcra:1/1440m", "gcra:1/1d" },
		{ "gcra:1/90m", "gcra:1/90m" },
		{ "gcra:1/1001ms", "gcra:1/1001ms" },
		{ "gcra:7/7ns", "gcra:7/7ns" },
		{ "gcra:1/us", "gcra:1/1us" },
		/* token-bucket: capacity before refill. */
		{ "token-bucket:capacity=5,refill=1/s",
		  "token-bucket:capacity=5,refill=1/1s" },
		{ "token-bucket:refill=10/60s,capacity=5",
		  "token-bucket:capacity=5,refill=10/1m" },
		{ "fixed-window:5/90s", "fixed-window:5/90s" },
		{ "fixed-window:5/3600000ms", "fixed-window:5/1h" },
		/* sliding-window: buckets only when not 10. */
		{ "sliding-window:10/1s", "sliding-window:10/1s" },
		{ "sliding-window:10/1s,buckets=10", "sliding-window:10/1s" },
		{ "sliding-window:10/1s,buckets=4",
		  "sliding-window:10/1s,buckets=4" },
		{ "sliding-window:10/1s,buckets=100",
		  "sliding-window:10/1s,buckets=100" },
		{ "sliding-log:5/2000ms", "sliding-log:5/2s" },
		/* quota: offset before week-start, defaults left out. */
		{ "quota:5/month", "quota:5/month" },
		{ "quota:5/day,offset=+00:00", "quota:5/day" },
		{ "quota:5/day,offset=-01:30", "quota:5/day,offset=-01:30" },
		{ "quota:5/month,offset=+14:00",
		  "quota:5/month,offset=+14:00" },
		{ "quota:5/week,week-start=mon", "quota:5/week" },
		{ "quota:5/week,week-start=mon,offset=+00:00", "quota:5/week" },
		{ "quota:5/week,week-start=sun",
		  "quota:5/week,week-start=sun" },
		{ "quota:5/week,week-start=sun,offset=+01:00",
		  "quota:5/week,offset=+01:00,week-start=sun" },
		{ "quota:5/24h", "quota:5/1d" },
		{ "quota:5/1h,anchor=0", "quota:5/1h" },
		{ "quota:5/1h,anchor=7", "quota:5/1h,anchor=7" },
		/* leaky: max-queue only when not 0. */
		{ "leaky:10/s", "leaky:10/1s" },
		{ "leaky:10/s,max-queue=0s", "leaky:10/1s" },
		{ "leaky:10/1s,max-queue=1500ms",
		  "leaky:10/1s,max-queue=1500ms" },
		{ "leaky:10/1s,max-queue=60s", "leaky:10/1s,max-queue=1m" },
		/* Composites: each dimension canonical. */
		{ "all(gcra:10/s,burst=10,quota:5/week,week-start=mon)",
		  "all(gcra:10/1s,quota:5/week)" },
		{ "any(gcra:1/s,burst=2,leaky:1/s,max-queue=2s)",
		  "any(gcra:1/1s,burst=2,leaky:1/1s,max-queue=2s)" },
	};
	struct tk_parse_error err;
	struct tk_policy *p;
	char buf[256];
	size_t i;
	int rc, n;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		p = NULL;
		rc = tk_policy_parse(&p, cases[i].text, &err);
		if (rc != 0)
			fail_msg("tk_policy_parse(\"%s\") = %d (%s): %s",
				 cases[i].text, rc, tk_strerrorname(rc),
				 err.message);
		n = tk_policy_format(p, buf, sizeof(buf));
		tk_policy_free(p);
		if (n != (int)strlen(cases[i].canonical) ||
		    strcmp(buf, cases[i].canonical) != 0)
			fail_msg("\"%s\" formats as \"%s\" (%d), want \"%s\"",
				 cases[i].text, buf, n, cases[i].canonical);
	}
}

/*
 * Exact positions and messages.  The message format is not an API, but
 * this library's words are pinned here so that a wrong position or a
 * misleading "expected" cannot slip in.
 */
static void test_error_positions(void **state)
{
	static const struct {
		const char *text;
		size_t pos;
		const char *expected;
	} cases[] = {
		/* Nothing after a composite. */
		{ "all(gcra:1/s,gcra:2/s)x", 22, "the end of the policy" },
		{ "any(gcra:1/s,gcra:2/s)x", 22, "the end of the policy" },
		{ "all(gcra:1/s,gcra:2/s))", 22, "the end of the policy" },
		{ "all(gcra:1/s,gcra:2/s),", 22, "the end of the policy" },
		{ "all(gcra:1/s)x", 12, "',' and a second policy" },
		{ "all(gcra:1/s)", 12, "',' and a second policy" },
		{ "all(gcra:1/s", 12, "',' or ')'" },
		{ "gcra:1/sx", 7, "a unit: ns, us, ms, s, m, h or d" },
		/* 2^64 and 2^64 + 1 never wrap (to 0 and 1): the number's
		 * first digit. */
		{ "gcra:18446744073709551616/s", 5, "a number below 2^64" },
		{ "gcra:18446744073709551617/s", 5, "a number below 2^64" },
		{ "gcra:99999999999999999999/s", 5, "a number below 2^64" },
		{ "gcra:1/18446744073709551617ns", 7, "a number below 2^64" },
		{ "gcra:1/s,burst=18446744073709551617", 15,
		  "a number below 2^64" },
		{ "quota:5/1h,anchor=18446744073709551616", 18,
		  "a number below 2^64" },
		{ "all(gcra:1/s,fixed-window:18446744073709551617/s)", 26,
		  "a number below 2^64" },
		/* 2^64 - 1 is a number, out of every policy's range: the
		 * range error, at the first character after the colon. */
		{ "gcra:18446744073709551615/s", 5,
		  "a positive rate of at most 1 per ns, burst tolerance below "
		  "2^62 ns" },
		{ "quota:5/1h,anchor=18446744073709551615", 6,
		  "a period of 1 ns to 2^62 ns and an anchor below 2^63" },
		/* An unknown algorithm: a parse error at its name. */
		{ "gcrx:1/s", 0, "a known algorithm" },
		{ "leaky-bucket:10/s", 0, "a known algorithm" },
		{ "all(gcra:1/s,gcrx:1/s)", 13, "a known algorithm" },
	};
	struct tk_parse_error err;
	char want[256];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&err, 0, sizeof(err));
		kit_parse_fails(cases[i].text, -EINVAL, &err);
		snprintf(want, sizeof(want), "expected %s at position %zu",
			 cases[i].expected, cases[i].pos);
		if (err.position != cases[i].pos ||
		    strcmp(err.message, want) != 0)
			fail_msg("\"%s\": position %zu, \"%s\"; want %zu, "
				 "\"%s\"",
				 cases[i].text, err.position, err.message,
				 cases[i].pos, want);
	}
}

/* The largest numbers that parse: 2^64 - 1 is read where it fits. */
static void test_largest_numbers(void **state)
{
	struct tk_parse_error err;
	struct tk_policy *p = NULL;
	char buf[128];

	(void)state;
	/* 2^62 ns of window, 2^62 - 1 as a limit, 2^63 - 1 as an anchor. */
	assert_rc(
		tk_policy_parse(&p,
				"quota:4611686018427387903/4611686018427387904"
				"ns,anchor=9223372036854775807",
				&err),
		0);
	tk_policy_format(p, buf, sizeof(buf));
	assert_string_equal(buf, "quota:4611686018427387903/"
				 "4611686018427387904ns,"
				 "anchor=9223372036854775807");
	tk_policy_free(p);
}

/*
 * tk_policy_change(): the dimensions whose counts carry over, as
 * tk_limiter_open(3) lists them (tests/kit/store-api-kit.c checks the
 * same pairs' decisions on every store).
 */
static void test_policy_change(void **state)
{
	static const struct {
		const char *from, *to;
		int kept;
	} pairs[] = {
		{ "gcra:5/1h", "gcra:10/1m,burst=3", 1 },
		{ "token-bucket:capacity=5,refill=5/1h",
		  "token-bucket:capacity=9,refill=1/1s", 1 },
		{ "leaky:5/1h,max-queue=1h", "leaky:1/1s,max-queue=1s", 1 },
		{ "fixed-window:5/1h", "fixed-window:10/1h", 1 },
		{ "quota:5/day", "quota:10/day", 1 },
		{ "sliding-window:5/1h", "sliding-window:10/1h", 1 },
		{ "sliding-log:5/1h", "sliding-log:5/2h", 1 },
		{ "sliding-log:5/1h", "sliding-log:10/1h", 0 },
		{ "fixed-window:5/1h", "fixed-window:5/2h", 0 },
		{ "fixed-window:5/1h", "fixed-window:16777216/1h", 0 },
		{ "quota:5/day", "quota:5/day,offset=+01:00", 0 },
		{ "quota:5/1h", "quota:5/1h,anchor=1", 0 },
		{ "quota:5/week", "quota:5/week,week-start=sun", 0 },
		{ "sliding-window:5/1h", "sliding-window:5/1h,buckets=4", 0 },
		{ "gcra:5/1h", "token-bucket:capacity=5,refill=5/1h", 0 },
		{ "gcra:5/1h", "all(gcra:5/1h,gcra:5/1h)", 0 },
		{ "all(gcra:5/1h,gcra:5/1h)", "gcra:5/1h", 0 },
		{ "all(gcra:5/1h,quota:5/day)",
		  "all(gcra:5/1h,fixed-window:5/1h)", 1 },
		{ "all(gcra:5/1h,quota:5/day)", "any(gcra:9/1h,quota:8/day)",
		  3 },
		{ "all(gcra:5/1h,sliding-log:5/1h)",
		  "all(sliding-log:5/1h,gcra:5/1h)", 0 },
		{ "all(gcra:5/1h,gcra:1/1s)",
		  "all(gcra:5/1h,gcra:1/1s,gcra:1/1m)", 3 },
	};
	struct tk_policy *a, *b;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		assert_rc(tk_policy_parse(&a, pairs[i].from, NULL), 0);
		assert_rc(tk_policy_parse(&b, pairs[i].to, NULL), 0);
		if (tk_policy_change(a, b) != pairs[i].kept)
			fail_msg("%s -> %s: %d, not %d", pairs[i].from,
				 pairs[i].to, tk_policy_change(a, b),
				 pairs[i].kept);
		tk_policy_free(a);
		tk_policy_free(b);
	}
	assert_rc(tk_policy_parse(&a, "gcra:1/1s", NULL), 0);
	assert_rc(tk_policy_change(NULL, a), -EINVAL);
	assert_rc(tk_policy_change(a, NULL), -EINVAL);
	tk_policy_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_change),
		cmocka_unit_test(test_canonical_forms),
		cmocka_unit_test(test_error_positions),
		cmocka_unit_test(test_largest_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
