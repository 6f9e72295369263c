/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_quota.c - calendar and anchored quota decisions, by hand
 * and against the reference model.
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

/* semantics.md's example: L = 3, 2026-05-28T12:00Z, month. */
static void test_quota_month_example(void **state)
{
	const uint64_t now = AT(1779969600);  /* 2026-05-28T12:00Z */
	const uint64_t june = AT(1780272000); /* 2026-06-01T00:00Z */
	const uint64_t july = AT(1782864000); /* 2026-07-01T00:00Z */
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "quota:3/month", now);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, june, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 0, june, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, june, june - now);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, june, june - now);
	assert_rc(check_rc(f.l, "k", 4, &d), -ERANGE);
	fx_at(&f, june - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, june, 1);
	fx_at(&f, june);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, july, 0);
	/* Deny never consumes. */
	d = chk(&f, "k", 3);
	assert_decision(d, false, 3, 2, july, july - june);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 0, july, 0);
	fx_close(&f);
}

static void test_quota_month_lengths(void **state)
{
	static const struct {
		uint64_t now, reset;
	} cases[] = {
		/* 2024-02-01T00:00Z: leap February ends 2024-03-01. */
		{ AT(1706745600), AT(1709251200) },
		/* 2024-02-29T12:00Z */
		{ AT(1709208000), AT(1709251200) },
		/* 2024-01-31T23:59:59.999999999Z */
		{ AT(1706745600) - 1, AT(1706745600) },
		/* 2100-02-15T00:00Z: 2100 is not a leap year. */
		{ AT(4106332800), AT(4107542400) },
		/* 2100-02-28T23:59:59.999999999Z */
		{ AT(4107542400) - 1, AT(4107542400) },
		/* 2100-03-15T00:00Z and 2101-01-15T00:00Z: past the century */
		{ AT(4108752000), AT(4110220800) },
		{ AT(4135190400), AT(4136659200) },
		/* 2000-02-10T00:00Z: 2000 is (divisible by 400). */
		{ AT(950140800), AT(951868800) },
		/* 2000-02-29T12:00Z: the last day of a 400-year era. */
		{ AT(951825600), AT(951868800) },
		/* 2000-03-01T00:00Z: the first day of the next era. */
		{ AT(951868800), AT(954547200) },
		/* 2023-12-31T12:00Z: the year rolls over. */
		{ AT(1704024000), AT(1704067200) },
	};
	struct tk_decision d;
	struct fx f;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fx_open(&f, "quota:1/month", cases[i].now);
		d = chk(&f, "k", 1);
		assert_decision(d, true, 1, 0, cases[i].reset, 0);
		d = chk(&f, "k", 1);
		assert_decision(d, false, 1, 0, cases[i].reset,
				cases[i].reset - cases[i].now);
		fx_close(&f);
	}
	/* February 2100 has exactly 28 days. */
	fx_open(&f, "quota:1/month", AT(4105123200)); /* 2100-02-01 */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(4105123200) + 28 * DAY, 0);
	fx_close(&f);
	fx_open(&f, "quota:1/month", AT(1706745600)); /* 2024-02-01 */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1706745600) + 29 * DAY, 0);
	fx_close(&f);
}

static void test_quota_offsets(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* +14:00: June starts at 2026-05-31T10:00Z. */
	fx_open(&f, "quota:1/month,offset=+14:00", AT(1780221600) - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1780221600), 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, AT(1780221600), 1);
	fx_at(&f, AT(1780221600));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1782813600), 0);
	fx_close(&f);

	/* -14:00: June starts at 2026-06-01T14:00Z. */
	fx_open(&f, "quota:1/month,offset=-14:00", AT(1780322400) - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1780322400), 0);
	fx_at(&f, AT(1780322400));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1782914400), 0);
	fx_close(&f);

	/* +05:30, days: 2026-05-28 ends at 18:30Z. */
	fx_open(&f, "quota:2/day,offset=+05:30", AT(1779993000) - 1);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 2, 0, AT(1779993000), 0);
	fx_at(&f, AT(1779993000));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, AT(1779993000) + DAY, 0);
	fx_close(&f);

	/* -03:45 days; +00:00 is UTC. */
	fx_open(&f, "quota:2/day,offset=-03:45", AT(1779969600));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1,
			AT(1779969600) + 12 * HOUR + 3 * HOUR + 45 * MINUTE, 0);
	fx_close(&f);
	fx_open(&f, "quota:2/day,offset=+00:00", AT(1779969600));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, AT(1779969600) + 12 * HOUR, 0);
	fx_close(&f);
	fx_open(&f, "quota:2/day", B0); /* 2023-11-14T22:13:20Z */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, AT(1700006400), 0);
	fx_close(&f);

	assert_rc(open_rc("quota:1/month,offset=+14:01"), -EINVAL);
	assert_rc(open_rc("quota:1/month,offset=-14:01"), -EINVAL);
	assert_rc(open_rc("quota:1/day,offset=+15:00"), -EINVAL);
	assert_rc(open_rc("quota:1/day,offset=+05:60"), -EINVAL);
	assert_rc(open_rc("quota:1/day,offset=+14:00"), 0);
	assert_rc(open_rc("quota:1/day,offset=-14:00"), 0);
}

static void test_quota_weeks(void **state)
{
	const uint64_t thu = AT(1779969600);	 /* Thu 2026-05-28T12:00Z */
	const uint64_t sat0 = AT(1780099200);	 /* Sat 2026-05-30T00:00Z */
	const uint64_t sun0 = AT(1780185600);	 /* Sun 2026-05-31T00:00Z */
	const uint64_t mon0 = AT(1780272000);	 /* Mon 2026-06-01T00:00Z */
	const uint64_t sun12 = sun0 + 12 * HOUR; /* Sun 2026-05-31T12:00Z */
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* Weeks start on Monday by default. */
	fx_open(&f, "quota:1/week", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0, 0);
	fx_at(&f, sun12);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, mon0, 12 * HOUR);
	fx_at(&f, mon0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0 + 7 * DAY, 0);
	fx_close(&f);

	fx_open(&f, "quota:1/week,week-start=mon", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0, 0);
	fx_close(&f);

	/* week-start=sun moves the boundary to Sunday 00:00. */
	fx_open(&f, "quota:1/week,week-start=sun", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, sun0, 0);
	fx_at(&f, sun0 - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, sun0, 1);
	fx_at(&f, sun12);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, sun0 + 7 * DAY, 0);
	fx_close(&f);

	fx_open(&f, "quota:1/week,week-start=sat", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, sat0, 0);
	fx_close(&f);
	/* On the first day of the week itself. */
	fx_open(&f, "quota:1/week,week-start=thu", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, thu - 12 * HOUR + 7 * DAY, 0);
	fx_close(&f);
	/* With an offset: Monday 00:00 at +02:00 is Sunday 22:00Z. */
	fx_open(&f, "quota:1/week,offset=+02:00", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0 - 2 * HOUR, 0);
	fx_close(&f);

	assert_rc(open_rc("quota:1/week,week-start=xyz"), -EINVAL);
}

static void test_quota_anchored(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* start = anchor + floor((now - anchor) / P) * P */
	fx_open(&f, "quota:3/10s,anchor=1700000003000000000", B0 + 25 * SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + 33 * SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 0, B0 + 33 * SEC, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 33 * SEC, 8 * SEC);
	fx_at(&f, B0 + 33 * SEC - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 33 * SEC, 1);
	fx_at(&f, B0 + 33 * SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + 43 * SEC, 0);
	/* Other keys, at other times: the period just before the anchor
	 * is [anchor - P, anchor). */
	fx_at(&f, B0 + 1 * SEC);
	d = chk(&f, "a", 1);
	assert_decision(d, true, 3, 2, B0 + 3 * SEC, 0);
	fx_at(&f, B0 + 3 * SEC - 1);
	d = chk(&f, "b", 1);
	assert_decision(d, true, 3, 2, B0 + 3 * SEC, 0);
	fx_at(&f, B0 + 3 * SEC);
	d = chk(&f, "c", 1);
	assert_decision(d, true, 3, 2, B0 + 13 * SEC, 0);
	assert_rc(check_rc(f.l, "c", 4, &d), -ERANGE);
	fx_close(&f);

	/* A period that does not divide anything round. */
	fx_open(&f, "quota:2/7777ns,anchor=5", B0);
	/* (B0 - 5) mod 7777 worked out: B0 = 1.7e18. */
	{
		uint64_t start = 5 + (B0 - 5) / 7777 * 7777;

		d = chk(&f, "k", 2);
		assert_decision(d, true, 2, 0, start + 7777, 0);
		d = chk(&f, "k", 1);
		assert_decision(d, false, 2, 0, start + 7777,
				start + 7777 - B0);
	}
	fx_close(&f);
}

/* Calendar quotas: days with offsets (most seeds), weeks and months. */
static void test_property_quota_calendar(void **state)
{
	static const char *const wdays[] = { "sun", "mon", "tue", "wed",
					     "thu", "fri", "sat" };
	const int nseeds = 10, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[160], opt[64];
	uint64_t seed, L, start, gran, scale, W;
	int64_t off_min;
	enum cadence cad;
	int s, wstart;
	size_t n;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x9a07a000ull + (uint64_t)s;
		cad = s < 5 ? CAD_DAY : s < 8 ? CAD_WEEK : CAD_MONTH;
		switch (s) {
		case 0:
			off_min = 14 * 60;
			break;
		case 1:
			off_min = -14 * 60;
			break;
		case 5:
			off_min = 0;
			break;
		default:
			off_min = (int64_t)rnd_range(&seed, 0, 1680) - 840;
			break;
		}
		wstart = 1;
		switch (cad) {
		case CAD_DAY:
			L = rnd_range(&seed, 1, 10);
			gran = 30 * MINUTE;
			scale = 6 * HOUR;
			W = DAY;
			n = (size_t)snprintf(policy, sizeof(policy),
					     "quota:%llu/day",
					     (unsigned long long)L);
			break;
		case CAD_WEEK:
			L = rnd_range(&seed, 1, 8);
			gran = 3 * HOUR;
			scale = DAY;
			W = 7 * DAY;
			n = (size_t)snprintf(policy, sizeof(policy),
					     "quota:%llu/week",
					     (unsigned long long)L);
			if (s != 5) {
				wstart = (int)rnd_range(&seed, 0, 6);
				snprintf(policy + n, sizeof(policy) - n,
					 ",week-start=%s", wdays[wstart]);
				n = strlen(policy);
			}
			break;
		default:
			L = rnd_range(&seed, 1, 4);
			gran = 12 * HOUR;
			scale = 4 * DAY;
			W = 31 * DAY;
			n = (size_t)snprintf(policy, sizeof(policy),
					     "quota:%llu/month",
					     (unsigned long long)L);
			break;
		}
		if (off_min != 0 || s == 2) {
			snprintf(opt, sizeof(opt), ",offset=%c%02d:%02d",
				 off_min < 0 ? '-' : '+',
				 (int)(llabs(off_min) / 60),
				 (int)(llabs(off_min) % 60));
			snprintf(policy + n, sizeof(policy) - n, "%s", opt);
		}
		model_init(&m, M_QUOTA, L, W);
		m.cad = cad;
		m.off_ns = off_min * (int64_t)MINUTE;
		m.wstart = wstart;
		/* The last seed crosses 2100-03-01 (no leap day in 2100). */
		start = (s == nseeds - 1 ? AT(4083955200) : B0) +
			rnd_range(&seed, 0, 400 * DAY);
		run_property(&m, policy, start, start - 2 * W, gran, scale,
			     nops, seed, &ps);
		model_free(&m);
	}
	assert_coverage("quota (calendar)", &ps);
}

static void test_property_quota_anchored(void **state)
{
	const int nseeds = 8, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[160];
	uint64_t seed, L, P, start, floor, anchor;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0xa2c40000ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 20);
		if (s % 2 == 0)
			P = rnd_range(&seed, 1, 5000) * MS;
		else
			P = rnd_range(&seed, 1000, 10 * SEC);
		start = B0 + rnd_range(&seed, 0, 100 * SEC);
		floor = start - 3 * P;
		anchor = s == 0 ? 0 : floor - rnd_range(&seed, 0, 1000 * P);
		snprintf(policy, sizeof(policy),
			 "quota:%llu/%lluns,anchor=%llu", (unsigned long long)L,
			 (unsigned long long)P, (unsigned long long)anchor);
		model_init(&m, M_QUOTA, L, P);
		m.cad = CAD_ANCHORED;
		m.anchor = anchor;
		run_property(&m, policy, start, floor, P / (L + 1) + 1, P, nops,
			     seed, &ps);
		model_free(&m);
	}
	assert_coverage("quota (anchored)", &ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quota_month_example),
		cmocka_unit_test(test_quota_month_lengths),
		cmocka_unit_test(test_quota_offsets),
		cmocka_unit_test(test_quota_weeks),
		cmocka_unit_test(test_quota_anchored),
		cmocka_unit_test(test_property_quota_calendar),
		cmocka_unit_test(test_property_quota_anchored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
