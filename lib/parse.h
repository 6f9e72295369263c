/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse.h - the pieces policy strings are made of, and their canonical
 * spelling.  Every parse function leaves ps->pos after what it read, or
 * records the position and what was expected and returns -EINVAL.
 */
#ifndef TK_PARSE_H
#define TK_PARSE_H

#include <stddef.h>
#include <stdint.h>

struct tk__parser {
	const char *text;
	size_t pos;
	size_t err_pos;
	const char *expected;
};

int tk__parse_fail(struct tk__parser *ps, size_t at, const char *expected);
int tk__parse_uint(struct tk__parser *ps, uint64_t *out);
/* An integer and a unit (ns us ms s m h d); a bare unit is one of it. */
int tk__parse_duration(struct tk__parser *ps, uint64_t *out);
/* "L/DURATION" */
int tk__parse_rate(struct tk__parser *ps, uint64_t *limit, uint64_t *period);
/*
 * Reads ",NAME=" (just "NAME=" if @first) if the text continues with an
 * option.  Returns 1 with *name and *len set and ps->pos on the value, 0 at
 * the end of this policy (end of text, ')' or a ',' that starts the next
 * policy of a composite), or -EINVAL.
 */
int tk__parse_option(struct tk__parser *ps, int first, const char **name,
		     size_t *len);
int tk__option_is(const char *name, size_t len, const char *want);
/*
 * "L/W" and nothing after it, with 1 <= L <= @limit_max and
 * 1 ns <= W <= 2^62 ns; @expected names the bounds in the error.
 */
int tk__parse_window(struct tk__parser *ps, uint64_t limit_max,
		     const char *expected, uint64_t *limit, uint64_t *window);

/* Appends to a bounded buffer, as snprintf; tracks the full length. */
struct tk__fmt {
	char *buf;
	size_t cap;
	size_t len;
};

void tk__fmt(struct tk__fmt *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The shortest exact spelling: 1500ms, 1s, 90s, 1h, 1d, 7ns. */
void tk__fmt_duration(struct tk__fmt *f, uint64_t ns);

#endif /* TK_PARSE_H */
