/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * failures.c - the store failures that the rules' fail policies absorb:
 * counted per store and child process, logged at a bounded rate, shown
 * on the status page.
 *
 * - A failed check is answered by fail=open or fail=closed, so the
 *   client sees a working server; without a log line an operator would
 *   never learn that limiting is off (a wrong Redis password makes every
 *   request DEGRADED).  A line per failed check, though, is a log storm
 *   at the request rate, so the first failure is logged at once, then at
 *   most one line per store every TK_MOD_FAILURE_LOG_INTERVAL, each with
 *   what was absorbed since the line before and the last error.
 * - The counts live in each child (struct tk_mod_failures, behind a
 *   mutex for the event MPM's threads), not in the zone: a store that
 *   fails may be the zone itself, and per-process counts need no shared
 *   state.  So N children may each write a line per interval.
 * - The first check that works after failures clears the failing flag
 *   (one atomic read per check while all is well) and says so, with the
 *   counts not yet logged, if a line is due; otherwise those counts go
 *   to the next line, so that a store that fails every other check
 *   still gets a line per interval, not one per recovery.
 * - Messages show the spec redacted (tk_spec_redact(), in config.c) and
 *   the library's name and text of the error, never a password.
 */
#include "mod_throttlekit.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "apr_atomic.h"
#include "apr_strings.h"
#include "http_log.h"

APLOG_USE_MODULE(throttlekit);

#define U64 APR_UINT64_T_FMT

static void lock(struct tk_mod_failures *f)
{
#if APR_HAS_THREADS
	if (f->mu)
		apr_thread_mutex_lock(f->mu);
#else
	(void)f;
#endif
}

static void unlock(struct tk_mod_failures *f)
{
#if APR_HAS_THREADS
	if (f->mu)
		apr_thread_mutex_unlock(f->mu);
#else
	(void)f;
#endif
}

struct tk_mod_failures *tk_mod_failures_make(apr_pool_t *pchild)
{
	struct tk_mod_failures *f = apr_pcalloc(pchild, sizeof(*f));

#if APR_HAS_THREADS
	if (apr_thread_mutex_create(&f->mu, APR_THREAD_MUTEX_DEFAULT, pchild) !=
	    APR_SUCCESS)
		f->mu = NULL; /* prefork has one thread: still correct */
#endif
	return f;
}

/* What was absorbed since the last line, into @buf; resets those counts. */
static void since_last(struct tk_mod_failures *f, char *buf, apr_size_t len,
		       apr_time_t now)
{
	if (f->logged_at)
		apr_snprintf(buf, len,
			     "in the last %" APR_TIME_T_FMT " s: %" U64
			     " failed check(s), %" U64
			     " admitted (fail=open), %" U64
			     " refused (fail=closed); %" U64
			     " in all in process %ld",
			     apr_time_sec(now - f->logged_at), f->checks_new,
			     f->admitted_new, f->refused_new, f->checks,
			     (long)getpid());
	else
		apr_snprintf(buf, len,
			     "first failure in process %ld: %" U64
			     " admitted (fail=open), %" U64
			     " refused (fail=closed)",
			     (long)getpid(), f->admitted_new, f->refused_new);
	f->checks_new = f->admitted_new = f->refused_new = 0;
	f->logged_at = now;
}

void tk_mod_failure(server_rec *srv, struct tk_mod_store *s, int rc,
		    int outcome)
{
	struct tk_mod_failures *f = s->failures;
	apr_time_t now = apr_time_now();
	char what[256];
	int log = 0;

	if (!f)
		return;
	if (rc >= 0)
		rc = -EIO; /* a degraded answer without its error */
	lock(f);
	f->checks++;
	f->checks_new++;
	if (outcome > 0) {
		f->admitted++;
		f->admitted_new++;
	} else if (outcome == 0) {
		f->refused++;
		f->refused_new++;
	}
	f->last_rc = rc;
	f->last_at = now;
	apr_atomic_set32(&f->failing, 1);
	if (!f->logged_at ||
	    now - f->logged_at >= TK_MOD_FAILURE_LOG_INTERVAL) {
		since_last(f, what, sizeof(what), now);
		log = 1;
	}
	unlock(f);
	if (log)
		ap_log_error(APLOG_MARK, APLOG_ERR, 0, srv,
			     "ThrottleStore %s (%s): checks fail: %s (%s); %s "
			     "(at most a line per store every %" APR_TIME_T_FMT
			     " s in each child)",
			     s->name, s->shown, tk_strerror(rc),
			     tk_strerrorname(rc), what,
			     apr_time_sec(TK_MOD_FAILURE_LOG_INTERVAL));
}

void tk_mod_failure_over(server_rec *srv, struct tk_mod_store *s)
{
	struct tk_mod_failures *f = s->failures;
	apr_time_t now = apr_time_now();
	char what[256];

	/* The common case: nothing failed, one shared read. */
	if (!f || !apr_atomic_read32(&f->failing) ||
	    apr_atomic_cas32(&f->failing, 0, 1) != 1)
		return;
	lock(f);
	if (now - f->logged_at < TK_MOD_FAILURE_LOG_INTERVAL) {
		unlock(f);
		return;
	}
	since_last(f, what, sizeof(what), now);
	unlock(f);
	ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, srv,
		     "ThrottleStore %s (%s): checks work again; %s", s->name,
		     s->shown, what);
}

void tk_mod_failures_get(struct tk_mod_store *s, struct tk_mod_failures *out)
{
	struct tk_mod_failures *f = s->failures;

	memset(out, 0, sizeof(*out));
	if (!f)
		return;
	lock(f);
	*out = *f;
	unlock(f);
	out->failing = apr_atomic_read32(&f->failing);
#if APR_HAS_THREADS
	out->mu = NULL;
#endif
}
