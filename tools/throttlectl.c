/*
 * throttlectl - the admin tool.  It uses only the public API, which makes
 * it the library's first client.  Exit codes: 0 ok (for checks: allowed),
 * 1 denied, 2 bad usage, 3 any other error.
 */
#include <stdio.h>
#include <string.h>

#include "throttlectl.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} commands[] = {
	{ "simulate", ctl_simulate,
	  "simulate --policy SPEC [--store memory|shm:NAME] < replay.jsonl" },
	{ "create", ctl_create,
	  "create NAME [--capacity N] [--mode OCTAL] [--owner U] [--group G] "
	  "[--arena BYTES] [--grace SECONDS] [--refuse-full]" },
	{ "info", ctl_info, "info NAME [--json]" },
	{ "ls", ctl_ls, "ls NAME [--json]" },
	{ "get", ctl_get, "get NAME KEY --policy P [--prefix P]" },
	{ "check", ctl_check,
	  "check NAME KEY --policy P [--cost N] [--repeat N] [--prefix P]" },
	{ "reset", ctl_reset, "reset NAME KEY [--prefix P]" },
	{ "stats", ctl_stats, "stats NAME [--json|--prometheus]" },
	{ "verify", ctl_verify, "verify NAME" },
	{ "sweep", ctl_sweep, "sweep NAME" },
	{ "destroy", ctl_destroy, "destroy NAME" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

void ctl_print_decision(FILE *f, const struct tk_decision *d)
{
	fprintf(f,
		"{\"allowed\":%s,\"limit\":%llu,\"remaining\":%llu,"
		"\"reset_at\":%llu,\"retry_after\":%llu}\n",
		d->allowed ? "true" : "false", (unsigned long long)d->limit,
		(unsigned long long)d->remaining,
		(unsigned long long)d->reset_at,
		(unsigned long long)d->retry_after);
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

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
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
