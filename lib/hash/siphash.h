/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * siphash.h - SipHash (siphash.c) and the random bytes that key it.
 */
#ifndef TK_SIPHASH_H
#define TK_SIPHASH_H

#include "config.h"

#include <stddef.h>
#include <stdint.h>

/*
 * siphash.c: SipHash-2-4 (names that leave the process) and SipHash-1-3
 * (tk__keyhash's long keys) with a 128-bit key.
 */
uint64_t tk__siphash(const uint64_t key[2], const void *data, size_t len);
uint64_t tk__siphash13(const uint64_t key[2], const void *data, size_t len);
/* SipHash-1-3 of @len (at most 16) bytes as two little-endian words,
 * zero above @len. */
uint64_t tk__siphash13_words(const uint64_t key[2], uint64_t w0, uint64_t w1,
			     size_t len);
int tk__random_bytes(void *buf, size_t len);

#endif /* TK_SIPHASH_H */
