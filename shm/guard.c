/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * guard.c - contained faults on zone mappings: a SIGBUS handler that
 * turns a zone truncated under us into an error of the calls that meet
 * it, at no cost to a call that does not.
 *
 * Every mapping of a zone is registered in a fixed table of address
 * ranges, with a pointer to its "broken" mark.  The handler, installed
 * once per process with SA_SIGINFO | SA_NODEFER | SA_ONSTACK, takes a
 * fault (si_code > 0: raised by the kernel, not sent by kill or sigqueue)
 * whose si_addr lies in a registered range: it sets the mark, maps
 * anonymous zero pages over the whole range (MAP_FIXED) and returns, and
 * the faulting access is executed again, on zeros.  A zone of zeros is a
 * valid empty table (docs/shm-protocol.md: a zero slot is EMPTY), and the
 * geometry lives in the process's own memory, so every call under way in
 * any thread finishes as on an empty zone; the callers test the mark
 * after their call (tk__zone_run()) and return -EPROTO, having written
 * nothing the other processes see after the fault.  Nothing is unwound,
 * so nothing leaks and no lock is left held; a call that does not fault
 * pays two loads of the mark.
 *
 * Every other signal goes to the previous disposition: its SA_SIGINFO or
 * plain handler, or for SIG_DFL (and for a fault under SIG_IGN, which the
 * kernel would not ignore) the default action, by restoring it and
 * re-raising a sent signal or returning to re-execute a faulting access.
 *
 * The handler is installed again by the next attach when another has
 * replaced it (Apache's MPMs install their fatal-signal handlers in every
 * child, over the one the parent inherited from us), and then chains to
 * that one.  A replacing handler that itself chains to us would send a
 * fault outside our ranges round in a loop: a thread that meets the same
 * fault again while it is chaining it takes the default action instead.
 *
 * The table is never freed; a slot is claimed by a CAS on its sequence
 * number, which is odd while its owner writes it, and the handler reads
 * a slot as a seqlock snapshot, skipping one that changes under it.  The
 * range that contains a faulting address belongs to a mapping the
 * faulting thread is using, so it cannot be withdrawn meanwhile.  mmap(2)
 * from a handler is a plain system call in glibc.
 */
#define _GNU_SOURCE
#include "guard.h"

#include <ck_pr.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* A registered mapping; seq is odd while a writer changes the slot. */
struct range {
	unsigned int seq;
	void *lo;    /* NULL: free */
	void *hi;    /* one past the end */
	int *broken; /* the zone's mark */
};

static struct range ranges[TK__GUARD_MAX];
static struct sigaction previous;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The fault this thread is chaining, if any.  Initial-exec: a handler
 * must not reach __tls_get_addr, which may allocate.
 */
static __thread void *chaining __attribute__((tls_model("initial-exec")));

static void default_action(int sig, siginfo_t *si)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	/* A fault repeats when the access is re-executed on return. */
	if (si->si_code <= 0)
		raise(sig);
}

/* The disposition we replaced, as the kernel would have applied it. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	void *outer = chaining;

	if (si->si_code > 0 && outer == si->si_addr) {
		/* Back from the handler we chained to: a loop. */
		default_action(sig, si);
		return;
	}
	if (previous.sa_flags & SA_SIGINFO) {
		chaining = si->si_code > 0 ? si->si_addr : NULL;
		previous.sa_sigaction(sig, si, uc);
		chaining = outer;
		return;
	}
	if (previous.sa_handler == SIG_IGN && si->si_code <= 0)
		return;
	if (previous.sa_handler != SIG_IGN && previous.sa_handler != SIG_DFL) {
		chaining = si->si_code > 0 ? si->si_addr : NULL;
		previous.sa_handler(sig);
		chaining = outer;
		return;
	}
	default_action(sig, si);
}

/* Slot @r as one consistent snapshot (a seqlock read): 0 if it is being
 * changed or free. */
static int snapshot(struct range *r, char **lo, char **hi, int **broken)
{
	unsigned int seq = ck_pr_load_uint(&r->seq);

	if (seq & 1)
		return 0;
	ck_pr_fence_load(); /* pairs with the fences in publish() */
	*lo = ck_pr_load_ptr(&r->lo);
	*hi = ck_pr_load_ptr(&r->hi);
	*broken = ck_pr_load_ptr(&r->broken);
	ck_pr_fence_load();
	return *lo && ck_pr_load_uint(&r->seq) == seq;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr, *lo, *hi;
	int saved = errno, *broken;
	size_t i;

	for (i = 0; si->si_code > 0 && i < TK__GUARD_MAX; i++) {
		if (!snapshot(&ranges[i], &lo, &hi, &broken) || a < lo ||
		    a >= hi)
			continue;
		/* The mark first: whoever reads zeros then sees it. */
		ck_pr_store_int(broken, 1);
		ck_pr_fence_store();
		if (mmap(lo, (size_t)(hi - lo), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			break;
		errno = saved;
		return;
	}
	errno = saved;
	chain(sig, si, uc);
}

/*
 * Ours, unless another handler has replaced it since: then that one
 * becomes the previous disposition.  Under a lock, so that two attaches
 * never record our own handler as the one to chain to; read first, then
 * replace, so that a handler running elsewhere finds @previous complete.
 */
void tk__guard_install(void)
{
	struct sigaction cur, sa;

	/* Busy: another attach is installing it.  (Never wait: a child of
	 * fork() may inherit the lock taken.) */
	if (pthread_mutex_trylock(&install_lock) != 0)
		return;
	if (sigaction(SIGBUS, NULL, &cur) == 0 &&
	    !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)) {
		previous = cur;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGBUS, &sa, NULL);
	}
	pthread_mutex_unlock(&install_lock);
}

/* Fill slot @r, which the caller owns (seq odd), and release it. */
static void publish(struct range *r, unsigned int seq, void *lo, void *hi,
		    int *broken)
{
	ck_pr_fence_store(); /* the odd seq before the fields */
	ck_pr_store_ptr(&r->lo, lo);
	ck_pr_store_ptr(&r->hi, hi);
	ck_pr_store_ptr(&r->broken, broken);
	ck_pr_fence_store(); /* the fields before the even seq */
	ck_pr_store_uint(&r->seq, seq + 2);
}

int tk__guard_add(void *base, size_t len, int *broken)
{
	unsigned int seq;
	size_t i;

	tk__guard_install();
	for (i = 0; i < TK__GUARD_MAX; i++) {
		seq = ck_pr_load_uint(&ranges[i].seq);
		if ((seq & 1) || ck_pr_load_ptr(&ranges[i].lo) ||
		    !ck_pr_cas_uint(&ranges[i].seq, seq, seq + 1))
			continue;
		publish(&ranges[i], seq, base, (char *)base + len, broken);
		return 0;
	}
	return -ENOMEM;
}

void tk__guard_remove(void *base)
{
	unsigned int seq;
	size_t i;

	for (i = 0; i < TK__GUARD_MAX; i++) {
		seq = ck_pr_load_uint(&ranges[i].seq);
		if ((seq & 1) || ck_pr_load_ptr(&ranges[i].lo) != base ||
		    !ck_pr_cas_uint(&ranges[i].seq, seq, seq + 1))
			continue;
		publish(&ranges[i], seq, NULL, NULL, NULL);
		return;
	}
}
