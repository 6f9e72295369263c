/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-none.c - the PostgreSQL store of a build without libpq
 * (configure --without-postgresql, or no libpq-dev): a spec that parses
 * is a backend this build lacks; one that does not is the caller's error.
 */
#include "store/store-ops.h"
#include "pg/spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int tk__pg_open(struct tk_store **out, const char *spec,
		const struct tk_options *o, char *why, size_t why_len)
{
	struct tk__pg_spec parsed;
	int rc = tk__pg_spec_parse(spec, &parsed, why, why_len);

	(void)out;
	(void)o;
	memset(&parsed, 0, sizeof(parsed));
	if (rc && rc != -ENOTSUP)
		return rc;
	if (why_len)
		snprintf(why, why_len,
			 "a PostgreSQL store needs a library built with libpq "
			 "(libpq-dev); this one was built without it");
	return -ENOTSUP;
}
