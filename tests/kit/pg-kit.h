/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pg-kit.h - a real PostgreSQL 15 server for the PostgreSQL store's
 * tests: a cluster made by initdb in a fresh temporary directory, the
 * server on 127.0.0.1 and a free port (its socket in that directory),
 * run as the user postgres when the test runs as root (the server
 * refuses root), stopped by its pid.  No mocks of PostgreSQL.
 *
 * Every role logs in without a password, but for the members of
 * PG_KIT_PASSWORD_ROLE (a role the test makes, with CREATE ROLE ... IN
 * ROLE), whose password the server asks for (scram-sha-256).
 *
 * Not thread-safe: the test's main thread drives it.
 */
#ifndef TK_TESTS_KIT_PG_H
#define TK_TESTS_KIT_PG_H

#include <stddef.h>
#include <sys/types.h>

#define PG_KIT_PASSWORD_ROLE "tk_password"

struct pg_kit {
	pid_t pid; /* 0: not running */
	int port;
	char dir[64];
	char spec[160]; /* postgresql://tk@127.0.0.1:PORT/postgres */
};

/*
 * Is there a PostgreSQL server to run?  0 without one (the tests skip),
 * unless TK_REQUIRE_POSTGRES=1, which makes a missing server a failure.
 */
int pg_kit_available(void);
/* initdb and start, waiting until it answers: 0, or -1. */
int pg_kit_start(struct pg_kit *k);
/* Stop it (fast shutdown) by its pid, and remove its directory. */
void pg_kit_destroy(struct pg_kit *k);
/* Stop it by its pid (fast shutdown), keeping its data: 0, or -1. */
int pg_kit_stop(struct pg_kit *k);
/* Start it again on its data and port, waiting until it answers: 0, or -1. */
int pg_kit_restart(struct pg_kit *k);
/*
 * Put @line first in its pg_hba.conf and reload, so that it decides
 * before the cluster's "trust" lines: 0, or -1.
 */
int pg_kit_hba_first(struct pg_kit *k, const char *line);
/*
 * A hot standby of @primary in @k (pg_basebackup -R, its own directory
 * and port; read-only, replaying the primary's writes): 0, or -1.
 */
int pg_kit_standby(struct pg_kit *k, const struct pg_kit *primary);
/*
 * For a cmocka test: a server in @k, started by the first caller (later
 * calls return at once); skips without the binaries, fails if the server
 * does not start.
 */
void pg_kit_need(struct pg_kit *k);
/*
 * For a cmocka test, as pg_kit_need(): the spec of the server's default
 * table, dropped first (the store makes it anew at first use), with
 * generous timeouts (a loaded machine is no store failure).  Valid until
 * the next call.
 */
const char *pg_kit_fresh(struct pg_kit *k);
/*
 * Run @sql on a fresh connection: the first column of its first row as
 * a number (0 without one), or -1 on errors.
 */
long long pg_kit_sql(const struct pg_kit *k, const char *sql);

#endif /* TK_TESTS_KIT_PG_H */
