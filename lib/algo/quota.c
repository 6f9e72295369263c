/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quota.c - calendar quotas: L units per civil month, week or day at a
 * fixed UTC offset, or per fixed period P counted from an anchor.
 *
 * Counting is the fixed-window rule (tk__window_check) over the period
 * [start, next boundary).  State: {period start, count}.  A state stamped
 * with a later period than now's (the clock stepped back) keeps counting
 * in that later period, which is never reopened early.  Periods end
 * before 2^63 (calendar.h), and valid() holds a state's count to L and its
 * start to a period start, so the counting never wraps.
 */
#include "algo/algo.h"
#include "algo/window.h"
#include "algo/calendar.h"
#include "parse.h"

#include <errno.h>
#include <string.h>

#define PERIOD_MAX (UINT64_C(1) << 62)
#define LIMIT_MAX (UINT64_C(1) << 62)
#define FIXED -1 /* quota.cadence of a fixed period */

static const char *const cadences[] = {
	[TK__CADENCE_DAY] = "day",
	[TK__CADENCE_WEEK] = "week",
	[TK__CADENCE_MONTH] = "month",
};

static const char *const weekdays[] = { "mon", "tue", "wed", "thu",
					"fri", "sat", "sun" };

int tk__quota_period(const struct tk__policy *p, uint64_t t, uint64_t *start,
		     uint64_t *end)
{
	int rc;

	if (p->u.quota.cadence == FIXED)
		rc = tk__anchored_period(p->u.quota.period, p->u.quota.anchor,
					 t, start, end);
	else
		rc = tk__calendar_period((enum tk__cadence)p->u.quota.cadence,
					 p->u.quota.offset_s,
					 p->u.quota.week_start, t, start, end);
	/* Only instants outside 1970..2262 have no period. */
	return rc ? -EOVERFLOW : 0;
}

/*
 * @state as {period start, count}, packed or not (see window.h).
 * Returns 0, or -1 for a state no check of @p writes (then st[1] = 0).
 */
static int unpack(const struct tk__policy *p, const uint64_t *state,
		  uint64_t st[2])
{
	uint64_t coarse = tk__window_load(p, state, st), start, end;

	if (!p->word_is_expiry) {
		/* A count belongs to a period that starts at st[0]. */
		if (st[1] == 0 ||
		    (tk__quota_period(p, st[0], &start, &end) == 0 &&
		     start == st[0]))
			return 0;
		st[1] = 0;
		return -1;
	}
	if (coarse == 0 && st[1] == 0)
		return 0; /* no state */
	/* Periods last a coarse unit at least: the instant one unit before
	 * the coarse end lies in the period that ends there. */
	if (coarse == 0 ||
	    tk__quota_period(p, (coarse - 1) << 24, &start, &end) ||
	    !tk__window_ends_at(end, coarse)) {
		st[1] = 0;
		return -1;
	}
	st[0] = start;
	return 0;
}

/* The period to count in: now's, or the state's if that one is later. */
static int current(const struct tk__policy *p, const uint64_t *st, uint64_t now,
		   uint64_t *start, uint64_t *end)
{
	int rc = tk__quota_period(p, now, start, end);

	if (rc == 0 && st[1] > 0 && st[0] > *start)
		rc = tk__quota_period(p, st[0], start, end);
	return rc;
}

static int quota_check(const struct tk__policy *p, const uint64_t *state,
		       uint64_t now, uint64_t cost, uint64_t *next,
		       struct tk_decision *d)
{
	uint64_t st[2], start, end;
	int rc;

	if (cost > p->limit)
		return -ERANGE;
	unpack(p, state, st);
	rc = current(p, st, now, &start, &end);
	return rc ? rc : tk__window_step(p, st, start, end, now, cost, next, d);
}

static int quota_forecast(const struct tk__policy *p, const uint64_t *state,
			  uint64_t now, uint64_t cost, struct tk_decision *d)
{
	uint64_t st[2], start, end;
	int rc;

	if (cost > p->limit)
		return -ERANGE;
	unpack(p, state, st);
	rc = current(p, st, now, &start, &end);
	if (rc)
		return rc;
	return tk__window_forecast(p->limit, st, start, end, now, cost, d);
}

static uint64_t quota_expires(const struct tk__policy *p, const uint64_t *state)
{
	uint64_t st[2], start, end;

	unpack(p, state, st);
	if (st[1] == 0 || tk__quota_period(p, st[0], &start, &end))
		return 0;
	return end;
}

/* A count in a period of @p that has one (above L: see fw_valid()). */
static int quota_valid(const struct tk__policy *p, uint32_t words,
		       const uint64_t *state)
{
	return tk__window_valid(p, words, state, unpack);
}

/* [+-]HH:MM, at most 14:00 either way. */
static int parse_offset(struct tk__parser *ps, int32_t *out)
{
	const char *s = ps->text + ps->pos;
	size_t at = ps->pos;
	int sign, h, m;

	if ((s[0] != '+' && s[0] != '-') || s[1] < '0' || s[1] > '9' ||
	    s[2] < '0' || s[2] > '9' || s[3] != ':' || s[4] < '0' ||
	    s[4] > '5' || s[5] < '0' || s[5] > '9')
		return tk__parse_fail(ps, at, "an offset +HH:MM or -HH:MM");
	sign = s[0] == '-' ? -1 : 1;
	h = (s[1] - '0') * 10 + (s[2] - '0');
	m = (s[4] - '0') * 10 + (s[5] - '0');
	if (h * 60 + m > 14 * 60)
		return tk__parse_fail(ps, at, "an offset of at most 14:00");
	ps->pos += 6;
	*out = sign * (h * 3600 + m * 60);
	return 0;
}

static int parse_weekday(struct tk__parser *ps, uint32_t *out)
{
	uint32_t i;

	for (i = 0; i < 7; i++) {
		if (strncmp(ps->text + ps->pos, weekdays[i], 3) == 0) {
			ps->pos += 3;
			*out = i;
			return 0;
		}
	}
	return tk__parse_fail(ps, ps->pos,
			      "mon, tue, wed, thu, fri, sat or sun");
}

static int parse_cadence(struct tk__policy *p, struct tk__parser *ps)
{
	size_t i, len;

	for (i = 0; i < sizeof(cadences) / sizeof(cadences[0]); i++) {
		len = strlen(cadences[i]);
		if (strncmp(ps->text + ps->pos, cadences[i], len) == 0 &&
		    (ps->text[ps->pos + len] == '\0' ||
		     ps->text[ps->pos + len] == ',' ||
		     ps->text[ps->pos + len] == ')')) {
			ps->pos += len;
			p->u.quota.cadence = (int)i;
			return 0;
		}
	}
	p->u.quota.cadence = FIXED;
	return tk__parse_duration(ps, &p->u.quota.period);
}

static int quota_parse(struct tk__policy *p, struct tk__parser *ps)
{
	int seen_offset = 0, seen_week = 0, seen_anchor = 0, rc;
	size_t start = ps->pos, at;
	const char *name;
	uint64_t limit;
	size_t len;

	rc = tk__parse_uint(ps, &limit);
	if (rc)
		return rc;
	if (ps->text[ps->pos] != '/')
		return tk__parse_fail(ps, ps->pos, "'/'");
	ps->pos++;
	rc = parse_cadence(p, ps);
	if (rc)
		return rc;
	while ((rc = tk__parse_option(ps, 0, &name, &len)) == 1) {
		at = ps->pos - len - 1;
		if (tk__option_is(name, len, "offset") && !seen_offset++ &&
		    p->u.quota.cadence != FIXED)
			rc = parse_offset(ps, &p->u.quota.offset_s);
		else if (tk__option_is(name, len, "week-start") &&
			 !seen_week++ && p->u.quota.cadence == TK__CADENCE_WEEK)
			rc = parse_weekday(ps, &p->u.quota.week_start);
		else if (tk__option_is(name, len, "anchor") && !seen_anchor++ &&
			 p->u.quota.cadence == FIXED)
			rc = tk__parse_uint(ps, &p->u.quota.anchor);
		else
			return tk__parse_fail(
				ps, at,
				p->u.quota.cadence == FIXED
					? "one option anchor=NS"
					: "offset=+HH:MM or, for "
					  "weeks, week-start=DAY");
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	if (limit == 0 || limit > LIMIT_MAX)
		return tk__parse_fail(ps, start, "a limit of 1 to 2^62");
	if (p->u.quota.cadence == FIXED &&
	    (p->u.quota.period == 0 || p->u.quota.period > PERIOD_MAX ||
	     p->u.quota.anchor >= (UINT64_C(1) << 63)))
		return tk__parse_fail(ps, start,
				      "a period of 1 ns to 2^62 ns and an "
				      "anchor below 2^63");
	/* Calendar periods last a day at least. */
	p->word_is_expiry = tk__window_packs(
		p->u.quota.cadence == FIXED ? p->u.quota.period : UINT64_MAX,
		limit);
	p->state_words = p->word_is_expiry ? 1 : 2;
	p->limit = limit;
	return 0;
}

static void quota_format(const struct tk__policy *p, struct tk__fmt *f)
{
	int32_t off = p->u.quota.offset_s;
	int32_t a = off < 0 ? -off : off;

	tk__fmt(f, "quota:%llu/", (unsigned long long)p->limit);
	if (p->u.quota.cadence == FIXED) {
		tk__fmt_duration(f, p->u.quota.period);
		if (p->u.quota.anchor)
			tk__fmt(f, ",anchor=%llu",
				(unsigned long long)p->u.quota.anchor);
		return;
	}
	tk__fmt(f, "%s", cadences[p->u.quota.cadence]);
	if (off)
		tk__fmt(f, ",offset=%c%02d:%02d", off < 0 ? '-' : '+',
			(int)(a / 3600), (int)(a % 3600 / 60));
	if (p->u.quota.week_start)
		tk__fmt(f, ",week-start=%s", weekdays[p->u.quota.week_start]);
}

/* Packed or not, and the calendar: where a count's period starts. */
static size_t quota_layout(const struct tk__policy *p, unsigned char *buf)
{
	uint32_t off = (uint32_t)p->u.quota.offset_s;

	buf[0] = (unsigned char)p->state_words;
	buf[1] = (unsigned char)(p->u.quota.cadence + 1);
	buf[2] = (unsigned char)p->u.quota.week_start;
	buf[3] = (unsigned char)(off >> 24);
	buf[4] = (unsigned char)(off >> 16);
	buf[5] = (unsigned char)(off >> 8);
	buf[6] = (unsigned char)off;
	tk__layout_u64(buf + 7, p->u.quota.period);
	tk__layout_u64(buf + 15, p->u.quota.anchor);
	return 23;
}

const struct tk__algorithm tk__quota = {
	.name = "quota",
	.id = TK__ALG_QUOTA,
	.parse = quota_parse,
	.format = quota_format,
	.check = quota_check,
	.forecast = quota_forecast,
	.expires = quota_expires,
	.valid = quota_valid,
	.layout = quota_layout,
};
