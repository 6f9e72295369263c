/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rules.h - a zone's rule directory: which rules (an Apache ThrottleRule,
 * a PHP policy) decide keys in the zone, how to name one of their clients'
 * keys, and how many checks and denials each has decided.
 *
 * A fixed array of TKZ_RULES entries after the arena (layout.h).  shm/
 * knows nothing of policies: an entry holds text its registrant wrote
 * (the policy, the key prefix, what precedes a client's address or key)
 * and two counters.  Lock-free and kill-safe; the protocol is rules.c's.
 */
#ifndef TK_SHM_RULES_H
#define TK_SHM_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define TKZ_RULE_NAME_MAX 127	/* bytes of a name */
#define TKZ_RULE_PREFIX_MAX 256 /* bytes of a key prefix (TK_PREFIX_MAX) */
#define TKZ_RULE_POLICY_MAX 703 /* bytes of a policy's text */
#define TKZ_RULE_TAG_MAX 23	/* bytes before a client's address or key */

/* flags of a rule's text: which forms of client it keys. */
#define TKZ_RULE_ADDRESS 0x1 /* an address, masked, after addr */
#define TKZ_RULE_KEY 0x2     /* a key, after key */

/* One version of an entry's text; two per entry (rules.c). */
struct tkz_rule_text {
	uint64_t check; /* FNV-1a of the bytes after it; see rules.c */
	uint16_t prefix_len, policy_len;
	uint8_t flags;	  /* TKZ_RULE_* */
	uint8_t v6, v4;	  /* prefix lengths that mask an address, bits */
	uint8_t reserved; /* 0 */
	char prefix[TKZ_RULE_PREFIX_MAX];
	char policy[TKZ_RULE_POLICY_MAX + 1];
	char addr[TKZ_RULE_TAG_MAX + 1]; /* NUL-terminated */
	char key[TKZ_RULE_TAG_MAX + 1];	 /* NUL-terminated */
};

struct tkz_rule {
	_Alignas(TKZ_LINE) uint64_t state; /* see rules.c */
	uint64_t name_hash;		   /* FNV-1a of the name */
	uint32_t name_len;
	uint8_t pad0[TKZ_LINE - 20];
	/* Hot: added to by every check of the rule. */
	_Alignas(TKZ_LINE) uint64_t checks;
	uint64_t denies;
	uint8_t pad1[TKZ_LINE - 16];
	char name[TKZ_RULE_NAME_MAX + 1];
	struct tkz_rule_text text[2];
};

_Static_assert(sizeof(struct tkz_rule_text) == 1024, "layout");
_Static_assert(offsetof(struct tkz_rule_text, prefix) == 16, "layout");
_Static_assert(offsetof(struct tkz_rule_text, policy) == 272, "layout");
_Static_assert(offsetof(struct tkz_rule_text, addr) == 976, "layout");
_Static_assert(offsetof(struct tkz_rule, checks) == 64, "layout");
_Static_assert(offsetof(struct tkz_rule, name) == 128, "layout");
_Static_assert(offsetof(struct tkz_rule, text) == 256, "layout");
_Static_assert(sizeof(struct tkz_rule) == TKZ_RULE_SIZE, "layout");
_Static_assert(TKZ_RULE_SIZE % TKZ_LINE == 0, "entries on lines");

/* A rule as a process sees it: what is registered, and what is read. */
struct tk__rule {
	char name[TKZ_RULE_NAME_MAX + 1];
	char prefix[TKZ_RULE_PREFIX_MAX + 1];
	char policy[TKZ_RULE_POLICY_MAX + 1];
	char addr[TKZ_RULE_TAG_MAX + 1];
	char key[TKZ_RULE_TAG_MAX + 1];
	unsigned int flags, v6, v4;
	uint64_t checks, denies; /* read only */
};

struct tk__zone;

/*
 * Register rule @r in @z's directory (or find it there): returns its
 * entry's index, or -ENAMETOOLONG (a name, prefix, policy or tag too
 * long; an empty name: -EINVAL), -ENOSPC (every entry holds another
 * rule), -EBUSY (a rival kept updating the entry).  A rule of that name
 * already there keeps its counters; its text becomes @r's if it differs
 * (a reload that changed it).  Any thread of any process; never waits on
 * a live rival for longer than TK__RULES_LEASE_S, nor on a dead one.
 * Under the zone's guard (tk__zone_run()).
 */
int tk__rules_register(struct tk__zone *z, const struct tk__rule *r);

/*
 * Entry @i of @z into *@out: 0, -ENOENT (no rule there yet), -EAGAIN (it
 * kept changing while read), -EBADMSG (its text does not check: a writer
 * stopped for over the lease wrote over a newer one).  Under the guard.
 */
int tk__rules_read(struct tk__zone *z, unsigned int i, struct tk__rule *out);

/* One check decided by the rule of entry @i (@denied: a denial).  Under
 * the guard. */
void tk__rules_count(struct tk__zone *z, unsigned int i, uint64_t checks,
		     uint64_t denies);

/* Tests: if set, called by a writer of entry @i of @z once it has written
 * everything, just before the CAS that publishes it (a claim's, or an
 * update's new text). */
extern void (*tk__rules_hook)(struct tk__zone *z, unsigned int i);

/* A writer's claim older than this may be taken over, seconds. */
#define TK__RULES_LEASE_S 2

#endif /* TK_SHM_RULES_H */
