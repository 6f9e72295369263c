/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse.c - durations, rates and options of policy strings.
 */
#include "config.h"
#include "error.h"
#include "parse.h"

#include <throttlekit.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tk__parse_fail(struct tk__parser *ps, size_t at, const char *expected)
{
	ps->err_pos = at;
	ps->expected = expected;
	return -EINVAL;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_name(char c)
{
	return (c >= 'a' && c <= 'z') || c == '-';
}

int tk__parse_uint(struct tk__parser *ps, uint64_t *out)
{
	uint64_t v = 0;
	size_t start = ps->pos;
	unsigned d;

	if (!is_digit(ps->text[ps->pos]))
		return tk__parse_fail(ps, ps->pos, "a digit");
	while (is_digit(ps->text[ps->pos])) {
		d = (unsigned)(ps->text[ps->pos] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return tk__parse_fail(ps, start, "a number below 2^64");
		v = v * 10 + d;
		ps->pos++;
	}
	*out = v;
	return 0;
}

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	/* Largest first: tk__fmt_duration() picks the first that divides. */
	{ "d", UINT64_C(86400) * 1000000000 },
	{ "h", UINT64_C(3600) * 1000000000 },
	{ "m", UINT64_C(60) * 1000000000 },
	{ "s", 1000000000 },
	{ "ms", 1000000 },
	{ "us", 1000 },
	{ "ns", 1 },
};

#define N_UNITS (sizeof(units) / sizeof(units[0]))

int tk__parse_duration(struct tk__parser *ps, uint64_t *out)
{
	uint64_t n = 1;
	size_t start = ps->pos, i, len;
	int rc;

	if (is_digit(ps->text[ps->pos])) {
		rc = tk__parse_uint(ps, &n);
		if (rc)
			return rc;
	}
	for (len = 0;
	     ps->text[ps->pos + len] >= 'a' && ps->text[ps->pos + len] <= 'z';
	     len++)
		;
	for (i = 0; i < N_UNITS; i++) {
		if (strlen(units[i].name) != len ||
		    memcmp(units[i].name, ps->text + ps->pos, len) != 0)
			continue;
		if (n > UINT64_MAX / units[i].ns)
			return tk__parse_fail(ps, start,
					      "a duration below 2^64 ns");
		ps->pos += len;
		*out = n * units[i].ns;
		return 0;
	}
	return tk__parse_fail(ps, ps->pos, "a unit: ns, us, ms, s, m, h or d");
}

/* Longer than any duration below 2^64 ns ("18446744073709551615ns"). */
#define DURATION_TEXT_MAX 32

static int duration_parse(const char *text, size_t len, uint64_t *out)
{
	char buf[DURATION_TEXT_MAX];
	struct tk__parser ps = { buf, 0, 0, NULL };
	uint64_t ns;

	if (!out || (!text && len) || len >= sizeof(buf) ||
	    (len && memchr(text, '\0', len)))
		return -EINVAL;
	if (len)
		memcpy(buf, text, len);
	buf[len] = '\0';
	if (tk__parse_duration(&ps, &ns) || ps.pos != len)
		return -EINVAL;
	*out = ns;
	return 0;
}

TK_API int tk_duration_parse(const char *text, size_t len, uint64_t *out)
{
	return tk__rc(duration_parse(text, len, out));
}

int tk__parse_rate(struct tk__parser *ps, uint64_t *limit, uint64_t *period)
{
	int rc = tk__parse_uint(ps, limit);

	if (rc)
		return rc;
	if (ps->text[ps->pos] != '/')
		return tk__parse_fail(ps, ps->pos, "'/'");
	ps->pos++;
	return tk__parse_duration(ps, period);
}

int tk__parse_option(struct tk__parser *ps, int first, const char **name,
		     size_t *len)
{
	const char *s = ps->text + ps->pos;
	size_t n, skip = first ? 0 : 1;

	if (*s == '\0' || *s == ')')
		return 0;
	if (!first && *s != ',')
		return tk__parse_fail(ps, ps->pos,
				      "',' or the end of the policy");
	for (n = 0; is_name(s[skip + n]); n++)
		;
	/* "ALGORITHM:" or "all(": the next policy of a composite. */
	if (!first && n > 0 && (s[skip + n] == ':' || s[skip + n] == '('))
		return 0;
	if (n == 0 || s[skip + n] != '=')
		return tk__parse_fail(ps, ps->pos + skip,
				      "an option NAME=VALUE");
	*name = s + skip;
	*len = n;
	ps->pos += skip + n + 1;
	return 1;
}

int tk__option_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(name, want, len) == 0;
}

int tk__parse_window(struct tk__parser *ps, uint64_t limit_max,
		     const char *expected, uint64_t *limit, uint64_t *window)
{
	size_t start = ps->pos;
	const char *name;
	size_t len;
	int rc;

	rc = tk__parse_rate(ps, limit, window);
	if (rc)
		return rc;
	rc = tk__parse_option(ps, 0, &name, &len);
	if (rc)
		return rc < 0 ? rc
			      : tk__parse_fail(ps, ps->pos - len - 1,
					       "no options");
	if (*limit == 0 || *limit > limit_max || *window == 0 ||
	    *window > (UINT64_C(1) << 62))
		return tk__parse_fail(ps, start, expected);
	return 0;
}

void tk__fmt(struct tk__fmt *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->len < f->cap ? f->buf + f->len : NULL,
		      f->len < f->cap ? f->cap - f->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		f->len += (size_t)n;
}

void tk__fmt_duration(struct tk__fmt *f, uint64_t ns)
{
	size_t i;

	for (i = 0; i < N_UNITS; i++)
		if (ns % units[i].ns == 0)
			break;
	tk__fmt(f, "%llu%s", (unsigned long long)(ns / units[i].ns),
		units[i].name);
}
