/*
 * redis-scripts.c - what the Redis store's check script needs of a
 * policy (see redis-check.lua, embedded here at build time).
 *
 * The script holds the one transition the one-word policies share:
 * base = max(state, now); admit iff base + AHEAD - now <= LIMIT; then the
 * state becomes base + INC.  GCRA and the token bucket (gcra.c) admit iff
 * the new TAT is within tau of now, the leaky shaper (leaky.c) iff the
 * current wait is within the queue; both move the state by T * cost.
 * Everything else about a decision is computed by the algorithm itself
 * from the state the script read, on the client.
 */
#include "internal.h"
#include "redis.h"

#include <errno.h>
#include <stdio.h>

const char tk__redis_check_lua[] =
#include "redis-check-lua.inc"
	;

int tk__redis_supported(const struct tk__policy *p)
{
	return p->alg == &tk__gcra || p->alg == &tk__token_bucket ||
	       p->alg == &tk__leaky;
}

#define SPAN_MAX (UINT64_C(1) << 62) /* as leaky.c */

int tk__redis_check_args(const struct tk__policy *p, uint64_t cost,
			 char args[4][24])
{
	uint64_t inc, ahead, limit, valid;

	if (p->alg == &tk__leaky) {
		inc = p->u.leaky.t * cost;
		ahead = 0;
		limit = p->u.leaky.max_queue;
		valid = limit + SPAN_MAX / p->u.leaky.t * p->u.leaky.t;
	} else if (tk__redis_supported(p)) {
		inc = ahead = p->u.gcra.t * cost;
		limit = valid = p->u.gcra.tau;
	} else {
		return -ENOTSUP;
	}
	snprintf(args[0], sizeof(args[0]), "%llu", (unsigned long long)inc);
	snprintf(args[1], sizeof(args[1]), "%llu", (unsigned long long)ahead);
	snprintf(args[2], sizeof(args[2]), "%llu", (unsigned long long)limit);
	snprintf(args[3], sizeof(args[3]), "%llu", (unsigned long long)valid);
	return 0;
}
