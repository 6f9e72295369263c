/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * error.h - the one gate every error code leaves the library through.
 */
#ifndef TK_ERROR_H
#define TK_ERROR_H

#include "config.h"

#include <throttlekit.h>

/* error.c: let only documented codes leave the library. */
int tk__rc(int rc);

#endif /* TK_ERROR_H */
