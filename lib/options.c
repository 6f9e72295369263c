/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * options.c - read a caller's struct tk_options of any library version.
 *
 * .size says how much of the structure the caller's header knew about.
 * A shorter (older) structure leaves the newer fields at their defaults;
 * a longer (newer) one is accepted only if the fields this library does
 * not know are all zero, so a request for a feature we lack is refused
 * rather than ignored.
 */
#include "options.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define TK__OPTIONS_KNOWN_FLAGS                                                \
	(TK_OPT_NO_RECLAIMER | TK_OPT_ZONE_NO_CREATE |                         \
	 TK_OPT_ZONE_REFUSE_FULL | TK_OPT_ZONE_GID | TK_OPT_ZONE_RECLAIMER |   \
	 TK_OPT_ZONE_UID | TK_OPT_RETRY_OPEN)

int tk__options_read(struct tk_options *dst, const struct tk_options *src)
{
	const unsigned char *extra;
	size_t i;

	memset(dst, 0, sizeof(*dst));
	dst->size = sizeof(*dst);
	if (!src)
		return 0;
	if (src->size < offsetof(struct tk_options, clock) + sizeof(void *))
		return -EINVAL;
	if (src->size > sizeof(*dst)) {
		extra = (const unsigned char *)src + sizeof(*dst);
		for (i = 0; i < src->size - sizeof(*dst); i++)
			if (extra[i])
				return -EINVAL;
	}
	memcpy(dst, src, src->size < sizeof(*dst) ? src->size : sizeof(*dst));
	dst->size = sizeof(*dst);
	if (dst->flags & ~TK__OPTIONS_KNOWN_FLAGS)
		return -EINVAL;
	if (dst->fail > TK_FAIL_CLOSED)
		return -EINVAL;
	if (dst->prefix && strlen(dst->prefix) > TK_PREFIX_MAX)
		return -ENAMETOOLONG;
	return 0;
}
