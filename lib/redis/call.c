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

/*
 * The arguments after ALG that check.lua's short form takes for @p (a
 * one-word policy 4, a window 5), or 0: the long form.
 */
static size_t short_args(const struct tk__policy *p)
{
	if (p->alg == &tk__gcra || p->alg == &tk__token_bucket ||
	    p->alg == &tk__leaky)
		return 4;
	if (p->alg == &tk__fixed_window || p->alg == &tk__quota)
		return 5;
	return 0;
}

/*
 * One key that can admit, of a policy the script's fast paths take:
 * NOW GRACE ALG and its arguments, 7 or 8 where the long form has 13 (a
 * server spends about 0.05 us on each).  1, or 0 for the long form.
 */
static int build_short(const struct tk__redis_store *s,
		       const struct tk__redis_req *q,
		       struct tk__redis_call *call, size_t *argc)
{
	const struct tk__policy *p = q->pol[0];
	size_t j, k = short_args(p);
	const char **argv = call->argv;

	if (q->n != 1 || k == 0 || !tk__redis_usable(p, q->now, q->cost) ||
	    tk__redis_check_args(p, q->now, q->cost, call->arg[0]))
		return 0;
	snprintf(call->alg[0], sizeof(call->alg[0]), "%u", p->alg->id);
	argv[(*argc)++] = q->key[0];
	argv[(*argc)++] = call->now;
	argv[(*argc)++] = s->grace;
	argv[(*argc)++] = call->alg[0];
	for (j = 0; j < k; j++)
		argv[(*argc)++] = call->arg[0][j];
	return 1;
}

/* The long form: KIND NOW GRACE N, then ALG USABLE and seven arguments
 * per key.  0, or -ENOTSUP. */
static int build_long(const struct tk__redis_store *s,
		      const struct tk__redis_req *q,
		      struct tk__redis_call *call, size_t *argc)
{
	const char **argv = call->argv;
	size_t i, j;
	int rc = 0;

	for (i = 0; i < q->n; i++)
		argv[(*argc)++] = q->key[i];
	argv[(*argc)++] = q->kind == TK__ANY ? "any" : "all";
	argv[(*argc)++] = call->now;
	argv[(*argc)++] = s->grace;
	argv[(*argc)++] = call->n;
	for (i = 0; i < q->n && rc >= 0; i++) {
		snprintf(call->alg[i], sizeof(call->alg[i]), "%u",
			 q->pol[i]->alg->id);
		argv[(*argc)++] = call->alg[i];
		argv[(*argc)++] = tk__redis_usable(q->pol[i], q->now, q->cost)
					  ? "1"
					  : "0";
		rc = tk__redis_check_args(q->pol[i], q->now, q->cost,
					  call->arg[i]);
		for (j = 0; j < 7; j++)
			argv[(*argc)++] = call->arg[i][j];
	}
	return rc;
}

int tk__redis_call_build(const struct tk__redis_store *s,
			 const struct tk__redis_req *q,
			 struct tk__redis_call *call)
{
	const char **argv = call->argv;
	size_t i, argc = 0;
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
	rc = build_short(s, q, call, &argc) ? 0 : build_long(s, q, call, &argc);
	if (rc < 0)
		return rc;
	for (i = 2; i < argc; i++)
		call->lens[i] = i >= 3 && i < 3 + q->n ? q->klen[i - 3]
						       : strlen(argv[i]);
	call->argc = (int)argc;
	return 0;
}
