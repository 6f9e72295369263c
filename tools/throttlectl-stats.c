/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl info and stats output: a zone's layout and sizes (info), its
 * counters and occupancy with each rule's (stats), as key=value lines,
 * JSON or the Prometheus text format (exposition format 0.0.4: HELP and
 * TYPE lines, counters named _total, times in seconds, label values
 * escaped).  In JSON every nanosecond value is a decimal string: above
 * 2^53 a JSON number loses its last digits in jq and JavaScript.
 */
#include <inttypes.h>
#include <string.h>

#include "throttlectl.h"

/* @s as a JSON string's contents (RFC 8259 7). */
static void json_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
}

/* @s as a Prometheus label value: \\, \" and \n escaped, as the
 * exposition format asks. */
static void label_str(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			printf("\\n");
		else
			putchar(*s);
	}
}

static void labels(const char *zone, const char *rule)
{
	printf("{zone=\"");
	label_str(zone);
	if (rule) {
		printf("\",rule=\"");
		label_str(rule);
	}
	printf("\"}");
}

/* A metric's HELP and TYPE lines. */
static void family(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(const char *name, const char *zone, const char *rule,
		   uint64_t v)
{
	printf("%s", name);
	labels(zone, rule);
	printf(" %" PRIu64 "\n", v);
}

/* ns as seconds, exactly: every digit of the nanoseconds. */
static void seconds(const char *name, const char *zone, uint64_t ns)
{
	printf("%s", name);
	labels(zone, NULL);
	printf(" %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u,
	       ns % 1000000000u);
}

static const char *hash_of(const struct tk_zone_info *i)
{
	return i->siphash ? "siphash-1-3" : "aes-cmac";
}

/* The geometry and sizes of info --prometheus. */
static void info_prometheus(const char *zone, const struct tk_zone_info *i)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} g[] = {
		{ "throttlekit_zone_capacity_slots",
		  "Slots of the zone's table.",
		  offsetof(struct tk_zone_info, capacity) },
		{ "throttlekit_zone_shards", "Shards of the zone's table.",
		  offsetof(struct tk_zone_info, shards) },
		{ "throttlekit_zone_window_slots",
		  "Slots of a key's candidate window.",
		  offsetof(struct tk_zone_info, window) },
		{ "throttlekit_zone_segment_bytes", "Bytes of the zone's file.",
		  offsetof(struct tk_zone_info, segment_size) },
		{ "throttlekit_zone_arena_bytes",
		  "Bytes of the zone's arena of state blocks.",
		  offsetof(struct tk_zone_info, arena_size) },
		{ "throttlekit_zone_refuse_full",
		  "1 if a full table refuses new keys instead of evicting.",
		  offsetof(struct tk_zone_info, refuse_full) },
	};
	size_t k;

	for (k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		family(g[k].name, "gauge", g[k].help);
		sample(g[k].name, zone, NULL,
		       *(const uint64_t *)(const void *)((const char *)i +
							 g[k].off));
	}
	family("throttlekit_zone_created_seconds", "gauge",
	       "When the zone was created, seconds since the epoch.");
	seconds("throttlekit_zone_created_seconds", zone, i->created);
	family("throttlekit_zone_grace_seconds", "gauge",
	       "How long an expired state is kept, seconds.");
	seconds("throttlekit_zone_grace_seconds", zone, i->grace);
	family("throttlekit_zone_info", "gauge",
	       "The zone's key hash and file mode, as labels; always 1.");
	printf("throttlekit_zone_info{zone=\"");
	label_str(zone);
	printf("\",key_hash=\"%s\",mode=\"%04o\",uid=\"%u\",gid=\"%u\"} 1\n",
	       hash_of(i), i->mode, i->uid, i->gid);
}

/* info's line (or JSON object) of a rule: how reset composes its keys. */
static int rule_info(void *ctx, const struct tk_zone_rule *r)
{
	unsigned int *n = ctx;

	if (*n == UINT32_MAX) {
		printf("rule=%s policy=%s prefix=%s address=%s key=%s "
		       "v6_prefix=%u v4_prefix=%u\n",
		       r->name, r->policy, r->prefix,
		       r->has_address ? r->address : "-",
		       r->has_key ? (r->key[0] ? r->key : "\"\"") : "-",
		       r->v6_prefix, r->v4_prefix);
		return 0;
	}
	printf("%s{\"rule\":\"", (*n)++ ? "," : "");
	json_str(r->name);
	printf("\",\"policy\":\"");
	json_str(r->policy);
	printf("\",\"prefix\":\"");
	json_str(r->prefix);
	printf("\",\"address\":");
	if (r->has_address) {
		printf("\"");
		json_str(r->address);
		printf("\"");
	} else {
		printf("null");
	}
	printf(",\"key\":");
	if (r->has_key) {
		printf("\"");
		json_str(r->key);
		printf("\"");
	} else {
		printf("null");
	}
	printf(",\"v6_prefix\":%u,\"v4_prefix\":%u}", r->v6_prefix,
	       r->v4_prefix);
	return 0;
}

int ctl_print_info(const char *zone, const struct tk_options *o,
		   const struct tk_zone_info *i, const char *format)
{
	unsigned int n = 0;
	int rc;
	static const char *const names[] = {
		"capacity",  "shards",	   "window",	  "segment_size",
		"created",   "grace",	   "refuse_full", "keys",
		"tentative", "garbage",	   "violations",  "checks",
		"denies",    "inserts",	   "reclaims",	  "evictions",
		"resets",    "arena_size", "blocks",	  "arena_used",
		"corrupt",
	};
	const uint64_t v[] = {
		i->capacity,  i->shards,     i->window,	     i->segment_size,
		i->created,   i->grace,	     i->refuse_full, i->keys,
		i->tentative, i->garbage,    i->violations,  i->checks,
		i->denies,    i->inserts,    i->reclaims,    i->evictions,
		i->resets,    i->arena_size, i->blocks,	     i->arena_used,
		i->corrupt,
	};
	size_t k, nv = sizeof(v) / sizeof(v[0]);

	if (strcmp(format, "prometheus") == 0) {
		info_prometheus(zone, i);
		return 0;
	}
	if (strcmp(format, "json") == 0) {
		printf("{\"zone\":\"");
		json_str(zone);
		printf("\"");
		for (k = 0; k < nv; k++)
			/* created and grace are ns: strings. */
			printf(k == 4 || k == 5 ? ",\"%s\":\"%" PRIu64 "\""
						: ",\"%s\":%" PRIu64,
			       names[k], v[k]);
		printf(",\"uid\":%u,\"gid\":%u,\"mode\":\"%04o\","
		       "\"key_hash\":\"%s\",\"rules\":[",
		       i->uid, i->gid, i->mode, hash_of(i));
		rc = tk_zone_rules(zone, o, rule_info, &n);
		printf("]}\n");
		return rc;
	}
	printf("zone=%s\n", zone);
	for (k = 0; k < nv; k++)
		printf("%s=%" PRIu64 "\n", names[k], v[k]);
	printf("uid=%u\ngid=%u\nmode=%04o\nkey_hash=%s\n", i->uid, i->gid,
	       i->mode, hash_of(i));
	n = UINT32_MAX;
	return tk_zone_rules(zone, o, rule_info, &n);
}

/* What stats shows: counters (monotonic), then gauges (now). */
static const struct stat_field {
	const char *text, *metric, *type, *help;
	size_t off;
} fields[] = {
	{ "checks", "throttlekit_zone_checks_total", "counter",
	  "Checks decided on the zone, by every process.",
	  offsetof(struct tk_zone_info, checks) },
	{ "denies", "throttlekit_zone_denies_total", "counter",
	  "Checks denied on the zone, by every process.",
	  offsetof(struct tk_zone_info, denies) },
	{ "inserts", "throttlekit_zone_inserts_total", "counter",
	  "Keys created.", offsetof(struct tk_zone_info, inserts) },
	{ "reclaims", "throttlekit_zone_reclaims_total", "counter",
	  "Keys reclaimed because their state expired.",
	  offsetof(struct tk_zone_info, reclaims) },
	{ "evictions", "throttlekit_zone_evictions_total", "counter",
	  "Live keys evicted to make room.",
	  offsetof(struct tk_zone_info, evictions) },
	{ "resets", "throttlekit_zone_resets_total", "counter",
	  "Keys removed by a reset.", offsetof(struct tk_zone_info, resets) },
	{ "keys", "throttlekit_zone_keys", "gauge", "Keys holding state now.",
	  offsetof(struct tk_zone_info, keys) },
	{ "tentative", "throttlekit_zone_tentative_keys", "gauge",
	  "Inserts in progress or abandoned.",
	  offsetof(struct tk_zone_info, tentative) },
	{ "garbage", "throttlekit_zone_garbage_slots", "gauge",
	  "Collided inserts not yet freed.",
	  offsetof(struct tk_zone_info, garbage) },
	{ "violations", "throttlekit_zone_violations", "gauge",
	  "Broken invariants the scan found.",
	  offsetof(struct tk_zone_info, violations) },
	{ "blocks", "throttlekit_zone_blocks", "gauge", "State blocks in use.",
	  offsetof(struct tk_zone_info, blocks) },
	{ "arena_used", "throttlekit_zone_arena_used_bytes", "gauge",
	  "Bytes of the state blocks in use.",
	  offsetof(struct tk_zone_info, arena_used) },
	{ "corrupt", "throttlekit_zone_corrupt_states", "gauge",
	  "States no policy of their algorithm could have written.",
	  offsetof(struct tk_zone_info, corrupt) },
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

static uint64_t field(const struct tk_zone_info *i, size_t k)
{
	return *(const uint64_t *)(const void *)((const char *)i +
						 fields[k].off);
}

struct rules_out {
	const char *format, *zone;
	int which; /* Prometheus: 0 checks, 1 denies */
	unsigned int n;
};

static int print_rule(void *ctx, const struct tk_zone_rule *r)
{
	struct rules_out *o = ctx;

	if (strcmp(o->format, "prometheus") == 0)
		sample(o->which ? "throttlekit_denies_total"
				: "throttlekit_checks_total",
		       o->zone, r->name, o->which ? r->denies : r->checks);
	else if (strcmp(o->format, "json") == 0) {
		printf("%s{\"rule\":\"", o->n ? "," : "");
		json_str(r->name);
		printf("\",\"checks\":%" PRIu64 ",\"denies\":%" PRIu64 "}",
		       r->checks, r->denies);
	} else {
		printf("rule=%s checks=%" PRIu64 " denies=%" PRIu64 "\n",
		       r->name, r->checks, r->denies);
	}
	o->n++;
	return 0;
}

int ctl_print_stats(const char *zone, const struct tk_options *o,
		    const struct tk_zone_info *i, const char *format)
{
	struct rules_out ro = { format, zone, 0, 0 };
	size_t k;
	int rc;

	if (strcmp(format, "prometheus") == 0) {
		for (k = 0; k < N_FIELDS; k++) {
			family(fields[k].metric, fields[k].type,
			       fields[k].help);
			sample(fields[k].metric, zone, NULL, field(i, k));
		}
		family("throttlekit_checks_total", "counter",
		       "Checks decided by the rule, by every process.");
		rc = tk_zone_rules(zone, o, print_rule, &ro);
		family("throttlekit_denies_total", "counter",
		       "Checks the rule denied, by every process.");
		ro.which = 1;
		return rc ? rc : tk_zone_rules(zone, o, print_rule, &ro);
	}
	if (strcmp(format, "json") == 0) {
		printf("{\"zone\":\"");
		json_str(zone);
		printf("\"");
		for (k = 0; k < N_FIELDS; k++)
			printf(",\"%s\":%" PRIu64, fields[k].text, field(i, k));
		printf(",\"rules\":[");
		rc = tk_zone_rules(zone, o, print_rule, &ro);
		printf("]}\n");
		return rc;
	}
	printf("zone=%s\n", zone);
	for (k = 0; k < N_FIELDS; k++)
		printf("%s=%" PRIu64 "\n", fields[k].text, field(i, k));
	return tk_zone_rules(zone, o, print_rule, &ro);
}
