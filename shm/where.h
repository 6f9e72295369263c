/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * where.h - where a zone's file is (where.c), for segment.c, which makes,
 * attaches and removes it there.
 */
#ifndef TK_SHM_WHERE_H
#define TK_SHM_WHERE_H

#include "zone.h"

#include <stddef.h>
#include <sys/types.h>

#define TKZ_NAME_MAX_LEN 200
/* An absolute zone path, bytes without the NUL. */
#define TKZ_PATH_MAX_LEN 1024

/* Where a zone's file is: its directory, open, and its name there. */
struct tk__zone_where {
	int dir; /* O_PATH */
	char file[TKZ_NAME_MAX_LEN + 16];
};

/* /dev/shm, or TK_SHM_DIR: where a bare NAME's file is. */
const char *tk__zone_dir(void);
/*
 * Find zone @name's directory, judged (open, never through a link), and
 * its file name there; close w->dir after.  0, or a negative errno with
 * the reason in @why.
 */
int tk__zone_where(struct tk__zone_where *w, const char *name,
		   const struct tk__zone_config *cfg, char *why, size_t len);
/* Is @g one of this process's groups, or the one @cfg names? */
int tk__zone_our_group(gid_t g, const struct tk__zone_config *cfg);
/* errno as the zone functions report it. */
int tk__zone_errno(void);
/* The reason for a refusal, into @why (nothing if @len is 0). */
void tk__zone_say(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* TK_SHM_WHERE_H */
