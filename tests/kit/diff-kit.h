/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * diff-kit.h - what the differential tests share: one operation of a
 * generated timeline on a limiter, and the check that two stores gave the
 * same answer to it, field for field.  Include after cmocka.h.
 */
#ifndef TK_TESTS_KIT_DIFF_KIT_H
#define TK_TESTS_KIT_DIFF_KIT_H

#include <stdint.h>
#include <string.h>

#include <throttlekit.h>

/* Operation @op (0 peek, 1 forecast, 2 reset, else check) of @cost on
 * @key: its return, the decision into *@d (zeroed first). */
static inline int diff_kit_step(struct tk_limiter *l, unsigned int op,
				const char *key, uint64_t cost,
				struct tk_decision *d)
{
	memset(d, 0, sizeof(*d));
	switch (op) {
	case 0:
		return tk_limiter_peek(l, key, strlen(key), d);
	case 1:
		return tk_limiter_forecast(l, key, strlen(key), cost, d);
	case 2:
		return tk_limiter_reset(l, key, strlen(key));
	default:
		return tk_limiter_check(l, key, strlen(key), cost, d);
	}
}

/* Fails the test unless store @na's answer (@ra, *@a) is store @nb's
 * (@rb, *@b), saying @what (the timeline, the step) and both. */
static inline void diff_kit_same(const char *what, const char *na, int ra,
				 const struct tk_decision *a, const char *nb,
				 int rb, const struct tk_decision *b)
{
	if (ra == rb && memcmp(a, b, sizeof(*a)) == 0)
		return;
	fail_msg("%s: %s %d allowed %d rem %llu reset %llu retry %llu delay "
		 "%llu, %s %d allowed %d rem %llu reset %llu retry %llu "
		 "delay %llu",
		 what, na, ra, a->allowed, (unsigned long long)a->remaining,
		 (unsigned long long)a->reset_at,
		 (unsigned long long)a->retry_after,
		 (unsigned long long)a->delay, nb, rb, b->allowed,
		 (unsigned long long)b->remaining,
		 (unsigned long long)b->reset_at,
		 (unsigned long long)b->retry_after,
		 (unsigned long long)b->delay);
}

#endif
