/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c - the header fields that answer a decision: RateLimit-Policy and
 * RateLimit (draft-ietf-httpapi-ratelimit-headers-11), the legacy
 * X-RateLimit-* trio, and Retry-After (RFC 9110 10.2.3).
 *
 * Both draft fields are structured-field Lists (RFC 9651, which obsoletes
 * RFC 8941; draft sections 3 and 4): one member per dimension of every
 * quota, the member an sf-string naming the policy (section 3: "MUST be a
 * String") with the parameters q and w (3.1.1, 3.1.3) or r and t (4.1.1,
 * 4.1.2).  Members are serialized as RFC 9651 4.1.1 does, separated by
 * ", ".  A simple policy's member is its name; dimension i of a composite
 * is "NAME.i", in declaration order, so RateLimit and RateLimit-Policy
 * name the same members.  A composite given without its dimensions'
 * decisions (one tk_limiter_check()) lists every dimension in
 * RateLimit-Policy and, in RateLimit, the one its decision reports
 * (tk_decision.dimension): the draft's RateLimit may name a subset of
 * the policies (section 4), and the deciding one is what a client acts on.
 *
 * Every integer is an sf-integer, at most 15 digits (RFC 9651 3.3.1);
 * counts above 999999999999999 (policies allow 2^62) are clamped to it,
 * which understates a quota rather than refusing to describe it.  Seconds
 * never come near the bound (2^64 ns is 1.8e10 s).
 *
 * Rounding: every duration becomes whole seconds rounded up.  Retry-After
 * and the X-RateLimit-Reset delta then never send a client back before
 * the instant the decision named, and w (3.1.3: "non-zero", no sub-second
 * precision) is at least 1 and never overstates the rate q/w.  The draft
 * gives t (4.1.2) only as delay-seconds; rounding it up keeps it
 * consistent with Retry-After (section 6 asks that Retry-After not point
 * before the end of the effective window).
 *
 * q / w is the sustained rate of every algorithm (policy_qw()): L / P
 * for GCRA, token bucket and the leaky shaper, L / W for the windows and
 * L / period for quotas.  A burst is not a rate: "gcra:3/1s,burst=1"
 * sustains 3/s and says q=3;w=1, not the burst over the time to earn it
 * (1 over 1/3 s, which whole seconds round to q=1;w=1, a third of it).
 *
 * A degraded decision (the store failed and the fail policy decided)
 * knows no quota, so it advertises none: only Retry-After, on a denial.
 *
 * Nothing is allocated and no clock is read; a call either fills every
 * field it returns or fails leaving @fields untouched and @buf empty.
 */
#include "algo/algo.h"
#include "error.h"
#include "algo/calendar.h"
#include "parse.h"

#include <errno.h>

#define NS_PER_S UINT64_C(1000000000)
#define SF_INTEGER_MAX UINT64_C(999999999999999)
#define DAY_S UINT64_C(86400)

/* Whole seconds in @ns, rounded up. */
static uint64_t seconds_up(uint64_t ns)
{
	return ns / NS_PER_S + (ns % NS_PER_S != 0);
}

/* Seconds from @now until @at, rounded up; 0 if @at has passed. */
static uint64_t seconds_until(uint64_t now, uint64_t at)
{
	return at > now ? seconds_up(at - now) : 0;
}

/*
 * The sustained rate of dimension @p as @count units per @ns: L / P as
 * written for GCRA, token bucket and the leaky shaper (the burst or queue
 * is how far a key may run ahead of it, not the rate), L / W for the
 * windows, L / period for a quota (a calendar month counts 31 days, its
 * longest, so the rate is never overstated).
 */
static void rate_of(const struct tk__policy *p, uint64_t *count, uint64_t *ns)
{
	*count = p->limit;
	switch (p->alg->id) {
	case TK__ALG_GCRA:
	case TK__ALG_TOKEN_BUCKET:
		*count = p->u.gcra.rate;
		*ns = p->u.gcra.period;
		return;
	case TK__ALG_LEAKY:
		*count = p->u.leaky.rate;
		*ns = p->u.leaky.period;
		return;
	case TK__ALG_SLIDING_WINDOW:
		*ns = p->u.sliding.window;
		return;
	case TK__ALG_USER: /* its argument per second: no period known */
		*ns = NS_PER_S;
		return;
	case TK__ALG_QUOTA:
		if (p->u.quota.cadence == TK__CADENCE_DAY)
			*ns = DAY_S * NS_PER_S;
		else if (p->u.quota.cadence == TK__CADENCE_WEEK)
			*ns = 7 * DAY_S * NS_PER_S;
		else if (p->u.quota.cadence == TK__CADENCE_MONTH)
			*ns = 31 * DAY_S * NS_PER_S;
		else
			*ns = p->u.quota.period;
		return;
	default: /* fixed-window, sliding-log */
		*ns = p->u.window.window;
		return;
	}
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * q and w (whole seconds, 3.1.3) of dimension @p, with q / w its rate:
 * the count and period as written when the period is whole seconds
 * (100/1m is q=100;w=60), else exactly as the fraction (count x 1 s) /
 * period in lowest terms (10/100ms is q=100;w=1, 1/1500ms q=2;w=3), or,
 * when neither fits sf-integers, w = the period rounded up and q the
 * whole units earned in it (never more than the rate grants).
 */
static void policy_qw(const struct tk__policy *p, uint64_t *q, uint64_t *w)
{
	uint64_t count, ns, g;
	unsigned __int128 x;

	rate_of(p, &count, &ns);
	x = (unsigned __int128)count * NS_PER_S;
	g = ns % NS_PER_S == 0 ? NS_PER_S : gcd(ns, (uint64_t)(x % ns));
	if (x / g <= SF_INTEGER_MAX && ns / g <= SF_INTEGER_MAX) {
		*q = (uint64_t)(x / g);
		*w = ns / g;
		return;
	}
	/* Parsing makes every period at least 1 ns: w >= 1 (3.1.3). */
	*w = seconds_up(ns);
	x = x * *w / ns;
	*q = x < SF_INTEGER_MAX ? (uint64_t)x : SF_INTEGER_MAX;
}

static void put_integer(struct tk__fmt *f, uint64_t v)
{
	tk__fmt(f, "%llu",
		(unsigned long long)(v < SF_INTEGER_MAX ? v : SF_INTEGER_MAX));
}

/* Ends a field value: its NUL, and a new value begins after it. */
static void end_value(struct tk__fmt *f, size_t *off, size_t *n)
{
	tk__fmt(f, "%c", '\0');
	off[++*n] = f->len;
}

/* RFC 9651 3.3.3: printable ASCII only; empty names identify nothing. */
static int name_valid(const char *s)
{
	size_t i;

	if (!s || !*s)
		return 0;
	for (i = 0; s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

/* The sf-string of dimension @i of @q (or of @q itself, if simple). */
static void put_member_name(struct tk__fmt *f, const struct tk_http_quota *q,
			    size_t i)
{
	const char *s;

	tk__fmt(f, "\"");
	for (s = q->name; *s; s++)
		tk__fmt(f, "%s%c", *s == '"' || *s == '\\' ? "\\" : "", *s);
	if (q->policy->n > 1)
		tk__fmt(f, ".%zu", i);
	tk__fmt(f, "\"");
}

/* The decision of dimension @i of @q. */
static const struct tk_decision *decision_of(const struct tk_http_quota *q,
					     size_t i,
					     const struct tk_decision *d)
{
	return q->dims ? &q->dims[i] : d;
}

/*
 * Does RateLimit carry dimension @i of @q?  Every dimension with @dims;
 * without, @d is the one decision there is, that of its dimension (all of
 * a simple policy, the deciding one of a composite).
 */
static int reported(const struct tk_http_quota *q, size_t i,
		    const struct tk_decision *d)
{
	return q->dims || q->policy->n == 1 || i == d->dimension;
}

/*
 * -EINVAL unless every quota has a valid name, a policy and, if that
 * policy is a composite without @dims, a decision @d of one of its
 * dimensions; when @check_limits, each decision must also carry its
 * dimension's limit, which catches decisions from another policy or in
 * another order.
 */
static int check_quotas(const struct tk_http_quota *q, size_t nq,
			const struct tk_decision *d, int check_limits)
{
	size_t k, i;

	if (nq && !q)
		return -EINVAL;
	for (k = 0; k < nq; k++) {
		if (!name_valid(q[k].name) || !q[k].policy ||
		    q[k].policy->n == 0 ||
		    (!q[k].dims && q[k].policy->n > 1 &&
		     d->dimension >= q[k].policy->n))
			return -EINVAL;
		for (i = 0; check_limits && i < q[k].policy->n; i++)
			if (reported(&q[k], i, d) &&
			    decision_of(&q[k], i, d)->limit !=
				    q[k].policy->dim[i].limit)
				return -EINVAL;
	}
	return 0;
}

/* One List of every dimension of every quota: RateLimit-Policy (@policy)
 * or RateLimit. */
static void put_list(struct tk__fmt *f, const struct tk_http_quota *q,
		     size_t nq, const struct tk_decision *d, uint64_t now,
		     int policy)
{
	const struct tk_decision *di;
	const struct tk__policy *p;
	uint64_t qv, wv;
	size_t k, i;
	int first = 1;

	for (k = 0; k < nq; k++) {
		for (i = 0; i < q[k].policy->n; i++) {
			p = &q[k].policy->dim[i];
			di = decision_of(&q[k], i, d);
			if (!policy && !reported(&q[k], i, d))
				continue;
			if (!first)
				tk__fmt(f, ", ");
			first = 0;
			put_member_name(f, &q[k], i);
			if (policy) {
				policy_qw(p, &qv, &wv);
				tk__fmt(f, ";q=");
				put_integer(f, qv);
				tk__fmt(f, ";w=");
				put_integer(f, wv);
				continue;
			}
			tk__fmt(f, ";r=");
			put_integer(f, di->remaining);
			tk__fmt(f, ";t=");
			put_integer(f, seconds_until(now, di->reset_at));
		}
	}
}

static int headers(const struct tk_http_quota *q, size_t nq,
		   const struct tk_decision *d, uint64_t now,
		   unsigned int flags, struct tk_http_field *fields, size_t max,
		   char *buf, size_t len)
{
	const char *name[TK_HTTP_FIELDS_MAX];
	size_t off[TK_HTTP_FIELDS_MAX + 1] = { 0 }, n = 0, i;
	struct tk__fmt f = { buf, len, 0 };
	int quotas, rc;

	if (!d || (flags & ~(TK_HTTP_IETF | TK_HTTP_LEGACY)) ||
	    (!fields && max) || (!buf && len))
		return -EINVAL;
	/* Degraded: no quota to advertise (see the top of this file). */
	quotas = !d->degraded;
	rc = check_quotas(q, nq, d, quotas && (flags & TK_HTTP_IETF));
	if (rc)
		goto fail;
	if (quotas && (flags & TK_HTTP_IETF) && nq) {
		name[n] = "RateLimit-Policy";
		put_list(&f, q, nq, d, now, 1);
		end_value(&f, off, &n);
		name[n] = "RateLimit";
		put_list(&f, q, nq, d, now, 0);
		end_value(&f, off, &n);
	}
	if (quotas && (flags & TK_HTTP_LEGACY)) {
		name[n] = "X-RateLimit-Limit";
		put_integer(&f, d->limit);
		end_value(&f, off, &n);
		name[n] = "X-RateLimit-Remaining";
		put_integer(&f, d->remaining);
		end_value(&f, off, &n);
		name[n] = "X-RateLimit-Reset";
		put_integer(&f, seconds_until(now, d->reset_at));
		end_value(&f, off, &n);
	}
	if (!d->allowed) {
		/* RFC 9110 10.2.3; 0 would invite an immediate retry. */
		name[n] = "Retry-After";
		put_integer(&f,
			    d->retry_after ? seconds_up(d->retry_after) : 1);
		end_value(&f, off, &n);
	}
	rc = -ENOSPC;
	if (f.len > len || n > max)
		goto fail;
	for (i = 0; i < n; i++) {
		fields[i].name = name[i];
		fields[i].value = buf + off[i];
	}
	return (int)n;
fail:
	if (len)
		buf[0] = '\0';
	return rc;
}

TK_API int tk_http_headers(const struct tk_http_quota *q, size_t nq,
			   const struct tk_decision *d, uint64_t now,
			   unsigned int flags, struct tk_http_field *fields,
			   size_t max, char *buf, size_t len)
{
	return tk__rc(headers(q, nq, d, now, flags, fields, max, buf, len));
}
