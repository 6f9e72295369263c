/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libpq.h - libpq, loaded at run time (libpq.c): the PostgreSQL store
 * calls it only through tk__pq, so that the library links no libpq, and
 * a process that never opens a postgresql:// store maps none of libpq's
 * dependencies (Kerberos, LDAP, OpenSSL), and a static link of the
 * library needs none of their static archives.  <libpq-fe.h> is only
 * read for its types.
 */
#ifndef TK_PG_LIBPQ_H
#define TK_PG_LIBPQ_H

#include <stddef.h>

#include <libpq-fe.h>

/* The soname loaded: the ABI of libpq since PostgreSQL 8.4. */
#define TK__LIBPQ_SONAME "libpq.so.5"

/* Every libpq function the store calls: X(name). */
#define TK__LIBPQ_FUNCS(X)                                                     \
	X(PQclear)                                                             \
	X(PQcmdTuples)                                                         \
	X(PQconnectdb)                                                         \
	X(PQconninfoFree)                                                      \
	X(PQconninfoParse)                                                     \
	X(PQerrorMessage)                                                      \
	X(PQexec)                                                              \
	X(PQexecPrepared)                                                      \
	X(PQfinish)                                                            \
	X(PQgetisnull)                                                         \
	X(PQgetlength)                                                         \
	X(PQgetvalue)                                                          \
	X(PQhost)                                                              \
	X(PQntuples)                                                           \
	X(PQparameterStatus)                                                   \
	X(PQport)                                                              \
	X(PQprepare)                                                           \
	X(PQresultErrorField)                                                  \
	X(PQresultStatus)                                                      \
	X(PQsetNoticeProcessor)                                                \
	X(PQsocket)                                                            \
	X(PQsslInUse)                                                          \
	X(PQstatus)                                                            \
	X(PQtransactionStatus)

#define TK__LIBPQ_FIELD(name) __typeof__(name) *name;
struct tk__libpq {
	TK__LIBPQ_FUNCS(TK__LIBPQ_FIELD)
};
#undef TK__LIBPQ_FIELD

/*
 * The table, filled by the first tk__libpq_load() that succeeds and never
 * written again: a caller that got 0 from tk__libpq_load() (or holds a
 * store whose open did) may read it from any thread.
 */
extern struct tk__libpq tk__pq;

/*
 * Load libpq once per process (pthread_once; every thread waits for the
 * first): 0, or -ENOTSUP with the reason in @why (e.g. "libpq.so.5 not
 * found: install libpq5"), the same answer every time after.
 */
int tk__libpq_load(char *why, size_t why_len);

#endif /* TK_PG_LIBPQ_H */
