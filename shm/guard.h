/*
 * guard.h - survive a zone file that shrinks under its mappings.
 *
 * Any process that may write a zone's file may also ftruncate(2) it, and
 * the next access to a mapped page past the new end raises SIGBUS, which
 * kills the process by default.  Code that touches a mapping runs through
 * tk__guard_run(): a fault inside the guarded range returns from it with
 * *faulted set instead.  See guard.c.
 */
#ifndef TK_SHM_GUARD_H
#define TK_SHM_GUARD_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

/* One guarded call, on its caller's stack; the frames of a thread nest. */
struct tk__guard {
	sigjmp_buf env;		/* where a fault resumes */
	uintptr_t lo, hi;	/* the guarded bytes: [lo, hi) */
	void *hold;		/* freed if a fault aborts the call */
	struct tk__guard *prev; /* the frame this one nests in */
};

/*
 * Install the process's SIGBUS handler, once (later calls do nothing).
 * Signals it does not claim go to the handler it replaced, exactly as
 * they would have without it.
 */
void tk__guard_install(void);

/*
 * Run @fn(@ctx) so that a SIGBUS at an address in [@lo, @lo + @len) (a
 * page past the end of a truncated file) aborts it: *@faulted is then 1
 * and the result 0; otherwise *@faulted is 0 and the result @fn's.  An
 * aborted @fn must leave nothing to undo but what it handed to
 * tk__guard_hold().  Async-signal-safe: no.
 */
int tk__guard_run(const void *lo, size_t len, int (*fn)(void *ctx), void *ctx,
		  int *faulted);

/*
 * Make @p (from malloc) the innermost guarded call's to free should a
 * fault abort it; NULL when it is freed or handed on.  No-op unguarded.
 */
void tk__guard_hold(void *p);

#endif /* TK_SHM_GUARD_H */
