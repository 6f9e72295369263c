/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl - the admin tool.  It uses only the public API, which makes
 * it the library's first client.  Exit codes (throttlectl(1), EXIT
 * STATUS): 0 ok (for checks: allowed), 1 denied, 2 a command line that is
 * wrong, whatever a store holds, 3 a store or zone that failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "throttlectl.h"

/* The one usage line of each command: help, --help and bad usage. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
	const char *summary;
} commands[] = {
	{ "simulate", ctl_simulate,
	  "simulate --policy SPEC "
	  "[--store memory|shm:NAME|redis://...|postgresql://...] < "
	  "replay.jsonl",
	  "replay a timeline of requests (JSON lines) through a policy" },
	{ "create", ctl_create,
	  "create NAME [--capacity N] [--arena BYTES] [--mode OCTAL] "
	  "[--owner U] [--group G] [--grace SECONDS] [--refuse-full]",
	  "create the zone NAME" },
	{ "info", ctl_info,
	  "info NAME [--json|--prometheus] [--owner U] [--group G]",
	  "print a zone's geometry, occupancy and counters" },
	{ "ls", ctl_ls, "ls NAME [--json] [--owner U] [--group G]",
	  "list a zone's keys: slot, fingerprint, state" },
	{ "get", ctl_get,
	  "get NAME KEY --policy P [--prefix P] [--fail error|open|closed] "
	  "[--owner U] [--group G]",
	  "what KEY could be admitted now, consuming nothing" },
	{ "check", ctl_check,
	  "check NAME KEY --policy P [--cost N] [--repeat N] [--prefix P] "
	  "[--fail error|open|closed] [--owner U] [--group G]",
	  "check (and consume) units for KEY, as a server would" },
	{ "reset", ctl_reset,
	  "reset NAME KEY [--policy P] [--prefix P] [--owner U] [--group G] | "
	  "reset NAME --rule R --client C [--owner U] [--group G]",
	  "forget KEY's state, or a client's under a rule of the zone" },
	{ "stats", ctl_stats,
	  "stats NAME [--json|--prometheus] [--owner U] [--group G]",
	  "a zone's counters and occupancy, and each rule's counters" },
	{ "top", ctl_top,
	  "top NAME [--json] [--interval SECONDS] [--iterations N] "
	  "[--count N] [--policy [RULE=]SPEC]... [--owner U] [--group G]",
	  "who is limited: a zone's most denied and most checked keys" },
	{ "verify", ctl_verify, "verify NAME [--owner U] [--group G]",
	  "check a zone's invariants" },
	{ "sweep", ctl_sweep, "sweep NAME [--owner U] [--group G]",
	  "reclaim a zone's expired states now" },
	{ "destroy", ctl_destroy, "destroy NAME [--owner U] [--group G]",
	  "remove a zone" },
	{ "ping", ctl_ping, "ping STORE", "what serves a store, and how fast" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * @ns_strings: the nanoseconds as decimal strings, which no JSON reader
 * rounds (get and check); simulate prints the replay format's integers.
 */
void ctl_print_decision(FILE *f, const struct tk_decision *d, int delay,
			int ns_strings)
{
	const char *q = ns_strings ? "\"" : "";

	fprintf(f,
		"{\"allowed\":%s,\"limit\":%llu,\"remaining\":%llu,"
		"\"reset_at\":%s%llu%s,\"retry_after\":%s%llu%s",
		d->allowed ? "true" : "false", (unsigned long long)d->limit,
		(unsigned long long)d->remaining, q,
		(unsigned long long)d->reset_at, q, q,
		(unsigned long long)d->retry_after, q);
	if (delay)
		fprintf(f, ",\"delay\":%s%llu%s", q,
			(unsigned long long)d->delay, q);
	/* Only when set, so that every normal decision prints as before. */
	if (d->degraded)
		fprintf(f, ",\"degraded\":true");
	fprintf(f, "}\n");
}

int ctl_has_shaper(const char *policy)
{
	struct tk_policy_info info;
	struct tk_policy *p;
	size_t i;
	int rc;

	rc = tk_policy_parse(&p, policy, NULL);
	for (i = 0; rc == 0 && i < tk_policy_dimensions(p); i++)
		if (tk_policy_info(p, i, &info, sizeof(info)) == 0 &&
		    info.shaper)
			rc = 1;
	if (rc >= 0)
		tk_policy_free(p);
	return rc;
}

const char *ctl_redact(const char *spec, char *buf, size_t len)
{
	if (tk_spec_redact(spec, buf, len) < 0)
		snprintf(buf, len, "(a store spec)");
	return buf;
}

int ctl_store_error(const char *spec, int rc)
{
	char shown[512], why[256];

	ctl_redact(spec, shown, sizeof(shown));
	if (tk_error_is_caller(rc) &&
	    tk_store_validate(spec, why, sizeof(why)) == rc) {
		fprintf(stderr, "throttlectl: %s: %s (%s): %s\n", shown,
			tk_strerror(rc), tk_strerrorname(rc), why);
		return CTL_USAGE;
	}
	fprintf(stderr, "throttlectl: %s: %s (%s)\n", shown, tk_strerror(rc),
		tk_strerrorname(rc));
	return CTL_ERROR;
}

int ctl_status(int rc)
{
	return tk_error_is_caller(rc) ? CTL_USAGE : CTL_ERROR;
}

const char *ctl_usage(const char *cmd)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, cmd) == 0)
			return commands[i].usage;
	return cmd;
}

int ctl_usage_error(const char *cmd)
{
	fprintf(stderr, "usage: throttlectl %s\n", ctl_usage(cmd));
	return CTL_USAGE;
}

static int digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

int ctl_parse_number(const char *s, unsigned int base, uint64_t max,
		     uint64_t *out)
{
	uint64_t v = 0;
	unsigned int d;

	if (base == 0) {
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			base = 16;
			s += 2;
		} else {
			base = s[0] == '0' && s[1] ? 8 : 10;
		}
	}
	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		d = (unsigned int)digit(*s);
		/* v * base + d <= max, exactly, without overflow. */
		if (d >= base || d > max || v > (max - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: throttlectl COMMAND [ARGS]\n"
		   "       throttlectl help [COMMAND]\n"
		   "       throttlectl --version\n\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].usage);
	fprintf(f, "\n--owner and --group name a zone's trusted owner and "
		   "group (see throttlekit(7),\nPermissions); exit status: 0 "
		   "ok, 1 denied, 2 bad usage, 3 store or zone error;\n"
		   "see throttlectl(1)\n");
}

/* throttlectl help CMD, CMD --help, CMD -h: to standard output. */
static int command_help(size_t i)
{
	printf("usage: throttlectl %s\n%s; see throttlectl(1)\n",
	       commands[i].usage, commands[i].summary);
	return CTL_OK;
}

/* --help or -h among a command's options (not after "--"). */
static int wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

static int is_help(const char *arg)
{
	return strcmp(arg, "help") == 0 || strcmp(arg, "--help") == 0 ||
	       strcmp(arg, "-h") == 0;
}

/*
 * Output that did not reach standard output (a full disk, /dev/full) is
 * an error: a script must not take a status of 0 with nothing to read.
 * simulate reports its own.
 */
static int flushed(int rc)
{
	if (rc == CTL_ERROR || rc == CTL_USAGE ||
	    (fflush(stdout) == 0 && !ferror(stdout)))
		return rc;
	fprintf(stderr, "throttlectl: I/O error\n");
	return CTL_ERROR;
}

static size_t find(const char *name)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0)
			break;
	if (i == N_COMMANDS) {
		fprintf(stderr, "throttlectl: unknown command '%s'\n", name);
		usage(stderr);
	}
	return i;
}

static int run(int argc, char **argv)
{
	size_t i;

	/* --version takes no argument, help one at most. */
	if (argc < 2 || (argc > 2 && strcmp(argv[1], "--version") == 0) ||
	    (argc > 3 && is_help(argv[1]))) {
		usage(stderr);
		return CTL_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("throttlectl %s (libthrottlekit %s)\n",
		       TK_VERSION_STRING, tk_version());
		return CTL_OK;
	}
	if (is_help(argv[1]) && argc == 2) {
		usage(stdout);
		return CTL_OK;
	}
	i = find(argv[is_help(argv[1]) ? 2 : 1]);
	if (i == N_COMMANDS)
		return CTL_USAGE;
	if (is_help(argv[1]) || wants_help(argc - 1, argv + 1))
		return command_help(i);
	return commands[i].run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	return flushed(run(argc, argv));
}
