/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * spec.h - a PostgreSQL store's spec, parsed (spec.c): the libpq
 * connection URI it leaves to libpq, and the store's own options.
 */
#ifndef TK_PG_SPEC_H
#define TK_PG_SPEC_H

#include <stddef.h>
#include <stdint.h>

#define TK__PG_URI_MAX 1023
#define TK__PG_TABLE_MAX 63				  /* NAMEDATALEN - 1 */
#define TK__PG_DEFAULT_TIMEOUT (UINT64_C(1000) * 1000000) /* ns */
#define TK__PG_DEFAULT_CONNECT_TIMEOUT (UINT64_C(2) * 1000000000) /* ns */
#define TK__PG_DEFAULT_TABLE "throttlekit_state"

/*
 * A parsed spec.  @uri is the spec less the store's own options, plus
 * connect_timeout in whole seconds (libpq's unit): it holds the password,
 * and goes nowhere but to libpq.
 */
struct tk__pg_spec {
	char uri[TK__PG_URI_MAX + 1];
	uint64_t timeout;	  /* ns: the server's statement_timeout */
	uint64_t connect_timeout; /* ns, rounded up to seconds for libpq */
	char table[TK__PG_TABLE_MAX + 1];
	int server_time; /* 1: decide at the server's clock */
};

/* Is @spec one of this store's ("postgresql://")? */
int tk__pg_is_spec(const char *spec);

/*
 * Parse @spec, postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB[?OPTIONS].
 * Returns 0, -EINVAL with a sentence in @why (@why_len bytes, may be 0)
 * that never quotes the spec.
 */
int tk__pg_spec_parse(const char *spec, struct tk__pg_spec *out, char *why,
		      size_t why_len);

#endif /* TK_PG_SPEC_H */
