/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy-build.c - policies from numbers (tk_policy_build()).
 *
 * - The policy string stays the one canonical form: a build writes the
 *   string its numbers spell and parses it, so that a built policy is
 *   the parsed one, bit for bit, checked by the same code with the same
 *   errors, and tk_policy_format() of it round-trips.
 * - Durations are written in ns, exactly; the parser takes them so, and
 *   the formatter picks the shortest spelling.
 * - What the grammar cannot spell is refused here, before any text: a
 *   field the algorithm does not take (a bucket count for GCRA), an
 *   offset of seconds, an unknown algorithm, cadence or kind.  Each
 *   refusal names the field, as the parser names what it expected.
 */
#include "algo/policy.h"
#include "error.h"
#include "parse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Longest string of one dimension: its name and ten 20-digit numbers. */
#define DIM_TEXT_MAX 320
#define OFFSET_SPELLED_S (99 * 3600 + 59 * 60)

static const char *const weekdays[] = { "mon", "tue", "wed", "thu",
					"fri", "sat", "sun" };
static const char *const cadences[] = { "", "day", "week", "month" };

static int refuse(struct tk_parse_error *err, size_t at, const char *what)
{
	if (err) {
		err->position = at;
		snprintf(err->message, sizeof(err->message),
			 "expected %s at position %zu", what, at);
	}
	return -EINVAL;
}

static void put_u(struct tk__fmt *f, uint64_t v)
{
	tk__fmt(f, "%llu", (unsigned long long)v);
}

/* The quota's cadence and options; a field the cadence has no use for
 * must be 0. */
static const char *quota_text(const struct tk_policy_params *p,
			      struct tk__fmt *f)
{
	int32_t a = p->offset < 0 ? -p->offset : p->offset;

	if (p->cadence > TK_CADENCE_MONTH)
		return "a cadence TK_CADENCE_PERIOD, _DAY, _WEEK or _MONTH";
	if (p->cadence == TK_CADENCE_PERIOD) {
		if (p->offset || p->week_start)
			return "offset and week_start 0 for a fixed period";
		put_u(f, p->period);
		tk__fmt(f, "ns");
		if (p->anchor) {
			tk__fmt(f, ",anchor=");
			put_u(f, p->anchor);
		}
		return NULL;
	}
	if (p->period || p->anchor)
		return "period and anchor 0 for a calendar quota";
	if (p->offset % 60)
		return "an offset of whole minutes";
	/* Beyond 14:00 is the parser's to refuse; beyond 99:59, no
	 * string spells it. */
	if (p->offset > OFFSET_SPELLED_S || p->offset < -OFFSET_SPELLED_S)
		return "an offset of at most 14:00";
	if (p->week_start > 6 ||
	    (p->week_start && p->cadence != TK_CADENCE_WEEK))
		return "week_start 0 to 6, and only for weeks";
	tk__fmt(f, "%s", cadences[p->cadence]);
	if (p->offset)
		tk__fmt(f, ",offset=%c%02d:%02d", p->offset < 0 ? '-' : '+',
			(int)(a / 3600), (int)(a % 3600 / 60));
	if (p->week_start)
		tk__fmt(f, ",week-start=%s", weekdays[p->week_start]);
	return NULL;
}

/*
 * The string of dimension @p into @f: NULL, or what the fields should
 * have been.  A field the algorithm does not take must be 0.
 */
static const char *dim_text(const struct tk_policy_params *p, struct tk__fmt *f)
{
	static const char *const names[] = { "",
					     "gcra",
					     "token-bucket",
					     "fixed-window",
					     "sliding-window",
					     "sliding-log",
					     "quota",
					     "leaky" };
	int bucket = p->algorithm == TK_ALG_TOKEN_BUCKET;

	if (p->algorithm < TK_ALG_GCRA || p->algorithm > TK_ALG_LEAKY)
		return "an algorithm TK_ALG_GCRA to TK_ALG_LEAKY";
	if ((p->burst && p->algorithm != TK_ALG_GCRA && !bucket) ||
	    (p->buckets && p->algorithm != TK_ALG_SLIDING_WINDOW) ||
	    (p->max_queue && p->algorithm != TK_ALG_LEAKY))
		return "burst, buckets and max_queue only where the "
		       "algorithm takes them";
	if (p->algorithm != TK_ALG_QUOTA &&
	    (p->cadence || p->offset || p->week_start || p->anchor))
		return "cadence, offset, week_start and anchor 0 but for "
		       "quotas";
	tk__fmt(f, "%s:", names[p->algorithm]);
	if (bucket) {
		tk__fmt(f, "capacity=");
		put_u(f, p->burst);
		tk__fmt(f, ",refill=");
	}
	put_u(f, p->limit);
	tk__fmt(f, "/");
	if (p->algorithm == TK_ALG_QUOTA)
		return quota_text(p, f);
	put_u(f, p->period);
	tk__fmt(f, "ns");
	if (p->burst && !bucket) {
		tk__fmt(f, ",burst=");
		put_u(f, p->burst);
	}
	if (p->buckets) {
		tk__fmt(f, ",buckets=");
		put_u(f, p->buckets);
	}
	if (p->max_queue) {
		tk__fmt(f, ",max-queue=");
		put_u(f, p->max_queue);
		tk__fmt(f, "ns");
	}
	return NULL;
}

/* Dimension @i of @dims, read as far as its .size says (the rest 0). */
static void dim_at(const struct tk_policy_params *dims, size_t i,
		   struct tk_policy_params *out)
{
	size_t size = dims[0].size;
	const char *at = (const char *)dims + i * size;

	memset(out, 0, sizeof(*out));
	memcpy(out, at, size < sizeof(*out) ? size : sizeof(*out));
}

static int build(struct tk_policy **out, unsigned int kind,
		 const struct tk_policy_params *dims, size_t n,
		 struct tk_parse_error *err)
{
	char text[4 + TK_DIMENSIONS_MAX * (DIM_TEXT_MAX + 1) + 2];
	struct tk__fmt f = { text, sizeof(text), 0 };
	struct tk_policy_params p;
	const char *bad;
	size_t i;

	if (!out || !dims || dims[0].size == 0 || n == 0 ||
	    n > TK_DIMENSIONS_MAX || kind > TK_POLICY_ANY ||
	    (kind == TK_POLICY_SIMPLE && n != 1))
		return refuse(err, 0,
			      "a kind and 1 to 8 dimensions (1 if simple)");
	if (kind != TK_POLICY_SIMPLE)
		tk__fmt(&f, "%s(", kind == TK_POLICY_ALL ? "all" : "any");
	for (i = 0; i < n; i++) {
		dim_at(dims, i, &p);
		if (i)
			tk__fmt(&f, ",");
		bad = dim_text(&p, &f);
		if (bad)
			return refuse(err, f.len, bad);
	}
	if (kind != TK_POLICY_SIMPLE)
		tk__fmt(&f, ")");
	if (f.len >= sizeof(text)) /* cannot be: DIM_TEXT_MAX bounds it */
		return -ENOMEM;
	return tk__policy_parse(out, text, err);
}

TK_API int tk_policy_build(struct tk_policy **out, unsigned int kind,
			   const struct tk_policy_params *dims, size_t n,
			   struct tk_parse_error *err)
{
	return tk__rc(build(out, kind, dims, n, err));
}
