/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * limiter.c - ThrottleKit\Limiter: options in, decisions out.
 *
 * A Limiter object holds a reference to a per-process limiter (cache.c),
 * so constructing one per request costs a hash lookup.  Errors split in
 * two: a programmer's (a bad policy, spec, option, key or cost) throws
 * ThrottleKit\Exception whatever the fail policy (tk_error_is_caller());
 * a store's throws ThrottleKit\StoreException under fail "error", and
 * under "open" and "closed" the library answers it with a degraded
 * decision, also for a store that could not be opened (cache.c), so that
 * they never throw.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php_throttlekit.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

zend_class_entry *tkphp_limiter_ce;
static zend_object_handlers limiter_handlers;

struct limiter_obj {
	struct tkphp_limiter *l;
	zend_object std; /* last: the engine allocates the properties after */
};

static struct limiter_obj *limiter_of(zend_object *o)
{
	return (struct limiter_obj *)((char *)o -
				      XtOffsetOf(struct limiter_obj, std));
}

static zend_object *limiter_create(zend_class_entry *ce)
{
	struct limiter_obj *o = zend_object_alloc(sizeof(*o), ce);

	zend_object_std_init(&o->std, ce);
	object_properties_init(&o->std, ce);
	o->std.handlers = &limiter_handlers;
	return &o->std;
}

static void limiter_free_obj(zend_object *std)
{
	struct limiter_obj *o = limiter_of(std);

	tkphp_limiter_release(o->l);
	zend_object_std_dtor(std);
}

static void bad_option(const char *name, const char *expected)
{
	zend_throw_exception_ex(tkphp_exception_ce, EINVAL,
				"option \"%s\": expected %s", name, expected);
}

/* Read $options into @p; false (with an exception) if one is bad. */
static bool read_options(struct tkphp_params *p, HashTable *opts)
{
	zend_string *name;
	zval *v;

	ZEND_HASH_FOREACH_STR_KEY_VAL(opts, name, v)
	{
		ZVAL_DEREF(v);
		if (!name) {
			zend_throw_exception_ex(
				tkphp_exception_ce, EINVAL,
				"options: expected names (prefix, fail, "
				"timeout, capacity), not a list");
			return false;
		}
		if (zend_string_equals_literal(name, "prefix")) {
			if (Z_TYPE_P(v) != IS_STRING ||
			    zend_str_has_nul_byte(Z_STR_P(v)))
				return bad_option("prefix",
						  "a string without NUL bytes"),
				       false;
			p->prefix = Z_STR_P(v);
		} else if (zend_string_equals_literal(name, "fail")) {
			if (Z_TYPE_P(v) != IS_STRING ||
			    tk_fail_parse(Z_STRVAL_P(v), Z_STRLEN_P(v),
					  &p->fail))
				return bad_option("fail", "\"error\", \"open\" "
							  "or \"closed\""),
				       false;
		} else if (zend_string_equals_literal(name, "timeout")) {
			if (Z_TYPE_P(v) != IS_LONG || Z_LVAL_P(v) < 0)
				return bad_option("timeout",
						  "an int >= 0 (ns)"),
				       false;
			p->timeout = (uint64_t)Z_LVAL_P(v);
		} else if (zend_string_equals_literal(name, "capacity")) {
			if (Z_TYPE_P(v) != IS_LONG || Z_LVAL_P(v) < 0)
				return bad_option("capacity", "an int >= 0"),
				       false;
			p->capacity = (uint64_t)Z_LVAL_P(v);
		} else {
			zend_throw_exception_ex(
				tkphp_exception_ce, EINVAL,
				"unknown option \"%s\" (expected prefix, "
				"fail, timeout or capacity)",
				ZSTR_VAL(name));
			return false;
		}
	}
	ZEND_HASH_FOREACH_END();
	return true;
}

PHP_METHOD(ThrottleKit_Limiter, __construct)
{
	struct limiter_obj *o = limiter_of(Z_OBJ_P(ZEND_THIS));
	struct tkphp_params p = { 0 };
	struct tkphp_limiter *l = NULL;
	const char *fail = TKPHP_G(fail), *dflt;
	zend_string *store = NULL;
	HashTable *opts = NULL;
	bool ok;

	/* PATH: no NUL bytes, which would cut the strings the library reads. */
	ZEND_PARSE_PARAMETERS_START(1, 3)
	Z_PARAM_PATH_STR(p.policy)
	Z_PARAM_OPTIONAL
	Z_PARAM_PATH_STR_OR_NULL(store)
	Z_PARAM_ARRAY_HT(opts)
	ZEND_PARSE_PARAMETERS_END();

	/* The INI defaults, so that a pool's php_admin_value applies. */
	if (tk_fail_parse(fail, strlen(fail), &p.fail))
		p.fail = TK_FAIL_ERROR;
	if (store) {
		p.store = zend_string_copy(store);
	} else {
		dflt = tkphp_default_store();
		p.store = zend_string_init(dflt, strlen(dflt), 0);
	}
	ok = !opts || read_options(&p, opts);
	if (ok && tkphp_limiter_get(&l, &p) == 0) {
		tkphp_limiter_release(o->l);
		o->l = l;
	}
	zend_string_release(p.store);
}

/* The limiter of this object; NULL with an Error if never constructed. */
static struct tkphp_limiter *this_limiter(zval *this)
{
	struct tkphp_limiter *l = limiter_of(Z_OBJ_P(this))->l;

	if (!l)
		zend_throw_error(NULL, "ThrottleKit\\Limiter was not "
				       "constructed");
	return l;
}

static bool key_ok(zend_string *key)
{
	if (ZSTR_LEN(key) == 0) {
		zend_throw_exception_ex(tkphp_exception_ce, EINVAL,
					"key: must not be empty");
		return false;
	}
	if (ZSTR_LEN(key) > TK_KEY_MAX) {
		zend_throw_exception_ex(tkphp_exception_ce, ENAMETOOLONG,
					"key: longer than %d bytes",
					TK_KEY_MAX);
		return false;
	}
	return true;
}

static bool cost_ok(zend_long cost)
{
	if (cost < 1) {
		zend_throw_exception_ex(
			tkphp_exception_ce, EINVAL,
			"cost: must be at least 1, not " ZEND_LONG_FMT, cost);
		return false;
	}
	return true;
}

/* The limiter of this object for a check of @cost units of @key; NULL
 * (with an exception) if anything is wrong with them. */
static struct tkphp_limiter *limiter_for(zval *this, zend_string *key,
					 zend_long cost)
{
	struct tkphp_limiter *l = this_limiter(this);

	return l && key_ok(key) && cost_ok(cost) ? l : NULL;
}

/*
 * Turn the library's answer into a Decision, or throw: an error the
 * library returned is one its fail policy does not decide.
 */
static void answer(zval *rv, struct tkphp_limiter *l, int rc,
		   struct tk_decision *d, const struct tk_decision *dims,
		   const char *what)
{
	char msg[600]; /* a store spec is up to 511 bytes as shown */

	rc = tkphp_absorb(l, rc, d);
	if (rc == 0) {
		tkphp_decision_new(rv, l, d, d->degraded ? NULL : dims);
		return;
	}
	snprintf(msg, sizeof(msg), "%s on \"%s\"", what, l->store_spec);
	tkphp_throw(rc, msg,
		    rc == -ERANGE ? "the cost exceeds what the policy can "
				    "ever admit"
				  : NULL);
}

PHP_METHOD(ThrottleKit_Limiter, check)
{
	struct tk_decision d, dims[TK_GROUP_DIMENSIONS_MAX];
	struct tkphp_limiter *l;
	struct tk_key k;
	zend_string *key;
	zend_long cost = 1;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 2)
	Z_PARAM_STR(key)
	Z_PARAM_OPTIONAL
	Z_PARAM_LONG(cost)
	ZEND_PARSE_PARAMETERS_END();

	if (!(l = limiter_for(ZEND_THIS, key, cost)))
		RETURN_THROWS();
	if (l->group_dims) {
		/* A composite alone in a group counts as tk_limiter_check(),
		 * and also gives each dimension's decision. */
		k.key = ZSTR_VAL(key);
		k.key_len = ZSTR_LEN(key);
		rc = tk_limiter_check_group(&l->lim, &k, 1, (uint64_t)cost, &d,
					    dims, l->group_dims);
	} else {
		rc = tk_limiter_check(l->lim, ZSTR_VAL(key), ZSTR_LEN(key),
				      (uint64_t)cost, &d);
	}
	answer(return_value, l, rc, &d, l->group_dims ? dims : NULL, "check");
}

PHP_METHOD(ThrottleKit_Limiter, peek)
{
	struct tkphp_limiter *l;
	struct tk_decision d;
	zend_string *key;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 1)
	Z_PARAM_STR(key)
	ZEND_PARSE_PARAMETERS_END();

	if (!(l = this_limiter(ZEND_THIS)) || !key_ok(key))
		RETURN_THROWS();
	rc = tk_limiter_peek(l->lim, ZSTR_VAL(key), ZSTR_LEN(key), &d);
	answer(return_value, l, rc, &d, NULL, "peek");
}

PHP_METHOD(ThrottleKit_Limiter, reset)
{
	struct tkphp_limiter *l;
	zend_string *key;
	char msg[600]; /* a store spec is up to 511 bytes as shown */
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 1)
	Z_PARAM_STR(key)
	ZEND_PARSE_PARAMETERS_END();

	if (!(l = this_limiter(ZEND_THIS)) || !key_ok(key))
		RETURN_THROWS();
	rc = tk_limiter_reset(l->lim, ZSTR_VAL(key), ZSTR_LEN(key));
	/* Nothing to decide: a failed reset is an error under any policy. */
	if (rc) {
		snprintf(msg, sizeof(msg), "reset on \"%s\"", l->store_spec);
		tkphp_throw(rc, msg, NULL);
	}
}

static void bad_element(zend_ulong idx, zend_string *name)
{
	if (name)
		zend_throw_exception_ex(tkphp_exception_ce, EINVAL,
					"checkMany(): element \"%s\": expected "
					"a key or [\"key\" => string, "
					"\"cost\" => int]",
					ZSTR_VAL(name));
	else
		zend_throw_exception_ex(tkphp_exception_ce, EINVAL,
					"checkMany(): element " ZEND_ULONG_FMT
					": expected a key or [\"key\" => "
					"string, \"cost\" => int]",
					idx);
}

/* One element of checkMany(): "key" or ["key" => "k", "cost" => n]. */
static bool request_of(zval *v, zend_ulong idx, zend_string *name,
		       struct tk_request *r)
{
	zval *k, *c = NULL;
	uint32_t fields;

	ZVAL_DEREF(v);
	k = v;
	r->cost = 1;
	if (Z_TYPE_P(v) == IS_ARRAY) {
		k = zend_hash_str_find_deref(Z_ARRVAL_P(v), "key", 3);
		c = zend_hash_str_find_deref(Z_ARRVAL_P(v), "cost", 4);
		fields = 1 + (c != NULL);
		if (!k || zend_hash_num_elements(Z_ARRVAL_P(v)) != fields ||
		    (c && Z_TYPE_P(c) != IS_LONG))
			k = NULL;
	}
	if (!k || Z_TYPE_P(k) != IS_STRING) {
		bad_element(idx, name);
		return false;
	}
	if (c && !cost_ok(Z_LVAL_P(c)))
		return false;
	if (c)
		r->cost = (uint64_t)Z_LVAL_P(c);
	if (!key_ok(Z_STR_P(k)))
		return false;
	r->key = Z_STRVAL_P(k);
	r->key_len = Z_STRLEN_P(k);
	return true;
}

/*
 * Every request of a batch can be admitted some day, or nothing of the
 * batch is checked: an exception after the first requests consumed would
 * lose their decisions.  False with the exception otherwise.
 */
static bool batch_ok(struct tkphp_limiter *l, const struct tk_request *reqs,
		     size_t n)
{
	struct tk_decision d;
	char msg[600]; /* a store spec is up to 511 bytes as shown */
	uint64_t now;
	size_t i;
	int rc;

	/* The library's rule for a cost no state could admit, on the
	 * policy alone: no store is touched. */
	rc = tk_clock_now(tk_clock_system(), &now);
	for (i = 0; i < n && rc == 0; i++) {
		rc = tk_policy_forecast(l->policy, now, reqs[i].cost, &d);
		if (rc && tk_error_is_caller(rc)) {
			snprintf(msg, sizeof(msg),
				 "checkMany on \"%s\", request %zu (nothing "
				 "checked)",
				 l->store_spec, i);
			tkphp_throw(rc, msg,
				    rc == -ERANGE ? "the cost exceeds what the "
						    "policy can ever admit"
						  : NULL);
			return false;
		}
	}
	return true;
}

PHP_METHOD(ThrottleKit_Limiter, checkMany)
{
	struct tk_decision *out = NULL;
	struct tk_request *reqs = NULL;
	struct tkphp_limiter *l;
	HashTable *in;
	zend_string *name;
	zend_ulong idx;
	size_t n, i = 0;
	int *rcs = NULL;
	zval *v, dz;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 1)
	Z_PARAM_ARRAY_HT(in)
	ZEND_PARSE_PARAMETERS_END();

	if (!(l = this_limiter(ZEND_THIS)))
		RETURN_THROWS();
	n = zend_hash_num_elements(in);
	reqs = safe_emalloc(n ? n : 1, sizeof(*reqs), 0);
	out = safe_emalloc(n ? n : 1, sizeof(*out), 0);
	rcs = safe_emalloc(n ? n : 1, sizeof(*rcs), 0);
	ZEND_HASH_FOREACH_KEY_VAL(in, idx, name, v)
	{
		if (!request_of(v, idx, name, &reqs[i++]))
			goto out;
	}
	ZEND_HASH_FOREACH_END();
	if (!batch_ok(l, reqs, n))
		goto out;
	for (i = 0; i < n; i++)
		rcs[i] = INT_MIN;
	/* A clock failure checks nothing and leaves rcs unwritten. */
	if ((rc = tk_limiter_check_many(l->lim, reqs, n, out, rcs)))
		for (i = 0; i < n; i++)
			if (rcs[i] == INT_MIN)
				rcs[i] = rc;
	array_init_size(return_value, (uint32_t)n);
	i = 0;
	ZEND_HASH_FOREACH_KEY(in, idx, name)
	{
		answer(&dz, l, rcs[i], &out[i], NULL, "checkMany");
		i++;
		if (EG(exception)) {
			zval_ptr_dtor(return_value);
			ZVAL_UNDEF(return_value);
			goto out;
		}
		if (name)
			zend_hash_update(Z_ARRVAL_P(return_value), name, &dz);
		else
			zend_hash_index_update(Z_ARRVAL_P(return_value), idx,
					       &dz);
	}
	ZEND_HASH_FOREACH_END();
out:
	efree(reqs);
	efree(out);
	efree(rcs);
}

struct wait_ctx {
	struct timespec deadline;
	bool bounded;
};

/*
 * Stop sleeping at the timeout option or when PHP must stop: a signal
 * handled with pcntl_async_signals() sets vm_interrupt.  So does the
 * execution timer, but on Linux it counts CPU time, which a sleep does
 * not use, so it never fires during a wait.
 */
static int wait_cancelled(void *arg)
{
	struct wait_ctx *w = arg;
	struct timespec now;

	if (zend_atomic_bool_load_ex(&EG(vm_interrupt)))
		return 1;
	if (!w->bounded)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > w->deadline.tv_sec ||
	       (now.tv_sec == w->deadline.tv_sec &&
		now.tv_nsec >= w->deadline.tv_nsec);
}

PHP_METHOD(ThrottleKit_Limiter, wait)
{
	struct wait_ctx w = { .bounded = false };
	struct tkphp_limiter *l;
	struct tk_decision d;
	zend_string *key;
	zend_long cost = 1;
	uint64_t ns;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 2)
	Z_PARAM_STR(key)
	Z_PARAM_OPTIONAL
	Z_PARAM_LONG(cost)
	ZEND_PARSE_PARAMETERS_END();

	if (!(l = limiter_for(ZEND_THIS, key, cost)))
		RETURN_THROWS();
	if (l->timeout) {
		w.bounded = true;
		clock_gettime(CLOCK_MONOTONIC, &w.deadline);
		ns = (uint64_t)w.deadline.tv_nsec + l->timeout % 1000000000u;
		w.deadline.tv_sec +=
			(time_t)(l->timeout / 1000000000u + ns / 1000000000u);
		w.deadline.tv_nsec = (long)(ns % 1000000000u);
	}
	rc = tk_limiter_wait(l->lim, ZSTR_VAL(key), ZSTR_LEN(key),
			     (uint64_t)cost, wait_cancelled, &w, &d);
	if (rc == -ECANCELED) {
		/* Cut short: a shaper's unit stays reserved, as
		 * tk_limiter_wait(3) says; the caller must not proceed. */
		d.allowed = false;
		rc = 0;
	}
	answer(return_value, l, rc, &d, NULL, "wait");
}

void tkphp_limiter_minit(void)
{
	tkphp_limiter_ce->create_object = limiter_create;
	memcpy(&limiter_handlers, zend_get_std_object_handlers(),
	       sizeof(limiter_handlers));
	limiter_handlers.offset = XtOffsetOf(struct limiter_obj, std);
	limiter_handlers.free_obj = limiter_free_obj;
	limiter_handlers.clone_obj = NULL;
}
