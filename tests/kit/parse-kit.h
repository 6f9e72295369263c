/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse-kit.h - policy strings that must not parse (include after <cmocka.h>
 * and <throttlekit.h>).
 */
#ifndef TK_TESTS_KIT_PARSE_KIT_H
#define TK_TESTS_KIT_PARSE_KIT_H

/*
 * tk_policy_parse() of @text, reporting into @err as the caller set it
 * up, must return @want, and so must tk_limiter_open() on @text; a
 * failure names the text and both codes.
 */
void kit_parse_fails(const char *text, int want, struct tk_parse_error *err);

#endif
