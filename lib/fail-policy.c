/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fail-policy.c - what a limiter answers when its store or clock cannot
 * decide (TK_FAIL_ERROR, TK_FAIL_OPEN, TK_FAIL_CLOSED).
 *
 * - The errors of the caller's own making (tk_error_is_caller(), in
 *   error.c) are returned whatever the fail policy says: admitting a bad
 *   argument would hide a bug, and so would denying it.
 * - Every other error of a check becomes the degraded decision made here,
 *   the one decision every limiter and every binding gives: it names the
 *   policy's limit, since a client still reads its quota from it, and a
 *   denial asks for a retry after one second, so that clients neither
 *   hammer a failing store nor wait for a quota's whole window.
 */
#include "algo/policy.h"

#include <errno.h>
#include <string.h>

/* How long a fail-closed denial asks the client to wait. */
#define FAIL_RETRY_NS UINT64_C(1000000000)

static const char *const names[] = {
	[TK_FAIL_ERROR] = "error",
	[TK_FAIL_OPEN] = "open",
	[TK_FAIL_CLOSED] = "closed",
};

TK_API int tk_fail_parse(const char *text, size_t len, unsigned int *out)
{
	unsigned int i;

	if (!out || (!text && len))
		return -EINVAL;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i]) == len &&
		    memcmp(names[i], text, len) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

TK_API int tk_decision_degraded(const struct tk_policy *p, unsigned int fail,
				uint64_t now, struct tk_decision *out)
{
	if (!p || !out || (fail != TK_FAIL_OPEN && fail != TK_FAIL_CLOSED))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->allowed = fail == TK_FAIL_OPEN;
	out->limit = p->dim[0].limit;
	out->reset_at = now;
	out->retry_after = out->allowed ? 0 : FAIL_RETRY_NS;
	out->degraded = true;
	return 0;
}
