/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-none.c - the Redis store of a build without hiredis
 * (configure --without-redis, or no libhiredis-dev): a spec that parses
 * is a backend this build lacks; one that does not is the caller's error,
 * as in a build with hiredis.
 */
#include "store/store-ops.h"
#include "redis/spec.h"

#include <errno.h>
#include <stdio.h>

int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o, char *why, size_t why_len)
{
	struct tk__redis_spec parsed;
	int rc = tk__redis_spec_parse(spec, &parsed, why, why_len);

	(void)out;
	(void)o;
	/* rediss:// parses to -ENOTSUP here: hiredis is what this lacks. */
	if (rc && rc != -ENOTSUP)
		return rc;
	if (why_len)
		snprintf(why, why_len,
			 "a Redis store needs a library built with hiredis "
			 "(libhiredis-dev); this one was built without it");
	return -ENOTSUP;
}

int tk__redis_give_back(struct tk_store *s, const unsigned char *key,
			size_t len, const struct tk__policy *p, uint64_t at,
			uint64_t units)
{
	(void)s;
	(void)key;
	(void)len;
	(void)p;
	(void)at;
	(void)units;
	return -ENOTSUP;
}
