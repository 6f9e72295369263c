/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * calendar.c - quota periods: civil days, weeks and months at a fixed UTC
 * offset, and fixed-length periods from an anchor.
 *
 * Dates are converted with Howard Hinnant's days_from_civil and
 * civil_from_days ("chrono-Compatible Low-Level Date Algorithms",
 * https://howardhinnant.github.io/date_algorithms.html), written here from
 * that description.  The proleptic Gregorian calendar repeats every 400
 * years ("era"), which hold exactly 146097 days.  Within an era the year is
 * counted from March, so the leap day is the last day of its year and the
 * day of the year follows from the month by the linear formula
 * (153 * mp + 2) / 5 with mp = 0 for March.  Only the era needs floor
 * division, so both conversions use integer arithmetic only and are exact
 * for negative years too; everything past the era is non-negative.
 *
 * A period in local time is found by shifting @now into local seconds
 * (offset_s east of UTC is added), taking the local day by floor division
 * (local time may be before 1970), moving to the first day of the week or
 * month, and shifting the local midnights back to UTC.  Offsets are whole
 * seconds, so the sub-second part of @now never moves a boundary.
 * 1970-01-01 was a Thursday, which fixes the weekday of every day.
 *
 * Overflow: @now < 2^63 ns is under 2^34 seconds and 2^27 days, so all the
 * int64_t sums below are far from their limits; the results are checked
 * against [0, 2^63) before they are scaled back to ns.
 */
#include "algo/calendar.h"

#include <errno.h>

#define NS_PER_S INT64_C(1000000000)
#define SECS_PER_DAY INT64_C(86400)
#define TIME_LIMIT (UINT64_C(1) << 63) /* ns: no time reaches it */
/* Days from 0000-03-01, the first day of an era, to 1970-01-01. */
#define EPOCH_FROM_ERA INT64_C(719468)
#define DAYS_PER_ERA INT64_C(146097)
#define EPOCH_WEEKDAY 3 /* 1970-01-01 was a Thursday; Monday is 0 */

int64_t tk__days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe, mp;

	/* January and February belong to the year that began last March. */
	if (m <= 2)
		y--;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	mp = m > 2 ? (int64_t)m - 3 : (int64_t)m + 9;
	doy = (153 * mp + 2) / 5 + (int64_t)d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * DAYS_PER_ERA + doe - EPOCH_FROM_ERA;
}

void tk__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += EPOCH_FROM_ERA;
	era = (z >= 0 ? z : z - (DAYS_PER_ERA - 1)) / DAYS_PER_ERA;
	doe = z - era * DAYS_PER_ERA;
	/* The three corrections undo the leap days before day doe. */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* @b > 0; rounds toward minus infinity, unlike C's division. */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if (a % b < 0)
		q--;
	return q;
}

/* @b > 0; the result is in [0, b). */
static int64_t floor_mod(int64_t a, int64_t b)
{
	return a - floor_div(a, b) * b;
}

int tk__calendar_period(enum tk__cadence c, int32_t offset_s,
			unsigned week_start, uint64_t now, uint64_t *start,
			uint64_t *end)
{
	int64_t day, first, next, start_s, end_s, y;
	unsigned m, d;

	if (!start || !end || now >= TIME_LIMIT || week_start > 6 ||
	    offset_s < -TK__CALENDAR_OFFSET_MAX ||
	    offset_s > TK__CALENDAR_OFFSET_MAX)
		return -EINVAL;
	day = floor_div((int64_t)(now / NS_PER_S) + offset_s, SECS_PER_DAY);
	switch (c) {
	case TK__CADENCE_DAY:
		first = day;
		next = day + 1;
		break;
	case TK__CADENCE_WEEK:
		/* Step back to the latest day that is a week_start. */
		first = day -
			floor_mod(day + EPOCH_WEEKDAY - (int64_t)week_start, 7);
		next = first + 7;
		break;
	case TK__CADENCE_MONTH:
		tk__civil_from_days(day, &y, &m, &d);
		first = day - ((int64_t)d - 1);
		next = m == 12 ? tk__days_from_civil(y + 1, 1, 1)
			       : tk__days_from_civil(y, m + 1, 1);
		break;
	default:
		return -EINVAL;
	}
	start_s = first * SECS_PER_DAY - offset_s;
	end_s = next * SECS_PER_DAY - offset_s;
	if (start_s < 0 || end_s > INT64_MAX / NS_PER_S)
		return -ERANGE;
	*start = (uint64_t)(start_s * NS_PER_S);
	*end = (uint64_t)(end_s * NS_PER_S);
	return 0;
}

int tk__anchored_period(uint64_t period, uint64_t anchor, uint64_t now,
			uint64_t *start, uint64_t *end)
{
	uint64_t s, back, q;

	if (!start || !end || period == 0 || anchor >= TIME_LIMIT ||
	    now >= TIME_LIMIT)
		return -EINVAL;
	if (now >= anchor) {
		s = anchor + (now - anchor) / period * period;
	} else {
		/* Step back q = ceil((anchor - now) / period) periods. */
		back = anchor - now;
		q = back / period + (back % period != 0);
		/* q * period > anchor, tested without forming the product. */
		if (q > anchor / period)
			return -ERANGE;
		s = anchor - q * period;
	}
	if (period >= TIME_LIMIT - s)
		return -ERANGE;
	*start = s;
	*end = s + period;
	return 0;
}
