/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse-kit.c - policy strings that must not parse (see parse-kit.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "parse-kit.h"

void kit_parse_fails(const char *text, int want, struct tk_parse_error *err)
{
	struct tk_limiter *l = NULL;
	struct tk_policy *p = NULL;
	int rc = tk_policy_parse(&p, text, err);

	tk_policy_free(rc == 0 ? p : NULL);
	if (rc != want)
		fail_msg("tk_policy_parse(\"%s\") = %d (%s), want %d (%s)",
			 text, rc, tk_strerrorname(rc), want,
			 tk_strerrorname(want));
	rc = tk_limiter_open(&l, text, "memory", NULL);
	tk_limiter_close(rc == 0 ? l : NULL);
	if (rc != want)
		fail_msg("tk_limiter_open(\"%s\") = %d (%s), want %d (%s)",
			 text, rc, tk_strerrorname(rc), want,
			 tk_strerrorname(want));
}
