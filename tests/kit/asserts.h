/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * asserts.h - time units and decision assertions shared by the unit
 * tests (include after <cmocka.h> and <throttlekit.h>).
 */
#ifndef TK_TEST_ASSERTS_H
#define TK_TEST_ASSERTS_H

#include <stdio.h>

#define NS 1ull
#define US (1000ull * NS)
#define MS (1000ull * US)
#define SEC (1000ull * MS)

/* Reports an unexpected return code by name rather than as a number. */
#define assert_rc(expr, want)                                                  \
	do {                                                                   \
		int rc_ = (expr);                                              \
		int want_ = (want);                                            \
		if (rc_ != want_)                                              \
			fail_msg("%s = %d (%s), want %d (%s)", #expr, rc_,     \
				 tk_strerrorname(rc_), want_,                  \
				 tk_strerrorname(want_));                      \
	} while (0)

#define assert_decision(d, a, lim, rem, reset, retry)                          \
	do {                                                                   \
		const struct tk_decision *d_ = &(d);                           \
		if (d_->allowed != (a) || d_->limit != (uint64_t)(lim) ||      \
		    d_->remaining != (uint64_t)(rem) ||                        \
		    d_->reset_at != (uint64_t)(reset) ||                       \
		    d_->retry_after != (uint64_t)(retry))                      \
			fail_msg("line %d: decision {allowed %d, limit "       \
				 "%llu, remaining %llu, reset_at %llu, "       \
				 "retry_after %llu}, want {%d, %llu, %llu, "   \
				 "%llu, %llu}",                                \
				 __LINE__, d_->allowed,                        \
				 (unsigned long long)d_->limit,                \
				 (unsigned long long)d_->remaining,            \
				 (unsigned long long)d_->reset_at,             \
				 (unsigned long long)d_->retry_after,          \
				 (int)(a), (unsigned long long)(lim),          \
				 (unsigned long long)(rem),                    \
				 (unsigned long long)(reset),                  \
				 (unsigned long long)(retry));                 \
	} while (0)

#define assert_same_decision(x, y)                                             \
	assert_decision(x, (y).allowed, (y).limit, (y).remaining,              \
			(y).reset_at, (y).retry_after)

/* One unit of @key (@len bytes) through @l: no error, and admitted if
 * @want, else denied. */
#define assert_admits(l, key, len, want)                                       \
	do {                                                                   \
		struct tk_decision ad_;                                        \
		assert_rc(tk_limiter_check((l), (key), (len), 1, &ad_), 0);    \
		if (ad_.allowed != (want))                                     \
			fail_msg("line %d: key %s %s, want it %s", __LINE__,   \
				 #key, ad_.allowed ? "admitted" : "denied",    \
				 (want) ? "admitted" : "denied");              \
	} while (0)

/* @d, every field, into @buf for a failure message: @buf. */
static inline const char *show_decision(const struct tk_decision *d, char *buf,
					size_t len)
{
	snprintf(buf, len,
		 "{allowed %d, limit %llu, remaining %llu, "
		 "reset_at %llu, retry_after %llu, delay %llu}",
		 d->allowed, (unsigned long long)d->limit,
		 (unsigned long long)d->remaining,
		 (unsigned long long)d->reset_at,
		 (unsigned long long)d->retry_after,
		 (unsigned long long)d->delay);
	return buf;
}

#endif /* TK_TEST_ASSERTS_H */
