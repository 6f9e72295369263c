/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * status.c - SetHandler throttlekit-status: the stores, the rules and the
 * counters of each zone, as text or (with the query "json") as JSON.
 *
 * A store's spec shows no Redis password ("***").  The zone counters
 * come from tk_zone_info(), which scans the whole zone:
 * cheap for an operator's page, not for a health check polled many times
 * a second.  The page reveals the configuration (policies, key
 * expressions, file names): restrict it like server-status.
 */
#include "mod_throttlekit.h"

#include <string.h>
#include <unistd.h>

#include "apr_strings.h"
#include "http_protocol.h"

/* apr_vformatter has no %llu. */
#define U64 APR_UINT64_T_FMT

struct out {
	request_rec *r;
	int json;
};

/* A JSON string, quotes included. */
static const char *js(apr_pool_t *p, const char *s)
{
	apr_size_t n = 2;
	const char *c;
	char *o, *w;

	if (!s)
		return "null";
	for (c = s; *c; c++)
		n += (unsigned char)*c < 0x20 || *c == '"' || *c == '\\' ? 6
									 : 1;
	o = w = apr_palloc(p, n + 1);
	*w++ = '"';
	for (c = s; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\')
			w += apr_snprintf(w, 7, "\\u%04x", (unsigned char)*c);
		else
			*w++ = *c;
	}
	*w++ = '"';
	*w = '\0';
	return o;
}

static const char *headers_name(const struct tk_mod_rule *rule)
{
	switch (rule->headers) {
	case TK_HTTP_IETF:
		return "ietf";
	case TK_HTTP_LEGACY:
		return "legacy";
	case TK_HTTP_IETF | TK_HTTP_LEGACY:
		return "both";
	default:
		return "none";
	}
}

static void zone_counters(struct out *o, const struct tk_mod_store *s)
{
	struct tk_zone_info z;
	struct tk_options opts;
	int rc;

	memset(&z, 0, sizeof(z));
	tk_mod_zone_options(s, &opts);
	rc = tk_zone_info_opts(s->zone, &opts, &z, sizeof(z));
	if (o->json) {
		if (rc) {
			ap_rprintf(o->r, ",\"zone\":{\"error\":%s}",
				   js(o->r->pool, tk_strerror(rc)));
			return;
		}
		ap_rprintf(o->r,
			   ",\"zone\":{\"capacity\":%" U64 ",\"keys\":%" U64 ","
			   "\"checks\":%" U64 ",\"denies\":%" U64
			   ",\"inserts\":%" U64 ","
			   "\"reclaims\":%" U64 ",\"evictions\":%" U64 ","
			   "\"resets\":%" U64 ",\"corrupt\":%" U64 ","
			   "\"violations\":%" U64 ",\"uid\":%u,\"gid\":%u,"
			   "\"mode\":\"%04o\",\"path\":%s}",
			   (apr_uint64_t)z.capacity, (apr_uint64_t)z.keys,
			   (apr_uint64_t)z.checks, (apr_uint64_t)z.denies,
			   (apr_uint64_t)z.inserts, (apr_uint64_t)z.reclaims,
			   (apr_uint64_t)z.evictions, (apr_uint64_t)z.resets,
			   (apr_uint64_t)z.corrupt, (apr_uint64_t)z.violations,
			   z.uid, z.gid, z.mode & 07777,
			   js(o->r->pool, s->zone));
		return;
	}
	if (rc) {
		ap_rprintf(o->r, "  zone error=%s\n", tk_strerror(rc));
		return;
	}
	ap_rprintf(o->r,
		   "  zone capacity=%" U64 " keys=%" U64 " checks=%" U64
		   " denies=%" U64 " "
		   "inserts=%" U64 " reclaims=%" U64 " evictions=%" U64
		   " resets=%" U64 " "
		   "corrupt=%" U64 " violations=%" U64
		   " uid=%u gid=%u mode=%04o path=%s\n",
		   (apr_uint64_t)z.capacity, (apr_uint64_t)z.keys,
		   (apr_uint64_t)z.checks, (apr_uint64_t)z.denies,
		   (apr_uint64_t)z.inserts, (apr_uint64_t)z.reclaims,
		   (apr_uint64_t)z.evictions, (apr_uint64_t)z.resets,
		   (apr_uint64_t)z.corrupt, (apr_uint64_t)z.violations, z.uid,
		   z.gid, z.mode & 07777, s->zone);
}

/* An error as the page shows it: its text and name. */
static const char *error_text(apr_pool_t *p, int rc)
{
	return apr_psprintf(p, "%s (%s)", tk_strerror(rc), tk_strerrorname(rc));
}

/* The checks of @s that failed in this child, if any. */
static void failures(struct out *o, const struct tk_mod_failures *f)
{
	apr_pool_t *p = o->r->pool;
	char when[APR_RFC822_DATE_LEN];

	if (f->last_at)
		apr_rfc822_date(when, f->last_at);
	if (o->json) {
		ap_rprintf(o->r,
			   ",\"failures\":{\"checks\":%" U64
			   ",\"admitted\":%" U64 ",\"refused\":%" U64
			   ",\"last_error\":%s,\"last_reason\":%s,"
			   "\"last_at\":%s}",
			   (apr_uint64_t)f->checks, (apr_uint64_t)f->admitted,
			   (apr_uint64_t)f->refused,
			   f->last_at ? js(p, tk_strerrorname(f->last_rc))
				      : "null",
			   f->last_at ? js(p, tk_strerror(f->last_rc)) : "null",
			   f->last_at ? js(p, when) : "null");
		return;
	}
	if (!f->checks)
		return;
	ap_rprintf(o->r,
		   "  failures checks=%" U64 " admitted=%" U64 " refused=%" U64
		   " last=\"%s\" error=%s reason=\"%s\"\n",
		   (apr_uint64_t)f->checks, (apr_uint64_t)f->admitted,
		   (apr_uint64_t)f->refused, when, tk_strerrorname(f->last_rc),
		   tk_strerror(f->last_rc));
}

/*
 * A store: "ok", or "failed: " and why, if it could not be opened (yet)
 * or if its last check in this child failed; then what failed.
 */
static void store(struct out *o, struct tk_mod_store *s, int first)
{
	apr_pool_t *p = o->r->pool;
	struct tk_mod_failures f;
	struct tk_stats st;
	/* Now, not at child_init: a failed store opens when it can. */
	int rc = s->handle ? tk_store_stats(s->handle, &st, sizeof(st))
			   : s->open_rc;
	const char *state = "ok";

	tk_mod_failures_get(s, &f);
	if (rc)
		state = apr_pstrcat(p, "failed: ", error_text(p, rc), NULL);
	else if (f.failing)
		state = apr_pstrcat(p, "failed: ", error_text(p, f.last_rc),
				    NULL);
	if (o->json)
		ap_rprintf(o->r,
			   "%s{\"name\":%s,\"spec\":%s,\"file\":%s,"
			   "\"line\":%u,\"open\":%s",
			   first ? "" : ",", js(p, s->name), js(p, s->shown),
			   js(p, s->file), s->line, js(p, state));
	else
		ap_rprintf(o->r, "store %s spec=%s declared=%s:%u open=%s\n",
			   s->name, s->shown, s->file, s->line, state);
	failures(o, &f);
	/* A Redis store's keys live on the server (its INFO keyspace). */
	if (s->zone)
		zone_counters(o, s);
	if (o->json)
		ap_rputs("}", o->r);
}

struct counts {
	const char *name;
	struct tk_zone_rule r;
	int found;
};

static int find_rule(void *ctx, const struct tk_zone_rule *r)
{
	struct counts *c = ctx;

	if (strcmp(r->name, c->name) != 0)
		return 0;
	c->r = *r;
	c->found = 1;
	return 1;
}

/*
 * The rule's checks and denials in every child, from its zone's rule
 * directory (child_init registers it): "" for a Redis store or a rule
 * the zone has not registered (no child opened it yet).
 */
static const char *rule_counts(struct out *o, const struct tk_mod_rule *r)
{
	struct counts c;
	struct tk_options opts;

	memset(&c, 0, sizeof(c));
	c.name = r->name;
	if (!r->store->zone)
		return "";
	tk_mod_zone_options(r->store, &opts);
	if (tk_zone_rules(r->store->zone, &opts, find_rule, &c) < 0 || !c.found)
		return "";
	return apr_psprintf(o->r->pool,
			    o->json ? ",\"checks\":%" U64 ",\"denies\":%" U64
				    : " checks=%" U64 " denies=%" U64,
			    (apr_uint64_t)c.r.checks, (apr_uint64_t)c.r.denies);
}

static void rule(struct out *o, const struct tk_mod_rule *r, int first)
{
	apr_pool_t *p = o->r->pool;
	const char *fail = r->fail == TK_FAIL_CLOSED ? "closed" : "open";
	const char *counts = rule_counts(o, r);

	if (o->json) {
		ap_rprintf(o->r,
			   "%s{\"name\":%s,\"policy\":%s,\"store\":%s,"
			   "\"key\":%s,\"status\":%d,\"headers\":%s,"
			   "\"headers_on_success\":%s,\"fail\":%s,"
			   "\"dry_run\":%s,\"delay_us\":%" APR_TIME_T_FMT
			   ",\"file\":%s,\"line\":%u%s}",
			   first ? "" : ",", js(p, r->name),
			   js(p, r->canonical), js(p, r->store->name),
			   js(p, r->key_text), r->status,
			   js(p, headers_name(r)),
			   r->headers_on_success ? "true" : "false",
			   js(p, fail), r->dry_run ? "true" : "false", r->delay,
			   js(p, r->file), r->line, counts);
		return;
	}
	ap_rprintf(o->r,
		   "rule %s policy=%s store=%s key=%s status=%d headers=%s%s "
		   "fail=%s%s",
		   r->name, r->canonical, r->store->name,
		   r->key_text ? r->key_text : "(client address)", r->status,
		   headers_name(r), r->headers_on_success ? "" : "(denials)",
		   fail, r->dry_run ? " dry-run" : "");
	if (r->delay)
		ap_rprintf(o->r, " delay=%" APR_TIME_T_FMT "us", r->delay);
	ap_rprintf(o->r, " declared=%s:%u%s\n", r->file, r->line, counts);
}

int tk_mod_status_handler(request_rec *r, unsigned int generation,
			  apr_time_t started)
{
	struct tk_mod_registry *reg = tk_mod_registry();
	struct out o = { r, r->args && strcmp(r->args, "json") == 0 };
	char when[APR_RFC822_DATE_LEN];
	int i;

	if (r->method_number != M_GET)
		return HTTP_METHOD_NOT_ALLOWED;
	ap_set_content_type(r, o.json ? "application/json" : "text/plain");
	apr_table_setn(r->headers_out, "Cache-Control", "no-store");
	if (r->header_only)
		return OK;
	apr_rfc822_date(when, started);
	if (o.json)
		ap_rprintf(r,
			   "{\"version\":%s,\"generation\":%u,\"started\":%s,"
			   "\"pid\":%ld,\"stores\":[",
			   js(r->pool, tk_version()), generation,
			   js(r->pool, when), (long)getpid());
	else
		ap_rprintf(r,
			   "throttlekit %s generation=%u started=\"%s\" "
			   "pid=%ld\n",
			   tk_version(), generation, when, (long)getpid());
	for (i = 0; i < reg->stores->nelts; i++)
		store(&o, APR_ARRAY_IDX(reg->stores, i, struct tk_mod_store *),
		      i == 0);
	if (o.json)
		ap_rputs("],\"rules\":[", r);
	for (i = 0; i < reg->rules->nelts; i++)
		rule(&o, APR_ARRAY_IDX(reg->rules, i, struct tk_mod_rule *),
		     i == 0);
	if (o.json)
		ap_rputs("]}\n", r);
	return OK;
}
