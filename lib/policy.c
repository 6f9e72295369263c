/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy.c - policy strings: "ALGORITHM:ARGUMENTS", or all(...)/any(...)
 * of several, parsed once into an immutable struct tk_policy.
 *
 * Everything a check could trip over is rejected here (limit 0, period 0,
 * T < 1 ns, a window not divisible by its buckets, an offset beyond
 * 14:00, overflow), so a check never fails because of its policy.  An
 * error names the byte offset of the offending character and what was
 * expected there.  tk_policy_format() writes the canonical form, which
 * parses back to the same policy.
 */
#include "algo/algo.h"
#include "clock.h"
#include "error.h"
#include "parse.h"
#include "step.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DIMENSIONS_MAX TK_DIMENSIONS_MAX

static const struct tk__algorithm *const algorithms[] = {
	&tk__gcra,	     &tk__token_bucket, &tk__fixed_window,
	&tk__sliding_window, &tk__sliding_log,	&tk__quota,
	&tk__leaky,
};

const struct tk__algorithm *tk__algorithm_of(unsigned int id)
{
	size_t i;

	for (i = 0; i < sizeof(algorithms) / sizeof(algorithms[0]); i++)
		if (algorithms[i]->id == id)
			return algorithms[i];
	return id == TK__ALG_USER ? &tk__user : NULL;
}

_Static_assert(TK__TAG_MAX >= 2 + TK__LAYOUT_MAX, "a tag holds any layout");

/*
 * @p's store-key tag (policy.h): none for gcra, else its length, its
 * algorithm's id and layout.  Two policies share a tag exactly when each
 * reads the other's states as its own (algo.h, layout()).
 */
static void tag(struct tk__policy *p)
{
	size_t n = p->alg->layout ? p->alg->layout(p, p->tag + 2) : 0;

	if (p->alg == &tk__gcra)
		return;
	p->tag[0] = (unsigned char)(1 + n);
	p->tag[1] = (unsigned char)p->alg->id;
	p->tag_len = (uint32_t)(2 + n);
}

/* NAME:ARG of a registered strategy (@len bytes of name). */
static int parse_user(struct tk__policy *p, struct tk__parser *ps, size_t len)
{
	const struct tk__strategy *s =
		tk__strategy_find(ps->text + ps->pos, len);
	int rc;

	if (!s)
		return tk__parse_fail(ps, ps->pos, "a known algorithm");
	memset(p, 0, sizeof(*p));
	p->alg = &tk__user;
	p->u.user.s = s;
	ps->pos += len + 1;
	rc = tk__user.parse(p, ps);
	if (rc == 0)
		tag(p);
	return rc;
}

static int parse_simple(struct tk__policy *p, struct tk__parser *ps)
{
	const char *s = ps->text + ps->pos;
	size_t i, len;
	int rc;

	for (len = 0; (s[len] >= 'a' && s[len] <= 'z') || s[len] == '-'; len++)
		;
	if (len == 0 || s[len] != ':')
		return tk__parse_fail(ps, ps->pos + len,
				      len ? "':'" : "ALGORITHM:ARGUMENTS");
	for (i = 0; i < sizeof(algorithms) / sizeof(algorithms[0]); i++) {
		if (strlen(algorithms[i]->name) != len ||
		    memcmp(algorithms[i]->name, s, len) != 0)
			continue;
		memset(p, 0, sizeof(*p));
		p->alg = algorithms[i];
		ps->pos += len + 1;
		rc = algorithms[i]->parse(p, ps);
		if (rc == 0)
			tag(p);
		return rc;
	}
	return parse_user(p, ps, len);
}

/* all(P,P...) or any(P,P...): dimensions separated by ',' */
static int parse_composite(struct tk_policy *pol, struct tk__parser *ps)
{
	int rc;

	ps->pos += 4;
	for (;;) {
		if (pol->n == DIMENSIONS_MAX)
			return tk__parse_fail(ps, ps->pos,
					      "at most 8 dimensions");
		if (strncmp(ps->text + ps->pos, "all(", 4) == 0 ||
		    strncmp(ps->text + ps->pos, "any(", 4) == 0)
			return tk__parse_fail(ps, ps->pos,
					      "a simple policy (no nesting)");
		rc = parse_simple(&pol->dim[pol->n], ps);
		if (rc)
			return rc;
		pol->state_words += pol->dim[pol->n].state_words;
		pol->n++;
		if (ps->text[ps->pos] == ')')
			break;
		if (ps->text[ps->pos] != ',')
			return tk__parse_fail(ps, ps->pos, "',' or ')'");
		/* parse_option() stopped on the ',' before "NAME:". */
		ps->pos++;
	}
	ps->pos++;
	if (pol->n < 2)
		return tk__parse_fail(ps, ps->pos - 1,
				      "',' and a second policy");
	return 0;
}

int tk__policy_parse(struct tk_policy **out, const char *text,
		     struct tk_parse_error *err)
{
	struct tk__parser ps = { .text = text };
	struct tk_policy *pol;
	size_t size;
	int rc;

	if (!out || !text)
		return -EINVAL;
	size = sizeof(*pol) + DIMENSIONS_MAX * sizeof(pol->dim[0]);
	pol = calloc(1, size);
	if (!pol)
		return -ENOMEM;
	if (strncmp(text, "all(", 4) == 0 || strncmp(text, "any(", 4) == 0) {
		pol->kind = text[1] == 'l' ? TK__ALL : TK__ANY;
		rc = parse_composite(pol, &ps);
	} else {
		pol->kind = TK__SINGLE;
		rc = parse_simple(&pol->dim[0], &ps);
		pol->n = 1;
		pol->state_words = pol->dim[0].state_words;
	}
	if (rc == 0 && text[ps.pos] != '\0')
		rc = tk__parse_fail(&ps, ps.pos, "the end of the policy");
	if (rc == 0 && pol->state_words > TK__STATE_WORDS_MAX)
		rc = tk__parse_fail(&ps, 0, "less state: at most 1024 words");
	if (rc) {
		if (err) {
			err->position = ps.err_pos;
			tk__fmt(&(struct tk__fmt){ err->message,
						   sizeof(err->message), 0 },
				"expected %s at position %zu",
				ps.expected ? ps.expected : "a policy",
				ps.err_pos);
		}
		free(pol);
		return rc;
	}
	*out = pol;
	return 0;
}

/* Store keys are the same exactly when kinds (simple or a dimension's) and
 * tags are (store-key.h). */
TK_API int tk_policy_change(const struct tk_policy *from,
			    const struct tk_policy *to)
{
	const struct tk__policy *a, *b;
	int kept = 0;
	size_t i;

	if (!from || !to)
		return -EINVAL;
	if ((from->kind == TK__SINGLE) != (to->kind == TK__SINGLE))
		return 0;
	for (i = 0; i < to->n && i < from->n; i++) {
		a = &from->dim[i];
		b = &to->dim[i];
		if (a->alg == b->alg && a->tag_len == b->tag_len &&
		    memcmp(a->tag, b->tag, a->tag_len) == 0)
			kept |= 1 << i;
	}
	return kept;
}

TK_API int tk_policy_parse(struct tk_policy **out, const char *text,
			   struct tk_parse_error *err)
{
	return tk__rc(tk__policy_parse(out, text, err));
}

TK_API int tk_policy_format(const struct tk_policy *p, char *buf, size_t len)
{
	struct tk__fmt f = { buf, len, 0 };
	size_t i;

	if (!p || (!buf && len))
		return -EINVAL;
	if (p->kind != TK__SINGLE)
		tk__fmt(&f, "%s(", p->kind == TK__ALL ? "all" : "any");
	for (i = 0; i < p->n; i++) {
		if (i)
			tk__fmt(&f, ",");
		p->dim[i].alg->format(&p->dim[i], &f);
	}
	if (p->kind != TK__SINGLE)
		tk__fmt(&f, ")");
	if (len && f.len >= len)
		buf[len - 1] = '\0';
	return f.len > INT32_MAX ? -EINVAL : (int)f.len;
}

TK_API size_t tk_policy_dimensions(const struct tk_policy *p)
{
	return p ? p->n : 0;
}

/* What bindings need of a policy, so that none reads it from its text. */
TK_API int tk_policy_info(const struct tk_policy *p, size_t dim,
			  struct tk_policy_info *out, size_t size)
{
	struct tk_policy_info info;
	const struct tk__policy *d;
	size_t n;

	if (!p || !out || dim >= p->n)
		return -EINVAL;
	d = &p->dim[dim];
	memset(&info, 0, sizeof(info));
	/* The longest name, "sliding-window", leaves room for the NUL. */
	n = strlen(tk__policy_name(d));
	memcpy(info.algorithm, tk__policy_name(d),
	       n < sizeof(info.algorithm) ? n : sizeof(info.algorithm) - 1);
	if (p->kind != TK__SINGLE)
		memcpy(info.composite, p->kind == TK__ALL ? "all" : "any", 3);
	info.shaper = d->alg->id == TK__ALG_LEAKY;
	info.limit = d->limit;
	info.dimensions = p->n;
	memcpy(out, &info, size < sizeof(info) ? size : sizeof(info));
	return 0;
}

/*
 * A key never seen: every dimension's state absent, decided by the same
 * run_op() as a check's forecast on a store (lib/step.c), so that a
 * binding learns the library's answer without opening a store.
 */
TK_API int tk_policy_forecast(const struct tk_policy *p, uint64_t now,
			      uint64_t cost, struct tk_decision *out)
{
	const uint64_t *old[TK__MULTI_MAX] = { NULL };
	uint64_t *next[TK__MULTI_MAX] = { NULL };
	uint64_t expires[TK__MULTI_MAX], unused;
	int persist[TK__MULTI_MAX];
	struct tk__transform t;
	struct tk__step s;
	int rc;

	if (!p || !out || cost == 0 || p->n > TK__MULTI_MAX)
		return -EINVAL;
	if (now >= TK__NOW_LIMIT)
		return -EOVERFLOW;
	memset(&s, 0, sizeof(s));
	if (p->kind == TK__SINGLE) {
		tk__step_single(&s, TK__OP_FORECAST, &p->dim[0],
				tk__step_flags(TK__OP_FORECAST, &p->dim[0]),
				now, cost, &t);
		rc = tk__forecast_fn(&s, NULL, NULL, &unused);
	} else {
		s.op = TK__OP_FORECAST;
		s.now = now;
		s.cost = cost;
		s.policy = p;
		s.n = p->n;
		s.kind = p->kind;
		rc = tk__composite_fn(&s, old, next, persist, expires);
	}
	if (rc < 0)
		return tk__rc(rc);
	*out = s.d;
	return 0;
}

TK_API void tk_policy_free(struct tk_policy *p)
{
	free(p);
}
