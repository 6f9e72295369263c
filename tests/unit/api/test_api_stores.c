/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_api_stores.c - the C API's promises that hold on every store
 * (memory, a zone, a real redis-server, and, in a build with the
 * PostgreSQL store, a real PostgreSQL server): a group and a single check of
 * one limiter share its states where the store can decide them together,
 * limiters opened on one spec group together, one check writes the
 * RateLimit fields of a composite, and the count of dimensions to size
 * a group's decisions.
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
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#ifdef TK_HAVE_POSTGRESQL
#include "pg-kit.h"
#endif

#define T0 (UINT64_C(1700000000) * SEC)

static struct redis_kit kit;

enum kind { MEMORY, ZONE, REDIS, POSTGRES };

#ifdef TK_HAVE_POSTGRESQL
static struct pg_kit pgk;

static const char *pg_spec(void)
{
	return pg_kit_fresh(&pgk);
}

/* tk_store_probe() of a spec of role @user, password @pw (NULL: none),
 * on table @table: its code, and its sentence in @why. */
static int probe_pg(const char *user, const char *pw, const char *table,
		    char *why, size_t len)
{
	char spec[256];

	snprintf(spec, sizeof(spec),
		 "postgresql://%s%s%s@127.0.0.1:%d/postgres?table=%s&"
		 "timeout=5s&connect_timeout=5s",
		 user, pw ? ":" : "", pw ? pw : "", pgk.port, table);
	return tk_store_probe(spec, NULL, why, len);
}

static void assert_login_refused(const char *why)
{
	assert_non_null(strstr(why, "refused the login"));
	assert_non_null(strstr(why, "password"));
	assert_null(strstr(why, "wr0ng"));
	assert_null(strstr(why, "s3cret"));
	assert_null(strstr(why, "privilege"));
	assert_null(strstr(why, "zone"));
}

static void assert_privilege_denied(const char *why)
{
	assert_non_null(strstr(why, "denied a privilege"));
	assert_null(strstr(why, "refused the login"));
	assert_null(strstr(why, "s3cret"));
}

/*
 * -EACCES of a PostgreSQL server that refuses the login (a wrong
 * password, none, a role that does not exist) and of one that lets the
 * user in but denies a privilege the store needs (CONNECT, CREATE on the
 * schema while the table is missing): tk_store_probe() tells them apart.
 * With the table made in advance and granted, no CREATE is needed.
 */
static void test_probe_pg_login(void **state)
{
	static const char *const sql[] = {
		"CREATE ROLE " PG_KIT_PASSWORD_ROLE " NOLOGIN",
		"CREATE ROLE pw LOGIN PASSWORD 's3cret' IN "
		"ROLE " PG_KIT_PASSWORD_ROLE,
		"CREATE ROLE np LOGIN PASSWORD 's3cret' IN "
		"ROLE " PG_KIT_PASSWORD_ROLE,
		"GRANT CREATE ON SCHEMA public TO pw",
		"CREATE DATABASE closed",
		"REVOKE CONNECT ON DATABASE closed FROM PUBLIC",
	};
	char why[512];
	size_t i;

	(void)state;
	pg_spec();
	for (i = 0; i < sizeof(sql) / sizeof(sql[0]); i++)
		assert_int_equal(pg_kit_sql(&pgk, sql[i]), 0);
	assert_rc(probe_pg("pw", "wr0ng", "probe_t", why, sizeof(why)),
		  -EACCES);
	assert_login_refused(why);
	assert_rc(probe_pg("pw", NULL, "probe_t", why, sizeof(why)), -EACCES);
	assert_login_refused(why);
	assert_rc(probe_pg("nobody", "s3cret", "probe_t", why, sizeof(why)),
		  -EACCES);
	assert_login_refused(why);
	assert_rc(probe_pg("pw", "s3cret", "probe_t", why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* Let in, and denied what the store needs. */
	assert_rc(probe_pg("np", "s3cret", "probe_u", why, sizeof(why)),
		  -EACCES);
	assert_privilege_denied(why);
	assert_non_null(strstr(why, "CREATE on the schema"));
	{
		char spec[256];

		snprintf(spec, sizeof(spec),
			 "postgresql://pw:s3cret@127.0.0.1:%d/closed",
			 pgk.port);
		assert_rc(tk_store_probe(spec, NULL, why, sizeof(why)),
			  -EACCES);
		assert_privilege_denied(why);
	}
	/* A table made in advance, granted: no CREATE on the schema. */
	assert_int_equal(pg_kit_sql(&pgk, "ALTER TABLE probe_t OWNER TO tk"),
			 0);
	assert_int_equal(pg_kit_sql(&pgk, "GRANT SELECT, INSERT, UPDATE ON "
					  "probe_t TO np"),
			 0);
	assert_rc(probe_pg("np", "s3cret", "probe_t", why, sizeof(why)), 0);
}

static void pg_destroy(void)
{
	pg_kit_destroy(&pgk);
}
#else
/* A build without the store: its tests skip. */
static const char *pg_spec(void)
{
	skip();
	return NULL;
}

static void test_probe_pg_login(void **state)
{
	(void)state;
	skip();
}

static void pg_destroy(void)
{
}
#endif

/* The spec of store @k (starting a server for REDIS, or skipping). */
static const char *spec_of(enum kind k)
{
	if (k == MEMORY)
		return "memory";
	if (k == ZONE) {
		tk_zone_destroy("apistores");
		return "shm:apistores";
	}
	if (k == POSTGRES)
		return pg_spec();
	redis_kit_need(&kit);
	redis_kit_cmd(&kit, NULL, 0, "FLUSHALL");
	return redis_kit_manual(kit.spec);
}

struct fx {
	struct tk_clock *clock;
	struct tk_store *store;
	struct tk_limiter *l[2];
};

/* Limiters of @pols (prefixes "a", "b") on one store of kind @k. */
static void fx_open(struct fx *f, enum kind k, const char *p0, const char *p1)
{
	struct tk_options o = TK_OPTIONS_INIT;

	memset(f, 0, sizeof(*f));
	assert_rc(tk_clock_manual_new(&f->clock, T0), 0);
	o.clock = f->clock;
	assert_rc(tk_store_open(&f->store, spec_of(k), &o), 0);
	o.store = f->store;
	o.prefix = "a";
	assert_rc(tk_limiter_open(&f->l[0], p0, NULL, &o), 0);
	o.prefix = "b";
	if (p1)
		assert_rc(tk_limiter_open(&f->l[1], p1, NULL, &o), 0);
}

static void fx_close(struct fx *f)
{
	tk_limiter_close(f->l[0]);
	tk_limiter_close(f->l[1]);
	tk_store_close(f->store);
	tk_clock_free(f->clock);
}

static struct tk_decision group(struct tk_limiter *const *ls, size_t n)
{
	struct tk_key k[2] = { { "k", 1 }, { "k", 1 } };
	struct tk_decision d;

	assert_rc(tk_limiter_check_group(ls, k, n, 1, &d, NULL, 0), 0);
	return d;
}

/*
 * Two group checks, then a single one, of a limiter of 2 per hour: the
 * third is refused, as three single checks would be; and the other way
 * round.  @p: a policy whose state the store decides in one step with
 * others (every policy on Redis; one of more than a word on memory and
 * zones, see tk_limiter_check_group(3)).
 */
static void one_state(enum kind k, const char *p)
{
	struct tk_decision d;
	struct fx f;

	fx_open(&f, k, p, "sliding-log:10/1h");
	d = group(f.l, 1);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	d = group(f.l, 2);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_rc(tk_limiter_check(f.l[0], "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	/* The other way: single checks, then groups see them. */
	assert_rc(tk_limiter_check(f.l[0], "j", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 1);
	{
		struct tk_key kj[2] = { { "j", 1 }, { "j", 1 } };

		assert_rc(tk_limiter_check_group(f.l, kj, 2, 1, &d, NULL, 0),
			  0);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, 0);
		assert_rc(tk_limiter_check_group(f.l, kj, 1, 1, &d, NULL, 0),
			  0);
		assert_false(d.allowed);
	}
	/* The second limiter's states are shared too. */
	assert_rc(tk_limiter_check(f.l[1], "j", 1, 1, &d), 0);
	assert_int_equal(d.remaining, 8);
	fx_close(&f);
}

static void test_one_state(void **state)
{
	enum kind k = *(enum kind *)*state;

	one_state(k, "sliding-log:2/1h");
	one_state(k, "sliding-window:2/1h");
	if (k != REDIS)
		return;
	one_state(k, "gcra:2/1h");
	one_state(k, "token-bucket:capacity=2,refill=2/1h");
	one_state(k, "fixed-window:2/1h");
	one_state(k, "quota:2/day");
}

/* The RateLimit fields of one check of a composite, as
 * "POLICY|RATELIMIT" into @out. */
static void fields_of(struct tk_limiter *l, uint64_t cost, uint64_t now,
		      char *out, size_t len)
{
	struct tk_http_quota q = { "api", tk_limiter_policy(l), NULL };
	struct tk_http_field f[TK_HTTP_FIELDS_MAX];
	struct tk_decision d;
	char buf[512];

	assert_rc(tk_limiter_check(l, "k", 1, cost, &d), 0);
	assert_rc(tk_http_headers(&q, 1, &d, now, TK_HTTP_IETF, f,
				  TK_HTTP_FIELDS_MAX, buf, sizeof(buf)),
		  d.allowed ? 2 : 3);
	snprintf(out, len, "%s|%s%s%s", f[0].value, f[1].value,
		 d.allowed ? "" : "|", d.allowed ? "" : f[2].value);
}

/*
 * T0 is 22:13:20 UTC: the day's quota resets in 6400 s.  RateLimit names
 * the dimension that decided; RateLimit-Policy every dimension.
 */
static void composite_headers(enum kind k)
{
	static const char pol[] = "\"api.0\";q=10;w=1, "
				  "\"api.1\";q=12;w=86400|";
	char got[256], want[256];
	struct fx f;

	fx_open(&f, k, "all(gcra:10/1s,quota:12/day)", NULL);
	fields_of(f.l[0], 1, T0, got, sizeof(got));
	snprintf(want, sizeof(want), "%s\"api.0\";r=9;t=1", pol);
	assert_string_equal(got, want);
	assert_rc(tk_clock_advance(f.clock, 2 * SEC), 0);
	fields_of(f.l[0], 9, T0 + 2 * SEC, got, sizeof(got));
	snprintf(want, sizeof(want), "%s\"api.0\";r=1;t=1", pol);
	assert_string_equal(got, want);
	assert_rc(tk_clock_advance(f.clock, 2 * SEC), 0);
	fields_of(f.l[0], 2, T0 + 4 * SEC, got, sizeof(got));
	snprintf(want, sizeof(want), "%s\"api.1\";r=0;t=6396", pol);
	assert_string_equal(got, want);
	/* Refused by the quota, not by the rate: its member, its wait. */
	fields_of(f.l[0], 1, T0 + 4 * SEC, got, sizeof(got));
	snprintf(want, sizeof(want), "%s\"api.1\";r=0;t=6396|6396", pol);
	assert_string_equal(got, want);
	fx_close(&f);
}

static void test_composite_headers(void **state)
{
	composite_headers(*(enum kind *)*state);
}

/*
 * @ls[0] (of 2 per hour, its key used up on @spec) and a limiter opening
 * @spec with other timeouts and connect options group together: the
 * table is the same.
 */
static void same_table(struct tk_limiter **ls, const char *spec,
		       const struct tk_options *o)
{
	struct tk_key keys[2] = { { "k", 1 }, { "k", 1 } };
	struct tk_decision d, dims[2];
	struct tk_limiter *g[2] = { ls[0], NULL };
	char other[256];

	snprintf(other, sizeof(other), "%.*s?timeout=4s&application_name=tk",
		 (int)strcspn(spec, "?"), spec);
	assert_rc(tk_limiter_open(&g[1], "sliding-log:3/1h", other, o), 0);
	assert_rc(tk_limiter_check_group(g, keys, 2, 1, &d, dims, 2), 0);
	assert_false(d.allowed);
	assert_false(dims[0].allowed);
	tk_limiter_close(g[1]);
}

/*
 * Two limiters each opening spec @spec group together where the spec
 * names one store's states (a zone, a Redis server); "memory" is private
 * to each open, and says so.
 */
static void same_spec(enum kind k)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *ls[3];
	struct tk_key keys[3] = { { "k", 1 }, { "k", 1 }, { "k", 1 } };
	struct tk_decision d, dims[2];
	struct tk_clock *c;
	char other[256];
	const char *spec = spec_of(k);
	int i;

	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	o.prefix = "x";
	assert_rc(tk_limiter_open(&ls[0], "gcra:2/1h", spec, &o), 0);
	o.prefix = "y";
	assert_rc(tk_limiter_open(&ls[1], "sliding-log:3/1h", spec, &o), 0);
	if (k == MEMORY) {
		assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0),
			  -EXDEV);
		assert_non_null(strstr(tk_strerror(-EXDEV), "memory"));
		assert_true(tk_error_is_caller(-EXDEV));
		goto out;
	}
	for (i = 0; i < 2; i++) {
		assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, dims, 2),
			  0);
		assert_true(d.allowed);
	}
	assert_int_equal(dims[0].remaining, 0);
	assert_int_equal(dims[1].remaining, 1);
	/* One state: the other opens see what the group consumed. */
	assert_rc(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0), 0);
	assert_false(d.allowed);
	assert_rc(tk_limiter_check(ls[1], "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	/* Another zone, key_prefix on the server, or table: not one. */
	if (k == ZONE)
		snprintf(other, sizeof(other), "shm:apistores2");
	else if (k == POSTGRES)
		snprintf(other, sizeof(other), "%s&table=other", spec);
	else
		snprintf(other, sizeof(other), "%s&key_prefix=other", spec);
	assert_rc(tk_limiter_open(&ls[2], "gcra:2/1h", other, &o), 0);
	assert_rc(tk_limiter_check_group(ls + 1, keys, 2, 1, &d, NULL, 0),
		  -EXDEV);
	tk_limiter_close(ls[2]);
	tk_zone_destroy("apistores2");
	if (k == POSTGRES) /* other timeouts, the same table: one */
		same_table(ls, spec, &o);
out:
	tk_limiter_close(ls[0]);
	tk_limiter_close(ls[1]);
	tk_clock_free(c);
}

static void test_same_spec(void **state)
{
	same_spec(*(enum kind *)*state);
}

/*
 * tk_limiter_dimensions() sizes a group's decisions exactly: every one of
 * them written, in order, and none past them.
 */
static void test_dimensions(void **state)
{
	struct tk_key k[2] = { { "k", 1 }, { "k", 1 } };
	struct tk_decision d, dims[TK_DIMENSIONS_MAX + 1];
	struct tk_limiter *none[2] = { NULL, NULL };
	struct fx f;
	size_t n;

	fx_open(&f, *(enum kind *)*state, "all(gcra:10/1s,quota:1000/day)",
		"sliding-window:100/1m");
	assert_int_equal(tk_limiter_dimensions(f.l, 1), 2);
	assert_int_equal(tk_limiter_dimensions(&f.l[1], 1), 1);
	n = tk_limiter_dimensions(f.l, 2);
	assert_int_equal(n, 3);
	assert_int_equal(tk_limiter_dimensions(f.l, 0), 0);
	assert_int_equal(tk_limiter_dimensions(NULL, 2), 0);
	assert_int_equal(tk_limiter_dimensions(none, 2), 0);
	memset(dims, 0xa5, sizeof(dims));
	assert_rc(tk_limiter_check_group(f.l, k, 2, 1, &d, dims, n), 0);
	assert_int_equal(dims[0].limit, 10);
	assert_int_equal(dims[1].limit, 1000);
	assert_int_equal(dims[2].limit, 100);
	assert_int_equal(dims[2].dimension, 2);
	assert_int_equal(dims[3].limit, UINT64_C(0xa5a5a5a5a5a5a5a5));
	fx_close(&f);
}

/*
 * -EACCES of a Redis server that refuses the login and of a zone the
 * trust rules refuse: tk_store_probe() tells them apart, and shows no
 * password.
 */
static void test_probe_redis_login(void **state)
{
	struct redis_kit k2 = { 0 };
	char spec[160], why[512];

	(void)state;
	if (!redis_kit_available())
		skip();
	assert_int_equal(redis_kit_start(&k2, "s3cret"), 0);
	snprintf(spec, sizeof(spec), "redis://:wr0ng@127.0.0.1:%d", k2.port);
	assert_rc(tk_store_probe(redis_kit_slow(spec), NULL, why, sizeof(why)),
		  -EACCES);
	assert_non_null(strstr(why, "refused the login"));
	assert_null(strstr(why, "wr0ng"));
	assert_null(strstr(why, "zone"));
	/* No password where one is required: the same refusal. */
	snprintf(spec, sizeof(spec), "redis://127.0.0.1:%d", k2.port);
	assert_rc(tk_store_probe(redis_kit_slow(spec), NULL, why, sizeof(why)),
		  -EACCES);
	assert_non_null(strstr(why, "refused the login"));
	snprintf(spec, sizeof(spec), "redis://:s3cret@127.0.0.1:%d", k2.port);
	assert_rc(tk_store_probe(redis_kit_slow(spec), NULL, why, sizeof(why)),
		  0);
	assert_string_equal(why, "");
	redis_kit_destroy(&k2);
}

static void test_probe_zone_trust(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char why[512];

	(void)state;
	assert_rc(tk_store_probe("memory", NULL, why, sizeof(why)), 0);
	/* Absent: opening would create it; the probe does not. */
	unlink("/dev/shm/throttlekit.apiprobe"); /* a failed run's */
	assert_rc(tk_store_probe("shm:apiprobe", NULL, why, sizeof(why)), 0);
	assert_int_equal(access("/dev/shm/throttlekit.apiprobe", F_OK), -1);
	/* Writable by every user: refused, and said so. */
	assert_rc(tk_zone_create("apiprobe", NULL), 0);
	assert_int_equal(chmod("/dev/shm/throttlekit.apiprobe", 0606), 0);
	assert_rc(tk_store_probe("shm:apiprobe", NULL, why, sizeof(why)),
		  -EACCES);
	assert_non_null(strstr(why, "zone apiprobe is not trusted"));
	assert_non_null(strstr(why, "0606"));
	assert_null(strstr(why, "login"));
	/* tk_zone_destroy() removes no zone the trust rules refuse. */
	assert_int_equal(chmod("/dev/shm/throttlekit.apiprobe", 0600), 0);
	assert_rc(tk_zone_destroy("apiprobe"), 0);
	if (geteuid() != 0)
		return; /* only root gives a zone another owner */
	o.flags = TK_OPT_ZONE_UID;
	o.zone_uid = 65534;
	assert_rc(tk_zone_create("apiprobe", &o), 0);
	assert_rc(tk_store_probe("shm:apiprobe", NULL, why, sizeof(why)),
		  -EACCES);
	assert_non_null(strstr(why, "uid 65534"));
	/* Naming that owner trusts it. */
	assert_rc(tk_store_probe("shm:apiprobe", &o, why, sizeof(why)), 0);
	tk_zone_destroy_opts("apiprobe", &o);
}

/* Test @f on each kind of store, named by it. */
#define ON(f, k)                                                               \
	{                                                                      \
#f "_" #k, f, NULL, NULL, &kinds[k]                            \
	}
#define EVERY_STORE(f) ON(f, MEMORY), ON(f, ZONE), ON(f, REDIS)
#define ALL_STORES(f) EVERY_STORE(f), ON(f, POSTGRES)

int main(void)
{
	static enum kind kinds[] = { MEMORY, ZONE, REDIS, POSTGRES };
	const struct CMUnitTest tests[] = {
		EVERY_STORE(test_one_state),
		ALL_STORES(test_composite_headers),
		ALL_STORES(test_same_spec),
		ALL_STORES(test_dimensions),
		cmocka_unit_test(test_probe_redis_login),
		cmocka_unit_test(test_probe_zone_trust),
		cmocka_unit_test(test_probe_pg_login),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	redis_kit_destroy(&kit);
	pg_destroy();
	tk_zone_destroy("apistores");
	return rc;
}
