/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * decision.c - ThrottleKit\Decision: one tk_decision, read-only.
 *
 * The properties are typed and readonly; the extension writes them once,
 * straight into their slots (in declaration order, see the stub), which
 * is the one way to set readonly properties from outside the class and
 * much cheaper than a property write per field.  The object keeps the
 * tk_decision itself for headers() and a reference to its limiter for the
 * policy the header fields describe.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php_throttlekit.h"

#include <errno.h>

zend_class_entry *tkphp_decision_ce;
static zend_object_handlers decision_handlers;

enum {
	P_ALLOWED,
	P_LIMIT,
	P_REMAINING,
	P_RESET_AT,
	P_RETRY_AFTER,
	P_DELAY,
	P_DEGRADED,
	P_COUNT /* the stub declares this many, in this order */
};

struct decision_obj {
	struct tk_decision d;
	struct tk_decision *dims; /* all() composites: one per dimension */
	struct tkphp_limiter *l;
	zend_object std; /* last: the engine allocates the properties after */
};

static struct decision_obj *decision_of(zend_object *o)
{
	return (struct decision_obj *)((char *)o -
				       XtOffsetOf(struct decision_obj, std));
}

static zend_object *decision_create(zend_class_entry *ce)
{
	struct decision_obj *o = zend_object_alloc(sizeof(*o), ce);

	zend_object_std_init(&o->std, ce);
	object_properties_init(&o->std, ce);
	o->std.handlers = &decision_handlers;
	o->l = NULL;
	o->dims = NULL;
	return &o->std;
}

static void decision_free_obj(zend_object *std)
{
	struct decision_obj *o = decision_of(std);

	if (o->dims)
		efree(o->dims);
	tkphp_limiter_release(o->l);
	zend_object_std_dtor(std);
}

/* Nanosecond counts stay below 2^63 until 2262; clamp anything else. */
static zend_long as_long(uint64_t v)
{
	return v > (uint64_t)ZEND_LONG_MAX ? ZEND_LONG_MAX : (zend_long)v;
}

void tkphp_decision_new(zval *rv, struct tkphp_limiter *l,
			const struct tk_decision *d,
			const struct tk_decision *dims)
{
	struct decision_obj *o;
	zval *p;

	/*
	 * As decision_create() without object_properties_init(): every slot
	 * is written below (a tenth of the cost of a check from PHP).
	 */
	o = zend_object_alloc(sizeof(*o), tkphp_decision_ce);
	zend_object_std_init(&o->std, tkphp_decision_ce);
	o->std.handlers = &decision_handlers;
	ZVAL_OBJ(rv, &o->std);
	o->d = *d;
	o->dims = NULL;
	if (dims) {
		o->dims = safe_emalloc(l->group_dims, sizeof(*dims), 0);
		memcpy(o->dims, dims, l->group_dims * sizeof(*dims));
	}
	o->l = l;
	atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
	p = o->std.properties_table;
	ZVAL_BOOL(&p[P_ALLOWED], d->allowed);
	ZVAL_LONG(&p[P_LIMIT], as_long(d->limit));
	ZVAL_LONG(&p[P_REMAINING], as_long(d->remaining));
	ZVAL_LONG(&p[P_RESET_AT], as_long(d->reset_at));
	ZVAL_LONG(&p[P_RETRY_AFTER], as_long(d->retry_after));
	ZVAL_LONG(&p[P_DELAY], as_long(d->delay));
	ZVAL_BOOL(&p[P_DEGRADED], d->degraded);
}

PHP_METHOD(ThrottleKit_Decision, __construct)
{
	ZEND_PARSE_PARAMETERS_NONE();
}

PHP_METHOD(ThrottleKit_Decision, retryAfterSeconds)
{
	uint64_t ns = decision_of(Z_OBJ_P(ZEND_THIS))->d.retry_after;

	ZEND_PARSE_PARAMETERS_NONE();
	/* Rounded up: a client that waits this long is not denied again. */
	RETURN_LONG(as_long(ns / 1000000000u + (ns % 1000000000u != 0)));
}

PHP_METHOD(ThrottleKit_Decision, headers)
{
	struct decision_obj *o = decision_of(Z_OBJ_P(ZEND_THIS));
	struct tk_http_field fields[TK_HTTP_FIELDS_MAX];
	struct tk_http_quota q;
	size_t nq;
	zend_string *style;
	unsigned int flags;
	char buf[2048];
	uint64_t now;
	int i, n;

	ZEND_PARSE_PARAMETERS_START(0, 1)
	Z_PARAM_OPTIONAL
	Z_PARAM_STR(style)
	ZEND_PARSE_PARAMETERS_END();

	if (ZEND_NUM_ARGS() == 0 || zend_string_equals_literal(style, "ietf"))
		flags = TK_HTTP_IETF;
	else if (zend_string_equals_literal(style, "legacy"))
		flags = TK_HTTP_LEGACY;
	else if (zend_string_equals_literal(style, "both"))
		flags = TK_HTTP_IETF | TK_HTTP_LEGACY;
	else {
		zend_throw_exception_ex(tkphp_exception_ce, EINVAL,
					"headers(): style \"%s\": expected "
					"\"ietf\", \"legacy\" or \"both\"",
					ZSTR_VAL(style));
		RETURN_THROWS();
	}
	q.name = o->l->name;
	q.policy = o->l->policy;
	q.dims = o->dims;
	/*
	 * The RateLimit fields of a composite need a decision per dimension,
	 * which only check() has: without them, only the X-RateLimit fields
	 * and Retry-After.
	 */
	nq = o->dims || tk_policy_dimensions(q.policy) == 1;
	n = tk_clock_now(tk_clock_system(), &now);
	if (n == 0)
		n = tk_http_headers(&q, nq, &o->d, now, flags, fields,
				    sizeof(fields) / sizeof(fields[0]), buf,
				    sizeof(buf));
	if (n < 0) {
		tkphp_throw(n, "headers()", NULL);
		RETURN_THROWS();
	}
	array_init_size(return_value, (uint32_t)n);
	for (i = 0; i < n; i++)
		add_assoc_string(return_value, fields[i].name,
				 (char *)fields[i].value);
}

void tkphp_decision_minit(void)
{
	/* tkphp_decision_new() writes the slots by number. */
	if (tkphp_decision_ce->default_properties_count != P_COUNT)
		zend_error_noreturn(E_CORE_ERROR,
				    "throttlekit: Decision has %d properties, "
				    "not %d",
				    tkphp_decision_ce->default_properties_count,
				    P_COUNT);
	tkphp_decision_ce->create_object = decision_create;
	memcpy(&decision_handlers, zend_get_std_object_handlers(),
	       sizeof(decision_handlers));
	decision_handlers.offset = XtOffsetOf(struct decision_obj, std);
	decision_handlers.free_obj = decision_free_obj;
	decision_handlers.clone_obj = NULL;
}
