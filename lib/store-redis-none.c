/*
 * store-redis-none.c - the Redis store of a build without hiredis
 * (configure --without-redis, or no libhiredis-dev): every redis spec is
 * a backend this build lacks.
 */
#include "internal.h"

#include <errno.h>

int tk__redis_open(struct tk_store **out, const char *spec,
		   const struct tk_options *o)
{
	(void)out;
	(void)spec;
	(void)o;
	return -ENOTSUP;
}
