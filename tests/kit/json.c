/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json.c - a small, strict JSON reader for the test suite (see json.h).
 *
 * Recursive descent over the RFC 8259 grammar, one function per production.
 * The parser never reads past @len, so the input needs no terminator, and
 * it recurses once per level of nesting, which TKJ_MAX_DEPTH bounds.  On
 * the first error it records "offset N: reason" and unwinds, freeing the
 * partial tree, so a caller sees either a complete tree or none.
 *
 * Strings are decoded into fresh NUL-terminated buffers: escapes are
 * resolved, \uXXXX surrogate pairs are joined into one code point and
 * re-encoded as UTF-8, and raw bytes are checked to be well-formed UTF-8
 * (Unicode 15, table 3-7), so a string handed to a test is always valid.
 *
 * Integers are accumulated by hand rather than with strtoll()/strtoull(),
 * because those accept forms JSON forbids ("+1", " 1", "0x1") and report
 * range errors through errno.  Only numbers with a fraction or exponent (or
 * integers too large for 64 bits) go through strtod(), which is
 * locale-dependent; the test programs never call setlocale(), so the
 * decimal point is '.'.
 */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tkj_member {
	char *name;
	size_t name_len;
	struct tkj_value *value;
};

struct tkj_value {
	enum tkj_kind kind;
	union {
		bool b;
		struct {
			bool is_int; /* an integer literal that fits 64 bits */
			bool neg;    /* is_int: a '-' was written */
			uint64_t mag; /* is_int: the magnitude */
			double d;    /* always set, possibly rounded */
		} num;
		struct {
			char *s; /* NUL-terminated; may also contain NULs */
			size_t len;
		} str;
		struct {
			struct tkj_value **items;
			size_t n;
		} arr;
		struct {
			struct tkj_member *members;
			size_t n;
		} obj;
	} u;
};

struct parser {
	const char *start;
	const char *p;
	const char *end;
	char *err;
	size_t errlen;
	bool failed;
};

/* A growable byte buffer for decoding strings. */
struct buf {
	char *p;
	size_t len;
	size_t cap;
};

static void fail(struct parser *ps, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct parser *ps, const char *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* Only the first error means anything; later ones are unwinding. */
	if (ps->failed)
		return;
	ps->failed = true;
	if (!ps->err || ps->errlen == 0)
		return;
	n = snprintf(ps->err, ps->errlen, "offset %zu: ",
		     (size_t)(at - ps->start));
	if (n < 0 || (size_t)n >= ps->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static struct tkj_value *new_value(struct parser *ps, enum tkj_kind kind)
{
	struct tkj_value *v = calloc(1, sizeof(*v));

	if (!v)
		fail(ps, ps->p, "out of memory");
	else
		v->kind = kind;
	return v;
}

static bool buf_put(struct parser *ps, struct buf *b, const char *s, size_t n)
{
	size_t cap;
	char *np;

	/* +1 keeps room for the terminator that buf_take() adds. */
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 32;
		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			fail(ps, ps->p, "out of memory");
			return false;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return true;
}

static void skip_ws(struct parser *ps)
{
	/* RFC 8259 whitespace only: no form feed, no vertical tab. */
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
				   *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int hex4(const char *s)
{
	int v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		v <<= 4;
		if (s[i] >= '0' && s[i] <= '9')
			v |= s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			v |= s[i] - 'a' + 10;
		else if (s[i] >= 'A' && s[i] <= 'F')
			v |= s[i] - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static size_t utf8_encode(unsigned long cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/*
 * Length of the well-formed UTF-8 sequence at @s (at most @n bytes
 * available), or 0 if it is ill-formed.  The second-byte ranges exclude
 * overlong forms, surrogates and code points above U+10FFFF.
 */
static size_t utf8_valid(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len, i;

	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xE0)
		lo = 0xA0;
	else if (s[0] == 0xED)
		hi = 0x9F;
	else if (s[0] == 0xF0)
		lo = 0x90;
	else if (s[0] == 0xF4)
		hi = 0x8F;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

/* Parses the string starting at the opening quote at ps->p. */
static bool parse_string(struct parser *ps, char **out, size_t *out_len)
{
	struct buf b = { 0 };
	const char *at;
	unsigned long cp;
	size_t n;
	char enc[4];
	char c;
	int h, lo;

	ps->p++; /* the opening quote */
	for (;;) {
		if (ps->p >= ps->end) {
			fail(ps, ps->p, "unterminated string");
			goto err;
		}
		at = ps->p;
		c = *ps->p;
		if (c == '"') {
			ps->p++;
			break;
		}
		if ((unsigned char)c < 0x20) {
			fail(ps, at, "raw control character 0x%02x in string",
			     (unsigned int)(unsigned char)c);
			goto err;
		}
		if ((unsigned char)c >= 0x80) {
			n = utf8_valid((const unsigned char *)ps->p,
				       (size_t)(ps->end - ps->p));
			if (n == 0) {
				fail(ps, at, "invalid UTF-8 in string");
				goto err;
			}
			if (!buf_put(ps, &b, ps->p, n))
				goto err;
			ps->p += n;
			continue;
		}
		if (c != '\\') {
			if (!buf_put(ps, &b, &c, 1))
				goto err;
			ps->p++;
			continue;
		}
		if (ps->end - ps->p < 2) {
			fail(ps, at, "unterminated escape");
			goto err;
		}
		c = ps->p[1];
		ps->p += 2;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			break;
		case 'b':
			c = '\b';
			break;
		case 'f':
			c = '\f';
			break;
		case 'n':
			c = '\n';
			break;
		case 'r':
			c = '\r';
			break;
		case 't':
			c = '\t';
			break;
		case 'u':
			if (ps->end - ps->p < 4 || (h = hex4(ps->p)) < 0) {
				fail(ps, at, "bad \\u escape");
				goto err;
			}
			ps->p += 4;
			cp = (unsigned long)h;
			if (cp >= 0xDC00 && cp <= 0xDFFF) {
				fail(ps, at, "lone low surrogate");
				goto err;
			}
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				/* A high surrogate is half a code point. */
				if (ps->end - ps->p < 6 || ps->p[0] != '\\' ||
				    ps->p[1] != 'u' ||
				    (lo = hex4(ps->p + 2)) < 0xDC00 ||
				    lo > 0xDFFF) {
					fail(ps, at, "lone high surrogate");
					goto err;
				}
				ps->p += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) +
				     ((unsigned long)lo - 0xDC00);
			}
			n = utf8_encode(cp, enc);
			if (!buf_put(ps, &b, enc, n))
				goto err;
			continue;
		default:
			fail(ps, at, "invalid escape '\\%c'",
			     (unsigned char)c >= 0x20 &&
					     (unsigned char)c < 0x7F ?
				     c :
				     '?');
			goto err;
		}
		if (!buf_put(ps, &b, &c, 1))
			goto err;
	}
	/* Even "" gets a buffer, so every string value has a non-NULL s. */
	if (!buf_put(ps, &b, "", 0))
		goto err;
	b.p[b.len] = '\0';
	*out = b.p;
	*out_len = b.len;
	return true;
err:
	free(b.p);
	return false;
}

static struct tkj_value *parse_number(struct parser *ps)
{
	const char *start = ps->p;
	struct tkj_value *v;
	bool neg = false, overflow = false, integral = true;
	uint64_t mag = 0;
	unsigned int d;
	char *copy;
	size_t n;

	if (ps->p < ps->end && *ps->p == '-') {
		neg = true;
		ps->p++;
	}
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
		fail(ps, ps->p, "expected a digit");
		return NULL;
	}
	if (*ps->p == '0') {
		ps->p++;
		if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
			fail(ps, ps->p, "leading zero in number");
			return NULL;
		}
	} else {
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
			d = (unsigned int)(*ps->p - '0');
			if (mag > (UINT64_MAX - d) / 10)
				overflow = true;
			else
				mag = mag * 10 + d;
			ps->p++;
		}
	}
	if (ps->p < ps->end && *ps->p == '.') {
		integral = false;
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
			fail(ps, ps->p, "expected a digit after '.'");
			return NULL;
		}
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		integral = false;
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
			fail(ps, ps->p, "expected a digit in exponent");
			return NULL;
		}
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}

	v = new_value(ps, TKJ_NUMBER);
	if (!v)
		return NULL;
	/* Negative magnitudes go up to 2^63, one beyond INT64_MAX. */
	if (integral && !overflow && (!neg || mag <= (uint64_t)1 << 63)) {
		v->u.num.is_int = true;
		v->u.num.neg = neg && mag != 0;
		v->u.num.mag = mag;
		v->u.num.d = neg ? -(double)mag : (double)mag;
		return v;
	}
	/* The token is already validated, so strtod() consumes all of it. */
	n = (size_t)(ps->p - start);
	copy = malloc(n + 1);
	if (!copy) {
		fail(ps, start, "out of memory");
		free(v);
		return NULL;
	}
	memcpy(copy, start, n);
	copy[n] = '\0';
	v->u.num.d = strtod(copy, NULL);
	free(copy);
	if (isinf(v->u.num.d)) {
		fail(ps, start, "number out of range of double");
		free(v);
		return NULL;
	}
	return v;
}

static struct tkj_value *parse_value(struct parser *ps, int depth);

static struct tkj_value *parse_array(struct parser *ps, int depth)
{
	struct tkj_value *v, *item, **items;
	size_t cap = 0;

	v = new_value(ps, TKJ_ARRAY);
	if (!v)
		return NULL;
	ps->p++; /* '[' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return v;
	}
	for (;;) {
		item = parse_value(ps, depth);
		if (!item)
			goto err;
		if (v->u.arr.n == cap) {
			cap = cap ? cap * 2 : 8;
			items = realloc(v->u.arr.items, cap * sizeof(*items));
			if (!items) {
				fail(ps, ps->p, "out of memory");
				tkj_free(item);
				goto err;
			}
			v->u.arr.items = items;
		}
		v->u.arr.items[v->u.arr.n++] = item;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return v;
		}
		fail(ps, ps->p, "expected ',' or ']' in array");
		goto err;
	}
err:
	tkj_free(v);
	return NULL;
}

static struct tkj_value *parse_object(struct parser *ps, int depth)
{
	struct tkj_value *v, *value;
	struct tkj_member *members;
	const char *at;
	char *name;
	size_t name_len, cap = 0, i;

	v = new_value(ps, TKJ_OBJECT);
	if (!v)
		return NULL;
	ps->p++; /* '{' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return v;
	}
	for (;;) {
		skip_ws(ps);
		at = ps->p;
		if (ps->p >= ps->end || *ps->p != '"') {
			fail(ps, ps->p, "expected a member name");
			goto err;
		}
		if (!parse_string(ps, &name, &name_len))
			goto err;
		/*
		 * RFC 8259 leaves duplicate names to the implementation; a
		 * test must never silently read one of two values.
		 */
		for (i = 0; i < v->u.obj.n; i++) {
			if (v->u.obj.members[i].name_len == name_len &&
			    memcmp(v->u.obj.members[i].name, name,
				   name_len) == 0) {
				fail(ps, at, "duplicate member name");
				free(name);
				goto err;
			}
		}
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':') {
			fail(ps, ps->p, "expected ':' after member name");
			free(name);
			goto err;
		}
		ps->p++;
		value = parse_value(ps, depth);
		if (!value) {
			free(name);
			goto err;
		}
		if (v->u.obj.n == cap) {
			cap = cap ? cap * 2 : 8;
			members = realloc(v->u.obj.members,
					  cap * sizeof(*members));
			if (!members) {
				fail(ps, ps->p, "out of memory");
				free(name);
				tkj_free(value);
				goto err;
			}
			v->u.obj.members = members;
		}
		v->u.obj.members[v->u.obj.n].name = name;
		v->u.obj.members[v->u.obj.n].name_len = name_len;
		v->u.obj.members[v->u.obj.n].value = value;
		v->u.obj.n++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			return v;
		}
		fail(ps, ps->p, "expected ',' or '}' in object");
		goto err;
	}
err:
	tkj_free(v);
	return NULL;
}

static struct tkj_value *parse_literal(struct parser *ps, const char *word,
				       enum tkj_kind kind, bool b)
{
	size_t n = strlen(word);
	struct tkj_value *v;

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
		fail(ps, ps->p, "invalid literal");
		return NULL;
	}
	v = new_value(ps, kind);
	if (!v)
		return NULL;
	v->u.b = b;
	ps->p += n;
	return v;
}

/* @depth counts the arrays and objects enclosing this value. */
static struct tkj_value *parse_value(struct parser *ps, int depth)
{
	struct tkj_value *v;

	skip_ws(ps);
	if (ps->p >= ps->end) {
		fail(ps, ps->p, "unexpected end of input");
		return NULL;
	}
	switch (*ps->p) {
	case '{':
	case '[':
		if (depth >= TKJ_MAX_DEPTH) {
			fail(ps, ps->p, "nesting deeper than %d",
			     TKJ_MAX_DEPTH);
			return NULL;
		}
		if (*ps->p == '{')
			return parse_object(ps, depth + 1);
		return parse_array(ps, depth + 1);
	case '"':
		v = new_value(ps, TKJ_STRING);
		if (!v)
			return NULL;
		if (!parse_string(ps, &v->u.str.s, &v->u.str.len)) {
			free(v);
			return NULL;
		}
		return v;
	case 't':
		return parse_literal(ps, "true", TKJ_BOOL, true);
	case 'f':
		return parse_literal(ps, "false", TKJ_BOOL, false);
	case 'n':
		return parse_literal(ps, "null", TKJ_NULL, false);
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps);
		fail(ps, ps->p, "unexpected character");
		return NULL;
	}
}

struct tkj_value *tkj_parse(const char *text, size_t len, char *err,
			    size_t errlen)
{
	struct parser ps;
	struct tkj_value *v;

	if (err && errlen)
		err[0] = '\0';
	ps.start = text ? text : "";
	ps.p = ps.start;
	ps.end = text ? text + len : ps.start;
	ps.err = err;
	ps.errlen = errlen;
	ps.failed = false;
	v = parse_value(&ps, 0);
	if (!v)
		return NULL;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		fail(&ps, ps.p, "trailing characters after the value");
		tkj_free(v);
		return NULL;
	}
	return v;
}

void tkj_free(struct tkj_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->kind) {
	case TKJ_STRING:
		free(v->u.str.s);
		break;
	case TKJ_ARRAY:
		for (i = 0; i < v->u.arr.n; i++)
			tkj_free(v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case TKJ_OBJECT:
		for (i = 0; i < v->u.obj.n; i++) {
			free(v->u.obj.members[i].name);
			tkj_free(v->u.obj.members[i].value);
		}
		free(v->u.obj.members);
		break;
	default:
		break;
	}
	free(v);
}

int tkj_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f;
	char *p = NULL, *np;
	size_t n = 0, cap = 0, got;
	int rc = 0;

	if (!path || !buf || !len)
		return -EINVAL;
	f = fopen(path, "rb");
	if (!f)
		return -errno;
	/* Read to EOF rather than trusting the size from stat(). */
	for (;;) {
		if (cap - n < 4096 + 1) {
			cap = cap ? cap * 2 : 65536;
			np = realloc(p, cap);
			if (!np) {
				rc = -ENOMEM;
				goto out;
			}
			p = np;
		}
		got = fread(p + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0) {
			if (ferror(f))
				rc = -EIO;
			break;
		}
	}
out:
	fclose(f);
	if (rc) {
		free(p);
		return rc;
	}
	p[n] = '\0';
	*buf = p;
	*len = n;
	return 0;
}

enum tkj_kind tkj_kind(const struct tkj_value *v)
{
	return v ? v->kind : TKJ_ABSENT;
}

const char *tkj_kind_name(enum tkj_kind k)
{
	switch (k) {
	case TKJ_ABSENT:
		return "absent";
	case TKJ_NULL:
		return "null";
	case TKJ_BOOL:
		return "boolean";
	case TKJ_NUMBER:
		return "number";
	case TKJ_STRING:
		return "string";
	case TKJ_ARRAY:
		return "array";
	case TKJ_OBJECT:
		return "object";
	}
	return "?";
}

size_t tkj_len(const struct tkj_value *v)
{
	if (!v)
		return 0;
	if (v->kind == TKJ_ARRAY)
		return v->u.arr.n;
	if (v->kind == TKJ_OBJECT)
		return v->u.obj.n;
	return 0;
}

const struct tkj_value *tkj_at(const struct tkj_value *arr, size_t i)
{
	if (!arr || arr->kind != TKJ_ARRAY || i >= arr->u.arr.n)
		return NULL;
	return arr->u.arr.items[i];
}

const struct tkj_value *tkj_get(const struct tkj_value *obj, const char *name)
{
	size_t i, n;

	if (!obj || obj->kind != TKJ_OBJECT || !name)
		return NULL;
	n = strlen(name);
	for (i = 0; i < obj->u.obj.n; i++)
		if (obj->u.obj.members[i].name_len == n &&
		    memcmp(obj->u.obj.members[i].name, name, n) == 0)
			return obj->u.obj.members[i].value;
	return NULL;
}

const struct tkj_value *tkj_member(const struct tkj_value *obj, size_t i,
				   const char **name, size_t *name_len)
{
	if (!obj || obj->kind != TKJ_OBJECT || i >= obj->u.obj.n)
		return NULL;
	if (name)
		*name = obj->u.obj.members[i].name;
	if (name_len)
		*name_len = obj->u.obj.members[i].name_len;
	return obj->u.obj.members[i].value;
}

int tkj_bool(const struct tkj_value *v, bool *out)
{
	if (!v || v->kind != TKJ_BOOL || !out)
		return -EINVAL;
	*out = v->u.b;
	return 0;
}

bool tkj_is_int(const struct tkj_value *v)
{
	return v && v->kind == TKJ_NUMBER && v->u.num.is_int;
}

int tkj_i64(const struct tkj_value *v, int64_t *out)
{
	if (!tkj_is_int(v) || !out)
		return -EINVAL;
	if (v->u.num.neg) {
		/* mag <= 2^63: -(mag - 1) - 1 never negates INT64_MIN. */
		*out = -(int64_t)(v->u.num.mag - 1) - 1;
		return 0;
	}
	if (v->u.num.mag > (uint64_t)INT64_MAX)
		return -ERANGE;
	*out = (int64_t)v->u.num.mag;
	return 0;
}

int tkj_u64(const struct tkj_value *v, uint64_t *out)
{
	if (!tkj_is_int(v) || !out)
		return -EINVAL;
	if (v->u.num.neg)
		return -ERANGE;
	*out = v->u.num.mag;
	return 0;
}

int tkj_double(const struct tkj_value *v, double *out)
{
	if (!v || v->kind != TKJ_NUMBER || !out)
		return -EINVAL;
	*out = v->u.num.d;
	return 0;
}

const char *tkj_str(const struct tkj_value *v, size_t *len)
{
	if (!v || v->kind != TKJ_STRING)
		return NULL;
	if (len)
		*len = v->u.str.len;
	return v->u.str.s;
}

bool tkj_str_eq(const struct tkj_value *v, const char *s)
{
	size_t n;

	if (!v || v->kind != TKJ_STRING || !s)
		return false;
	n = strlen(s);
	return v->u.str.len == n && memcmp(v->u.str.s, s, n) == 0;
}
