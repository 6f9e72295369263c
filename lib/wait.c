/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wait.c - tk_limiter_wait(): block until a check is admitted.
 *
 * - A shaper alone (leaky:) reserves at once and sleeps its delay: the
 *   queue is the wait, and a full queue answers at once.
 * - Every other policy, composites included, waits by checking: a check
 *   that is denied changes nothing (semantics.md), so the waiter sleeps
 *   the retry_after that denial reported and checks again.  The check
 *   itself decides each time, never a peek before it, so N waiters on
 *   one key are admitted exactly as N callers of tk_limiter_check()
 *   would be: at the policy's rate, never more.  An admission that
 *   queues in a shaper dimension then sleeps its delay, as a shaper does.
 * - Sleeps are on the monotonic clock, in chunks of at most 100 ms, the
 *   caller's cancel hook asked before each chunk.
 */
#include "algo/algo.h"

#include <errno.h>
#include <time.h>

#define WAIT_CHUNK_NS UINT64_C(100000000)
#define SEC_NS 1000000000u

/*
 * Sleep @ns on the monotonic clock, in chunks of at most 100 ms so that
 * @cancelled is asked often and no single sleep exceeds what the
 * platform can express; a signal (EINTR) only shortens a chunk.
 */
static int sleep_for(uint64_t ns, int (*cancelled)(void *ctx), void *ctx)
{
	struct timespec now, end, chunk;
	uint64_t left;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)(ns / SEC_NS);
	end.tv_nsec += (long)(ns % SEC_NS);
	if (end.tv_nsec >= (long)SEC_NS) {
		end.tv_sec++;
		end.tv_nsec -= (long)SEC_NS;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return 0;
		if (cancelled && cancelled(ctx))
			return -ECANCELED;
		left = (uint64_t)(end.tv_sec - now.tv_sec) * SEC_NS +
		       (uint64_t)end.tv_nsec - (uint64_t)now.tv_nsec;
		if (left > WAIT_CHUNK_NS)
			left = WAIT_CHUNK_NS;
		chunk.tv_sec = (time_t)(left / SEC_NS);
		chunk.tv_nsec = (long)(left % SEC_NS);
		nanosleep(&chunk, NULL);
	}
}

/* A simple leaky: policy, whose wait is its queue. */
static int is_shaper(const struct tk_policy *p)
{
	return p->kind == TK__SINGLE && p->dim[0].alg == &tk__leaky;
}

TK_API int tk_limiter_wait(struct tk_limiter *l, const char *key,
			   size_t key_len, uint64_t cost,
			   int (*cancelled)(void *ctx), void *ctx,
			   struct tk_decision *out)
{
	int rc, shaper;

	if (!l || !out)
		return -EINVAL;
	shaper = is_shaper(tk_limiter_policy(l));
	for (;;) {
		rc = tk_limiter_check(l, key, key_len, cost, out);
		if (rc || out->allowed || shaper)
			break;
		/* A denial always names a wait; never spin on a zero. */
		rc = sleep_for(out->retry_after ? out->retry_after : 1,
			       cancelled, ctx);
		if (rc)
			return rc;
	}
	if (rc || !out->allowed || out->delay == 0)
		return rc;
	return sleep_for(out->delay, cancelled, ctx);
}
