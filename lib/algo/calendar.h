/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * calendar.h - the periods of a quota: civil days, weeks and months at a
 * fixed UTC offset, or fixed-length periods from an anchor.
 *
 * Every function here is pure: no clock, no time zone database, no global
 * state.  They are safe from any thread, async-signal-safe, never block,
 * and work unchanged in the child after fork().
 */
#ifndef TK_CALENDAR_H
#define TK_CALENDAR_H

#include <stdint.h>

enum tk__cadence { TK__CADENCE_DAY, TK__CADENCE_WEEK, TK__CADENCE_MONTH };

/* Largest offset from UTC in seconds, either way (UTC+14:00, Kiribati). */
#define TK__CALENDAR_OFFSET_MAX (14 * 3600)

/*
 * tk__days_from_civil() - days since 1970-01-01 of the proleptic Gregorian
 * date @y-@m-@d (H. Hinnant's days_from_civil).
 *
 * @m is 1..12.  @d counts on linearly, so d = 0 is the last day of the
 * previous month.  Exact for |y| <= 2^40; negative days are dates before
 * 1970 (year 0 is 1 BC).
 */
int64_t tk__days_from_civil(int64_t y, unsigned m, unsigned d);

/*
 * tk__civil_from_days() - the proleptic Gregorian date of day @z since
 * 1970-01-01 (H. Hinnant's civil_from_days), the inverse of
 * tk__days_from_civil().  Exact for |z| <= 2^48.  Sets *y, *m (1..12) and
 * *d (1..31); none may be NULL.
 */
void tk__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/*
 * tk__calendar_period() - the calendar period that contains @now.
 *
 * @c:          civil day, week or month.
 * @offset_s:   the fixed UTC offset in seconds east of UTC; no DST.
 * @week_start: first day of a week, 0 = Monday ... 6 = Sunday.  Checked
 *              for every cadence, so pass 0 when it does not matter.
 * @now:        ns since the epoch, below 2^63.
 * @start:      set to the first ns of the period (inclusive).
 * @end:        set to the first ns of the next period (exclusive).
 *
 * Returns 0 with *start <= @now < *end; -EINVAL if @c is not a cadence,
 * |@offset_s| > 14:00, @week_start > 6, @now >= 2^63 or a pointer is NULL;
 * -ERANGE if the period starts before 1970-01-01T00:00Z (only periods that
 * begin in local time before the epoch, e.g. the day of @now = 0 at
 * offset +01:00) or *end would reach 2^63 (the day, week or month around
 * 2262-04-11T23:47:16Z).  *start and *end are written only on success.
 */
int tk__calendar_period(enum tk__cadence c, int32_t offset_s,
			unsigned week_start, uint64_t now, uint64_t *start,
			uint64_t *end);

/*
 * tk__anchored_period() - the fixed-length period that contains @now:
 * start = anchor + floor((now - anchor) / period) * period, rounding
 * toward minus infinity when @now < @anchor; end = start + period.
 *
 * @period: length in ns, > 0.
 * @anchor: any period boundary, ns since the epoch, below 2^63; it may
 *          lie after @now.
 * @now:    ns since the epoch, below 2^63.
 *
 * Returns 0 with *start <= @now < *end; -EINVAL if @period is 0, @anchor
 * or @now >= 2^63, or a pointer is NULL; -ERANGE if start would be
 * negative or end would reach 2^63.  *start and *end are written only on
 * success.
 */
int tk__anchored_period(uint64_t period, uint64_t anchor, uint64_t now,
			uint64_t *start, uint64_t *end);

#endif /* TK_CALENDAR_H */
