/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * replay.c - a strict reader for the replay format: one flat JSON object
 * per line whose members are "t", "key", "cost" and "op".  Unknown
 * members, duplicates, fractions and negative numbers are errors, because
 * a replay that silently meant something else would test nothing.
 */
#include "replay.h"

#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

struct cursor {
	const char *s;
	size_t pos;
	char *err;
	size_t errlen;
};

static int fail(struct cursor *c, const char *what)
{
	snprintf(c->err, c->errlen, "column %zu: expected %s", c->pos + 1,
		 what);
	return -1;
}

static int fail_at(struct cursor *c, size_t pos, const char *what)
{
	c->pos = pos;
	return fail(c, what);
}

/* Between tokens: spaces and tabs; a line ends at its newline. */
static void skip_ws(struct cursor *c)
{
	while (c->s[c->pos] == ' ' || c->s[c->pos] == '\t')
		c->pos++;
}

static int hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * Reads a JSON string into @buf (UTF-8); \u escapes up to U+FFFF.  More
 * than @cap bytes fail with @too_long, at the string's opening quote.
 */
static int read_string(struct cursor *c, char *buf, size_t cap, size_t *len,
		       const char *too_long)
{
	size_t n = 0, start = c->pos;
	unsigned int u;
	int i, h;
	char ch;

	if (c->s[c->pos] != '"')
		return fail(c, "a string");
	c->pos++;
	for (;;) {
		ch = c->s[c->pos];
		if (ch == '"')
			break;
		if (ch == '\0' || (unsigned char)ch < 0x20)
			return fail(c, "a closing quote");
		if (ch == '\\') {
			ch = c->s[++c->pos];
			switch (ch) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				ch = '\b';
				break;
			case 'f':
				ch = '\f';
				break;
			case 'n':
				ch = '\n';
				break;
			case 'r':
				ch = '\r';
				break;
			case 't':
				ch = '\t';
				break;
			case 'u':
				for (u = 0, i = 1; i <= 4; i++) {
					h = hex(c->s[c->pos + (size_t)i]);
					if (h < 0)
						return fail(c,
							    "four hex digits");
					u = u * 16 + (unsigned int)h;
				}
				c->pos += 4;
				/* Lone UTF-16 halves are no characters. */
				if (u >= 0xd800 && u <= 0xdfff)
					return fail(c, "no surrogate escapes");
				if (u >= 0x80) {
					/* Encode as UTF-8 (2 or 3 bytes). */
					if (n + (u < 0x800 ? 2 : 3) > cap)
						return fail_at(c, start,
							       too_long);
					if (u < 0x800) {
						buf[n++] =
							(char)(0xc0 | (u >> 6));
					} else {
						buf[n++] = (char)(0xe0 |
								  (u >> 12));
						buf[n++] = (char)(0x80 |
								  ((u >> 6) &
								   0x3f));
					}
					ch = (char)(0x80 | (u & 0x3f));
				} else {
					ch = (char)u;
				}
				break;
			default:
				return fail(c, "a valid escape");
			}
		}
		if (n >= cap)
			return fail_at(c, start, too_long);
		buf[n++] = ch;
		c->pos++;
	}
	c->pos++;
	*len = n;
	return 0;
}

static int read_uint(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int d;

	if (c->s[c->pos] < '0' || c->s[c->pos] > '9')
		return fail(c, "a non-negative integer");
	if (c->s[c->pos] == '0' && c->s[c->pos + 1] >= '0' &&
	    c->s[c->pos + 1] <= '9')
		return fail(c, "no leading zeros");
	while (c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
		d = (unsigned int)(c->s[c->pos] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return fail(c, "an integer below 2^64");
		v = v * 10 + d;
		c->pos++;
	}
	if (c->s[c->pos] == '.' || c->s[c->pos] == 'e' || c->s[c->pos] == 'E')
		return fail(c, "an integer");
	*out = v;
	return 0;
}

/* A string read with its length, which may hold NUL bytes. */
static int is(const char *s, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(s, want, len) == 0;
}

static int read_op(struct cursor *c, enum replay_op *op)
{
	static const char *const names[] = { "check", "peek", "reset" };
	static const enum replay_op ops[] = { REPLAY_CHECK, REPLAY_PEEK,
					      REPLAY_RESET };
	const char *why = "op \"check\", \"peek\" or \"reset\"";
	size_t start = c->pos, len, i;
	char buf[8];

	if (read_string(c, buf, sizeof(buf), &len, why))
		return -1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (is(buf, len, names[i])) {
			*op = ops[i];
			return 0;
		}
	}
	return fail_at(c, start, why);
}

int replay_parse(const char *line, struct replay_line *out, char *err,
		 size_t errlen)
{
	static const char *const members = "a member \"t\", \"key\", "
					   "\"cost\" or \"op\"";
	struct cursor c = { line, 0, err, errlen };
	int seen_t = 0, seen_key = 0, seen_cost = 0, seen_op = 0, *seen;
	size_t len, start;
	char name[8];

	memset(out, 0, sizeof(*out));
	out->cost = 1;
	skip_ws(&c);
	if (line[c.pos] != '{')
		return fail(&c, "'{'");
	c.pos++;
	skip_ws(&c);
	while (line[c.pos] != '}') {
		start = c.pos;
		if (read_string(&c, name, sizeof(name), &len, members))
			return -1;
		if (is(name, len, "t"))
			seen = &seen_t;
		else if (is(name, len, "key"))
			seen = &seen_key;
		else if (is(name, len, "cost"))
			seen = &seen_cost;
		else if (is(name, len, "op"))
			seen = &seen_op;
		else
			return fail_at(&c, start, members);
		if ((*seen)++)
			return fail_at(&c, start, "each member at most once");
		skip_ws(&c);
		if (line[c.pos] != ':')
			return fail(&c, "':'");
		c.pos++;
		skip_ws(&c);
		if (seen == &seen_t && read_uint(&c, &out->t))
			return -1;
		if (seen == &seen_cost && read_uint(&c, &out->cost))
			return -1;
		if (seen == &seen_key &&
		    read_string(&c, out->key, TK_KEY_MAX, &out->key_len,
				"a key of at most " STR(TK_KEY_MAX) " bytes"))
			return -1;
		if (seen == &seen_op && read_op(&c, &out->op))
			return -1;
		skip_ws(&c);
		if (line[c.pos] == ',') {
			c.pos++;
			skip_ws(&c);
			if (line[c.pos] != '"')
				return fail(&c, "a member after ','");
			continue;
		}
		if (line[c.pos] != '}')
			return fail(&c, "',' or '}'");
	}
	c.pos++;
	skip_ws(&c);
	/* A CRLF line ending. */
	if (line[c.pos] == '\r' && line[c.pos + 1] == '\0')
		c.pos++;
	if (line[c.pos] != '\0')
		return fail(&c, "the end of the line");
	if (!seen_t || !seen_key) {
		snprintf(err, errlen, "\"t\" and \"key\" are required");
		return -1;
	}
	return 0;
}
