/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c - open a store from its spec string; the store-level API.
 *
 * A spec names a backend: "memory" is the in-process store, "shm:NAME"
 * a zone, "redis://..." a Redis server (redis/store.c; without hiredis,
 * redis/store-none.c answers -ENOTSUP), "postgresql://..." a PostgreSQL
 * server (pg/store.c; without libpq, pg/store-none.c), and
 * "shm:NAME+redis..." a zone in front of a Redis store (store-tier.c).
 * Backends
 * implement tk__store_ops and nothing else; all rate-limiting math stays
 * in the algorithms.
 */
#include "store/store-ops.h"
#include "store/tier.h"
#include "test-hooks.h"
#include "error.h"
#include "options.h"
#include "store/slot-store.h"
#include "pg/spec.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int tk__redis_is_spec(const char *spec)
{
	return strncmp(spec, "redis", 5) == 0 &&
	       (strncmp(spec + 5, "://", 3) == 0 ||
		strncmp(spec + 5, "+unix://", 8) == 0 ||
		strncmp(spec + 5, "+cluster://", 11) == 0 ||
		strncmp(spec + 5, "+sentinel://", 12) == 0 ||
		strncmp(spec + 5, "s://", 4) == 0);
}

static int open_spec(struct tk_store **out, const char *spec,
		     const struct tk_options *o)
{
	if (strcmp(spec, "memory") == 0)
		return tk__memory_open(out, o);
	if (tk__tier_is_spec(spec))
		return tk__tier_open(out, spec + 4, o, NULL, 0);
	if (strncmp(spec, "shm:", 4) == 0)
		return tk__shm_open(out, spec + 4, o);
	if (tk__redis_is_spec(spec))
		return tk__redis_open(out, spec, o, NULL, 0);
	if (tk__pg_is_spec(spec))
		return tk__pg_open(out, spec, o, NULL, 0);
	return -EINVAL;
}

TK_API int tk_store_open(struct tk_store **out, const char *spec,
			 const struct tk_options *opts)
{
	struct tk_options o;
	int rc;

	if (!out || !spec)
		return -EINVAL;
	rc = tk__options_read(&o, opts);
	if (rc)
		return tk__rc(rc);
	if (o.store)
		return -EINVAL;
	rc = tk__rc(open_spec(out, spec, &o));
	/* A store's own failure: a store that answers with it (RETRY_OPEN). */
	if (rc && (o.flags & TK_OPT_RETRY_OPEN) && !tk_error_is_caller(rc))
		rc = tk__failed_open(out, spec, &o, rc);
	return rc;
}

TK_API int tk_store_validate(const char *spec, char *why, size_t len)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s;
	int rc = 0;

	if (!spec || (!why && len))
		return -EINVAL;
	if (len)
		why[0] = '\0';
	if (tk__tier_is_spec(spec)) {
		rc = tk__tier_open(NULL, spec + 4, &o, why, len);
	} else if (strncmp(spec, "shm:", 4) == 0) {
		if (!tk__zone_name_valid(spec + 4)) {
			rc = -EINVAL;
			snprintf(why, len,
				 "a zone's name is 1 to 200 letters, digits, "
				 "'.', '_' and '-', not beginning with '.', "
				 "or an absolute path ending in one");
		}
	} else if (tk__redis_is_spec(spec)) {
		/* Opening connects nothing: it parses, and loads TLS files. */
		rc = tk__redis_open(&s, spec, &o, why, len);
		if (rc == 0)
			tk_store_close(s);
	} else if (tk__pg_is_spec(spec)) {
		rc = tk__pg_open(&s, spec, &o, why, len);
		if (rc == 0)
			tk_store_close(s);
	} else if (strcmp(spec, "memory") != 0) {
		rc = -EINVAL;
		snprintf(why, len,
			 "expected memory, shm:NAME, redis://, redis+unix://, "
			 "redis+cluster://, redis+sentinel://, rediss:// or "
			 "postgresql://");
	}
	return tk__rc(rc);
}

TK_API int tk_store_stats(struct tk_store *s, struct tk_stats *out, size_t size)
{
	struct tk_stats st;
	int rc;

	if (!s || !out)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	s->ops->stats(s, &st);
	if (s->ops->failed && (rc = s->ops->failed(s)) != 0)
		return tk__rc(rc);
	st.corrupt = atomic_load_explicit(&s->corrupt, memory_order_relaxed);
	memcpy(out, &st, size < sizeof(st) ? size : sizeof(st));
	return 0;
}

TK_API void tk_store_close(struct tk_store *s)
{
	if (s)
		s->ops->close(s);
}

TK_API int tk_store_ping(struct tk_store *s, struct tk_store_ping *out,
			 size_t size)
{
	struct tk_store_ping p;
	int rc = 0;

	if (!s || !out)
		return -EINVAL;
	memset(&p, 0, sizeof(p));
	snprintf(p.store, sizeof(p.store), "%s", s->ops->name);
	if (s->ops->ping) {
		rc = s->ops->ping(s, &p);
	} else {
		/* In this host: the library is the server. */
		snprintf(p.version, sizeof(p.version), "%s", tk_version());
		snprintf(p.engine, sizeof(p.engine), "%s",
			 strcmp(s->ops->name, "shm") == 0 ? "zone" : "memory");
	}
	if (rc == 0 && s->ops->failed)
		rc = s->ops->failed(s);
	if (rc)
		return tk__rc(rc);
	memcpy(out, &p, size < sizeof(p) ? size : sizeof(p));
	return 0;
}

#if TK_TEST_HOOKS /* test-hooks.h */
uint64_t tk__slot_near_test;
#endif

__thread struct tk__last_write tk__last_write
	__attribute__((tls_model("initial-exec")));

/*
 * A core's own cache (L2) in slots: a table of more slots usually misses
 * in it.  1 MiB when the C library cannot tell.
 */
uint64_t tk__slot_near_max(void)
{
	long bytes = 0;

	if (tk__slot_near_test)
		return tk__slot_near_test - 1;
#ifdef _SC_LEVEL2_CACHE_SIZE
	bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
	if (bytes <= 0)
		bytes = 1L << 20;
	return (uint64_t)bytes / sizeof(struct tkz_slot);
}
