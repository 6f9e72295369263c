/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl - the admin tool.  It uses only the public API, which makes
 * it the library's first client.  Exit codes: 0 ok (for checks: allowed),
 * 1 denied, 2 bad usage, 3 any other error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "throttlectl.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} commands[] = {
	{ "simulate", ctl_simulate,
	  "simulate --policy SPEC [--store memory|shm:NAME|redis://...] < "
	  "replay.jsonl" },
	{ "create", ctl_create,
	  "create NAME [--capacity N] [--mode OCTAL] [--owner U] [--group G] "
	  "[--arena BYTES] [--grace SECONDS] [--refuse-full]" },
	{ "info", ctl_info, "info NAME [--json|--prometheus]" },
	{ "ls", ctl_ls, "ls NAME [--json]" },
	{ "get", ctl_get, "get NAME KEY --policy P [--prefix P] [--fail F]" },
	{ "check", ctl_check,
	  "check NAME KEY --policy P [--cost N] [--repeat N] [--prefix P] "
	  "[--fail F]" },
	{ "reset", ctl_reset, "reset NAME KEY [--policy P] [--prefix P]" },
	{ "stats", ctl_stats, "stats NAME [--json|--prometheus]" },
	{ "verify", ctl_verify, "verify NAME" },
	{ "sweep", ctl_sweep, "sweep NAME" },
	{ "destroy", ctl_destroy, "destroy NAME" },
	{ "ping", ctl_ping, "ping STORE" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

void ctl_print_decision(FILE *f, const struct tk_decision *d, int delay)
{
	fprintf(f,
		"{\"allowed\":%s,\"limit\":%llu,\"remaining\":%llu,"
		"\"reset_at\":%llu,\"retry_after\":%llu",
		d->allowed ? "true" : "false", (unsigned long long)d->limit,
		(unsigned long long)d->remaining,
		(unsigned long long)d->reset_at,
		(unsigned long long)d->retry_after);
	if (delay)
		fprintf(f, ",\"delay\":%llu", (unsigned long long)d->delay);
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
	    tk_store_validate(spec, why, sizeof(why)) == rc)
		fprintf(stderr, "throttlectl: %s: %s (%s): %s\n", shown,
			tk_strerror(rc), tk_strerrorname(rc), why);
	else
		fprintf(stderr, "throttlectl: %s: %s (%s)\n", shown,
			tk_strerror(rc), tk_strerrorname(rc));
	return CTL_ERROR;
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
		   "       throttlectl --version\n\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].usage);
	fprintf(f, "\nzone commands also take --owner U and --group G: the "
		   "zone's trusted\nowner and group (see throttlekit(7), "
		   "Permissions)\n");
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

static int run(int argc, char **argv)
{
	size_t i;

	/* --version and help take no arguments; commands check their own. */
	if (argc < 2 || (argc > 2 && (strcmp(argv[1], "--version") == 0 ||
				      strcmp(argv[1], "--help") == 0 ||
				      strcmp(argv[1], "help") == 0))) {
		usage(stderr);
		return CTL_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("throttlectl %s (libthrottlekit %s)\n",
		       TK_VERSION_STRING, tk_version());
		return CTL_OK;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CTL_OK;
	}
	for (i = 0; i < N_COMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "throttlectl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CTL_USAGE;
}

int main(int argc, char **argv)
{
	return flushed(run(argc, argv));
}
