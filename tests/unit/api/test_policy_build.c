/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_build.c - tk_policy_build(): policies from numbers are the
 * parsed ones.  Generated parameters of every algorithm and of all() and
 * any(), some out of range, are built and also written as a policy string
 * in spellings of their own (durations in the largest exact unit) and
 * parsed: both succeed or both fail with the same message; a built
 * policy formats as the parsed one, and parsing its format gives it back.
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
#include "rnd.h"

#define ROUNDS 20000
#define BIG (UINT64_C(1) << 62)

struct text {
	char s[2048];
	size_t len;
};

static void put(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t->len += (size_t)vsnprintf(t->s + t->len, sizeof(t->s) - t->len, fmt,
				    ap);
	va_end(ap);
	assert_true(t->len < sizeof(t->s));
}

/* @ns in the largest unit that writes it exactly, as a person would. */
static void put_duration(struct text *t, uint64_t ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = { { "d", 86400 * SEC }, { "h", 3600 * SEC },
		      { "m", 60 * SEC },    { "s", SEC },
		      { "ms", MS },	    { "us", US } };
	size_t i;

	for (i = 0; ns && i < sizeof(units) / sizeof(units[0]); i++)
		if (ns % units[i].ns == 0) {
			put(t, "%llu%s", (unsigned long long)(ns / units[i].ns),
			    units[i].unit);
			return;
		}
	put(t, "%lluns", (unsigned long long)ns);
}

/* Mostly valid, now and then at or past a bound. */
static uint64_t count(uint64_t *r)
{
	switch (rnd_range(r, 0, 19)) {
	case 0:
		return 0;
	case 1:
		return BIG;
	case 2:
		return BIG + 1;
	default:
		return rnd_range(r, 1, rnd_range(r, 0, 1) ? 100 : 1000000);
	}
}

static uint64_t duration(uint64_t *r)
{
	static const uint64_t round[] = { 1,	    US,		MS,	    SEC,
					  60 * SEC, 3600 * SEC, 86400 * SEC };

	switch (rnd_range(r, 0, 29)) {
	case 0:
		return 0;
	case 1:
		return BIG + 1;
	default:
		return rnd_range(r, 1, 1000) * round[rnd_range(r, 0, 6)];
	}
}

/* One dimension: params into @p, and the same as a string into @t. */
static void gen_dim(uint64_t *r, struct tk_policy_params *p, struct text *t)
{
	static const char *const days[] = { "mon", "tue", "wed", "thu",
					    "fri", "sat", "sun" };
	static const char *const cad[] = { "", "day", "week", "month" };
	int32_t a;

	*p = (struct tk_policy_params)TK_POLICY_PARAMS_INIT;
	p->algorithm = (unsigned int)rnd_range(r, TK_ALG_GCRA, TK_ALG_LEAKY);
	p->limit = count(r);
	switch (p->algorithm) {
	case TK_ALG_GCRA:
		p->period = duration(r);
		p->burst = rnd_range(r, 0, 1) ? count(r) : 0;
		put(t, "gcra:%llu/", (unsigned long long)p->limit);
		put_duration(t, p->period);
		if (p->burst)
			put(t, ",burst=%llu", (unsigned long long)p->burst);
		return;
	case TK_ALG_TOKEN_BUCKET:
		p->period = duration(r);
		p->burst = count(r);
		/* The parser names the first bad option: the canonical
		 * order, capacity first. */
		put(t, "token-bucket:capacity=%llu,refill=%llu/",
		    (unsigned long long)p->burst, (unsigned long long)p->limit);
		put_duration(t, p->period);
		return;
	case TK_ALG_FIXED_WINDOW:
	case TK_ALG_SLIDING_LOG:
		p->period = duration(r);
		put(t, "%s:%llu/",
		    p->algorithm == TK_ALG_SLIDING_LOG ? "sliding-log"
						       : "fixed-window",
		    (unsigned long long)p->limit);
		put_duration(t, p->period);
		return;
	case TK_ALG_SLIDING_WINDOW:
		p->buckets = rnd_range(r, 0, 2) ? rnd_range(r, 0, 70) : 0;
		p->period = duration(r);
		if (p->buckets && rnd_range(r, 0, 1))
			p->period = rnd_range(r, 1, 1000) * p->buckets * MS;
		put(t, "sliding-window:%llu/", (unsigned long long)p->limit);
		put_duration(t, p->period);
		if (p->buckets)
			put(t, ",buckets=%llu", (unsigned long long)p->buckets);
		return;
	case TK_ALG_LEAKY:
		p->period = duration(r);
		p->max_queue = rnd_range(r, 0, 1) ? duration(r) : 0;
		put(t, "leaky:%llu/", (unsigned long long)p->limit);
		put_duration(t, p->period);
		if (p->max_queue) {
			put(t, ",max-queue=");
			put_duration(t, p->max_queue);
		}
		return;
	default:
		break;
	}
	p->cadence =
		(unsigned int)rnd_range(r, TK_CADENCE_PERIOD, TK_CADENCE_MONTH);
	put(t, "quota:%llu/", (unsigned long long)p->limit);
	if (p->cadence == TK_CADENCE_PERIOD) {
		p->period = duration(r);
		p->anchor = rnd_range(r, 0, 1) ? rnd_range(r, 0, BIG) : 0;
		put_duration(t, p->period);
		if (p->anchor)
			put(t, ",anchor=%llu", (unsigned long long)p->anchor);
		return;
	}
	/* Whole minutes, up to 14:59 either way. */
	p->offset = rnd_range(r, 0, 1)
			    ? (int32_t)rnd_range(r, 0, 2 * 899) * 60 - 899 * 60
			    : 0;
	if (p->cadence == TK_CADENCE_WEEK)
		p->week_start = (unsigned int)rnd_range(r, 0, 6);
	put(t, "%s", cad[p->cadence]);
	if (p->week_start)
		put(t, ",week-start=%s", days[p->week_start]);
	a = p->offset < 0 ? -p->offset : p->offset;
	if (p->offset)
		put(t, ",offset=%c%02d:%02d", p->offset < 0 ? '-' : '+',
		    (int)(a / 3600), (int)(a % 3600 / 60));
}

/* The parser's message without its position, which differs between
 * two spellings of one policy. */
static void what_of(const struct tk_parse_error *e, char *out, size_t len)
{
	const char *at = strstr(e->message, " at position");

	snprintf(out, len, "%.*s",
		 (int)(at ? (size_t)(at - e->message) : strlen(e->message)),
		 e->message);
}

/* Built and parsed agree: same error, or the same policy. */
static void agree(unsigned int kind, const struct tk_policy_params *d, size_t n,
		  const char *text)
{
	struct tk_parse_error eb, ep;
	struct tk_policy *b = NULL, *p = NULL, *again = NULL;
	char fb[2048], fp[2048], fa[2048], wb[128], wp[128];
	int rb, rp;

	rb = tk_policy_build(&b, kind, d, n, &eb);
	rp = tk_policy_parse(&p, text, &ep);
	if (rb != rp)
		fail_msg("%s: build %d, parse %d (%s)", text, rb, rp,
			 rp ? ep.message : "");
	if (rb) {
		what_of(&eb, wb, sizeof(wb));
		what_of(&ep, wp, sizeof(wp));
		if (strcmp(wb, wp))
			fail_msg("%s: build says \"%s\", parse \"%s\"", text,
				 eb.message, ep.message);
		return;
	}
	assert_true(tk_policy_format(b, fb, sizeof(fb)) < (int)sizeof(fb));
	assert_true(tk_policy_format(p, fp, sizeof(fp)) < (int)sizeof(fp));
	if (strcmp(fb, fp))
		fail_msg("%s: built \"%s\", parsed \"%s\"", text, fb, fp);
	assert_rc(tk_policy_parse(&again, fb, NULL), 0);
	tk_policy_format(again, fa, sizeof(fa));
	assert_string_equal(fa, fb);
	/* The same states: every dimension keeps its counts across. */
	assert_int_equal(tk_policy_change(b, again), (1 << n) - 1);
	assert_int_equal(tk_policy_change(p, b), (1 << n) - 1);
	assert_int_equal(tk_policy_dimensions(b), n);
	tk_policy_free(again);
	tk_policy_free(b);
	tk_policy_free(p);
}

static void test_simple_agrees_with_parser(void **state)
{
	struct tk_policy_params d;
	uint64_t r = 0x5eed;
	struct text t;
	int i;

	(void)state;
	for (i = 0; i < ROUNDS; i++) {
		t.len = 0;
		t.s[0] = '\0';
		gen_dim(&r, &d, &t);
		agree(TK_POLICY_SIMPLE, &d, 1, t.s);
	}
}

static void test_composites_agree_with_parser(void **state)
{
	struct tk_policy_params d[TK_DIMENSIONS_MAX];
	uint64_t r = 0xc0ffee;
	struct text t;
	size_t n, i;
	int round;
	unsigned int kind;

	(void)state;
	for (round = 0; round < ROUNDS / 4; round++) {
		kind = (unsigned int)rnd_range(&r, TK_POLICY_ALL,
					       TK_POLICY_ANY);
		n = (size_t)rnd_range(&r, 1, TK_DIMENSIONS_MAX);
		t.len = 0;
		put(&t, "%s(", kind == TK_POLICY_ALL ? "all" : "any");
		for (i = 0; i < n; i++) {
			if (i)
				put(&t, ",");
			gen_dim(&r, &d[i], &t);
		}
		put(&t, ")");
		agree(kind, d, n, t.s);
	}
}

/* What no string spells is refused before any text, and says what. */
static void test_refused(void **state)
{
	struct tk_policy_params d[TK_DIMENSIONS_MAX + 1];
	struct tk_parse_error e;
	struct tk_policy *p = NULL;
	size_t i;

	(void)state;
	for (i = 0; i <= TK_DIMENSIONS_MAX; i++) {
		d[i] = (struct tk_policy_params)TK_POLICY_PARAMS_INIT;
		d[i].algorithm = TK_ALG_FIXED_WINDOW;
		d[i].limit = 5;
		d[i].period = SEC;
	}
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), 0);
	tk_policy_free(p);
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 2, &e), -EINVAL);
	assert_rc(tk_policy_build(&p, TK_POLICY_ANY + 1, d, 1, &e), -EINVAL);
	assert_rc(tk_policy_build(&p, TK_POLICY_ALL, d, 0, &e), -EINVAL);
	assert_rc(tk_policy_build(&p, TK_POLICY_ALL, d, TK_DIMENSIONS_MAX, &e),
		  0);
	tk_policy_free(p);
	assert_rc(tk_policy_build(&p, TK_POLICY_ALL, d, TK_DIMENSIONS_MAX + 1,
				  &e),
		  -EINVAL);
	assert_rc(tk_policy_build(NULL, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, NULL, 1, &e), -EINVAL);
	d[0].burst = 2; /* a window has no burst */
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	assert_non_null(strstr(e.message, "burst"));
	d[0].burst = 0;
	d[0].algorithm = 0;
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	d[0].algorithm = TK_ALG_LEAKY + 1;
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	d[0].algorithm = TK_ALG_QUOTA;
	d[0].period = 0;
	d[0].cadence = TK_CADENCE_DAY;
	d[0].offset = 90; /* not whole minutes */
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	assert_non_null(strstr(e.message, "whole minutes"));
	d[0].offset = 0;
	d[0].week_start = 3; /* not a week */
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	d[0].cadence = TK_CADENCE_WEEK;
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), 0);
	tk_policy_free(p);
	d[0].cadence = TK_CADENCE_MONTH + 1;
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
	d[0].size = 0;
	assert_rc(tk_policy_build(&p, TK_POLICY_SIMPLE, d, 1, &e), -EINVAL);
}

/* A program built against a smaller structure: the fields past its
 * .size are 0, and elements are .size apart. */
static void test_older_size(void **state)
{
	struct old {
		size_t size;
		unsigned int algorithm;
		uint64_t limit, period, burst;
	} d[2] = { { offsetof(struct tk_policy_params, buckets), TK_ALG_GCRA, 3,
		     SEC, 0 },
		   { offsetof(struct tk_policy_params, buckets), TK_ALG_GCRA, 7,
		     60 * SEC, 9 } };
	struct tk_policy *p;
	char text[128];

	(void)state;
	_Static_assert(sizeof(struct old) ==
			       offsetof(struct tk_policy_params, buckets),
		       "an older prefix of the structure");
	assert_rc(tk_policy_build(&p, TK_POLICY_ANY,
				  (const struct tk_policy_params *)d, 2, NULL),
		  0);
	tk_policy_format(p, text, sizeof(text));
	assert_string_equal(text, "any(gcra:3/1s,gcra:7/1m,burst=9)");
	tk_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_agrees_with_parser),
		cmocka_unit_test(test_composites_agree_with_parser),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_older_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
