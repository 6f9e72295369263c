/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * request.c - decide one request under the rules of its Throttle.
 *
 * The rules are split into groups: the rules of one store that are all
 * enforced, or all dry-run.  Each group is one atomic decision
 * (tk_limiter_check_group(): every rule admits, and then every one
 * consumes, or nothing changes; on a Redis Cluster whose slots the keys
 * span, one script per slot with refunds, never admitting more than a
 * rule's limit: lib/redis/xslot.c).  Groups are decided in the order their
 * first rule appears in Throttle; the first group that denies ends the
 * request, and later groups are not asked, so they consume nothing, while
 * the groups before it have consumed (stores are independent: no
 * transaction spans two of them).
 *
 * Keys: a rule without key= limits by the client's address
 * (r->useragent_ip, i.e. after mod_remoteip) through tk_client_key(), so
 * an IPv6 client's whole /64 shares one key.  A rule with key= uses the
 * expression's value; a value that is empty (a missing header) or longer
 * than a key may be falls back to the client's address, in a separate
 * key space ("a:" and "k:" prefixes), so that clients without the header
 * never share one bucket.
 *
 * Counted once: a client request may pass through several request_recs
 * (internal redirects, subrequests) and be checked in two phases (early
 * in header_parser, late in the handler phase: mod_throttlekit.c).  A
 * note in its first request_rec's request_config (struct note) marks
 * each rule decided for it, by rule index, and every later check skips
 * those; a request made to answer an error (an ErrorDocument) is never
 * checked.
 *
 * count= rules: such a rule is asked with tk_limiter_peek() where it
 * applies, which refuses a client with nothing left before the handler
 * (before authentication, for an early rule), and consumes with
 * tk_limiter_check() in log_transaction, once per client request, if the
 * status the client got is in its set: failed logins count, right
 * passwords never do.  A burst of concurrent failures may overshoot by
 * the requests in flight; each is refused once the count is spent.
 *
 * The verdict of all the checks of one client request goes to
 * THROTTLE_STATUS for the access log, the header fields to
 * err_headers_out (kept on error responses and ErrorDocuments).
 */
#include "mod_throttlekit.h"

#include <string.h>

#include "apr_strings.h"
#include "http_log.h"
#include "http_protocol.h"

APLOG_USE_MODULE(throttlekit);

#define MAX_FIELDS 16
#define FIELDS_BYTES 2048

struct group {
	struct tk_mod_rule *rules[TK_GROUP_DIMENSIONS_MAX];
	struct tk_key keys[TK_GROUP_DIMENSIONS_MAX];
	size_t off[TK_GROUP_DIMENSIONS_MAX]; /* first dimension of each */
	size_t n, dims;
	int dry_run;
};

struct verdict {
	int deny;	    /* the HTTP status of a denial; 0: admitted */
	const char *status; /* THROTTLE_STATUS of a denial */
	int degraded, delayed, dry_run;
	apr_interval_time_t sleep; /* us, the longest shaper delay */
};

/*
 * What one client request has counted, kept in the request_config of its
 * first request_rec (client_request()): each rule is counted once however
 * many internal redirects and subrequests the request takes, and the
 * verdict of all its checks is its THROTTLE_STATUS.
 */
struct note {
	char *counted; /* by rule index: decided for this client request */
	int rules;     /* entries of counted */
	int decided;   /* some rule was decided */
	struct verdict v;
	/* count= rules passed, with their keys: consumed by the final
	 * status (tk_mod_request_done()); NULL: none */
	apr_array_header_t *pending; /* of struct pending */
};

struct pending {
	struct tk_mod_rule *rule;
	struct tk_key key; /* in the client request's pool */
};

static void client_key(request_rec *r, struct tk_key *k)
{
	char buf[64];
	int n;

	n = tk_client_key(r->useragent_ip, 0, 0, buf, sizeof(buf));
	k->key = n > 0 && (size_t)n < sizeof(buf)
			 ? apr_pstrcat(r->pool, TK_MOD_ADDRESS_KEY, buf, NULL)
			 : apr_pstrcat(r->pool, TK_MOD_ADDRESS_KEY,
				       r->useragent_ip, NULL);
	k->key_len = strlen(k->key);
}

static void rule_key(request_rec *r, const struct tk_mod_rule *rule,
		     struct tk_key *k)
{
	const char *err = NULL, *v;

	if (rule->key) {
		v = ap_expr_str_exec(r, rule->key, &err);
		if (err)
			ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
				      "ThrottleRule %s: key=%s: %s", rule->name,
				      rule->key_text, err);
		else if (v && *v && strlen(v) <= TK_KEY_MAX - 2) {
			k->key = apr_pstrcat(r->pool, TK_MOD_KEY_KEY, v, NULL);
			k->key_len = strlen(k->key);
			return;
		}
		ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
			      "ThrottleRule %s: key=%s is empty or too long; "
			      "limiting by the client's address",
			      rule->name, rule->key_text);
	}
	client_key(r, k);
}

/*
 * The decision of @rule alone, for its X-RateLimit-* fields: its denying
 * dimension, else its tightest (fewest remaining).
 */
static struct tk_decision rule_decision(const struct group *g, size_t i,
					const struct tk_decision *dims)
{
	const struct tk_decision *x = &dims[g->off[i]], *best = x;
	size_t j;

	for (j = 1; j < g->rules[i]->dims && best->allowed; j++)
		if (!x[j].allowed || x[j].remaining < best->remaining)
			best = &x[j];
	return *best;
}

/* Appends the fields of tk_http_headers() to @r's error headers. */
static void put_fields(request_rec *r, const struct tk_http_quota *q, size_t nq,
		       const struct tk_decision *d, unsigned int flags)
{
	struct tk_http_field f[MAX_FIELDS];
	char buf[FIELDS_BYTES];
	uint64_t now = 0;
	int i, n;

	tk_clock_now(tk_clock_system(), &now);
	n = tk_http_headers(q, nq, d, now, flags, f, MAX_FIELDS, buf,
			    sizeof(buf));
	if (n < 0) {
		ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
			      "cannot format the RateLimit fields: %s",
			      tk_strerror(n));
		return;
	}
	for (i = 0; i < n; i++)
		apr_table_add(r->err_headers_out, f[i].name, f[i].value);
}

/*
 * The fields answering @d: on a denial those of every rule of the group
 * (Retry-After always), on success those of the rules whose headers= asks;
 * a degraded @d has no quota to show, and tk_http_headers() shows none.
 * X-RateLimit-* has room for one quota: that of the first rule that asks
 * for it, from its own decision, not the group's tightest rule, which
 * another rule's RateLimit-Policy member would then contradict.
 */
static void add_fields(request_rec *r, const struct group *g,
		       const struct tk_decision *d,
		       const struct tk_decision *dims, int denial)
{
	struct tk_http_quota q[TK_GROUP_DIMENSIONS_MAX];
	struct tk_decision legacy;
	size_t i, nq = 0;
	int has_legacy = 0;

	for (i = 0; i < g->n; i++) {
		const struct tk_mod_rule *rule = g->rules[i];

		if (!denial && !rule->headers_on_success)
			continue;
		if ((rule->headers & TK_HTTP_LEGACY) && !has_legacy) {
			has_legacy = 1;
			legacy = d->degraded ? *d : rule_decision(g, i, dims);
		}
		if (rule->headers & TK_HTTP_IETF) {
			q[nq].name = rule->name;
			q[nq].policy = rule->policy;
			q[nq].dims = &dims[g->off[i]];
			nq++;
		}
	}
	/* Retry-After once, from the group's decision. */
	if (nq || denial)
		put_fields(r, nq ? q : NULL, nq, d, nq ? TK_HTTP_IETF : 0);
	if (has_legacy) {
		legacy.allowed = true;
		put_fields(r, NULL, 0, &legacy, TK_HTTP_LEGACY);
	}
}

/*
 * Whether @rule is decided by tk_limiter_check(): a simple policy that
 * no Throttle checks beside another rule (the library keeps a simple
 * policy's group states apart from tk_limiter_check()'s, and a rule
 * counts in one bucket per key wherever a Throttle names it).  A
 * composite's group of one is its own composite check, which also gives
 * the decision of each dimension.
 */
static int plain(const struct tk_mod_rule *rule)
{
	return rule->dims == 1 && !rule->grouped;
}

static int group_check(request_rec *r, const struct group *g,
		       struct tk_decision *d, struct tk_decision *dims)
{
	struct tk_limiter *ls[TK_GROUP_DIMENSIONS_MAX];
	size_t i;
	int rc, one;

	for (i = 0; i < g->n; i++) {
		if (!g->rules[i]->limiter)
			return g->rules[i]->open_rc;
		ls[i] = g->rules[i]->limiter;
	}
	one = g->n == 1 && plain(g->rules[0]);
	ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
		      "ThrottleRule %s: %s check", g->rules[0]->name,
		      g->rules[0]->count ? "peek"
		      : one		 ? "plain"
					 : "group");
	/* count=: consumes later, by the final status; refused now only
	 * when nothing is left. */
	if (g->rules[0]->count) {
		rc = tk_limiter_peek(ls[0], g->keys[0].key, g->keys[0].key_len,
				     d);
		dims[0] = *d;
		return rc;
	}
	if (one) {
		rc = tk_limiter_check(ls[0], g->keys[0].key, g->keys[0].key_len,
				      1, d);
		dims[0] = *d;
		return rc;
	}
	return tk_limiter_check_group(ls, g->keys, g->n, 1, d, dims, g->dims);
}

/*
 * An error the library returned rather than decide: the store failed
 * (limiters are opened under TK_FAIL_ERROR, so that the error reaches
 * the log and the status page), a rule whose limiter could not be
 * opened in this child, or a bug.  The request is still answered by the
 * fail policies: the strictest of the group, as tk_limiter_check_group()
 * chooses, and the library's degraded decision.
 */
static void failed(request_rec *r, const struct group *g, int rc,
		   struct tk_decision *d)
{
	unsigned int fail = TK_FAIL_OPEN;
	uint64_t now = 0;
	size_t i;

	for (i = 0; i < g->n; i++)
		if (g->rules[i]->fail == TK_FAIL_CLOSED)
			fail = TK_FAIL_CLOSED;
	tk_clock_now(tk_clock_system(), &now);
	tk_decision_degraded(g->rules[0]->policy, fail, now, d);
	tk_mod_failure(r->server, g->rules[0]->store, rc, d->allowed);
}

/* The rule whose dimension denied (the first, in declaration order). */
static const struct tk_mod_rule *denier(const struct group *g,
					const struct tk_decision *dims)
{
	size_t i, j;

	for (i = 0; i < g->n; i++)
		for (j = 0; j < g->rules[i]->dims; j++)
			if (!dims[g->off[i] + j].allowed)
				return g->rules[i];
	return g->rules[0];
}

/* Shapers: sleep their delay, or refuse a delay beyond the rule's bound. */
static int shape(request_rec *r, const struct group *g, struct tk_decision *d,
		 struct tk_decision *dims, struct verdict *v)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		const struct tk_mod_rule *rule = g->rules[i];
		struct tk_decision *x = &dims[g->off[i]];
		apr_interval_time_t us;

		if (!rule->leaky || !x->delay)
			continue;
		us = (apr_interval_time_t)((x->delay + 999) / 1000);
		if (us <= rule->delay) {
			v->delayed = 1;
			if (us > v->sleep)
				v->sleep = us;
			continue;
		}
		/* Already reserved by the shaper: the slot stays used. */
		x->allowed = d->allowed = false;
		x->retry_after = x->delay - (uint64_t)rule->delay * 1000;
		d->retry_after = x->retry_after;
		ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
			      "ThrottleRule %s: delay %" APR_TIME_T_FMT
			      " us exceeds delay=%" APR_TIME_T_FMT " us",
			      rule->name, us, rule->delay);
		v->deny = rule->status;
		v->status = "REJECTED";
		return 1;
	}
	return 0;
}

static void decide(request_rec *r, struct group *g, struct verdict *v)
{
	struct tk_decision d, dims[TK_GROUP_DIMENSIONS_MAX];
	const struct tk_mod_rule *rule;
	size_t i;
	int rc;

	for (i = 0; i < g->n; i++)
		rule_key(r, g->rules[i], &g->keys[i]);
	memset(dims, 0, sizeof(dims));
	rc = group_check(r, g, &d, dims);
	if (rc < 0)
		failed(r, g, rc, &d);
	else if (d.degraded)
		tk_mod_failure(r->server, g->rules[0]->store, 0, d.allowed);
	else
		tk_mod_failure_over(r->server, g->rules[0]->store);
	if (d.degraded) {
		v->degraded = 1;
		if (!d.allowed && !g->dry_run) {
			v->deny = HTTP_SERVICE_UNAVAILABLE;
			v->status = "DEGRADED";
			add_fields(r, g, &d, dims, 1);
		}
		return;
	}
	if (!d.allowed) {
		rule = denier(g, dims);
		if (g->dry_run) {
			v->dry_run = 1;
			ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
				      "ThrottleRule %s would refuse %s "
				      "(dry-run)",
				      rule->name, g->keys[0].key);
			return;
		}
		ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
			      "ThrottleRule %s refused %s", rule->name,
			      g->keys[0].key);
		v->deny = rule->status;
		v->status = "REJECTED";
		add_fields(r, g, &d, dims, 1);
		return;
	}
	if (g->dry_run)
		return;
	if (shape(r, g, &d, dims, v)) {
		add_fields(r, g, &d, dims, 1);
		return;
	}
	add_fields(r, g, &d, dims, 0);
}

/*
 * The client request of @r: its first request_rec, the one read from the
 * connection.  A subrequest points to its parent (r->main), an internal
 * redirect to the request it replaces (r->prev); an internal fast
 * redirect (mod_dir) keeps the request_rec.  All share its pool.
 */
static request_rec *client_request(request_rec *r)
{
	for (;;) {
		if (r->main)
			r = r->main;
		else if (r->prev)
			r = r->prev;
		else
			return r;
	}
}

/* A request made to answer an error (an ErrorDocument), or part of one. */
static int error_response(const request_rec *r)
{
	for (; r; r = r->main ? r->main : r->prev)
		if (r->prev && ap_is_HTTP_ERROR(r->prev->status))
			return 1;
	return 0;
}

/* The note of @r's client request; created when @create. */
static struct note *note_of(request_rec *r, int create)
{
	request_rec *c = client_request(r);
	struct note *n;
	int rules;

	n = ap_get_module_config(c->request_config, &throttlekit_module);
	if (n || !create)
		return n;
	rules = tk_mod_registry()->rules->nelts;
	n = apr_pcalloc(c->pool, sizeof(*n));
	n->rules = rules;
	n->counted = apr_pcalloc(c->pool, rules > 0 ? (apr_size_t)rules : 1);
	ap_set_module_config(c->request_config, &throttlekit_module, n);
	return n;
}

void tk_mod_request_status(request_rec *r)
{
	const struct note *n = note_of(r, 0);
	const struct verdict *v;
	const char *status;

	if (!n || !n->decided)
		return;
	v = &n->v;
	if (v->deny)
		status = v->status;
	else if (v->degraded)
		status = "DEGRADED";
	else if (v->delayed)
		status = "DELAYED";
	else if (v->dry_run)
		status = "DRY_RUN";
	else
		status = "PASSED";
	apr_table_setn(r->subprocess_env, TK_MOD_ENV, status);
}

/* Whether @rule is checked in a group of its own. */
static int alone(const struct tk_mod_rule *rule)
{
	return plain(rule) || rule->count;
}

/* A count= rule @g passed: consumed by the final status, once. */
static void add_pending(request_rec *r, struct note *n, const struct group *g)
{
	request_rec *c = client_request(r);
	struct pending *p;

	if (!n->pending)
		n->pending = apr_array_make(c->pool, 2, sizeof(*p));
	p = apr_array_push(n->pending);
	p->rule = g->rules[0];
	p->key.key =
		apr_pstrmemdup(c->pool, g->keys[0].key, g->keys[0].key_len);
	p->key.key_len = g->keys[0].key_len;
}

/*
 * The status the client got: that of the last request of the chain of
 * internal redirects, as mod_log_config's %>s (a request an ErrorDocument
 * makes inherits the error's status).
 */
static int final_status(const request_rec *r)
{
	while (r->next)
		r = r->next;
	return r->status;
}

void tk_mod_request_done(request_rec *r)
{
	const struct note *n = note_of(r, 0);
	const struct pending *p;
	struct tk_decision d;
	int i, status, rc;

	if (!n || !n->pending)
		return;
	status = final_status(client_request(r));
	for (i = 0; i < n->pending->nelts; i++) {
		p = &APR_ARRAY_IDX(n->pending, i, struct pending);
		if (status < 100 || status > 599 || !p->rule->count[status] ||
		    !p->rule->limiter)
			continue;
		/* The response is sent: a denial now only fills the bucket,
		 * and the next request is refused by its peek. */
		rc = tk_limiter_check(p->rule->limiter, p->key.key,
				      p->key.key_len, 1, &d);
		if (rc < 0 || d.degraded) {
			tk_mod_failure(r->server, p->rule->store, rc, -1);
			continue;
		}
		tk_mod_failure_over(r->server, p->rule->store);
		ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
			      "ThrottleRule %s: counted status %d for %s",
			      p->rule->name, status, p->key.key);
	}
}

/* Whether @rule is left out of this call: counted, or not yet due. */
static int skipped(const struct note *n, const struct tk_mod_rule *rule,
		   int late)
{
	/* A rule the note has no room for (none: rules are made with the
	 * configuration) is checked, never passed over unseen. */
	if (rule->index < n->rules && n->counted[rule->index])
		return 1;
	return rule->late && !late;
}

int tk_mod_request(request_rec *r, apr_array_header_t *rules, int late)
{
	struct tk_mod_rule **all = (struct tk_mod_rule **)rules->elts;
	char *done = apr_pcalloc(r->pool, (apr_size_t)rules->nelts);
	struct note *n;
	struct verdict v;
	struct group g;
	int i, j;

	if (error_response(r)) {
		tk_mod_request_status(r);
		return DECLINED;
	}
	n = note_of(r, 1);
	for (i = 0; i < rules->nelts; i++)
		done[i] = (char)skipped(n, all[i], late);
	memset(&v, 0, sizeof(v));
	for (i = 0; i < rules->nelts && !v.deny; i++) {
		if (done[i])
			continue;
		memset(&g, 0, sizeof(g));
		g.dry_run = all[i]->dry_run;
		/* The configuration keeps a group within
		 * TK_GROUP_DIMENSIONS_MAX dimensions (config.c); a rule
		 * beyond would only start a group of its own. */
		for (j = i; j < rules->nelts; j++) {
			/* A plain or count= rule is never grouped. */
			if (j > i && (alone(all[i]) || alone(all[j])))
				continue;
			if (done[j] || all[j]->store != all[i]->store ||
			    all[j]->dry_run != all[i]->dry_run ||
			    g.dims + all[j]->dims > TK_GROUP_DIMENSIONS_MAX)
				continue;
			done[j] = 1;
			if (all[j]->index < n->rules)
				n->counted[all[j]->index] = 1;
			g.rules[g.n] = all[j];
			g.off[g.n++] = g.dims;
			g.dims += all[j]->dims;
		}
		decide(r, &g, &v);
		n->decided = 1;
		if (g.rules[0]->count && !v.deny)
			add_pending(r, n, &g);
	}
	if (v.deny) {
		n->v.deny = v.deny;
		n->v.status = v.status;
	}
	n->v.degraded |= v.degraded;
	n->v.delayed |= v.delayed;
	n->v.dry_run |= v.dry_run;
	tk_mod_request_status(r);
	if (v.deny)
		return v.deny;
	if (v.sleep)
		apr_sleep(v.sleep);
	return DECLINED;
}
