/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * algo-kit.c - the fixture of the per-algorithm tests: a limiter on a
 * private memory store and a manual clock, and decision helpers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "algo-kit.h"

bool same_decision(const struct tk_decision *a, const struct tk_decision *b)
{
	return a->allowed == b->allowed && a->limit == b->limit &&
	       a->remaining == b->remaining && a->reset_at == b->reset_at &&
	       a->retry_after == b->retry_after;
}

int open_on(struct tk_limiter **l, const char *policy, struct tk_clock *clk)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.clock = clk;
	o.flags = TK_OPT_NO_RECLAIMER;
	*l = NULL;
	return tk_limiter_open(l, policy, "memory", &o);
}

void fx_open(struct fx *f, const char *policy, uint64_t start)
{
	int rc;

	assert_rc(tk_clock_manual_new(&f->clk, start), 0);
	rc = open_on(&f->l, policy, f->clk);
	if (rc != 0)
		fail_msg("tk_limiter_open(\"%s\") = %d (%s), want 0", policy,
			 rc, tk_strerrorname(rc));
	assert_non_null(f->l);
}

void fx_close(struct fx *f)
{
	tk_limiter_close(f->l);
	tk_clock_free(f->clk);
	f->l = NULL;
	f->clk = NULL;
}

void fx_at(struct fx *f, uint64_t ns)
{
	assert_rc(tk_clock_set(f->clk, ns), 0);
}

int open_rc(const char *policy)
{
	struct tk_clock *clk;
	struct tk_limiter *l;
	int rc;

	assert_rc(tk_clock_manual_new(&clk, B0), 0);
	rc = open_on(&l, policy, clk);
	if (rc == 0)
		tk_limiter_close(l);
	tk_clock_free(clk);
	return rc;
}

void poison(struct tk_decision *d)
{
	d->allowed = false;
	d->limit = 0xdeadbeefdeadbeefull;
	d->remaining = 0xdeadbeefdeadbeefull;
	d->reset_at = 0xdeadbeefdeadbeefull;
	d->retry_after = 0xdeadbeefdeadbeefull;
}

int check_rc(struct tk_limiter *l, const char *key, uint64_t cost,
	     struct tk_decision *d)
{
	poison(d);
	return tk_limiter_check(l, key, strlen(key), cost, d);
}

int peek_rc(struct tk_limiter *l, const char *key, struct tk_decision *d)
{
	poison(d);
	return tk_limiter_peek(l, key, strlen(key), d);
}

struct tk_decision chk(struct fx *f, const char *key, uint64_t cost)
{
	struct tk_decision d;

	assert_rc(check_rc(f->l, key, cost, &d), 0);
	return d;
}

struct tk_decision peek(struct fx *f, const char *key)
{
	struct tk_decision d;

	assert_rc(peek_rc(f->l, key, &d), 0);
	return d;
}
