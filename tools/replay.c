/*
 * replay.c - a strict reader for the replay format: one flat JSON object
 * per line whose members are "t", "key", "cost" and "op".  Unknown
 * members, duplicates, fractions and negative numbers are errors, because
 * a replay that silently meant something else would test nothing.
 */
#include "replay.h"

#include <stdio.h>
#include <string.h>

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

static void skip_ws(struct cursor *c)
{
	while (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' ||
	       c->s[c->pos] == '\r' || c->s[c->pos] == '\n')
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

/* Reads a JSON string into @buf (UTF-8); \u escapes up to U+FFFF. */
static int read_string(struct cursor *c, char *buf, size_t cap, size_t *len)
{
	size_t n = 0;
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
						return fail(c, "a shorter key");
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
			return fail(c, "a shorter key");
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

int replay_parse(const char *line, struct replay_line *out, char *err,
		 size_t errlen)
{
	struct cursor c = { line, 0, err, errlen };
	char name[16], op[16];
	size_t len;
	int seen_t = 0, seen_key = 0, seen_cost = 0, seen_op = 0;

	memset(out, 0, sizeof(*out));
	out->cost = 1;
	skip_ws(&c);
	if (line[c.pos] != '{')
		return fail(&c, "'{'");
	c.pos++;
	skip_ws(&c);
	while (line[c.pos] != '}') {
		if (read_string(&c, name, sizeof(name) - 1, &len))
			return -1;
		if (memchr(name, '\0', len))
			return fail(&c, "a member name without NUL");
		name[len] = '\0';
		skip_ws(&c);
		if (line[c.pos] != ':')
			return fail(&c, "':'");
		c.pos++;
		skip_ws(&c);
		if (strcmp(name, "t") == 0 && !seen_t++) {
			if (read_uint(&c, &out->t))
				return -1;
		} else if (strcmp(name, "cost") == 0 && !seen_cost++) {
			if (read_uint(&c, &out->cost))
				return -1;
		} else if (strcmp(name, "key") == 0 && !seen_key++) {
			if (read_string(&c, out->key, TK_KEY_MAX,
					&out->key_len))
				return -1;
		} else if (strcmp(name, "op") == 0 && !seen_op++) {
			if (read_string(&c, op, sizeof(op) - 1, &len))
				return -1;
			op[len] = '\0';
			if (strcmp(op, "check") == 0)
				out->op = REPLAY_CHECK;
			else if (strcmp(op, "peek") == 0)
				out->op = REPLAY_PEEK;
			else if (strcmp(op, "reset") == 0)
				out->op = REPLAY_RESET;
			else
				return fail(&c, "op check, peek or reset");
		} else {
			return fail(
				&c,
				"one each of \"t\", \"key\", \"cost\", \"op\"");
		}
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
	if (line[c.pos] != '\0')
		return fail(&c, "the end of the line");
	if (!seen_t || !seen_key) {
		snprintf(err, errlen, "\"t\" and \"key\" are required");
		return -1;
	}
	return 0;
}
