/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store-probe.c - would a store open and answer now, and if not, why
 * (tk_store_probe()).
 *
 * - One code, -EACCES, covers two refusals a caller fixes in different
 *   places: a zone the trust rules refuse (its owner, group or mode; the
 *   operator's chown or the zone_uid option) and a Redis server that
 *   refused the login (the spec's user or password, or the user's ACL);
 *   on PostgreSQL, a login refused (the password, pg_hba.conf) or a
 *   privilege denied (the grants), which the store tells (its refusal
 *   op).  The code stays as it is documented everywhere; the probe names
 *   which.
 * - A zone is judged by tk_zone_access(), whose sentence names the file,
 *   its owner and its mode; the probe creates nothing.  A Redis server is
 *   opened, pinged as a first check would reach it, and closed; the
 *   sentence shows the spec redacted, never the password.
 */
#include "error.h"
#include "store/store-ops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SPEC_SHOWN_MAX 512

/* The zone named by "shm:NAME": judged, not opened (nor created). */
static int probe_zone(const char *name, const struct tk_options *opts,
		      char *why, size_t len)
{
	char reason[384] = "";
	int rc = tk_zone_access(name, opts, reason, sizeof(reason));

	if (rc == -ENOENT && !(opts && (opts->flags & TK_OPT_ZONE_NO_CREATE))) {
		snprintf(why, len, "zone %s does not exist; opening creates it",
			 name);
		return 0;
	}
	if (rc == -EACCES)
		snprintf(why, len,
			 "zone %s is not trusted or not accessible: %s", name,
			 reason);
	else if (rc)
		snprintf(why, len, "zone %s: %s%s%s", name, tk_strerror(rc),
			 reason[0] ? ": " : "", reason);
	return rc;
}

/* What a server store's refusal @rc means, for spec @shown (redacted);
 * @says: the store's own words for it, or NULL. */
static void server_why(int rc, const char *shown, const char *says, char *why,
		       size_t len)
{
	if (says)
		snprintf(why, len, "the server of %s %s", shown, says);
	else if (rc == -EACCES)
		snprintf(why, len,
			 "the server of %s refused the login: a wrong user or "
			 "password (AUTH, WRONGPASS), none where one is "
			 "required (NOAUTH), or an ACL that denies the "
			 "library's commands (NOPERM)",
			 shown);
	else if (rc == -EHOSTUNREACH)
		snprintf(why, len,
			 "the sentinels of %s know no master of its name "
			 "(SENTINEL get-master-addr-by-name answered nil): "
			 "check the name against their 'sentinel monitor'",
			 shown);
	else
		snprintf(why, len, "the server of %s: %s", shown,
			 tk_strerror(rc));
}

static int probe(const char *spec, const struct tk_options *opts, char *why,
		 size_t len)
{
	struct tk_store_ping ping;
	char shown[SPEC_SHOWN_MAX];
	const char *says = NULL;
	struct tk_store *s;
	int rc;

	rc = tk_store_validate(spec, why, len);
	if (rc)
		return rc;
	if (strncmp(spec, "shm:", 4) == 0)
		return probe_zone(spec + 4, opts, why, len);
	rc = tk_store_open(&s, spec, opts);
	if (rc == 0) {
		rc = tk_store_ping(s, &ping, sizeof(ping));
		if (rc && s->ops->refusal)
			says = s->ops->refusal(s, rc);
		tk_store_close(s);
	}
	if (rc) {
		tk_spec_redact(spec, shown, sizeof(shown));
		server_why(rc, shown, says, why, len);
	}
	return rc;
}

TK_API int tk_store_probe(const char *spec, const struct tk_options *opts,
			  char *why, size_t len)
{
	char none[1];

	if (!spec || (len && !why))
		return -EINVAL;
	if (!len) { /* the sentence goes nowhere, but is still made */
		why = none;
		len = sizeof(none);
	}
	why[0] = '\0';
	return tk__rc(probe(spec, opts, why, len));
}
