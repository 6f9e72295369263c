/*
 * policy.c - policy strings: "ALGORITHM:ARGUMENTS".
 *
 *   gcra:L/P[,burst=B]        L units per duration P, bursts of B (= L)
 *
 * A duration is an unsigned integer followed by a unit (ns, us, ms, s, m,
 * h, d); a bare unit means one of it, so "100/s" is "100/1s".  Every value
 * is checked here, once, so that a check can never fail on a policy that
 * parsed.  Errors remember the offending position and what was expected.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

struct parser {
	const char *text;
	size_t pos;
	size_t err_pos;
	const char *expected;
};

static int fail(struct parser *ps, const char *expected)
{
	ps->err_pos = ps->pos;
	ps->expected = expected;
	return -EINVAL;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_uint(struct parser *ps, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = ps->text;

	if (!is_digit(s[ps->pos]))
		return fail(ps, "a digit");
	while (is_digit(s[ps->pos])) {
		unsigned d = (unsigned)(s[ps->pos] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return fail(ps, "a number below 2^64");
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
	{ "ns", 1 },
	{ "us", 1000 },
	{ "ms", 1000000 },
	{ "s", 1000000000 },
	{ "m", UINT64_C(60) * 1000000000 },
	{ "h", UINT64_C(3600) * 1000000000 },
	{ "d", UINT64_C(86400) * 1000000000 },
};

static int parse_duration(struct parser *ps, uint64_t *out)
{
	uint64_t n = 1;
	size_t start = ps->pos, i, len;
	int rc;

	if (is_digit(ps->text[ps->pos])) {
		rc = parse_uint(ps, &n);
		if (rc)
			return rc;
	}
	for (len = 0;
	     ps->text[ps->pos + len] >= 'a' && ps->text[ps->pos + len] <= 'z';
	     len++)
		;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].name) != len ||
		    memcmp(units[i].name, ps->text + ps->pos, len) != 0)
			continue;
		if (n > UINT64_MAX / units[i].ns) {
			ps->pos = start;
			return fail(ps, "a duration below 2^64 ns");
		}
		ps->pos += len;
		*out = n * units[i].ns;
		return 0;
	}
	return fail(ps, "a unit: ns, us, ms, s, m, h or d");
}

static int parse_rate(struct parser *ps, uint64_t *limit, uint64_t *period)
{
	int rc = parse_uint(ps, limit);

	if (rc)
		return rc;
	if (ps->text[ps->pos] != '/')
		return fail(ps, "'/'");
	ps->pos++;
	return parse_duration(ps, period);
}

/* Reads ",NAME=" and leaves ps->pos on the value. */
static int parse_option_name(struct parser *ps, const char **name, size_t *len)
{
	if (ps->text[ps->pos] != ',')
		return fail(ps, "',' or the end of the policy");
	ps->pos++;
	*name = ps->text + ps->pos;
	for (*len = 0; (*name)[*len] >= 'a' && (*name)[*len] <= 'z'; (*len)++)
		;
	if (*len == 0 || (*name)[*len] != '=')
		return fail(ps, "an option NAME=VALUE");
	ps->pos += *len + 1;
	return 0;
}

static int option_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(name, want, len) == 0;
}

static int parse_gcra(struct tk__policy *p, struct parser *ps)
{
	uint64_t limit, period, burst = 0;
	const char *name;
	size_t len, at;
	int rc;

	rc = parse_rate(ps, &limit, &period);
	if (rc)
		return rc;
	while (ps->text[ps->pos]) {
		at = ps->pos;
		rc = parse_option_name(ps, &name, &len);
		if (rc)
			return rc;
		if (!option_is(name, len, "burst")) {
			ps->pos = at + 1;
			return fail(ps, "the option burst");
		}
		rc = parse_uint(ps, &burst);
		if (rc)
			return rc;
		if (burst == 0)
			return fail(ps, "a burst of at least 1");
	}
	if (limit == 0 || period == 0) {
		ps->pos = strchr(ps->text, ':') - ps->text + 1;
		return fail(ps, "a positive rate");
	}
	rc = tk__gcra_init(p, limit, period, burst ? burst : limit);
	if (rc) {
		ps->pos = strchr(ps->text, ':') - ps->text + 1;
		return fail(ps,
			    "at least 1 ns per unit and a burst below 2^62 ns");
	}
	return 0;
}

static const struct {
	const char *name;
	int (*parse)(struct tk__policy *p, struct parser *ps);
} algorithms[] = {
	{ "gcra", parse_gcra },
};

int tk__policy_parse(struct tk__policy *p, const char *text)
{
	struct parser ps = { .text = text };
	const char *colon;
	size_t i, len;

	if (!text)
		return -EINVAL;
	colon = strchr(text, ':');
	if (!colon)
		return fail(&ps, "ALGORITHM:ARGUMENTS");
	len = (size_t)(colon - text);
	for (i = 0; i < sizeof(algorithms) / sizeof(algorithms[0]); i++) {
		if (strlen(algorithms[i].name) != len ||
		    memcmp(algorithms[i].name, text, len) != 0)
			continue;
		memset(p, 0, sizeof(*p));
		ps.pos = len + 1;
		return algorithms[i].parse(p, &ps);
	}
	return len == 0 ? fail(&ps, "an algorithm name") : -ENOTSUP;
}
