/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * guard.h - survive a zone file that shrinks under its mappings.
 *
 * Any process that may write a zone's file may also ftruncate(2) it, and
 * the next access to a mapped page past the new end raises SIGBUS, which
 * kills the process by default.  Every zone mapping is registered here:
 * a fault in one marks it broken and replaces it with zero pages, so the
 * access that faulted, and any other under way, completes harmlessly on
 * an empty table, and the caller, seeing the mark, returns an error.  See
 * guard.c.
 */
#ifndef TK_SHM_GUARD_H
#define TK_SHM_GUARD_H

#include <stddef.h>

/*
 * Install the process's SIGBUS handler, once (later calls do nothing).
 * Signals it does not claim go to the disposition it replaced, exactly
 * as they would have without it.
 */
void tk__guard_install(void);

/*
 * Register the mapping [@base, @base + @len): a fault in it sets *@broken
 * to 1 before the zero pages replace it.  0, or -ENOMEM if the process
 * has TK__GUARD_MAX mappings registered already.
 */
#define TK__GUARD_MAX 1024
int tk__guard_add(void *base, size_t len, int *broken);
/* Unregister the mapping at @base; before it is unmapped. */
void tk__guard_remove(void *base);

#endif /* TK_SHM_GUARD_H */
