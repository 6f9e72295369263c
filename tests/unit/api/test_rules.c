/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_rules.c - a zone's rule directory through the public API
 * (tk_options.rule, tk_zone_rules(), tk_zone_reset_client()): per-rule
 * counts that add up exactly across processes that exit without closing,
 * registration that is idempotent and follows a changed policy, and a
 * reset of one client by rule and address or key that really resets it
 * (denied before, admitted after) and leaves other clients alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>
#include "workers.h"

static char dir[] = "/tmp/tk-rules-XXXXXX";

struct found {
	const char *name;
	struct tk_zone_rule r;
	int n, seen;
};

static int find(void *ctx, const struct tk_zone_rule *r)
{
	struct found *f = ctx;

	f->n++;
	if (strcmp(r->name, f->name) == 0) {
		f->r = *r;
		f->seen++;
	}
	return 0;
}

static struct found rule_of(const char *zone, const char *name)
{
	struct found f = { .name = name };

	assert_int_equal(tk_zone_rules(zone, NULL, find, &f), 0);
	return f;
}

/* A limiter of @policy on zone @zone for rule @rule keying addresses
 * after "a:" and keys after "k:", as mod_throttlekit does. */
static struct tk_limiter *open_on(struct tk_store *s, const char *zone,
				  const char *rule, const char *policy,
				  const char *prefix)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[64];

	o.prefix = prefix;
	o.rule = rule;
	o.rule_address = "a:";
	o.rule_key = "k:";
	o.store = s;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	assert_int_equal(tk_limiter_open(&l, policy, s ? NULL : spec, &o), 0);
	return l;
}

static struct tk_limiter *open_rule(const char *zone, const char *rule,
				    const char *policy, const char *prefix)
{
	return open_on(NULL, zone, rule, policy, prefix);
}

static int allowed(struct tk_limiter *l, const char *key)
{
	struct tk_decision d;

	assert_int_equal(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
	return d.allowed;
}

/* 4 processes x 500 checks, each leaving by _exit() without closing:
 * the rule's counts are exact, and another rule's are its own. */
static void counts_add_up(void **state)
{
	struct tk_limiter *a, *b;
	struct found f;
	int i, k, status;
	pid_t pid[4];
	char key[32];

	(void)state;
	a = open_rule("c", "per_ip", "gcra:100/1s,burst=100", "per_ip|gcra|");
	b = open_rule("c", "login", "fixed-window:3/1h", "login|fw|");
	for (k = 0; k < 4; k++) {
		pid[k] = kit_fork();
		assert_true(pid[k] >= 0);
		if (pid[k] == 0) {
			for (i = 0; i < 500; i++) {
				snprintf(key, sizeof(key), "a:10.0.%d.%d/32", k,
					 i % 50);
				allowed(a, key);
			}
			for (i = 0; i < 7; i++)
				allowed(b, "k:alice");
			_exit(0);
		}
	}
	for (k = 0; k < 4; k++) {
		assert_int_equal(waitpid(pid[k], &status, 0), pid[k]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	f = rule_of("c", "per_ip");
	assert_int_equal(f.seen, 1);
	assert_int_equal(f.r.checks, 2000);
	assert_int_equal(f.r.denies, 0);
	assert_string_equal(f.r.policy, "gcra:100/1s");
	assert_string_equal(f.r.prefix, "per_ip|gcra|");
	assert_true(f.r.has_address && f.r.has_key);
	assert_string_equal(f.r.address, "a:");
	assert_int_equal(f.r.v6_prefix, 64);
	assert_int_equal(f.r.v4_prefix, 32);
	f = rule_of("c", "login");
	assert_int_equal(f.r.checks, 28);
	assert_int_equal(f.r.denies, 25); /* 3 of 28 admitted */
	assert_int_equal(f.n, 2);
	tk_limiter_close(a);
	tk_limiter_close(b);
}

/* Every route of a check counts once: many, group, composite. */
static void every_route_counts(void **state)
{
	struct tk_limiter *a, *b, *c;
	struct tk_request reqs[3] = { { "k:x", 3, 1 },
				      { "k:x", 3, 1 },
				      { "k:x", 3, 1 } };
	struct tk_decision out[3], d, dims[2];
	struct tk_limiter *ls[2];
	struct tk_key keys[2] = { { "k:y", 3 }, { "k:y", 3 } };
	struct tk_store *s;

	(void)state;
	assert_int_equal(tk_store_open(&s, "shm:r", NULL), 0);
	a = open_rule("r", "many", "gcra:2/1h,burst=2", "many|");
	assert_int_equal(tk_limiter_check_many(a, reqs, 3, out, NULL), 0);
	assert_int_equal(rule_of("r", "many").r.checks, 3);
	assert_int_equal(rule_of("r", "many").r.denies, 1);
	b = open_on(s, "r", "g1", "gcra:1/1h", "g1|");
	c = open_on(s, "r", "g2", "gcra:5/1h,burst=5", "g2|");
	ls[0] = b;
	ls[1] = c;
	assert_int_equal(tk_limiter_check_group(ls, keys, 2, 1, &d, dims, 2),
			 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check_group(ls, keys, 2, 1, &d, dims, 2),
			 0);
	assert_false(d.allowed);
	/* g1 denied the second; g2 was checked, and denied nothing. */
	assert_int_equal(rule_of("r", "g1").r.checks, 2);
	assert_int_equal(rule_of("r", "g1").r.denies, 1);
	assert_int_equal(rule_of("r", "g2").r.checks, 2);
	assert_int_equal(rule_of("r", "g2").r.denies, 0);
	/* The group's state is reset too: g1 admits key y again. */
	assert_int_equal(tk_zone_reset_client("r", NULL, "g1", "y"), 1);
	assert_int_equal(tk_limiter_check_group(ls, keys, 2, 1, &d, dims, 2),
			 0);
	assert_true(d.allowed);
	/* A peek is no check. */
	assert_int_equal(tk_limiter_peek(a, "k:x", 3, &d), 0);
	assert_int_equal(rule_of("r", "many").r.checks, 3);
	tk_limiter_close(a);
	tk_limiter_close(b);
	tk_limiter_close(c);
	tk_store_close(s);
}

/* Twice the same: one entry; a changed policy: the same entry, the new
 * text, the counts kept. */
static void registration_idempotent_and_updated(void **state)
{
	struct tk_limiter *a, *b, *c;
	struct found f;

	(void)state;
	a = open_rule("u", "api", "gcra:10/1m", "api|gcra|");
	assert_true(allowed(a, "k:1"));
	b = open_rule("u", "api", "gcra:10/1m", "api|gcra|");
	f = rule_of("u", "api");
	assert_int_equal(f.n, 1);
	assert_int_equal(f.r.checks, 1);
	c = open_rule("u", "api", "gcra:20/1m,burst=5", "api|gcra|");
	f = rule_of("u", "api");
	assert_int_equal(f.n, 1);
	assert_string_equal(f.r.policy, "gcra:20/1m,burst=5");
	assert_int_equal(f.r.checks, 1);
	assert_true(allowed(c, "k:1"));
	assert_int_equal(rule_of("u", "api").r.checks, 2);
	tk_limiter_close(a);
	tk_limiter_close(b);
	tk_limiter_close(c);
}

/* Denied before, admitted after, other clients untouched; the address is
 * masked as the rule masks it (an IPv6 client's /64). */
static void reset_by_rule_and_client(void **state)
{
	struct tk_limiter *a, *k;

	(void)state;
	a = open_rule("z", "per_ip", "gcra:1/1h", "per_ip|gcra|");
	k = open_rule("z", "per_key", "gcra:1/1h", "per_key|gcra|");
	assert_true(allowed(a, "a:127.0.0.1/32"));
	assert_false(allowed(a, "a:127.0.0.1/32"));
	assert_true(allowed(a, "a:127.0.0.2/32"));
	assert_true(allowed(a, "a:2001:db8::/64"));
	assert_true(allowed(k, "k:alice"));
	assert_true(allowed(k, "k:bob"));
	/* "alice" is not an address: the key form alone. */
	assert_int_equal(tk_zone_reset_client("z", NULL, "per_key", "alice"),
			 1);
	assert_true(allowed(k, "k:alice"));
	assert_false(allowed(k, "k:bob"));
	/* An address: both forms of a rule that keys both. */
	assert_int_equal(tk_zone_reset_client("z", NULL, "per_ip", "127.0.0.1"),
			 2);
	assert_true(allowed(a, "a:127.0.0.1/32"));
	assert_false(allowed(a, "a:127.0.0.2/32"));
	assert_int_equal(
		tk_zone_reset_client("z", NULL, "per_ip", "2001:db8::77"), 2);
	assert_true(allowed(a, "a:2001:db8::/64"));
	assert_int_equal(tk_zone_reset_client("z", NULL, "nope", "127.0.0.1"),
			 -ESRCH);
	assert_int_equal(tk_zone_reset_client("nozone", NULL, "per_ip", "x"),
			 -ENOENT);
	tk_limiter_close(a);
	tk_limiter_close(k);
}

/* A rule keying only addresses refuses a client that is none. */
static void address_only(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	(void)state;
	o.rule = "ip";
	o.rule_address = "ip:";
	o.rule_v4_prefix = 24;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/1h", "shm:ao", &o), 0);
	assert_true(allowed(l, "ip:192.0.2.0/24"));
	assert_false(allowed(l, "ip:192.0.2.0/24"));
	assert_int_equal(tk_zone_reset_client("ao", NULL, "ip", "alice"),
			 -EINVAL);
	assert_int_equal(tk_zone_reset_client("ao", NULL, "ip", "192.0.2.9"),
			 1);
	assert_true(allowed(l, "ip:192.0.2.0/24"));
	tk_limiter_close(l);
}

/* 64 names fill the directory; the 65th limiter works, uncounted. */
static void full_directory(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l[65];
	struct found f = { .name = "" };
	char name[16];
	int i;

	(void)state;
	o.rule_key = "";
	for (i = 0; i < 65; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		o.rule = name;
		o.prefix = name;
		assert_int_equal(
			tk_limiter_open(&l[i], "gcra:1/1h", "shm:full", &o), 0);
		assert_true(allowed(l[i], "x"));
	}
	assert_int_equal(tk_zone_rules("full", NULL, find, &f), 0);
	assert_int_equal(f.n, 64);
	o.rule = "";
	assert_int_equal(tk_limiter_open(&l[0], "gcra:1/1h", "shm:full", &o),
			 -EINVAL);
	for (i = 0; i < 65; i++)
		tk_limiter_close(l[i]);
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_add_up),
		cmocka_unit_test(every_route_counts),
		cmocka_unit_test(registration_idempotent_and_updated),
		cmocka_unit_test(reset_by_rule_and_client),
		cmocka_unit_test(address_only),
		cmocka_unit_test(full_directory),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
