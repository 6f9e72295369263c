/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json.h - a small, strict JSON reader for the test suite.
 *
 * Test data (the golden decision vectors) is JSON, and the tests must not
 * depend on anything but the C library and cmocka, so this is a recursive
 * descent parser of RFC 8259 JSON into a tree of tkj_value nodes.
 *
 * Strict means: exactly one value, surrounded only by JSON whitespace; no
 * trailing commas, comments, single quotes, leading zeros, "+1", ".5",
 * "1.", NaN or Infinity; no raw control characters in strings; no lone
 * surrogates and no invalid UTF-8; no duplicate member names in an object.
 * Nesting is bounded by TKJ_MAX_DEPTH so hostile input cannot exhaust the
 * stack.
 *
 * Numbers written as integers (no fraction, no exponent) that fit in
 * int64_t or uint64_t are kept exactly.  Every other number is kept as a
 * double and flagged as not an integer, so a test that needs an exact
 * count can refuse it instead of silently rounding.
 *
 * Every accessor accepts NULL and then reports "absent", so lookups chain:
 * tkj_get(tkj_get(root, "strategy"), "kind") is NULL if either is missing.
 *
 * Concurrency: a parsed tree is immutable; any number of threads may read
 * it.  Not async-signal-safe (it allocates).
 */
#ifndef TK_TESTS_KIT_JSON_H
#define TK_TESTS_KIT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest nesting of arrays and objects accepted; deeper input is an error. */
#define TKJ_MAX_DEPTH 64

enum tkj_kind {
	TKJ_ABSENT = 0, /* only ever reported for a NULL value pointer */
	TKJ_NULL,
	TKJ_BOOL,
	TKJ_NUMBER,
	TKJ_STRING,
	TKJ_ARRAY,
	TKJ_OBJECT,
};

struct tkj_value;

/*
 * tkj_parse() - parse @len bytes of @text as one JSON value.
 *
 * @text need not be NUL-terminated.  Returns the root of a new tree (free
 * it with tkj_free()), or NULL on a syntax error or allocation failure; then
 * @err (if not NULL) receives "offset N: reason", truncated to @errlen.
 */
struct tkj_value *tkj_parse(const char *text, size_t len, char *err,
			    size_t errlen);

/* tkj_free() - free a tree returned by tkj_parse(); NULL is ignored. */
void tkj_free(struct tkj_value *v);

/*
 * tkj_read_file() - read a whole file into a new NUL-terminated buffer.
 *
 * Returns 0 and sets *@buf (free() it) and *@len, or a negative errno
 * (-ENOENT if the file does not exist, so a caller can skip cleanly).
 */
int tkj_read_file(const char *path, char **buf, size_t *len);

/* tkj_kind() - the kind of @v; TKJ_ABSENT if @v is NULL. */
enum tkj_kind tkj_kind(const struct tkj_value *v);

/* tkj_kind_name() - "null", "number", ... for diagnostics. */
const char *tkj_kind_name(enum tkj_kind k);

/*
 * tkj_len() - the number of elements of an array or members of an object;
 * 0 for anything else.
 */
size_t tkj_len(const struct tkj_value *v);

/* tkj_at() - element @i of an array; NULL if not an array or out of range. */
const struct tkj_value *tkj_at(const struct tkj_value *arr, size_t i);

/*
 * tkj_get() - the member of object @obj named @name (a C string, so it
 * cannot match a name containing U+0000); NULL if absent or not an object.
 */
const struct tkj_value *tkj_get(const struct tkj_value *obj,
				const char *name);

/*
 * tkj_member() - member @i of an object, in document order: returns its
 * value and stores its name (and the name's length) through @name/@name_len
 * when they are not NULL.  NULL if not an object or out of range.
 */
const struct tkj_value *tkj_member(const struct tkj_value *obj, size_t i,
				   const char **name, size_t *name_len);

/* tkj_bool() - 0 and *@out for a boolean, -EINVAL for anything else. */
int tkj_bool(const struct tkj_value *v, bool *out);

/* tkj_is_int() - true iff @v is a number written as an in-range integer. */
bool tkj_is_int(const struct tkj_value *v);

/*
 * tkj_i64(), tkj_u64() - the exact integer value of @v.
 *
 * Return 0, -EINVAL if @v is not a number written as an integer, or -ERANGE
 * if it is one but does not fit the requested type.
 */
int tkj_i64(const struct tkj_value *v, int64_t *out);
int tkj_u64(const struct tkj_value *v, uint64_t *out);

/* tkj_double() - any number as a double (integers may round); -EINVAL if
 * @v is not a number. */
int tkj_double(const struct tkj_value *v, double *out);

/*
 * tkj_str() - the UTF-8 bytes of a string, NUL-terminated, with the
 * length stored in *@len if @len is not NULL (the bytes may contain U+0000,
 * written as \u0000).  NULL if @v is not a string.
 */
const char *tkj_str(const struct tkj_value *v, size_t *len);

/* tkj_str_eq() - true iff @v is a string equal to the C string @s. */
bool tkj_str_eq(const struct tkj_value *v, const char *s);

#ifdef __cplusplus
}
#endif

#endif /* TK_TESTS_KIT_JSON_H */
