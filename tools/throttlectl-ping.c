/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlectl ping STORE: what serves a store, and how fast.  Prints
 * store=, server=, version=, engine= and rtt_ns= lines; a store spec's
 * password appears in no output and no message.  A Redis server that may
 * evict keys drops live states, and the limiter then admits more than
 * its policy: a warning on standard error says so, or that the policy
 * could not be read, and the exit status stays 0.
 */
#include <inttypes.h>
#include <string.h>

#include "throttlectl.h"

static void warn_eviction(const struct tk_store_ping *p)
{
	if (strcmp(p->store, "redis") != 0 ||
	    strcmp(p->maxmemory_policy, "noeviction") == 0)
		return;
	if (p->maxmemory_policy[0] == '\0')
		fprintf(stderr,
			"throttlectl: warning: could not check the server's "
			"maxmemory-policy (CONFIG GET refused); any policy but "
			"noeviction drops live limits and admits too much\n");
	else
		fprintf(stderr,
			"throttlectl: warning: maxmemory-policy is %s: the "
			"server may evict live limits and admit too much; set "
			"it to noeviction\n",
			p->maxmemory_policy);
}

int ctl_ping(int argc, char **argv)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store_ping p;
	struct tk_store *s;
	int rc;

	if (argc != 2 || argv[1][0] == '-' || argv[1][0] == '\0') {
		return ctl_usage_error("ping");
	}
	/* A ping never creates a zone. */
	o.flags = TK_OPT_ZONE_NO_CREATE;
	rc = tk_store_open(&s, argv[1], &o);
	if (rc == 0) {
		rc = tk_store_ping(s, &p, sizeof(p));
		tk_store_close(s);
	}
	if (rc)
		return ctl_store_error(argv[1], rc);
	printf("store=%s\nserver=%s\nversion=%s\nengine=%s\nrtt_ns=%" PRIu64
	       "\n",
	       p.store, p.server, p.version, p.engine, p.rtt);
	warn_eviction(&p);
	return CTL_OK;
}
