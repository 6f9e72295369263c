/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * call.c - the check script's command for one check: its keys, the
 * time it decides at, and each dimension's algorithm and arguments
 * (scripts.c computes them; check.lua reads them).
 *
 * A check that no state could admit (-ERANGE) is answered here, by the
 * algorithms, and costs no round trip.
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "redis/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * "TIME", or "TIME:LO:HI" where the arguments, computed at now (the
 * server's time as estimated), hold only from LO to HI: the intersection
 * of the dimensions' spans.
 */
static void time_arg(const struct tk__redis_req *q, char *buf, size_t len)
{
	uint64_t lo = 0, hi = UINT64_MAX, a, b;
	size_t i;

	for (i = 0; i < q->n; i++) {
		tk__redis_span(q->pol[i], q->now, &a, &b);
		lo = a > lo ? a : lo;
		hi = b < hi ? b : hi;
	}
	if (lo == 0 && hi == UINT64_MAX)
		snprintf(buf, len, "TIME");
	else
		snprintf(buf, len, "TIME:%llu:%llu", (unsigned long long)lo,
			 (unsigned long long)hi);
}

int tk__redis_call_build(const struct tk__redis_store *s,
			 const struct tk__redis_req *q,
			 struct tk__redis_call *call)
{
	const char **argv = call->argv;
	size_t i, j, argc = 0;
	int persist[TK__MULTI_MAX], rc;
	struct tk__redis_bufs b;

	rc = tk__redis_bufs_init(&b, q);
	if (rc)
		return rc;
	/* What no state could change (-ERANGE) costs no round trip. */
	rc = tk__redis_transition(q, b.old, b.next, persist);
	free(b.heap);
	if (rc < 0)
		return rc;
	if (q->on_server)
		time_arg(q, call->now, sizeof(call->now));
	else
		snprintf(call->now, sizeof(call->now), "%llu",
			 (unsigned long long)q->now);
	snprintf(call->n, sizeof(call->n), "%zu", q->n);
	argv[argc++] = NULL; /* FCALL or EVALSHA, tk__redis_call_target() */
	argv[argc++] = NULL; /* the function or the script's SHA-1 */
	argv[argc++] = call->n;
	for (i = 0; i < q->n; i++)
		argv[argc++] = q->key[i];
	argv[argc++] = q->kind == TK__ANY ? "any" : "all";
	argv[argc++] = call->now;
	argv[argc++] = s->grace;
	argv[argc++] = call->n;
	for (i = 0, rc = 0; i < q->n && rc >= 0; i++) {
		snprintf(call->alg[i], sizeof(call->alg[i]), "%u",
			 q->pol[i]->alg->id);
		argv[argc++] = call->alg[i];
		argv[argc++] = tk__redis_usable(q->pol[i], q->now, q->cost)
				       ? "1"
				       : "0";
		rc = tk__redis_check_args(q->pol[i], q->now, q->cost,
					  call->arg[i]);
		for (j = 0; j < 7; j++)
			argv[argc++] = call->arg[i][j];
	}
	if (rc < 0)
		return rc;
	for (i = 2; i < argc; i++)
		call->lens[i] = i >= 3 && i < 3 + q->n ? q->klen[i - 3]
						       : strlen(argv[i]);
	call->argc = (int)argc;
	return 0;
}
