/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rule.h - a limiter's rule in its zone's rule directory (shm/rules.h):
 * registered at open (tk_options.rule), counted at every check.
 */
#ifndef TK_RULE_H
#define TK_RULE_H

#include "store/store-ops.h"

/*
 * Register the rule @o names for a limiter of policy @p on store @s:
 * its entry + 1, 0 if none is registered (no rule named, a store without
 * a directory, a full or busy directory: the limiter works, uncounted),
 * or the caller's error (-EINVAL, -ENAMETOOLONG).
 */
int tk__rule_register(struct tk_store *s, const struct tk_options *o,
		      const struct tk_policy *p);

/* Add to the counters of the rule @rule (an entry + 1) of @s. */
static inline void tk__rule_count(struct tk_store *s, int rule, uint64_t checks,
				  uint64_t denies)
{
	if (s->ops->rule_count)
		s->ops->rule_count(s, rule - 1, checks, denies);
}

/* zone.c: attach zone @name as an administrator (never creates it),
 * trusting the owner and group @opts name. */
struct tk__zone;
int tk__zone_attach_admin(struct tk__zone **z, const char *name,
			  const struct tk_options *opts);

#endif /* TK_RULE_H */
