/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl top: who a zone limits.  The zone's slots keep only
 * fingerprints; its rings of recent keys (tk_zone_recent()) keep the names
 * of its last denials and of a sample of its checks.  top counts them per
 * key, ranks the keys, and peeks each one it lists under the policy the
 * operator names for its rule, consuming nothing.  Live (redrawn every
 * --interval until q or an interrupt) or once (--json, --iterations).
 *
 * Key names are bytes from whoever sent the request: printed escaped,
 * never raw, so that no key can move the cursor or retitle a terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "throttlectl.h"

#define MAX_KEYS 1024	 /* records in both rings, so distinct keys */
#define MAX_RULES 32	 /* --policy RULE=SPEC options */
#define NAME_MAX_LEN 512 /* prefix (256) and the bytes a ring keeps */
#define RULE_WIDTH 10	 /* columns of RULE; a longer rule pushes KEY */

struct key_row {
	char name[NAME_MAX_LEN]; /* prefix then key */
	size_t prefix_len, len;
	int truncated;
	uint64_t denied, sampled;
	int peeked; /* remaining and retry_after known */
	uint64_t remaining, retry_after;
};

struct rule_policy {
	const char *rule; /* NULL: every rule without its own */
	size_t rule_len;
	const char *spec;
};

struct top_args {
	const char *name;
	struct tk_options trust;
	int json;
	uint64_t interval_ms, iterations, count;
	struct rule_policy policy[MAX_RULES + 1];
	size_t policies;
};

struct tally {
	struct key_row row[MAX_KEYS];
	size_t n;
	uint64_t denials, samples;
};

/* Printable ASCII as it is but the backslash; every other byte \xHH.
 * Returns the characters written. */
static size_t put_text(const char *s, size_t n)
{
	size_t i, w = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\') {
			fputs("\\\\", stdout);
			w += 2;
		} else if (c >= 0x20 && c < 0x7f) {
			putchar(c);
			w++;
		} else {
			printf("\\x%02x", c);
			w += 4;
		}
	}
	return w;
}

/* A JSON string's content: every byte outside printable ASCII as \u00HH
 * (its value), so that the document is ASCII whatever the key. */
static void put_json(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			putchar(c);
		else
			printf("\\u%04x", c);
	}
}

/* The rule of a key: what comes before the first '|' of its name. */
static size_t rule_len(const struct key_row *r)
{
	const char *bar = memchr(r->name, '|', r->len);

	return bar ? (size_t)(bar - r->name) : 0;
}

static int add_record(void *ctx, const struct tk_zone_recent *rec)
{
	struct tally *t = ctx;
	struct key_row *r;
	size_t i, len = rec->prefix_len + rec->key_len;

	if (len > NAME_MAX_LEN)
		return 0; /* cannot be: a prefix and a ring's bytes */
	for (i = 0; i < t->n; i++) {
		r = &t->row[i];
		if (r->len == len && r->prefix_len == rec->prefix_len &&
		    r->truncated == rec->truncated &&
		    memcmp(r->name, rec->prefix, rec->prefix_len) == 0 &&
		    memcmp(r->name + rec->prefix_len, rec->key, rec->key_len) ==
			    0)
			break;
	}
	if (i == t->n) {
		if (t->n == MAX_KEYS)
			return 0;
		r = &t->row[t->n++];
		memset(r, 0, sizeof(*r));
		memcpy(r->name, rec->prefix, rec->prefix_len);
		memcpy(r->name + rec->prefix_len, rec->key, rec->key_len);
		r->prefix_len = rec->prefix_len;
		r->len = len;
		r->truncated = rec->truncated;
	}
	if (rec->denied) {
		t->row[i].denied += rec->count;
		t->denials += rec->count;
	} else {
		t->row[i].sampled += rec->count;
		t->samples += rec->count;
	}
	return 0;
}

static int by_denied(const void *a, const void *b)
{
	const struct key_row *x = a, *y = b;

	if (x->denied != y->denied)
		return x->denied < y->denied ? 1 : -1;
	if (x->sampled != y->sampled)
		return x->sampled < y->sampled ? 1 : -1;
	return 0;
}

static int by_sampled(const void *a, const void *b)
{
	const struct key_row *x = a, *y = b;

	if (x->sampled != y->sampled)
		return x->sampled < y->sampled ? 1 : -1;
	if (x->denied != y->denied)
		return x->denied < y->denied ? 1 : -1;
	return 0;
}

/* The policy named for @r's rule, or the one for every rule, or NULL. */
static const char *policy_for(const struct top_args *a, const struct key_row *r)
{
	size_t i, n = rule_len(r);
	const char *any = NULL;

	for (i = 0; i < a->policies; i++) {
		if (!a->policy[i].rule)
			any = a->policy[i].spec;
		else if (a->policy[i].rule_len == n &&
			 memcmp(a->policy[i].rule, r->name, n) == 0)
			return a->policy[i].spec;
	}
	return any;
}

/* What @r's key could be admitted now, under its rule's policy. */
static void peek(const struct top_args *a, struct key_row *r)
{
	struct tk_options o = a->trust;
	const char *policy = policy_for(a, r);
	char prefix[NAME_MAX_LEN + 1], spec[1100];
	struct tk_limiter *l;
	struct tk_decision d;

	r->peeked = 0;
	/* A key the ring cut short is another key; a prefix holding a NUL
	 * is no option string. */
	if (!policy || r->truncated ||
	    memchr(r->name, '\0', r->prefix_len) != NULL)
		return;
	memcpy(prefix, r->name, r->prefix_len);
	prefix[r->prefix_len] = '\0';
	o.prefix = r->prefix_len ? prefix : NULL;
	o.flags |= TK_OPT_ZONE_NO_CREATE;
	snprintf(spec, sizeof(spec), "shm:%s", a->name);
	if (tk_limiter_open(&l, policy, spec, &o) != 0)
		return;
	if (tk_limiter_peek(l, r->name + r->prefix_len, r->len - r->prefix_len,
			    &d) == 0) {
		r->peeked = 1;
		r->remaining = d.remaining;
		r->retry_after = d.retry_after;
	}
	tk_limiter_close(l);
}

static void row_json(const struct key_row *r)
{
	size_t rule = rule_len(r);

	printf("{\"name\":\"");
	put_json(r->name, r->len);
	if (rule) {
		printf("\",\"rule\":\"");
		put_json(r->name, rule);
		printf("\"");
	} else {
		printf("\",\"rule\":null");
	}
	printf(",\"prefix\":\"");
	put_json(r->name, r->prefix_len);
	printf("\",\"key\":\"");
	put_json(r->name + r->prefix_len, r->len - r->prefix_len);
	printf("\",\"truncated\":%s,\"denied\":%" PRIu64
	       ",\"sampled\":%" PRIu64,
	       r->truncated ? "true" : "false", r->denied, r->sampled);
	if (r->peeked)
		printf(",\"remaining\":%" PRIu64 ",\"retry_after\":%" PRIu64
		       "}",
		       r->remaining, r->retry_after);
	else
		printf(",\"remaining\":null,\"retry_after\":null}");
}

static void row_text(const struct key_row *r)
{
	size_t rule = rule_len(r), w;

	printf("%8" PRIu64 " %8" PRIu64 "  ", r->denied, r->sampled);
	if (r->peeked)
		printf("%9" PRIu64 " %4" PRIu64 ".%03" PRIu64 "s  ",
		       r->remaining, r->retry_after / 1000000000u,
		       r->retry_after / 1000000u % 1000u);
	else
		printf("%9s %9s  ", "-", "-");
	w = rule ? put_text(r->name, rule) : put_text("-", 1);
	printf("%*s  ", w < RULE_WIDTH ? (int)(RULE_WIDTH - w) : 0, "");
	put_text(r->name, r->len);
	printf("%s\n", r->truncated ? "..." : "");
}

/* The first @a->count rows of @t ranked by @cmp, with rows of no count
 * of that kind left out; each peeked. */
static void list(const struct top_args *a, struct tally *t,
		 int (*cmp)(const void *, const void *), const char *title)
{
	size_t i, shown = 0;

	qsort(t->row, t->n, sizeof(t->row[0]), cmp);
	if (a->json)
		printf(",\"%s\":[", title);
	else
		printf("%s\n  DENIED  SAMPLED  REMAINING     RETRY  %-*s  "
		       "KEY\n",
		       title, RULE_WIDTH, "RULE");
	for (i = 0; i < t->n && shown < a->count; i++) {
		struct key_row *r = &t->row[i];

		if (!(cmp == by_denied ? r->denied : r->sampled))
			break;
		peek(a, r);
		if (a->json) {
			printf("%s", shown ? "," : "");
			row_json(r);
		} else {
			row_text(r);
		}
		shown++;
	}
	if (a->json)
		printf("]");
}

/* One view of the zone: 0, or the zone's error. */
static int show(const struct top_args *a, struct tally *t)
{
	struct tk_zone_info info;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = tk_zone_info_opts(a->name, &a->trust, &info, sizeof(info));
	if (rc == 0)
		rc = tk_zone_recent_opts(a->name, &a->trust, add_record, t);
	if (rc)
		return rc;
	if (a->json) {
		printf("{\"zone\":\"");
		put_json(a->name, strlen(a->name));
		printf("\",\"checks\":%" PRIu64 ",\"denies\":%" PRIu64
		       ",\"recent_denials\":%" PRIu64
		       ",\"sampled_checks\":%" PRIu64 ",\"sample_rate\":64",
		       info.checks, info.denies, t->denials, t->samples);
	} else {
		printf("zone=");
		put_text(a->name, strlen(a->name));
		printf(" checks=%" PRIu64 " denies=%" PRIu64
		       " recent_denials=%" PRIu64 " sampled_checks=%" PRIu64
		       " (1 in ~64)\n",
		       info.checks, info.denies, t->denials, t->samples);
	}
	list(a, t, by_denied, a->json ? "most_denied" : "MOST DENIED");
	list(a, t, by_sampled, a->json ? "most_checked" : "MOST CHECKED");
	printf(a->json ? "}\n" : "");
	return 0;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

/*
 * Wait @ms for q on a terminal's standard input (read a key at a time,
 * without echo): 1 to stop (q, an interrupt), else 0.  @tty: standard
 * input is a terminal in that mode; without one, only an interrupt stops.
 */
static int wait_key(uint64_t ms, int tty)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char c;
	int rc;

	rc = poll(&p, tty ? 1 : 0, (int)ms);
	if (interrupted)
		return 1;
	if (rc == 1 && read(0, &c, 1) == 1)
		return c == 'q' || c == 'Q';
	return 0;
}

/* Redraw until q, an interrupt, or --iterations views. */
static int live(const struct top_args *a, struct tally *t)
{
	struct sigaction sa;
	struct termios old, raw;
	int tty = isatty(0) && tcgetattr(0, &old) == 0, clear = isatty(1);
	uint64_t views = 0;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt; /* no SA_RESTART: poll() returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (tty) {
		raw = old;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
	}
	while (!interrupted) {
		if (clear)
			printf("\033[H\033[2J"); /* home, clear the screen */
		else if (views)
			printf("\n");
		rc = show(a, t);
		if (rc)
			break;
		if (!a->json && clear)
			printf("\nevery %" PRIu64 ".%03" PRIu64
			       "s; q or Ctrl-C to quit\n",
			       a->interval_ms / 1000, a->interval_ms % 1000);
		fflush(stdout);
		if (++views == a->iterations || wait_key(a->interval_ms, tty))
			break;
	}
	if (tty)
		tcsetattr(0, TCSANOW, &old);
	return rc;
}

/* --interval: seconds, with up to three decimals, 0.1 to 3600. */
static int parse_interval(const char *arg, uint64_t *ms)
{
	char whole[16], frac[4] = "000";
	const char *dot = strchr(arg, '.');
	size_t n = dot ? (size_t)(dot - arg) : strlen(arg), f;
	uint64_t s, m;

	if (n == 0 || n >= sizeof(whole) || (dot && strlen(dot + 1) > 3) ||
	    (dot && dot[1] == '\0'))
		goto bad;
	memcpy(whole, arg, n);
	whole[n] = '\0';
	for (f = 0; dot && dot[1 + f]; f++)
		frac[f] = dot[1 + f];
	if (ctl_parse_number(whole, 10, 3600, &s) ||
	    ctl_parse_number(frac, 10, 999, &m))
		goto bad;
	*ms = s * 1000 + m;
	if (*ms >= 100 && *ms <= 3600000)
		return 0;
bad:
	fprintf(stderr,
		"throttlectl: --interval '%s': expected seconds from 0.1 to "
		"3600\n",
		arg);
	return -1;
}

/* --policy [RULE=]SPEC: RULE is what a rule's keys have before '|'. */
static int parse_policy(const char *arg, struct top_args *a)
{
	size_t n = strspn(arg, "abcdefghijklmnopqrstuvwxyz"
			       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
	struct rule_policy *p = &a->policy[a->policies];
	struct tk_parse_error err;
	struct tk_policy *parsed;

	if (a->policies == MAX_RULES) {
		fprintf(stderr, "throttlectl: more than %d --policy\n",
			MAX_RULES);
		return -1;
	}
	p->rule = n && arg[n] == '=' ? arg : NULL;
	p->rule_len = p->rule ? n : 0;
	p->spec = p->rule ? arg + n + 1 : arg;
	if (tk_policy_parse(&parsed, p->spec, &err) != 0) {
		fprintf(stderr, "throttlectl: policy '%s': %s\n", p->spec,
			err.message);
		return -1;
	}
	tk_policy_free(parsed);
	a->policies++;
	return 0;
}

static int apply_option(int ch, const char *arg, struct top_args *a)
{
	switch (ch) {
	case 'j':
		a->json = 1;
		return 0;
	case 'i':
		return parse_interval(arg, &a->interval_ms);
	case 'n':
		return ctl_parse_number(arg, 10, UINT32_MAX, &a->iterations) ||
				       a->iterations == 0
			       ? (fprintf(stderr,
					  "throttlectl: --iterations '%s': "
					  "expected an integer from 1\n",
					  arg),
				  -1)
			       : 0;
	case 'c':
		return ctl_parse_number(arg, 10, MAX_KEYS, &a->count) ||
				       a->count == 0
			       ? (fprintf(stderr,
					  "throttlectl: --count '%s': "
					  "expected an integer from 1 to %d\n",
					  arg, MAX_KEYS),
				  -1)
			       : 0;
	case 'p':
		return parse_policy(arg, a);
	case 'g':
	case 'o':
		return ctl_zone_trust(ch, arg, &a->trust);
	default:
		return -1;
	}
}

static int parse(int argc, char **argv, struct top_args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'i' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "count", required_argument, NULL, 'c' },
		{ "policy", required_argument, NULL, 'p' },
		{ "group", required_argument, NULL, 'g' },
		{ "owner", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct tk_options none = TK_OPTIONS_INIT;
	int ch;

	memset(a, 0, sizeof(*a));
	a->trust = none;
	a->interval_ms = 1000;
	a->count = 10;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (apply_option(ch, optarg, a))
			return -1;
	if (argc - optind != 1 || !ctl_zone_name_ok(argv[optind]))
		return -1;
	a->name = argv[optind];
	/* --json is one document, once. */
	if (a->json)
		a->iterations = 1;
	return 0;
}

int ctl_top(int argc, char **argv)
{
	struct top_args a;
	struct tally *t;
	int rc;

	if (parse(argc, argv, &a))
		return ctl_usage_error("top");
	t = malloc(sizeof(*t));
	if (!t) {
		fprintf(stderr, "throttlectl: out of memory\n");
		return CTL_ERROR;
	}
	rc = live(&a, t);
	free(t);
	return rc ? ctl_zone_failed(rc, a.name, &a.trust) : CTL_OK;
}
