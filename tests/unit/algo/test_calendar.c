/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_calendar.c - civil date conversion and quota periods.
 *
 * The oracle for civil periods is the C library (timegm/gmtime_r), which
 * the library code itself must not use; the oracle for anchored periods is
 * the defining formula evaluated in 128-bit arithmetic.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <time.h>

#include "algo/calendar.h"

#define NS UINT64_C(1000000000)
#define HOUR INT32_C(3600)
#define DAY_NS (UINT64_C(86400) * NS)
#define LIMIT (UINT64_C(1) << 63)
#define SENTINEL UINT64_C(0x5a5a5a5a5a5a5a5a)

/* ns since the epoch of a UTC civil time, by the C library. */
static uint64_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = { 0 };
	time_t t;

	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	t = timegm(&tm);
	assert_true(t >= 0);
	return (uint64_t)t * NS;
}

static void check_period(enum tk__cadence c, int32_t off, unsigned ws,
			 uint64_t now, uint64_t want_start, uint64_t want_end,
			 const char *file, int line)
{
	uint64_t s = SENTINEL, e = SENTINEL;

	_assert_int_equal(tk__calendar_period(c, off, ws, now, &s, &e), 0, file,
			  line);
	_assert_int_equal(s, want_start, file, line);
	_assert_int_equal(e, want_end, file, line);
}

#define expect_period(c, off, ws, now, s, e)                                   \
	check_period(c, off, ws, now, s, e, __FILE__, __LINE__)

/* The period call fails with @rc and leaves the outputs alone. */
static void check_fails(int rc, enum tk__cadence c, int32_t off, unsigned ws,
			uint64_t now, const char *file, int line)
{
	uint64_t s = SENTINEL, e = SENTINEL;

	_assert_int_equal(tk__calendar_period(c, off, ws, now, &s, &e), rc,
			  file, line);
	_assert_int_equal(s, SENTINEL, file, line);
	_assert_int_equal(e, SENTINEL, file, line);
}

#define expect_fails(rc, c, off, ws, now)                                      \
	check_fails(rc, c, off, ws, now, __FILE__, __LINE__)

static int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_len(int64_t y, unsigned m)
{
	static const unsigned len[12] = { 31, 28, 31, 30, 31, 30,
					  31, 31, 30, 31, 30, 31 };

	return len[m - 1] + (m == 2 && is_leap(y));
}

/*
 * Walk every day from @y0-01-01 to @y1-12-31, stepping the date by the
 * leap-year rule, and check both conversions at each step.  With
 * @with_libc, also check each day against timegm().
 */
static void walk_days(int64_t y0, int64_t y1, int with_libc)
{
	int64_t y = y0, z, gy;
	unsigned m = 1, d = 1, gm, gd;
	struct tm tm;

	z = tk__days_from_civil(y0, 1, 1);
	for (;;) {
		assert_int_equal(tk__days_from_civil(y, m, d), z);
		tk__civil_from_days(z, &gy, &gm, &gd);
		assert_int_equal(gy, y);
		assert_int_equal(gm, m);
		assert_int_equal(gd, d);
		if (with_libc) {
			tm = (struct tm){ .tm_year = (int)(y - 1900),
					  .tm_mon = (int)m - 1,
					  .tm_mday = (int)d };
			assert_int_equal(timegm(&tm), z * 86400);
		}
		if (y == y1 && m == 12 && d == 31)
			break;
		if (d < month_len(y, m)) {
			d++;
		} else if (m < 12) {
			d = 1;
			m++;
		} else {
			d = 1;
			m = 1;
			y++;
		}
		z++;
	}
}

static void test_civil_round_trip(void **state)
{
	(void)state;
	walk_days(1600, 2400, 1);
	/* Negative years and several era boundaries (year 0 is leap). */
	walk_days(-801, 801, 0);
}

static void expect_date(int64_t z, int64_t y, unsigned m, unsigned d)
{
	int64_t gy;
	unsigned gm, gd;

	tk__civil_from_days(z, &gy, &gm, &gd);
	assert_int_equal(gy, y);
	assert_int_equal(gm, m);
	assert_int_equal(gd, d);
}

static void test_civil_spot_values(void **state)
{
	(void)state;
	assert_int_equal(tk__days_from_civil(1970, 1, 1), 0);
	expect_date(0, 1970, 1, 1);
	expect_date(-1, 1969, 12, 31);
	assert_int_equal(tk__days_from_civil(2000, 3, 1), 11017);
	assert_int_equal(tk__days_from_civil(1600, 1, 1), -135140);
	assert_int_equal(tk__days_from_civil(2400, 12, 31), 157419);
	assert_int_equal(tk__days_from_civil(2026, 5, 28), 20601);
	/* The era starts on 0000-03-01; 0001-01-01 is day 1 of the CE. */
	assert_int_equal(tk__days_from_civil(0, 3, 1), -719468);
	assert_int_equal(tk__days_from_civil(1, 1, 1), -719162);
	expect_date(-719468 - 1, 0, 2, 29);

	/* 2024-02-29 exists; 2100-02-29 does not; 2000-02-29 does. */
	expect_date(tk__days_from_civil(2024, 2, 29), 2024, 2, 29);
	expect_date(tk__days_from_civil(2024, 3, 1) - 1, 2024, 2, 29);
	expect_date(tk__days_from_civil(2100, 3, 1) - 1, 2100, 2, 28);
	expect_date(tk__days_from_civil(2000, 3, 1) - 1, 2000, 2, 29);
	/* Day 0 of a month is the last day of the one before. */
	assert_int_equal(tk__days_from_civil(2024, 3, 0),
			 tk__days_from_civil(2024, 2, 29));
}

static void test_month_periods(void **state)
{
	enum tk__cadence mo = TK__CADENCE_MONTH;

	(void)state;
	/* semantics.md: now = 2026-05-28T12:00Z -> reset at 2026-06-01. */
	expect_period(mo, 0, 0, UINT64_C(1779969600) * NS,
		      UINT64_C(1777593600) * NS, UINT64_C(1780272000) * NS);
	assert_int_equal(utc(2026, 5, 28, 12, 0, 0), UINT64_C(1779969600) * NS);

	/* The last ns of January, then the first of February. */
	expect_period(mo, 0, 0, utc(2025, 2, 1, 0, 0, 0) - 1,
		      utc(2025, 1, 1, 0, 0, 0), utc(2025, 2, 1, 0, 0, 0));
	expect_period(mo, 0, 0, utc(2025, 2, 1, 0, 0, 0),
		      utc(2025, 2, 1, 0, 0, 0), utc(2025, 3, 1, 0, 0, 0));
	expect_period(mo, 0, 0, utc(2025, 1, 31, 23, 0, 0),
		      utc(2025, 1, 1, 0, 0, 0), utc(2025, 2, 1, 0, 0, 0));
	/* December ends in next year's January. */
	expect_period(mo, 0, 0, utc(2025, 12, 15, 8, 0, 0),
		      utc(2025, 12, 1, 0, 0, 0), utc(2026, 1, 1, 0, 0, 0));
	expect_period(mo, 0, 0, utc(2025, 12, 31, 23, 59, 59),
		      utc(2025, 12, 1, 0, 0, 0), utc(2026, 1, 1, 0, 0, 0));

	/* Februaries: 29 days in 2024 and 2000, 28 in 2023 and 2100. */
	expect_period(mo, 0, 0, utc(2024, 2, 29, 12, 0, 0),
		      utc(2024, 2, 1, 0, 0, 0), utc(2024, 3, 1, 0, 0, 0));
	expect_period(mo, 0, 0, utc(2024, 2, 1, 0, 0, 0),
		      utc(2024, 2, 1, 0, 0, 0),
		      utc(2024, 2, 1, 0, 0, 0) + 29 * DAY_NS);
	expect_period(mo, 0, 0, utc(2000, 2, 10, 0, 0, 0),
		      utc(2000, 2, 1, 0, 0, 0),
		      utc(2000, 2, 1, 0, 0, 0) + 29 * DAY_NS);
	expect_period(mo, 0, 0, utc(2023, 2, 10, 0, 0, 0),
		      utc(2023, 2, 1, 0, 0, 0),
		      utc(2023, 2, 1, 0, 0, 0) + 28 * DAY_NS);
	expect_period(mo, 0, 0, utc(2100, 2, 15, 0, 0, 0),
		      utc(2100, 2, 1, 0, 0, 0),
		      utc(2100, 2, 1, 0, 0, 0) + 28 * DAY_NS);
	assert_int_equal(utc(2100, 2, 1, 0, 0, 0) + 28 * DAY_NS,
			 utc(2100, 3, 1, 0, 0, 0));
	/* A 30-day month. */
	expect_period(mo, 0, 0, utc(2026, 4, 30, 23, 0, 0),
		      utc(2026, 4, 1, 0, 0, 0),
		      utc(2026, 4, 1, 0, 0, 0) + 30 * DAY_NS);
}

static void test_week_periods(void **state)
{
	enum tk__cadence wk = TK__CADENCE_WEEK;
	uint64_t now, s, e;
	unsigned ws;
	time_t t;
	struct tm tm;

	(void)state;
	/* 2026-05-28 is a Thursday. */
	now = utc(2026, 5, 28, 12, 0, 0);
	expect_period(wk, 0, 0, now, utc(2026, 5, 25, 0, 0, 0),
		      utc(2026, 6, 1, 0, 0, 0));
	expect_period(wk, 0, 6, now, utc(2026, 5, 24, 0, 0, 0),
		      utc(2026, 5, 31, 0, 0, 0));
	expect_period(wk, 0, 3, now, utc(2026, 5, 28, 0, 0, 0),
		      utc(2026, 6, 4, 0, 0, 0));
	expect_period(wk, 0, 4, now, utc(2026, 5, 22, 0, 0, 0),
		      utc(2026, 5, 29, 0, 0, 0));

	/* On a boundary: the week that starts there. */
	now = utc(2026, 5, 25, 0, 0, 0);
	expect_period(wk, 0, 0, now, now, now + 7 * DAY_NS);
	expect_period(wk, 0, 0, now - 1, now - 7 * DAY_NS, now);
	now = utc(2026, 5, 31, 0, 0, 0);
	expect_period(wk, 0, 6, now, now, now + 7 * DAY_NS);
	expect_period(wk, 0, 6, now - 1, now - 7 * DAY_NS, now);

	/* Across a year end: Wednesday 2025-12-31. */
	expect_period(wk, 0, 0, utc(2025, 12, 31, 18, 0, 0),
		      utc(2025, 12, 29, 0, 0, 0), utc(2026, 1, 5, 0, 0, 0));

	/* Each week_start gives a week starting on that weekday. */
	now = utc(2026, 5, 28, 12, 0, 0);
	for (ws = 0; ws < 7; ws++) {
		assert_int_equal(tk__calendar_period(wk, 0, ws, now, &s, &e),
				 0);
		assert_true(s <= now && now < e);
		assert_int_equal(e - s, 7 * DAY_NS);
		assert_true(now - s < 7 * DAY_NS);
		t = (time_t)(s / NS);
		gmtime_r(&t, &tm);
		assert_int_equal((tm.tm_wday + 6) % 7, ws);
		assert_int_equal(tm.tm_hour, 0);
	}
}

static void test_day_periods(void **state)
{
	enum tk__cadence dy = TK__CADENCE_DAY;
	uint64_t mid;

	(void)state;
	expect_period(dy, 0, 0, utc(2026, 5, 28, 12, 0, 0),
		      utc(2026, 5, 28, 0, 0, 0), utc(2026, 5, 29, 0, 0, 0));
	mid = utc(2026, 5, 29, 0, 0, 0);
	expect_period(dy, 0, 0, mid, mid, mid + DAY_NS);
	expect_period(dy, 0, 0, mid - 1, mid - DAY_NS, mid);
	expect_period(dy, 0, 0, utc(2024, 2, 29, 23, 59, 59),
		      utc(2024, 2, 29, 0, 0, 0), utc(2024, 3, 1, 0, 0, 0));
	expect_period(dy, 0, 0, utc(1999, 12, 31, 23, 59, 59) + NS - 1,
		      utc(1999, 12, 31, 0, 0, 0), utc(2000, 1, 1, 0, 0, 0));
}

static void test_offsets(void **state)
{
	enum tk__cadence dy = TK__CADENCE_DAY, wk = TK__CADENCE_WEEK;
	enum tk__cadence mo = TK__CADENCE_MONTH;
	uint64_t now = utc(2026, 5, 28, 12, 0, 0);

	(void)state;
	/* +02:00: the local day starts at 22:00Z of the UTC day before. */
	expect_period(dy, 2 * HOUR, 0, now, utc(2026, 5, 27, 22, 0, 0),
		      utc(2026, 5, 28, 22, 0, 0));
	expect_period(dy, 2 * HOUR, 0, utc(2026, 5, 28, 22, 0, 0),
		      utc(2026, 5, 28, 22, 0, 0), utc(2026, 5, 29, 22, 0, 0));
	expect_period(dy, 2 * HOUR, 0, utc(2026, 5, 28, 22, 0, 0) - 1,
		      utc(2026, 5, 27, 22, 0, 0), utc(2026, 5, 28, 22, 0, 0));
	/* +14:00: 12:00Z is 02:00 on the 29th locally. */
	expect_period(dy, 14 * HOUR, 0, now, utc(2026, 5, 28, 10, 0, 0),
		      utc(2026, 5, 29, 10, 0, 0));
	/* -14:00: 12:00Z is 22:00 on the 27th locally. */
	expect_period(dy, -14 * HOUR, 0, now, utc(2026, 5, 27, 14, 0, 0),
		      utc(2026, 5, 28, 14, 0, 0));
	/* +05:30: local midnight is 18:30Z. */
	expect_period(dy, 5 * HOUR + 1800, 0, now, utc(2026, 5, 27, 18, 30, 0),
		      utc(2026, 5, 28, 18, 30, 0));
	/* -00:00:01: a one-second offset still moves the boundary. */
	expect_period(dy, -1, 0, utc(2026, 5, 28, 0, 0, 0),
		      utc(2026, 5, 27, 0, 0, 1), utc(2026, 5, 28, 0, 0, 1));

	/* Months: 20:00Z on May 31 is already June at +05:30. */
	expect_period(mo, 5 * HOUR + 1800, 0, utc(2026, 5, 31, 20, 0, 0),
		      utc(2026, 5, 31, 18, 30, 0), utc(2026, 6, 30, 18, 30, 0));
	/* ... and 05:00Z on June 1 is still May at -14:00. */
	expect_period(mo, -14 * HOUR, 0, utc(2026, 6, 1, 5, 0, 0),
		      utc(2026, 5, 1, 14, 0, 0), utc(2026, 6, 1, 14, 0, 0));
	/* New Year at +14:00 comes at 10:00Z on December 31. */
	expect_period(mo, 14 * HOUR, 0, utc(2025, 12, 31, 10, 0, 0),
		      utc(2025, 12, 31, 10, 0, 0), utc(2026, 1, 31, 10, 0, 0));

	/* Weeks: 03:00Z on a Monday is still Sunday at -05:00. */
	expect_period(wk, -5 * HOUR, 0, utc(2026, 5, 25, 3, 0, 0),
		      utc(2026, 5, 18, 5, 0, 0), utc(2026, 5, 25, 5, 0, 0));
	expect_period(wk, 14 * HOUR, 6, utc(2026, 5, 30, 10, 0, 0),
		      utc(2026, 5, 30, 10, 0, 0), utc(2026, 6, 6, 10, 0, 0));
}

static void test_calendar_range(void **state)
{
	enum tk__cadence dy = TK__CADENCE_DAY, wk = TK__CADENCE_WEEK;
	enum tk__cadence mo = TK__CADENCE_MONTH;
	uint64_t max = LIMIT - 1;
	int32_t off;

	(void)state;
	/* UTC: the epoch starts a day, a month, and a Thursday week. */
	expect_period(dy, 0, 0, 0, 0, DAY_NS);
	expect_period(mo, 0, 0, 0, 0, 31 * DAY_NS);
	expect_period(wk, 0, 3, 0, 0, 7 * DAY_NS);
	expect_fails(-ERANGE, wk, 0, 0, 0);
	expect_period(wk, 0, 0, 4 * DAY_NS, 4 * DAY_NS, 11 * DAY_NS);
	expect_fails(-ERANGE, wk, 0, 0, 4 * DAY_NS - 1);

	/* East of UTC the first local day began at -01:00Z. */
	expect_fails(-ERANGE, dy, HOUR, 0, 0);
	expect_fails(-ERANGE, dy, HOUR, 0, 23 * 3600 * NS - 1);
	expect_period(dy, HOUR, 0, 23 * 3600 * NS, 23 * 3600 * NS,
		      47 * 3600 * NS);
	expect_fails(-ERANGE, mo, 14 * HOUR, 0, 0);

	/* West of UTC, local time before 1970 until 01:00Z. */
	expect_fails(-ERANGE, dy, -HOUR, 0, 0);
	expect_fails(-ERANGE, dy, -HOUR, 0, 3600 * NS - 1);
	expect_period(dy, -HOUR, 0, 3600 * NS, 3600 * NS, 25 * 3600 * NS);
	expect_fails(-ERANGE, mo, -1, 0, 0);
	expect_period(mo, -1, 0, NS, NS, 31 * DAY_NS + NS);
	expect_fails(-ERANGE, mo, -14 * HOUR, 0, 13 * 3600 * NS);
	expect_period(mo, -14 * HOUR, 0, 14 * 3600 * NS, 14 * 3600 * NS,
		      (31 * 24 + 14) * 3600 * NS);

	/* 2^63 ns is 2262-04-11T23:47:16.854775808Z. */
	expect_period(dy, 0, 0, utc(2262, 4, 11, 0, 0, 0) - 1,
		      utc(2262, 4, 10, 0, 0, 0), utc(2262, 4, 11, 0, 0, 0));
	expect_fails(-ERANGE, dy, 0, 0, utc(2262, 4, 11, 0, 0, 0));
	expect_period(mo, 0, 0, utc(2262, 3, 31, 0, 0, 0),
		      utc(2262, 3, 1, 0, 0, 0), utc(2262, 4, 1, 0, 0, 0));
	expect_fails(-ERANGE, mo, 0, 0, utc(2262, 4, 1, 0, 0, 0));
	/* At -14:00 the local day of April 10 ends at 14:00Z on the 11th. */
	expect_period(dy, -14 * HOUR, 0, utc(2262, 4, 11, 14, 0, 0) - 1,
		      utc(2262, 4, 10, 14, 0, 0), utc(2262, 4, 11, 14, 0, 0));
	expect_fails(-ERANGE, dy, -14 * HOUR, 0, utc(2262, 4, 11, 14, 0, 0));
	/* At +14:00 that day ends before 2^63, at 10:00Z on the 11th. */
	expect_period(dy, 14 * HOUR, 0, utc(2262, 4, 11, 9, 0, 0),
		      utc(2262, 4, 10, 10, 0, 0), utc(2262, 4, 11, 10, 0, 0));
	/*
	 * The last representable boundary: at +00:12:44 the local day ends
	 * at 23:47:16Z, below 2^63; at +00:12:43 it would end at 23:47:17Z.
	 */
	expect_period(dy, 764, 0, utc(2262, 4, 11, 12, 0, 0),
		      utc(2262, 4, 10, 23, 47, 16),
		      utc(2262, 4, 11, 23, 47, 16));
	expect_fails(-ERANGE, dy, 763, 0, utc(2262, 4, 11, 12, 0, 0));
	for (off = -14 * HOUR; off <= 14 * HOUR; off += 7 * HOUR) {
		expect_fails(-ERANGE, dy, off, 0, max);
		expect_fails(-ERANGE, wk, off, 6, max);
		expect_fails(-ERANGE, mo, off, 0, max);
	}
}

static void test_bad_arguments(void **state)
{
	enum tk__cadence dy = TK__CADENCE_DAY, wk = TK__CADENCE_WEEK;
	uint64_t now = utc(2026, 5, 28, 12, 0, 0), s, e;

	(void)state;
	expect_fails(-EINVAL, dy, 14 * HOUR + 1, 0, now);
	expect_fails(-EINVAL, dy, -14 * HOUR - 1, 0, now);
	expect_fails(-EINVAL, dy, INT32_MIN, 0, now);
	expect_fails(-EINVAL, dy, INT32_MAX, 0, now);
	assert_int_equal(tk__calendar_period(dy, 14 * HOUR, 0, now, &s, &e), 0);
	assert_int_equal(tk__calendar_period(dy, -14 * HOUR, 0, now, &s, &e),
			 0);
	expect_fails(-EINVAL, wk, 0, 7, now);
	expect_fails(-EINVAL, wk, 0, (unsigned)-1, now);
	/* week_start is checked whatever the cadence. */
	expect_fails(-EINVAL, dy, 0, 7, now);
	expect_fails(-EINVAL, (enum tk__cadence)3, 0, 0, now);
	expect_fails(-EINVAL, (enum tk__cadence)(-1), 0, 0, now);
	expect_fails(-EINVAL, dy, 0, 0, LIMIT);
	expect_fails(-EINVAL, dy, 0, 0, UINT64_MAX);
	assert_int_equal(tk__calendar_period(dy, 0, 0, now, NULL, &e), -EINVAL);
	assert_int_equal(tk__calendar_period(dy, 0, 0, now, &s, NULL), -EINVAL);
}

/* splitmix64: a fixed seed keeps failures reproducible. */
static uint64_t rng_next(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Shift by the offset, truncate the broken-down fields, shift back. */
static void oracle(enum tk__cadence c, int32_t off, unsigned ws, uint64_t now,
		   uint64_t *start, uint64_t *end)
{
	time_t t = (time_t)(now / NS) + off;
	struct tm tm, next;

	assert_non_null(gmtime_r(&t, &tm));
	tm.tm_hour = 0;
	tm.tm_min = 0;
	tm.tm_sec = 0;
	tm.tm_isdst = 0;
	if (c == TK__CADENCE_WEEK)
		tm.tm_mday -= ((tm.tm_wday + 6) % 7 - (int)ws + 7) % 7;
	else if (c == TK__CADENCE_MONTH)
		tm.tm_mday = 1;
	next = tm;
	if (c == TK__CADENCE_DAY)
		next.tm_mday += 1;
	else if (c == TK__CADENCE_WEEK)
		next.tm_mday += 7;
	else
		next.tm_mon += 1;
	*start = (uint64_t)(timegm(&tm) - off) * NS;
	*end = (uint64_t)(timegm(&next) - off) * NS;
}

static void test_calendar_property(void **state)
{
	uint64_t x = UINT64_C(20260528), lo, hi, now, s, e, ws_, we_, s2, e2;
	enum tk__cadence c;
	int32_t off;
	unsigned ws;
	int i;

	(void)state;
	lo = utc(1971, 1, 1, 0, 0, 0);
	hi = utc(2200, 1, 1, 0, 0, 0);
	for (i = 0; i < 100000; i++) {
		now = lo + rng_next(&x) % (hi - lo);
		c = (enum tk__cadence)(rng_next(&x) % 3);
		ws = (unsigned)(rng_next(&x) % 7);
		switch (rng_next(&x) % 4) {
		case 0: /* any second */
			off = (int32_t)(rng_next(&x) % (28 * 3600 + 1)) -
			      14 * HOUR;
			break;
		case 1: /* quarter hours, as real zones use */
			off = ((int32_t)(rng_next(&x) % 113) - 56) * 900;
			break;
		case 2:
			off = (rng_next(&x) & 1) ? 14 * HOUR : -14 * HOUR;
			break;
		default:
			off = 0;
			break;
		}
		oracle(c, off, ws, now, &ws_, &we_);
		assert_int_equal(tk__calendar_period(c, off, ws, now, &s, &e),
				 0);
		assert_true(s <= now && now < e);
		assert_int_equal(s, ws_);
		assert_int_equal(e, we_);
		/* Both ends of the period map to the same period ... */
		assert_int_equal(tk__calendar_period(c, off, ws, s, &s2, &e2),
				 0);
		assert_int_equal(s2, s);
		assert_int_equal(e2, e);
		assert_int_equal(
			tk__calendar_period(c, off, ws, e - 1, &s2, &e2), 0);
		assert_int_equal(s2, s);
		assert_int_equal(e2, e);
		/* ... and the exclusive end starts the next one. */
		assert_int_equal(tk__calendar_period(c, off, ws, e, &s2, &e2),
				 0);
		assert_int_equal(s2, e);
		assert_true(e2 > e);
	}
}

struct anchored_case {
	uint64_t period, anchor, now;
	int rc;
	uint64_t start, end;
};

static void run_anchored(const struct anchored_case *tc, size_t n)
{
	uint64_t s, e;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		s = SENTINEL;
		e = SENTINEL;
		rc = tk__anchored_period(tc[i].period, tc[i].anchor, tc[i].now,
					 &s, &e);
		/* Untouched outputs on failure: the sentinel is expected. */
		if (rc != tc[i].rc || s != (rc ? SENTINEL : tc[i].start) ||
		    e != (rc ? SENTINEL : tc[i].end)) {
			print_error("case %zu: rc %d start %" PRIu64
				    " end %" PRIu64 "\n",
				    i, rc, s, e);
			fail();
		}
	}
}

static void test_anchored_exact(void **state)
{
	const uint64_t h = 3600 * NS;
	const struct anchored_case tc[] = {
		{ 10, 5, 5, 0, 5, 15 },
		{ 10, 5, 14, 0, 5, 15 },
		{ 10, 5, 15, 0, 15, 25 },
		{ 10, 5, 1234567, 0, 1234565, 1234575 },
		{ 10, 0, 0, 0, 0, 10 },
		{ 1, 77, 99, 0, 99, 100 },
		/* now before the anchor: floor, not truncation. */
		{ 10, 25, 7, 0, 5, 15 },
		{ 10, 25, 5, 0, 5, 15 },
		{ 10, 25, 15, 0, 15, 25 },
		{ 10, 24, 4, 0, 4, 14 },
		{ 10, 25, 4, -ERANGE, 0, 0 },
		{ 10, 24, 3, -ERANGE, 0, 0 },
		{ 7, 1000000, 3, 0, 1, 8 },
		{ 7, 1000000, 0, -ERANGE, 0, 0 },
		{ h, h / 2, 0, -ERANGE, 0, 0 },
		{ h, h / 2, h / 2, 0, h / 2, h + h / 2 },
		{ h, 100 * h + 1, 3 * h, 0, 2 * h + 1, 3 * h + 1 },
		{ h, 100 * h + 1, 3 * h + 1, 0, 3 * h + 1, 4 * h + 1 },
	};

	(void)state;
	run_anchored(tc, sizeof(tc) / sizeof(tc[0]));
}

static void test_anchored_range(void **state)
{
	const uint64_t m = LIMIT - 1;
	const struct anchored_case tc[] = {
		{ 1, 0, m, -ERANGE, 0, 0 },
		{ 1, 0, m - 1, 0, m - 1, m },
		{ 1, m, m - 1, 0, m - 1, m },
		{ LIMIT, 0, 0, -ERANGE, 0, 0 },
		{ m, 0, 0, 0, 0, m },
		{ m, 0, m - 1, 0, 0, m },
		{ m, 1, 0, -ERANGE, 0, 0 },
		{ UINT64_MAX, 0, 5, -ERANGE, 0, 0 },
		{ UINT64_MAX, m, 0, -ERANGE, 0, 0 },
		{ UINT64_MAX, m, m, -ERANGE, 0, 0 },
		/* 2^63 - 1 = 1 (mod 3), 2^63 - 2 = 0 (mod 3). */
		{ 3, m, 0, -ERANGE, 0, 0 },
		{ 3, m - 1, 0, 0, 0, 3 },
		/* Ends at 2^63 + 1, at exactly 2^63, and just below. */
		{ 3, m - 1, m - 1, -ERANGE, 0, 0 },
		{ 10, m - 9, m - 1, -ERANGE, 0, 0 },
		{ 10, m - 10, m - 1, 0, m - 10, m },
		{ 10, m - 4, m, -ERANGE, 0, 0 },
	};
	uint64_t s, e;

	(void)state;
	run_anchored(tc, sizeof(tc) / sizeof(tc[0]));

	/* Bad arguments, with the outputs untouched. */
	s = SENTINEL;
	e = SENTINEL;
	assert_int_equal(tk__anchored_period(0, 0, 5, &s, &e), -EINVAL);
	assert_int_equal(tk__anchored_period(10, LIMIT, 5, &s, &e), -EINVAL);
	assert_int_equal(tk__anchored_period(10, 0, LIMIT, &s, &e), -EINVAL);
	assert_int_equal(tk__anchored_period(10, 0, UINT64_MAX, &s, &e),
			 -EINVAL);
	assert_int_equal(s, SENTINEL);
	assert_int_equal(e, SENTINEL);
	assert_int_equal(tk__anchored_period(10, 0, 5, NULL, &e), -EINVAL);
	assert_int_equal(tk__anchored_period(10, 0, 5, &s, NULL), -EINVAL);
}

/* The definition, evaluated exactly in 128 bits. */
static int anchored_oracle(uint64_t p, uint64_t a, uint64_t now,
			   uint64_t *start, uint64_t *end)
{
	__int128 d = (__int128)now - (__int128)a, q, s, e;

	q = d / (__int128)p;
	if (d % (__int128)p < 0)
		q--;
	s = (__int128)a + q * (__int128)p;
	e = s + (__int128)p;
	if (s < 0 || e >= (__int128)LIMIT)
		return -ERANGE;
	*start = (uint64_t)s;
	*end = (uint64_t)e;
	return 0;
}

static void test_anchored_property(void **state)
{
	uint64_t x = UINT64_C(42), p, a, now, s, e, ws_, we_;
	int i, rc;

	(void)state;
	for (i = 0; i < 100000; i++) {
		/* Periods of every magnitude, from 1 ns to 2^64 - 1. */
		p = rng_next(&x) >> (rng_next(&x) % 64);
		if (p == 0)
			p = 1;
		a = rng_next(&x) >> (1 + rng_next(&x) % 63);
		now = rng_next(&x) >> (1 + rng_next(&x) % 63);
		if (i % 4 == 0)
			now = a + (rng_next(&x) % 5) * p - 2 + i % 3;
		if (now >= LIMIT)
			continue;
		rc = anchored_oracle(p, a, now, &ws_, &we_);
		assert_int_equal(tk__anchored_period(p, a, now, &s, &e), rc);
		if (rc == 0) {
			assert_true(s <= now && now < e);
			assert_int_equal(s, ws_);
			assert_int_equal(e, we_);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_civil_round_trip),
		cmocka_unit_test(test_civil_spot_values),
		cmocka_unit_test(test_month_periods),
		cmocka_unit_test(test_week_periods),
		cmocka_unit_test(test_day_periods),
		cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_calendar_range),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_calendar_property),
		cmocka_unit_test(test_anchored_exact),
		cmocka_unit_test(test_anchored_range),
		cmocka_unit_test(test_anchored_property),
	};

	return cmocka_run_group_tests_name("calendar", tests, NULL, NULL);
}
