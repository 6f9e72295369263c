/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl simulate - replay a timeline through a policy offline.
 *
 * A manual clock is set to each line's "t", so the output depends only on
 * the input: the same replay gives byte-identical output on every store.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "throttlectl.h"

static int parse_args(int argc, char **argv, const char **policy,
		      const char **store)
{
	static const struct option longopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "store", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "p:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			*policy = optarg;
			break;
		case 's':
			*store = optarg;
			break;
		default:
			return -1;
		}
	}
	return optind == argc && *policy ? 0 : -1;
}

static int replay_one(struct tk_limiter *l, struct tk_clock *clock,
		      const struct replay_line *r, int shaper)
{
	struct tk_decision d;
	int rc;

	rc = tk_clock_set(clock, r->t);
	if (rc)
		return rc;
	switch (r->op) {
	case REPLAY_CHECK:
		rc = tk_limiter_check(l, r->key, r->key_len, r->cost, &d);
		break;
	case REPLAY_PEEK:
		rc = tk_limiter_peek(l, r->key, r->key_len, &d);
		break;
	default:
		rc = tk_limiter_reset(l, r->key, r->key_len);
		if (rc == 0)
			printf("{\"reset\":true}\n");
		return rc;
	}
	if (rc == 0)
		ctl_print_decision(stdout, &d, shaper, 0);
	return rc;
}

static int is_redis(const char *spec)
{
	return strncmp(spec, "redis", 5) == 0;
}

/*
 * The store, then the limiter on it, so that a message can say which of
 * the two was refused; 0, or the exit status after a message.
 */
static int open_store(const char *policy, const char *store,
		      struct tk_options *o, struct tk_limiter **l)
{
	char shown[512], why[256], timed[4096];
	int rc;

	ctl_redact(store, shown, sizeof(shown));
	/* The server's clock cannot follow the replay's "t". */
	if (is_redis(store) && strstr(store, "server_time=1")) {
		fprintf(stderr,
			"throttlectl: store '%s': simulate needs the replay's "
			"clock, not server_time=1\n",
			shown);
		return CTL_USAGE;
	}
	/* The store's default is the server's clock: the replay's, here. */
	if (is_redis(store) && !strstr(store, "server_time=")) {
		if (snprintf(timed, sizeof(timed), "%s%cserver_time=0", store,
			     strchr(store, '?') ? '&' : '?') <
		    (int)sizeof(timed))
			store = timed;
	}
	rc = tk_store_open(&o->store, store, o);
	/* A spec whose text the library refuses (a bad zone name or URL, a
	 * backend this build lacks) is bad usage, with its reason; a store
	 * that cannot be used (a file that is not a zone, a corrupt zone,
	 * another user's, ...) is an error, as for every command. */
	if (rc && tk_store_validate(store, why, sizeof(why)) == rc) {
		if (rc == -EINVAL)
			fprintf(stderr, "throttlectl: store '%s': %s\n", shown,
				why);
		else
			fprintf(stderr,
				"throttlectl: store '%s': %s (%s): %s\n", shown,
				tk_strerror(rc), tk_strerrorname(rc), why);
		return CTL_USAGE;
	}
	if (rc) {
		fprintf(stderr, "throttlectl: store '%s': %s (%s)\n", shown,
			tk_strerror(rc), tk_strerrorname(rc));
		return CTL_ERROR;
	}
	rc = tk_limiter_open(l, policy, NULL, o);
	if (rc == 0)
		return 0;
	if (rc == -ENOTSUP)
		fprintf(stderr,
			"throttlectl: policy '%s': not supported on store "
			"'%s' yet (ENOTSUP)\n",
			policy, shown);
	else
		fprintf(stderr, "throttlectl: store '%s': %s (%s)\n", shown,
			tk_strerror(rc), tk_strerrorname(rc));
	tk_store_close(o->store);
	return tk_error_is_caller(rc) ? CTL_USAGE : CTL_ERROR;
}

/* A malformed line still gets its output line, so outputs stay aligned. */
static void print_bad_line(size_t lineno, const char *why)
{
	fprintf(stderr, "throttlectl: line %zu: %s\n", lineno, why);
	printf("{\"error\":\"EINVAL\"}\n");
}

int ctl_simulate(int argc, char **argv)
{
	const char *policy = NULL, *store = "memory";
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_parse_error perr;
	struct tk_policy *parsed;
	struct replay_line r;
	struct tk_limiter *l;
	struct tk_clock *clock;
	char *line = NULL, err[128];
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int rc, shaper, status = 0;

	if (parse_args(argc, argv, &policy, &store))
		return ctl_usage_error("simulate");
	rc = tk_policy_parse(&parsed, policy, &perr);
	if (rc) {
		fprintf(stderr, "throttlectl: policy '%s': %s\n", policy,
			rc == -EINVAL ? perr.message : tk_strerror(rc));
		return rc == -EINVAL ? CTL_USAGE : CTL_ERROR;
	}
	tk_policy_free(parsed);
	shaper = ctl_has_shaper(policy);
	rc = shaper < 0 ? shaper : tk_clock_manual_new(&clock, 0);
	if (rc) {
		fprintf(stderr, "throttlectl: %s\n", tk_strerror(rc));
		return CTL_ERROR;
	}
	o.clock = clock;
	o.flags = TK_OPT_NO_RECLAIMER;
	rc = open_store(policy, store, &o, &l);
	if (rc) {
		tk_clock_free(clock);
		return rc;
	}
	while ((n = getline(&line, &cap, stdin)) != -1) {
		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if ((size_t)n != strlen(line)) {
			snprintf(err, sizeof(err),
				 "column %zu: expected no NUL byte",
				 strlen(line) + 1);
			print_bad_line(lineno, err);
			status = CTL_ERROR;
			continue;
		}
		if (replay_parse(line, &r, err, sizeof(err))) {
			print_bad_line(lineno, err);
			status = CTL_ERROR;
			continue;
		}
		rc = replay_one(l, clock, &r, shaper);
		if (rc)
			printf("{\"error\":\"%s\"}\n", tk_strerrorname(rc));
	}
	if (ferror(stdin) || fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "throttlectl: I/O error\n");
		status = CTL_ERROR;
	}
	free(line);
	tk_limiter_close(l);
	tk_store_close(o.store);
	tk_clock_free(clock);
	return status;
}
