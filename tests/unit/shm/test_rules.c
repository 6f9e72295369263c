/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_rules.c - the rule directory's protocol (shm/rules.c): readers
 * racing writers that claim entries and update their texts never see an
 * entry before it is whole, nor a text half written (every read is a
 * text some writer registered for that name, or no entry); a name never
 * gets two entries however many threads register it at once; a claim or
 * an update abandoned by a writer that died is taken over once its lease
 * is over, and a fresh one is waited for, not overwritten.
 *
 * White-box (statically linked): it writes entries' words as a dead
 * writer would have left them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../shm/rules.h"
#include "../../shm/zone.h"
#include "workers.h"

static char dir[] = "/tmp/tk-rules-dir-XXXXXX";

static struct tk__zone *attach(const char *name)
{
	struct tk__zone_config cfg = { .capacity = 64,
				       .uid = (uid_t)-1,
				       .gid = (gid_t)-1 };
	struct tk__zone *z = NULL;

	assert_int_equal(tk__zone_attach(&z, name, &cfg, TK__ZONE_CREATE), 0);
	return z;
}

static struct tkz_rule *entry(struct tk__zone *z, unsigned int i)
{
	const struct tkz_geo *g = tk__zone_geo(z);

	return (struct tkz_rule *)(void *)((char *)tk__zone_header(z) +
					   tkz_rules_offset(g->capacity,
							    g->pages)) +
	       i;
}

/* Rule @n's text, version @v (0 or 1): each field says whose it is. */
static void rule_of(struct tk__rule *r, int n, int v)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "rule-%d", n);
	snprintf(r->prefix, sizeof(r->prefix), "rule-%d|%d|", n, v);
	/* Long, so that a torn copy is likely to show. */
	snprintf(r->policy, sizeof(r->policy), "all(%0600d,%d,%d)", n, n, v);
	snprintf(r->key, sizeof(r->key), "k%d:", v);
	r->flags = TKZ_RULE_KEY;
}

/* Is @got one of rule @n's texts? */
static int whole(const struct tk__rule *got, int n)
{
	struct tk__rule want;
	int v;

	for (v = 0; v < 2; v++) {
		rule_of(&want, n, v);
		if (strcmp(got->prefix, want.prefix) == 0 &&
		    strcmp(got->policy, want.policy) == 0 &&
		    strcmp(got->key, want.key) == 0 && got->flags == want.flags)
			return 1;
	}
	return 0;
}

#define NAMES 48
#define ROUNDS 100

struct race {
	struct tk__zone *z;
	atomic_int stop, torn, errors, reads;
	int id;
};

static void *writer(void *arg)
{
	struct race *r = arg;
	struct tk__rule rule;
	int i, n, rc;

	for (i = 0; i < ROUNDS; i++) {
		for (n = 0; n < NAMES; n++) {
			rule_of(&rule, n, (i + r->id) & 1);
			rc = tk__rules_register(r->z, &rule);
			if (rc < 0)
				atomic_fetch_add(&r->errors, 1);
		}
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct race *r = arg;
	struct tk__rule got;
	unsigned int i;
	int rc, n;

	while (!atomic_load(&r->stop)) {
		for (i = 0; i < TKZ_RULES; i++) {
			rc = tk__rules_read(r->z, i, &got);
			if (rc == -ENOENT || rc == -EAGAIN)
				continue;
			atomic_fetch_add(&r->reads, 1);
			if (rc != 0 || sscanf(got.name, "rule-%d", &n) != 1 ||
			    !whole(&got, n))
				atomic_fetch_add(&r->torn, 1);
		}
	}
	return NULL;
}

/* Two writers claim and update, two readers read all along. */
static void readers_never_see_a_partial_entry(void **state)
{
	struct race w[2], rd;
	pthread_t tw[2], tr[2];
	struct tk__rule got;
	int i, count[NAMES] = { 0 }, n;
	unsigned int k;

	(void)state;
	memset(&rd, 0, sizeof(rd));
	rd.z = attach("race");
	for (i = 0; i < 2; i++) {
		w[i] = rd;
		w[i].id = i;
		assert_int_equal(pthread_create(&tw[i], NULL, writer, &w[i]),
				 0);
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&tr[i], NULL, reader, &rd), 0);
	for (i = 0; i < 2; i++)
		pthread_join(tw[i], NULL);
	atomic_store(&rd.stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(tr[i], NULL);
	assert_int_equal(atomic_load(&w[0].errors) + atomic_load(&w[1].errors),
			 0);
	assert_int_equal(atomic_load(&rd.torn), 0);
	assert_true(atomic_load(&rd.reads) > 0);
	/* Every name once. */
	for (k = 0; k < TKZ_RULES; k++)
		if (tk__rules_read(rd.z, k, &got) == 0 &&
		    sscanf(got.name, "rule-%d", &n) == 1)
			count[n]++;
	for (i = 0; i < NAMES; i++)
		assert_int_equal(count[i], 1);
	tk__zone_detach(rd.z);
}

/* The home entry of rule @n: where its registration looks first. */
static unsigned int home(int n)
{
	struct tk__rule r;
	uint64_t x = UINT64_C(0xcbf29ce484222325);
	size_t i;

	rule_of(&r, n, 0);
	for (i = 0; i < strlen(r.name); i++) {
		x ^= (unsigned char)r.name[i];
		x *= UINT64_C(0x100000001b3);
	}
	return (unsigned int)(x % TKZ_RULES);
}

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* A claim or an update whose writer died: taken over after the lease,
 * and until then not a rule anyone reads. */
static void dead_writers_are_taken_over(void **state)
{
	struct tk__zone *z = attach("dead");
	struct tk__rule r, got;
	struct tkz_rule *e;
	uint64_t t0;
	int i;

	(void)state;
	/* A claim of rule-1's home entry, 10 s old: no reader sees it, and
	 * rule-1 takes the entry at once. */
	e = entry(z, home(1));
	e->state = UINT64_C(1) | ((now_s() - 10) & 0xffffffff) << 4;
	assert_int_equal(tk__rules_read(z, home(1), &got), -ENOENT);
	rule_of(&r, 1, 0);
	assert_int_equal(tk__rules_register(z, &r), (int)home(1));
	assert_int_equal(tk__rules_read(z, home(1), &got), 0);
	assert_true(whole(&got, 1));
	/* An update of it abandoned half-way (BUSY), fresh: the next update
	 * waits for the lease, then takes it over; readers read the current
	 * text meanwhile. */
	e->state |= UINT64_C(1) << 3;
	e->state = (e->state & ~(UINT64_C(0xffffffff) << 4)) |
		   (now_s() & 0xffffffff) << 4;
	memset(&e->text[1], 0x5a, sizeof(e->text[1]));
	assert_int_equal(tk__rules_read(z, home(1), &got), 0);
	assert_string_equal(got.prefix, "rule-1|0|");
	rule_of(&r, 1, 1);
	t0 = now_s();
	assert_int_equal(tk__rules_register(z, &r), (int)home(1));
	assert_true(now_s() - t0 >= 1);
	assert_int_equal(tk__rules_read(z, home(1), &got), 0);
	assert_string_equal(got.prefix, "rule-1|1|");
	/* The same name again, either text: still one entry. */
	for (i = 0; i < 3; i++) {
		rule_of(&r, 1, i & 1);
		assert_int_equal(tk__rules_register(z, &r), (int)home(1));
	}
	tk__zone_detach(z);
}

/* What the hook found: each entry about to be published must not be
 * visible yet, as a new entry (no rule) or as a new text (the old one). */
static atomic_int early;
static const char *old_prefix;

static void before_publish(struct tk__zone *z, unsigned int i)
{
	struct tk__rule got;
	int rc = tk__rules_read(z, i, &got);

	if (old_prefix ? rc != 0 || strcmp(got.prefix, old_prefix) != 0
		       : rc != -ENOENT)
		atomic_fetch_add(&early, 1);
}

/* Written whole, then published: not a moment before. */
static void published_last(void **state)
{
	struct tk__zone *z = attach("last");
	struct tk__rule r, got;
	int n;

	(void)state;
	tk__rules_hook = before_publish;
	for (n = 0; n < 8; n++) {
		old_prefix = NULL;
		rule_of(&r, n, 0);
		assert_true(tk__rules_register(z, &r) >= 0);
		old_prefix = "rule-0|0|";
		if (n == 0) {
			rule_of(&r, 0, 1);
			assert_int_equal(tk__rules_register(z, &r),
					 (int)home(0));
			assert_int_equal(tk__rules_read(z, home(0), &got), 0);
			assert_string_equal(got.prefix, "rule-0|1|");
		}
	}
	tk__rules_hook = NULL;
	assert_int_equal(atomic_load(&early), 0);
	tk__zone_detach(z);
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readers_never_see_a_partial_entry),
		cmocka_unit_test(dead_writers_are_taken_over),
		cmocka_unit_test(published_last),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
