/*
 * guard.c - contained access to zone mappings: a SIGBUS handler that
 * turns a fault on a truncated zone into an error of the call.
 *
 * Each guarded call pushes a frame (struct tk__guard, on its stack) onto
 * a per-thread list: a sigjmp_buf saved without the signal mask (no
 * system call on the hot path) and the address range it guards.  The
 * handler, installed once per process with SA_SIGINFO | SA_NODEFER |
 * SA_ONSTACK, takes a fault (si_code > 0: raised by the kernel, not sent
 * by kill or sigqueue) whose si_addr lies in the range of one of the
 * faulting thread's frames, unwinds to that frame and siglongjmps to it.
 * Everything else goes to the previous disposition: its SA_SIGINFO or
 * plain handler, or for SIG_DFL (and a fault under SIG_IGN, which the
 * kernel would not ignore) the default action, by restoring it and
 * re-raising a sent signal or returning to re-execute a faulting access.
 *
 * Jumping out of the handler is safe because the frames cover only code
 * that reads and writes a zone with plain loads, stores and atomics, takes
 * no lock and calls nothing that could be interrupted half-way in a way
 * that matters: a zone access itself never runs inside malloc or stdio.
 * SA_NODEFER keeps SIGBUS unblocked after the jump without a sigprocmask.
 *
 * The list head is an initial-exec TLS pointer: reading it from the
 * handler never allocates (the static TLS block exists from the thread's
 * start), and it costs one load on the hot path.
 */
#define _GNU_SOURCE
#include "guard.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static __thread struct tk__guard *top
	__attribute__((tls_model("initial-exec")));

static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The disposition we replaced, as the kernel would have applied it. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;

	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, uc);
		return;
	}
	if (previous.sa_handler == SIG_IGN && si->si_code <= 0)
		return;
	if (previous.sa_handler != SIG_IGN && previous.sa_handler != SIG_DFL) {
		previous.sa_handler(sig);
		return;
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	/* A fault repeats when the access is re-executed on return. */
	if (si->si_code <= 0)
		raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct tk__guard *g;

	if (si->si_code > 0)
		for (g = top; g; g = g->prev)
			if (a >= g->lo && a < g->hi) {
				top = g->prev;
				siglongjmp(g->env, 1);
			}
	chain(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa;

	/* Read first, then replace: a handler already running elsewhere
	 * must find the previous disposition complete. */
	if (sigaction(SIGBUS, NULL, &previous) != 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

void tk__guard_install(void)
{
	pthread_once(&once, install);
}

int tk__guard_run(const void *lo, size_t len, int (*fn)(void *ctx), void *ctx,
		  int *faulted)
{
	struct tk__guard g;
	int rc;

	g.lo = (uintptr_t)lo;
	g.hi = g.lo + len;
	g.hold = NULL;
	g.prev = top;
	if (sigsetjmp(g.env, 0)) {
		/* The handler has unlinked the frame; g.hold is read back
		 * from memory (its address escaped through top). */
		free(*(void *volatile *)&g.hold);
		*faulted = 1;
		return 0;
	}
	top = &g;
	rc = fn(ctx);
	top = g.prev;
	*faulted = 0;
	return rc;
}

void tk__guard_hold(void *p)
{
	if (top)
		top->hold = p;
}
