/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl zone commands: create, info, ls, get, check, reset, stats,
 * verify, destroy (and top's name, trust and refusals:
 * throttlectl-top.c).  Output is key=value lines (or --json, --prometheus),
 * stable for scripts.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "throttlectl.h"

/* The largest arena a zone can have, 131071 pages of 16 KiB (see What a
 * zone holds in tk_zone_create(3)). */
#define ARENA_MAX (UINT64_C(131071) * 16384)

struct zone_args {
	const char *name, *key, *policy, *prefix, *format, *rule, *client;
	uint64_t cost, repeat, capacity, grace, arena;
	unsigned int mode, flags, fail;
	int64_t gid, uid;
};

/* Arguments were checked by parse(): anything failing now is an error
 * of the zone (absent, corrupt, another user's, ...), not of usage. */
static int fail(int rc, const char *what)
{
	fprintf(stderr, "throttlectl: %s: %s (%s)\n", what, tk_strerror(rc),
		tk_strerrorname(rc));
	return CTL_ERROR;
}

/* The trusted owner and group (--owner, --group) as options. */
static struct tk_options trust_of(const struct zone_args *a)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.zone_uid = a->uid;
	o.zone_gid = a->gid;
	o.flags = a->flags & (TK_OPT_ZONE_UID | TK_OPT_ZONE_GID);
	return o;
}

/* get, check and reset take a store spec (redis://...) for a zone name. */
static int is_spec(const char *name)
{
	return strstr(name, "://") != NULL;
}

/*
 * The option that makes this process trust zone @name, which the trust
 * rules refused: "--group G" or "--owner U", into @buf; NULL if neither
 * would do.  The library judges each candidate (tk_zone_access()), so a
 * hint is never wrong; the file's owner and group come from its path,
 * $TK_SHM_DIR/throttlekit.NAME (throttlectl(1), FILES).
 */
static const char *trust_hint(const struct zone_args *a, char *buf, size_t len)
{
	struct tk_options o = trust_of(a);
	const char *dir = getenv("TK_SHM_DIR");
	struct passwd *pw;
	struct group *g;
	struct stat st;
	char path[512];

	snprintf(path, sizeof(path), "%s/throttlekit.%s",
		 dir && *dir ? dir : "/dev/shm", a->name);
	if (lstat(path, &st) != 0)
		return NULL;
	o.zone_gid = st.st_gid;
	o.flags |= TK_OPT_ZONE_GID;
	if (tk_zone_access(a->name, &o, NULL, 0) == 0) {
		g = getgrgid(st.st_gid);
		if (g)
			snprintf(buf, len, "--group %s", g->gr_name);
		else
			snprintf(buf, len, "--group %lu",
				 (unsigned long)st.st_gid);
		return buf;
	}
	o = trust_of(a);
	o.zone_uid = st.st_uid;
	o.flags |= TK_OPT_ZONE_UID;
	if (tk_zone_access(a->name, &o, NULL, 0) != 0)
		return NULL;
	pw = getpwuid(st.st_uid);
	if (pw)
		snprintf(buf, len, "--owner %s", pw->pw_name);
	else
		snprintf(buf, len, "--owner %lu", (unsigned long)st.st_uid);
	return buf;
}

/* A zone refused: say why, as the library judges it, and what to give. */
static int fail_zone(int rc, const struct zone_args *a)
{
	struct tk_options o = trust_of(a);
	char why[256], hint[300];

	if (is_spec(a->name))
		return ctl_store_error(a->name, rc);
	if (rc != -EACCES ||
	    tk_zone_access(a->name, &o, why, sizeof(why)) != -EACCES)
		return fail(rc, a->name);
	fprintf(stderr, "throttlectl: %s: %s (%s): %s\n", a->name,
		tk_strerror(rc), tk_strerrorname(rc), why);
	if (trust_hint(a, hint, sizeof(hint)))
		fprintf(stderr,
			"throttlectl: %s: give %s to this command and every "
			"later one on this zone to trust it\n",
			a->name, hint);
	return CTL_ERROR;
}

/*
 * A check, peek or reset that failed: usage for the caller's error.  A
 * store spec's failure names the store too (a server's errors are its),
 * its password as ***.
 */
static int fail_op(int rc, const struct zone_args *a)
{
	char shown[512];

	if (is_spec(a->name))
		fprintf(stderr, "throttlectl: %s: %s: %s (%s)\n",
			ctl_redact(a->name, shown, sizeof(shown)), a->key,
			tk_strerror(rc), tk_strerrorname(rc));
	else
		fprintf(stderr, "throttlectl: %s: %s (%s)\n", a->key,
			tk_strerror(rc), tk_strerrorname(rc));
	return ctl_status(rc);
}

/*
 * Whether @name is a name the library takes, as a zone's or (with
 * @specs) as a store spec: a wrong one is bad usage, with the library's
 * reason and the name as messages may show it.
 */
static int valid_name(const char *name, int specs)
{
	char why[256], shown[512], *spec;
	int rc;

	if (specs && is_spec(name)) {
		rc = tk_store_validate(name, why, sizeof(why));
	} else {
		spec = malloc(strlen(name) + sizeof("shm:"));
		if (!spec)
			return 0;
		strcpy(spec, "shm:");
		strcat(spec, name);
		rc = tk_store_validate(spec, why, sizeof(why));
		free(spec);
	}
	if (rc == 0)
		return 1;
	fprintf(stderr, "throttlectl: %s: %s (%s): %s\n",
		ctl_redact(name, shown, sizeof(shown)), tk_strerror(rc),
		tk_strerrorname(rc), why);
	return 0;
}

static int valid_policy(const char *text)
{
	struct tk_policy *p;
	struct tk_parse_error err;

	if (tk_policy_parse(&p, text, &err) != 0) {
		fprintf(stderr, "throttlectl: policy '%s': %s\n", text,
			err.message);
		return 0;
	}
	tk_policy_free(p);
	return 1;
}

/*
 * One number option of @base (0: as C writes it); says what was wrong
 * before the usage message.  @what names it: "an integer", ...
 */
static int number(const char *opt, const char *s, unsigned int base,
		  const char *what, uint64_t min, uint64_t max, uint64_t *out)
{
	if (ctl_parse_number(s, base, max, out) == 0 && *out >= min)
		return 0;
	if (base == 8)
		fprintf(stderr,
			"throttlectl: --%s '%s': expected %s from %#" PRIo64
			" to %#" PRIo64 "\n",
			opt, s, what, min, max);
	else
		fprintf(stderr,
			"throttlectl: --%s '%s': expected %s from %" PRIu64
			" to %" PRIu64 "\n",
			opt, s, what, min, max);
	return -1;
}

/* The defaults of every zone command, before its options. */
static void set_defaults(struct zone_args *a)
{
	memset(a, 0, sizeof(*a));
	a->cost = 1;
	a->repeat = 1;
	a->format = "text";
	a->gid = -1;
	a->uid = -1;
}

/* --capacity: 0 (the default) or a power of two of 64 to 2^32. */
static int parse_capacity(const char *arg, struct zone_args *a)
{
	if (number("capacity", arg, 0, "an integer", 0, UINT64_C(1) << 32,
		   &a->capacity))
		return -1;
	if (a->capacity &&
	    (a->capacity < 64 || (a->capacity & (a->capacity - 1)))) {
		fprintf(stderr,
			"throttlectl: --capacity '%s': "
			"expected 0 or a power of two from "
			"64 to 2^32\n",
			arg);
		return -1;
	}
	return 0;
}

static int parse_mode(const char *arg, struct zone_args *a)
{
	uint64_t v;

	if (number("mode", arg, 8, "an octal mode", 0, 0777, &v))
		return -1;
	/* The library refuses it too, but only as EINVAL. */
	if (v & 0002) {
		fprintf(stderr,
			"throttlectl: --mode '%s': expected a "
			"mode without the bit 0002: a zone "
			"writable by every user is never "
			"trusted\n",
			arg);
		return -1;
	}
	a->mode = (unsigned int)v;
	return 0;
}

/*
 * --group (@ch 'g') or --owner (@ch 'o'): a name, else a numeric ID.  The
 * name is looked up first, so a user or group named by digits wins.
 */
static int parse_owner_group(int ch, const char *arg, struct zone_args *a)
{
	int64_t *id = ch == 'g' ? &a->gid : &a->uid;
	const char *opt = ch == 'g' ? "group" : "owner";
	const char *what = ch == 'g' ? "a group name or a group ID"
				     : "a user name or a user ID";
	struct passwd *pw = NULL;
	struct group *g = NULL;
	uint64_t v;

	if (ch == 'g')
		g = getgrnam(arg);
	else
		pw = getpwnam(arg);
	if (g)
		*id = g->gr_gid;
	else if (pw)
		*id = pw->pw_uid;
	else if (number(opt, arg, 0, what, 0, UINT32_MAX - 1, &v) == 0)
		*id = (int64_t)v;
	else
		return -1;
	a->flags |= ch == 'g' ? TK_OPT_ZONE_GID : TK_OPT_ZONE_UID;
	return 0;
}

/* --grace: whole seconds; the zone keeps ns. */
static int parse_grace(const char *arg, struct zone_args *a)
{
	uint64_t v;

	if (number("grace", arg, 0, "an integer", 1, UINT64_MAX / 1000000000u,
		   &v))
		return -1;
	a->grace = v * 1000000000u;
	return 0;
}

static int parse_fail(const char *arg, struct zone_args *a)
{
	if (tk_fail_parse(arg, strlen(arg), &a->fail)) {
		fprintf(stderr,
			"throttlectl: --fail: expected error, "
			"open or closed, not \"%s\"\n",
			arg);
		return -1;
	}
	return 0;
}

/*
 * One option @ch, with its argument @arg (NULL for a flag), into @a.
 * 0, or -1 for bad usage (after a message, except for an option
 * getopt_long() did not know, which it has already named).
 */
static int apply_option(int ch, const char *arg, struct zone_args *a)
{
	switch (ch) {
	case 'p':
		a->policy = arg;
		return 0;
	case 'x':
		a->prefix = arg;
		return 0;
	case 'c':
		return number("cost", arg, 0, "an integer", 1, UINT64_MAX,
			      &a->cost);
	case 'r':
		return number("repeat", arg, 0, "an integer", 1, UINT64_MAX,
			      &a->repeat);
	case 'C':
		return parse_capacity(arg, a);
	case 'm':
		return parse_mode(arg, a);
	case 'g':
	case 'o':
		return parse_owner_group(ch, arg, a);
	case 'G':
		return parse_grace(arg, a);
	case 'R':
		a->flags |= TK_OPT_ZONE_REFUSE_FULL;
		return 0;
	case 'A':
		/* Bytes of state blocks, rounded up to pages. */
		return number("arena", arg, 0, "an integer", 1, ARENA_MAX,
			      &a->arena);
	case 'j':
		a->format = "json";
		return 0;
	case 'F':
		return parse_fail(arg, a);
	case 'P':
		a->format = "prometheus";
		return 0;
	case 'u':
		a->rule = arg;
		return 0;
	case 'l':
		a->client = arg;
		return 0;
	default:
		return -1;
	}
}

/*
 * The @n arguments @args left after the options: @positional of them (the
 * name, and with 2 a key), and what can only be judged with all the
 * options seen.  0, or -1 (after a message, except for a wrong count).
 */
static int check_positional(int n, char **args, int positional, int specs,
			    struct zone_args *a)
{
	if (n != positional)
		return -1;
	if (a->policy && !valid_policy(a->policy))
		return -1;
	a->name = args[0];
	if (!valid_name(a->name, specs))
		return -1;
	a->key = positional > 1 ? args[1] : NULL;
	if (a->key && a->key[0] == '\0') {
		fprintf(stderr, "throttlectl: empty key\n");
		return -1;
	}
	if (a->key && strlen(a->key) > TK_KEY_MAX) {
		fprintf(stderr, "throttlectl: key longer than %d bytes\n",
			TK_KEY_MAX);
		return -1;
	}
	if (is_spec(a->name) && (a->uid != -1 || a->gid != -1)) {
		fprintf(stderr,
			"throttlectl: --owner and --group are for "
			"zones, not %s stores\n",
			strncmp(a->name, "redis", 5) == 0	  ? "Redis"
			: strncmp(a->name, "postgresql", 10) == 0 ? "PostgreSQL"
								  : "other");
		return -1;
	}
	if (a->prefix && strlen(a->prefix) > TK_PREFIX_MAX) {
		fprintf(stderr, "throttlectl: prefix longer than %d bytes\n",
			TK_PREFIX_MAX);
		return -1;
	}
	return 0;
}

/*
 * The options and @positional arguments (the name, and with 2 a key) of a
 * zone command; @specs: the name may be a store spec.  0, or -1 after a
 * message for bad usage.
 */
static int parse(int argc, char **argv, int positional, int specs,
		 struct zone_args *a)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "cost", required_argument, NULL, 'c' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "prefix", required_argument, NULL, 'x' },
		{ "capacity", required_argument, NULL, 'C' },
		{ "mode", required_argument, NULL, 'm' },
		{ "group", required_argument, NULL, 'g' },
		{ "owner", required_argument, NULL, 'o' },
		{ "grace", required_argument, NULL, 'G' },
		{ "refuse-full", no_argument, NULL, 'R' },
		{ "arena", required_argument, NULL, 'A' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "fail", required_argument, NULL, 'F' },
		{ "rule", required_argument, NULL, 'u' },
		{ "client", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	set_defaults(a);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (apply_option(ch, optarg, a))
			return -1;
	}
	return check_positional(argc - optind, argv + optind, positional, specs,
				a);
}

/* What top (throttlectl-top.c) shares of the zone commands' ways. */
int ctl_zone_name_ok(const char *name)
{
	return valid_name(name, 0);
}

int ctl_zone_trust(int ch, const char *arg, struct tk_options *o)
{
	struct zone_args a;

	set_defaults(&a);
	if (parse_owner_group(ch, arg, &a))
		return -1;
	if (ch == 'g')
		o->zone_gid = a.gid;
	else
		o->zone_uid = a.uid;
	o->flags |= a.flags;
	return 0;
}

int ctl_zone_failed(int rc, const char *name, const struct tk_options *o)
{
	struct zone_args a;

	set_defaults(&a);
	a.name = name;
	a.flags = o->flags & (TK_OPT_ZONE_UID | TK_OPT_ZONE_GID);
	if (a.flags & TK_OPT_ZONE_UID)
		a.uid = o->zone_uid;
	if (a.flags & TK_OPT_ZONE_GID)
		a.gid = o->zone_gid;
	return fail_zone(rc, &a);
}

int ctl_create(int argc, char **argv)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct zone_args a;
	int rc;

	if (parse(argc, argv, 1, 0, &a))
		return ctl_usage_error("create");
	o.zone_capacity = a.capacity;
	o.zone_arena = a.arena;
	o.zone_mode = a.mode;
	o.zone_gid = a.gid;
	o.zone_uid = a.uid;
	o.reclaim_grace = a.grace;
	o.flags = a.flags;
	rc = tk_zone_create(a.name, &o);
	if (rc)
		return fail_zone(rc, &a);
	printf("created=%s\n", a.name);
	return CTL_OK;
}

/* info (layout and sizes) and stats (counters, for scraping). */
static int show_info(int argc, char **argv, const char *cmd)
{
	struct tk_zone_info info;
	struct tk_options o;
	struct zone_args a;
	int rc;

	if (parse(argc, argv, 1, 0, &a))
		return ctl_usage_error(cmd);
	o = trust_of(&a);
	rc = tk_zone_info_opts(a.name, &o, &info, sizeof(info));
	if (rc)
		return fail_zone(rc, &a);
	if (strcmp(cmd, "info") == 0)
		rc = ctl_print_info(a.name, &o, &info, a.format);
	else
		rc = ctl_print_stats(a.name, &o, &info, a.format);
	return rc ? fail_zone(rc, &a) : CTL_OK;
}

int ctl_info(int argc, char **argv)
{
	return show_info(argc, argv, "info");
}

int ctl_stats(int argc, char **argv)
{
	return show_info(argc, argv, "stats");
}

int ctl_verify(int argc, char **argv)
{
	struct tk_zone_info info;
	struct tk_options o;
	struct zone_args a;
	int rc;

	if (parse(argc, argv, 1, 0, &a))
		return ctl_usage_error("verify");
	o = trust_of(&a);
	rc = tk_zone_verify_opts(a.name, &o, &info, sizeof(info));
	if (rc && rc != -EBADMSG)
		return fail_zone(rc, &a);
	printf("zone=%s\nkeys=%" PRIu64 "\ntentative=%" PRIu64
	       "\ngarbage=%" PRIu64 "\nviolations=%" PRIu64 "\ncorrupt=%" PRIu64
	       "\nresult=%s\n",
	       a.name, info.keys, info.tentative, info.garbage, info.violations,
	       info.corrupt, rc ? "FAILED" : "ok");
	return rc ? CTL_ERROR : CTL_OK;
}

struct walk_ctx {
	int json;
	uint64_t n;
};

static int print_key(void *ctx, uint64_t slot, uint64_t fp, uint64_t state)
{
	struct walk_ctx *w = ctx;

	if (w->json)
		/* The state word is often a time in ns: a string (see
		 * throttlectl-stats.c). */
		printf("%s{\"slot\":%" PRIu64 ",\"fingerprint\":\"%016" PRIx64
		       "\",\"state\":\"%" PRIu64 "\"}",
		       w->n ? "," : "", slot, fp, state);
	else
		printf("slot=%" PRIu64 " fingerprint=%016" PRIx64
		       " state=%" PRIu64 "\n",
		       slot, fp, state);
	w->n++;
	return 0;
}

int ctl_ls(int argc, char **argv)
{
	struct walk_ctx w = { 0, 0 };
	struct tk_options o;
	struct zone_args a;
	int rc;

	if (parse(argc, argv, 1, 0, &a))
		return ctl_usage_error("ls");
	o = trust_of(&a);
	w.json = strcmp(a.format, "json") == 0;
	if (w.json)
		printf("[");
	rc = tk_zone_walk_opts(a.name, &o, print_key, &w);
	if (w.json)
		printf("]\n");
	return rc ? fail_zone(rc, &a) : CTL_OK;
}

static int open_limiter(const struct zone_args *a, const char *policy,
			struct tk_limiter **l)
{
	struct tk_options o = trust_of(a);
	char spec[1100];

	o.prefix = a->prefix;
	o.fail = a->fail;
	if (is_spec(a->name))
		return tk_limiter_open(l, policy, a->name, &o);
	o.flags |= TK_OPT_ZONE_NO_CREATE;
	snprintf(spec, sizeof(spec), "shm:%s", a->name);
	return tk_limiter_open(l, policy, spec, &o);
}

int ctl_get(int argc, char **argv)
{
	struct zone_args a;
	struct tk_limiter *l;
	struct tk_decision d;
	int rc, shaper;

	if (parse(argc, argv, 2, 1, &a) || !a.policy)
		return ctl_usage_error("get");
	shaper = ctl_has_shaper(a.policy);
	if (shaper < 0)
		return fail(shaper, a.policy);
	rc = open_limiter(&a, a.policy, &l);
	if (rc)
		return fail_zone(rc, &a);
	rc = tk_limiter_peek(l, a.key, strlen(a.key), &d);
	tk_limiter_close(l);
	if (rc)
		return fail_op(rc, &a);
	ctl_print_decision(stdout, &d, shaper, 1);
	return d.allowed ? CTL_OK : CTL_DENIED;
}

int ctl_check(int argc, char **argv)
{
	uint64_t i, allowed = 0, denied = 0, degraded = 0;
	struct zone_args a;
	struct tk_limiter *l;
	struct tk_decision d;
	int rc = 0, shaper;

	if (parse(argc, argv, 2, 1, &a) || !a.policy)
		return ctl_usage_error("check");
	shaper = ctl_has_shaper(a.policy);
	if (shaper < 0)
		return fail(shaper, a.policy);
	rc = open_limiter(&a, a.policy, &l);
	if (rc)
		return fail_zone(rc, &a);
	for (i = 0; i < a.repeat && rc == 0; i++) {
		rc = tk_limiter_check(l, a.key, strlen(a.key), a.cost, &d);
		if (rc == 0 && d.allowed)
			allowed++;
		else if (rc == 0)
			denied++;
		if (rc == 0 && d.degraded)
			degraded++;
	}
	tk_limiter_close(l);
	if (rc)
		return fail_op(rc, &a);
	if (a.repeat > 1 && degraded)
		printf("allowed=%" PRIu64 " denied=%" PRIu64
		       " degraded=%" PRIu64 "\n",
		       allowed, denied, degraded);
	else if (a.repeat > 1)
		printf("allowed=%" PRIu64 " denied=%" PRIu64 "\n", allowed,
		       denied);
	else
		ctl_print_decision(stdout, &d, shaper, 1);
	return d.allowed ? CTL_OK : CTL_DENIED;
}

/*
 * Without --policy, a key's gcra state may sit under any of the store
 * keys gcra gives it: the simple policy's, or those of the (at most 8)
 * dimensions of a composite.  Other algorithms' keys name their layout
 * too (tk_limiter_open(3)), which only --policy can give.
 */
static const char *const every_policy[] = {
	"gcra:1/1s",
	"all(gcra:1/1s,gcra:1/1s,gcra:1/1s,gcra:1/1s,gcra:1/1s,gcra:1/1s,"
	"gcra:1/1s,gcra:1/1s)",
};

static int list_rule(void *ctx, const struct tk_zone_rule *r)
{
	unsigned int *n = ctx;

	fprintf(stderr, "%s%s", (*n)++ ? ", " : "", r->name);
	return 0;
}

/* reset NAME --rule R --client C: the key composed as the rule does. */
static int reset_client(struct zone_args *a)
{
	struct tk_options o = trust_of(a);
	unsigned int n = 0;
	int rc;

	rc = tk_zone_reset_client(a->name, &o, a->rule, a->client);
	if (rc == -ESRCH) {
		fprintf(stderr,
			"throttlectl: %s: no rule '%s' in the zone; "
			"its rules: ",
			a->name, a->rule);
		tk_zone_rules(a->name, &o, list_rule, &n);
		fprintf(stderr, "%s\n", n ? "" : "none");
		return CTL_ERROR;
	}
	if (rc == -EINVAL) {
		fprintf(stderr,
			"throttlectl: %s: rule '%s' keys client addresses, "
			"and '%s' is not one\n",
			a->name, a->rule, a->client);
		return CTL_USAGE;
	}
	if (rc < 0)
		return fail_zone(rc, a);
	printf("reset=%s rule=%s keys=%d\n", a->client, a->rule, rc);
	return CTL_OK;
}

int ctl_reset(int argc, char **argv)
{
	const char *const *policies = every_policy;
	size_t i, n = sizeof(every_policy) / sizeof(every_policy[0]);
	struct zone_args a;
	struct tk_limiter *l;
	int rc = 0, by_rule = 0;

	for (i = 1; i < (size_t)argc; i++)
		if (strcmp(argv[i], "--rule") == 0 ||
		    strncmp(argv[i], "--rule=", 7) == 0)
			by_rule = 1;
	if (parse(argc, argv, by_rule ? 1 : 2, by_rule ? 0 : 1, &a) ||
	    !a.rule != !a.client || (a.rule && (a.policy || a.prefix)))
		return ctl_usage_error("reset");
	if (a.rule)
		return reset_client(&a);
	if (a.policy) {
		policies = &a.policy;
		n = 1;
	}
	for (i = 0; i < n && rc == 0; i++) {
		rc = open_limiter(&a, policies[i], &l);
		if (rc)
			return fail_zone(rc, &a);
		rc = tk_limiter_reset(l, a.key, strlen(a.key));
		tk_limiter_close(l);
	}
	if (rc)
		return fail_op(rc, &a);
	printf("reset=%s\n", a.key);
	return CTL_OK;
}

/* A command that only names a zone: run @op on it, print "@done=NAME". */
static int on_zone(int argc, char **argv, const char *cmd,
		   int (*op)(const char *name, const struct tk_options *o),
		   const char *done)
{
	struct tk_options o;
	struct zone_args a;
	int rc;

	if (parse(argc, argv, 1, 0, &a))
		return ctl_usage_error(cmd);
	o = trust_of(&a);
	rc = op(a.name, &o);
	if (rc)
		return fail_zone(rc, &a);
	printf("%s=%s\n", done, a.name);
	return CTL_OK;
}

int ctl_destroy(int argc, char **argv)
{
	return on_zone(argc, argv, "destroy", tk_zone_destroy_opts,
		       "destroyed");
}

/* Zones keep time on the clock of their limiters: the system clock. */
static int sweep_now(const char *name, const struct tk_options *o)
{
	uint64_t now;
	int rc = tk_clock_now(tk_clock_system(), &now);

	return rc ? rc : tk_zone_sweep_opts(name, o, now);
}

int ctl_sweep(int argc, char **argv)
{
	return on_zone(argc, argv, "sweep", sweep_now, "swept");
}
