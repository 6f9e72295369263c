/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * options.h - reading a caller's struct tk_options.
 */
#ifndef TK_OPTIONS_H
#define TK_OPTIONS_H

#include "config.h"

#include <throttlekit.h>

/* options.c: copy @src into @dst as this version reads it. */
int tk__options_read(struct tk_options *dst, const struct tk_options *src);

#endif /* TK_OPTIONS_H */
