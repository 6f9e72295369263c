/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rules.c - the rule directory of a zone (rules.h), lock-free and
 * kill-safe.
 *
 * - An entry's state word: phase (bits 0-1: EMPTY 0, NAMING 1, READY 2),
 *   which of its two texts is current (bit 2), BUSY (bit 3: a writer
 *   holds the other text), the claim's stamp (bits 4-35: seconds of
 *   CLOCK_MONOTONIC, one clock for every process of the host) and a
 *   sequence (bits 36-63) that every transition increments, so that a
 *   reader sees any change and no CAS succeeds on a word it did not read.
 * - A rule's entry is found by open addressing from its name's hash: two
 *   processes registering one name race for the same entries in the same
 *   order, and the loser of a claim waits for the winner's name before it
 *   moves on, so a name never gets two entries.  Entries are never freed.
 * - Claim: EMPTY -> NAMING by CAS; write the name and text 0; publish
 *   READY last, by CAS from the claimed word (release: the bytes first).
 * - Update (another text for the name: a reload): READY -> READY|BUSY by
 *   CAS, write the text that is not current, then one CAS makes it current
 *   and clears BUSY.  Readers copy the current text, which no writer
 *   touches while it is current, and retry if the word changed meanwhile.
 * - A process may die at any instruction: a NAMING or BUSY claim whose
 *   stamp is older than TK__RULES_LEASE_S is taken over by the next
 *   writer (a CAS, so by one), which writes everything again.  Its
 *   predecessor's CAS then fails; if it was only stopped, its late stores
 *   may land on what its successor wrote: every text carries a check word
 *   and the name a hash, and readers refuse what does not check.
 * - Counters are atomic adds on their own line; they count from the
 *   entry's claim on, across updates.
 */
#define _GNU_SOURCE
#include "rules.h"
#include "zone.h"

#include <ck_pr.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#define PHASE_MASK UINT64_C(3)
#define EMPTY UINT64_C(0)
#define NAMING UINT64_C(1)
#define READY UINT64_C(2)
#define CUR (UINT64_C(1) << 2)
#define BUSY (UINT64_C(1) << 3)
#define STAMP_SHIFT 4
#define STAMP_MASK UINT64_C(0xffffffff)
#define SEQ_SHIFT 36
#define SEQ_ONE (UINT64_C(1) << SEQ_SHIFT)

/* Rounds of waiting for a rival, and of updating, before giving up. */
#define TRIES 100000

static struct tkz_rule *entries(struct tk__zone *z)
{
	const struct tkz_geo *g = tk__zone_geo(z);

	return (struct tkz_rule *)(void *)((char *)tk__zone_header(z) +
					   tkz_rules_offset(g->capacity,
							    g->pages));
}

static uint64_t fnv(uint64_t x, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= b[i];
		x *= UINT64_C(0x100000001b3);
	}
	return x;
}

#define FNV0 UINT64_C(0xcbf29ce484222325)

void (*tk__rules_hook)(struct tk__zone *z, unsigned int i);

static uint64_t stamp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec & STAMP_MASK;
}

/* Has the claim of word @w outlived its lease? */
static int stale(uint64_t w)
{
	uint64_t then = (w >> STAMP_SHIFT) & STAMP_MASK;

	return ((stamp_now() - then) & STAMP_MASK) > TK__RULES_LEASE_S;
}

/* @w with @bits for its phase and flags, a fresh stamp, the next seq. */
static uint64_t next_word(uint64_t w, uint64_t bits)
{
	return ((w >> SEQ_SHIFT) + 1) << SEQ_SHIFT |
	       stamp_now() << STAMP_SHIFT | bits;
}

/* Word by word, so that no shared byte is read or written plainly. */
static void put(void *dst, const void *src, size_t n)
{
	uint64_t *d = dst, w;
	const unsigned char *s = src;
	size_t i;

	for (i = 0; i < n / 8; i++) {
		memcpy(&w, s + 8 * i, 8);
		ck_pr_store_64(&d[i], w);
	}
}

static void get(void *dst, const void *src, size_t n)
{
	const uint64_t *s = src;
	unsigned char *d = dst;
	uint64_t w;
	size_t i;

	for (i = 0; i < n / 8; i++) {
		w = ck_pr_load_64((uint64_t *)(uintptr_t)&s[i]);
		memcpy(d + 8 * i, &w, 8);
	}
}

/* The shared form of @r's text, its check word set. */
static void text_of(const struct tk__rule *r, struct tkz_rule_text *t)
{
	memset(t, 0, sizeof(*t));
	t->prefix_len = (uint16_t)strlen(r->prefix);
	t->policy_len = (uint16_t)strlen(r->policy);
	t->flags = (uint8_t)r->flags;
	t->v6 = (uint8_t)r->v6;
	t->v4 = (uint8_t)r->v4;
	memcpy(t->prefix, r->prefix, t->prefix_len);
	memcpy(t->policy, r->policy, t->policy_len);
	strcpy(t->addr, r->addr);
	strcpy(t->key, r->key);
	t->check = fnv(FNV0, (const char *)t + 8, sizeof(*t) - 8);
}

static int text_valid(const struct tkz_rule_text *t)
{
	return t->check == fnv(FNV0, (const char *)t + 8, sizeof(*t) - 8) &&
	       t->prefix_len <= TKZ_RULE_PREFIX_MAX &&
	       t->policy_len <= TKZ_RULE_POLICY_MAX &&
	       memchr(t->addr, 0, sizeof(t->addr)) &&
	       memchr(t->key, 0, sizeof(t->key));
}

static int too_long(const struct tk__rule *r)
{
	if (!r->name[0])
		return -EINVAL;
	if (strnlen(r->name, sizeof(r->name)) > TKZ_RULE_NAME_MAX ||
	    strnlen(r->prefix, sizeof(r->prefix)) > TKZ_RULE_PREFIX_MAX ||
	    strnlen(r->policy, sizeof(r->policy)) > TKZ_RULE_POLICY_MAX ||
	    strnlen(r->addr, sizeof(r->addr)) > TKZ_RULE_TAG_MAX ||
	    strnlen(r->key, sizeof(r->key)) > TKZ_RULE_TAG_MAX || r->v6 > 128 ||
	    r->v4 > 32)
		return -ENAMETOOLONG;
	return 0;
}

/* Claimed entry @i of @z (its word now @w): write name and text 0,
 * publish. */
static int fill(struct tk__zone *z, unsigned int i, uint64_t w,
		const struct tk__rule *r, const struct tkz_rule_text *t)
{
	struct tkz_rule *e = entries(z) + i;
	char name[TKZ_RULE_NAME_MAX + 1] = { 0 };
	size_t n = strlen(r->name);

	memcpy(name, r->name, n);
	put(e->name, name, sizeof(name));
	put(&e->text[0], t, sizeof(*t));
	ck_pr_store_64(&e->name_hash, fnv(FNV0, name, n));
	ck_pr_store_32(&e->name_len, (uint32_t)n);
	/* Release: name and text before READY; pairs with the acquire
	 * fence of the readers (read_entry()). */
	ck_pr_fence_store();
	if (tk__rules_hook)
		tk__rules_hook(z, i);
	return ck_pr_cas_64(&e->state, w, next_word(w, READY)) ? 0 : -EAGAIN;
}

/* Is READY entry @e (as its word @w says) rule @name's?  1, 0, or
 * -EAGAIN if it changed meanwhile. */
static int named(struct tkz_rule *e, uint64_t w, const char *name)
{
	char got[TKZ_RULE_NAME_MAX + 1];
	size_t n = strlen(name);

	if (ck_pr_load_32(&e->name_len) != n)
		return ck_pr_load_64(&e->state) == w ? 0 : -EAGAIN;
	get(got, e->name, sizeof(got));
	ck_pr_fence_load();
	if (ck_pr_load_64(&e->state) != w)
		return -EAGAIN;
	return memcmp(got, name, n) == 0 && got[n] == '\0' &&
	       ck_pr_load_64(&e->name_hash) == fnv(FNV0, got, n);
}

/* Between rounds of waiting for a rival: spin, yield, then sleep 1 ms,
 * so that a lease (seconds) is waited out in real time. */
static void pause_round(int round)
{
	struct timespec ms = { 0, 1000000 };

	if (round < 64)
		ck_pr_stall();
	else if (round < 128)
		sched_yield();
	else
		nanosleep(&ms, NULL);
}

/* Make @t the current text of READY entry @i of @z, if it is not yet. */
static int update(struct tk__zone *z, unsigned int i,
		  const struct tkz_rule_text *t)
{
	struct tkz_rule *e = entries(z) + i;
	struct tkz_rule_text cur;
	uint64_t w, nw, c;
	int round, waits = 0;

	for (round = 0; round < TRIES; round++) {
		w = ck_pr_load_64(&e->state);
		ck_pr_fence_load();
		c = (w & CUR) ? 1 : 0;
		if (!(w & BUSY)) {
			get(&cur, &e->text[c], sizeof(cur));
			ck_pr_fence_load();
			if (ck_pr_load_64(&e->state) != w)
				continue;
			if (memcmp(&cur, t, sizeof(cur)) == 0)
				return 0;
		} else if (!stale(w)) {
			pause_round(waits++);
			continue;
		}
		/* Take the other text (or a dead writer's claim of it). */
		nw = next_word(w, READY | (w & CUR) | BUSY);
		if (!ck_pr_cas_64(&e->state, w, nw))
			continue;
		w = nw;
		put(&e->text[c ^ 1], t, sizeof(*t));
		ck_pr_fence_store(); /* the text before it is current */
		if (tk__rules_hook)
			tk__rules_hook(z, i);
		ck_pr_cas_64(&e->state, w, next_word(w, READY | (c ^ 1) << 2));
	}
	return -EBUSY;
}

int tk__rules_register(struct tk__zone *z, const struct tk__rule *r)
{
	struct tkz_rule *e = entries(z);
	struct tkz_rule_text t;
	uint64_t w, nw, h;
	unsigned int i, k;
	int rc, round = 0, waits = 0;

	rc = too_long(r);
	if (rc)
		return rc;
	text_of(r, &t);
	h = fnv(FNV0, r->name, strlen(r->name));
	for (k = 0; k < TKZ_RULES;) {
		if (++round > TRIES)
			return -EBUSY;
		i = (unsigned int)((h + k) % TKZ_RULES);
		w = ck_pr_load_64(&e[i].state);
		if ((w & PHASE_MASK) == READY) {
			rc = named(&e[i], w, r->name);
			if (rc == 1)
				return update(z, i, &t) ?: (int)i;
			if (rc == 0)
				k++;
			continue;
		}
		/* A rival names it now: wait for its name, unless it died. */
		if ((w & PHASE_MASK) == NAMING && !stale(w)) {
			pause_round(waits++);
			continue;
		}
		nw = next_word(w, NAMING);
		if (ck_pr_cas_64(&e[i].state, w, nw) &&
		    fill(z, i, nw, r, &t) == 0)
			return (int)i;
	}
	return -ENOSPC;
}

int tk__rules_read(struct tk__zone *z, unsigned int i, struct tk__rule *out)
{
	struct tkz_rule *e = entries(z) + i;
	struct tkz_rule_text t;
	char name[TKZ_RULE_NAME_MAX + 1];
	uint64_t w;
	uint32_t n;
	int round;

	for (round = 0; round < 1000; round++) {
		w = ck_pr_load_64(&e->state);
		if ((w & PHASE_MASK) != READY)
			return -ENOENT;
		/* Acquire: pairs with the store fence of fill() and update().
		 */
		ck_pr_fence_load();
		n = ck_pr_load_32(&e->name_len);
		get(name, e->name, sizeof(name));
		get(&t, &e->text[(w & CUR) ? 1 : 0], sizeof(t));
		ck_pr_fence_load();
		if (ck_pr_load_64(&e->state) != w)
			continue;
		if (n > TKZ_RULE_NAME_MAX || name[n] != '\0' ||
		    ck_pr_load_64(&e->name_hash) != fnv(FNV0, name, n) ||
		    !text_valid(&t))
			return -EBADMSG;
		memset(out, 0, sizeof(*out));
		memcpy(out->name, name, n);
		memcpy(out->prefix, t.prefix, t.prefix_len);
		memcpy(out->policy, t.policy, t.policy_len);
		strcpy(out->addr, t.addr);
		strcpy(out->key, t.key);
		out->flags = t.flags;
		out->v6 = t.v6;
		out->v4 = t.v4;
		out->checks = ck_pr_load_64(&e->checks);
		out->denies = ck_pr_load_64(&e->denies);
		return 0;
	}
	return -EAGAIN;
}

void tk__rules_count(struct tk__zone *z, unsigned int i, uint64_t checks,
		     uint64_t denies)
{
	struct tkz_rule *e = entries(z) + i;

	if (checks)
		ck_pr_faa_64(&e->checks, checks);
	if (denies)
		ck_pr_faa_64(&e->denies, denies);
}
