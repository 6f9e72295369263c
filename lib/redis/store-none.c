/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-none.c - the Redis store of a build without hiredis
 * (configure --without-redis, or no libhiredis-dev): every redis spec is
 * a backend this build lacks.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>

int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o, char *why, size_t why_len)
{
	(void)out;
	(void)spec;
	(void)o;
	if (why_len)
		snprintf(why, why_len,
			 "a Redis store needs a library built with hiredis "
			 "(libhiredis-dev); this one was built without it");
	return -ENOTSUP;
}
