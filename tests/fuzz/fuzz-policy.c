/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz-policy.c - libFuzzer harness for the policy parser.
 *
 * Any input must parse or fail cleanly (no crash, no leak, no undefined
 * behaviour), and whatever parses must survive parse -> format -> parse
 * -> format with the same canonical string and the same dimensions.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_parse_error err;
	struct tk_policy *p, *q;
	char *text, one[512], two[512];
	int n1, n2;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (tk_policy_parse(&p, text, &err) != 0) {
		/* The error points into the text (or just past it). */
		if (err.position > strlen(text) || !err.message[0])
			abort();
		free(text);
		return 0;
	}
	n1 = tk_policy_format(p, one, sizeof(one));
	if (n1 <= 0 || (size_t)n1 >= sizeof(one))
		abort();
	if (tk_policy_parse(&q, one, &err) != 0)
		abort();
	n2 = tk_policy_format(q, two, sizeof(two));
	if (n1 != n2 || strcmp(one, two) != 0 ||
	    tk_policy_dimensions(p) != tk_policy_dimensions(q))
		abort();
	/* A short buffer is cut, NUL-terminated, and the length is the same. */
	if (tk_policy_format(p, two, 4) != n1 || strlen(two) != 3)
		abort();
	tk_policy_free(q);
	tk_policy_free(p);
	free(text);
	return 0;
}
