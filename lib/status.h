/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * status.h - the library's internal answers that are not errors.
 *
 * One convention for all of them, here and in shm/zone.h (TK__ZONE_GROW
 * and its kin, -4096 - 1 to -4096 - 15, since shm/ includes nothing from
 * lib/): a value below every errno, -4096 - n, so that
 * - no errno a function passes on (a quota's -EOVERFLOW, a server's
 *   -EPROTO) is ever taken for one, and
 * - a caller that does not expect one sees a failure (rc < 0), never a
 *   success.
 * None of them reaches the public API.
 */
#ifndef TK_STATUS_H
#define TK_STATUS_H

/* A store's try_check(): not decided here; the caller runs apply(). */
#define TK__NOT_HERE (-4096 - 16)
/* An algorithm's check_unvalidated(): valid() refuses the state. */
#define TK__INVALID (-4096 - 17)
/* An algorithm's check_hot(): more than one word would change. */
#define TK__NOT_HOT (-4096 - 18)
/* tk__redis_command(): a cluster's MOVED and ASK redirections, the
 * target left in tk__redis_conn_redirect(). */
#define TK__REDIS_MOVED (-4096 - 32)
#define TK__REDIS_ASK (-4096 - 33)
/* conn.c: a command failed before a byte of it left (it may be resent). */
#define TK__REDIS_UNSENT (-4096 - 34)
/* A Redis transaction whose watched key changed: nothing written (occ.c). */
#define TK__REDIS_LOST (-4096 - 35)
/* engine.c: a sliding log the fast script leaves to check.lua. */
#define TK__REDIS_SLOW (-4096 - 36)

#endif /* TK_STATUS_H */
