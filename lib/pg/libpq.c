/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libpq.c - libpq, loaded by the first open of a postgresql:// store
 * (libpq.h says why not linked).
 *
 * RTLD_LOCAL: libpq's symbols stay out of the global scope, so a program
 * that links a libpq of its own keeps its own.  RTLD_NOW: a libpq that
 * lacks a symbol of its dependencies fails here, once, rather than at a
 * check.  The handle is never closed: the table points into it, and the
 * library itself stays mapped (-z nodelete).
 */
#include "config.h"
#include "pg/libpq.h"
#include "test-hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct tk__libpq tk__pq;

#if TK_TEST_HOOKS
const char *tk__libpq_soname;
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_why[256];

static const char *soname(void)
{
	return tk__libpq_soname ? tk__libpq_soname : TK__LIBPQ_SONAME;
}

/* dlsym() every function into @t; the first missing one's name, or NULL. */
static const char *resolve(void *h, struct tk__libpq *t)
{
#define TK__LIBPQ_RESOLVE(name)                                                \
	*(void **)&t->name = dlsym(h, #name);                                  \
	if (!t->name)                                                          \
		return #name;
	TK__LIBPQ_FUNCS(TK__LIBPQ_RESOLVE)
#undef TK__LIBPQ_RESOLVE
	return NULL;
}

static void load(void)
{
	struct tk__libpq t;
	const char *missing;
	void *h = dlopen(soname(), RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		/* dlerror() names the file, or a dependency it lacks. */
		snprintf(load_why, sizeof(load_why),
			 "%s not found: install libpq5 (%s)", soname(),
			 dlerror());
		load_rc = -ENOTSUP;
		return;
	}
	missing = resolve(h, &t);
	if (missing) {
		snprintf(load_why, sizeof(load_why),
			 "%s has no %s: install libpq5 of PostgreSQL 9.5 or "
			 "later",
			 soname(), missing);
		dlclose(h);
		load_rc = -ENOTSUP;
		return;
	}
	tk__pq = t;
}

int tk__libpq_load(char *why, size_t why_len)
{
	pthread_once(&once, load);
	if (load_rc && why_len)
		snprintf(why, why_len, "%s", load_why);
	return load_rc;
}
