/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pg-bench - the PostgreSQL store over loopback, next to the fixed window
 * users write by hand, in one run (bench/pg.sh starts the server).
 *
 *   pg-bench CONNINFO [ROUNDS [ROUND_MS]]
 *
 * Rows:
 *   tk fixed-window      tk_limiter_check(), allow path, one hot key
 *   tk gcra              the same policy family the Redis rows use
 *   tk gcra, denied      every check denied (it writes nothing)
 *   tk all(gcra,fw)      a composite of two dimensions on one key
 *   hand: UPDATE         UPDATE ... SET n = CASE WHEN win = $2 THEN n + 1
 *                        ELSE 1 END, win = $2 ... RETURNING n: a fixed
 *                        window in one statement, prepared, one row made
 *                        beforehand, the client comparing n to its limit
 *
 * Round trips and server time per check come from the server itself:
 * pg_stat_statements (loaded by pg.sh) counts every statement a check
 * sends (BEGIN and COMMIT too), and the store sends one statement per
 * round trip (no pipeline), so its calls per check are its round trips;
 * its total_exec_time per check is the server's time.  Both are read on
 * an admin connection around COUNT_CHECKS checks that follow a warm-up
 * (the connect, the table and the prepares are no part of a check).
 * Checks/s: ROUNDS rounds (5) of ROUND_MS (300 ms), the cases' rounds
 * interleaved, median (min-max), one client thread.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <throttlekit.h>

#define COUNT_CHECKS 2000
#define ROUNDS_MAX 64

static const char *conninfo;
static PGconn *admin;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, PGconn *c)
{
	fprintf(stderr, "pg-bench: %s%s%s\n", what, c ? ": " : "",
		c ? PQerrorMessage(c) : "");
	exit(1);
}

static void run(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		die(sql, c);
	PQclear(r);
}

/* Statements and their server ms since the last reset, ours left out. */
static void stats(double *calls, double *ms)
{
	PGresult *r =
		PQexec(admin, "SELECT coalesce(sum(calls), 0), "
			      "coalesce(sum(total_exec_time), 0) "
			      "FROM pg_stat_statements "
			      "WHERE query NOT LIKE '%pg_stat_statements%'");

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		die("reading pg_stat_statements", admin);
	*calls = strtod(PQgetvalue(r, 0, 0), NULL);
	*ms = strtod(PQgetvalue(r, 0, 1), NULL);
	PQclear(r);
}

/* ---- the cases ---- */

struct engine {
	const char *name;
	const char *policy; /* NULL: the hand-written statement */
	struct tk_limiter *l;
	PGconn *hand;
	uint64_t seq;
	/* counted */
	double trips, srv_us, admitted;
	double rate[ROUNDS_MAX];
};

/* One check; 1 admitted, 0 denied. */
static int check(struct engine *e)
{
	struct tk_decision d;
	char win[24];
	const char *v[2] = { "hot", win };
	PGresult *r;
	int rc;

	if (e->l) {
		rc = tk_limiter_check(e->l, "hot", 3, 1, &d);
		if (rc)
			die(tk_strerror(rc), NULL);
		return d.allowed;
	}
	/* The window of a second, as the client's clock says. */
	snprintf(win, sizeof(win), "%" PRIu64, (uint64_t)time(NULL));
	r = PQexecPrepared(e->hand, "fw", 2, v, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		die("the hand-written UPDATE", e->hand);
	rc = strtoll(PQgetvalue(r, 0, 0), NULL, 10) <= 1000000000;
	PQclear(r);
	return rc;
}

static void hand_open(struct engine *e)
{
	PGresult *r;

	e->hand = PQconnectdb(conninfo);
	if (PQstatus(e->hand) != CONNECTION_OK)
		die("connect", e->hand);
	run(e->hand, "CREATE TABLE IF NOT EXISTS hand_fw ("
		     "key text PRIMARY KEY, win bigint NOT NULL, "
		     "n bigint NOT NULL)");
	run(e->hand, "INSERT INTO hand_fw VALUES ('hot', 0, 0) "
		     "ON CONFLICT DO NOTHING");
	r = PQprepare(e->hand, "fw",
		      "UPDATE hand_fw SET n = CASE WHEN win = $2 THEN n + 1 "
		      "ELSE 1 END, win = $2 WHERE key = $1 RETURNING n",
		      2, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die("PREPARE", e->hand);
	PQclear(r);
}

/* Each case its own keys: @i names its prefix. */
static void engine_open(struct engine *e, const char *spec, size_t i)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char prefix[16];
	int rc;

	if (!e->policy) {
		hand_open(e);
		return;
	}
	snprintf(prefix, sizeof(prefix), "case%zu:", i);
	o.prefix = prefix;
	rc = tk_limiter_open(&e->l, e->policy, spec, &o);
	if (rc)
		die(tk_strerror(rc), NULL);
}

/* Round trips and server time per check, and the share admitted. */
static void count(struct engine *e)
{
	double c0, m0, c1, m1, ok = 0;
	int i;

	for (i = 0; i < 200; i++)
		check(e);
	run(admin, "SELECT pg_stat_statements_reset()");
	stats(&c0, &m0);
	for (i = 0; i < COUNT_CHECKS; i++)
		ok += check(e);
	stats(&c1, &m1);
	e->trips = (c1 - c0) / COUNT_CHECKS;
	e->srv_us = (m1 - m0) * 1000 / COUNT_CHECKS;
	e->admitted = ok / COUNT_CHECKS;
}

static double timed_round(struct engine *e, unsigned int ms)
{
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)ms * 1000000u, n = 0;

	do {
		check(e);
		n++;
	} while (now_ns() < end);
	return (double)n * 1e9 / (double)(now_ns() - t0);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct engine e[] = {
		{ .name = "tk fixed-window",
		  .policy = "fixed-window:1000000000/1s" },
		{ .name = "tk gcra",
		  .policy = "gcra:1000000000/1s,burst="
			    "1000000000" },
		{ .name = "tk gcra, denied", .policy = "gcra:1/1h,burst=1" },
		{ .name = "tk all(gcra,fixed-window)",
		  .policy = "all(gcra:1000000000/1s,burst=1000000000,"
			    "fixed-window:1000000000/1s)" },
		{ .name = "hand: UPDATE ... RETURNING fixed window" },
	};
	const size_t n = sizeof(e) / sizeof(e[0]);
	const size_t hand = n - 1;
	unsigned int rounds = 5, ms = 300, r;
	char spec[512];
	double med[sizeof(e) / sizeof(e[0])];
	size_t i;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: pg-bench CONNINFO SPEC [ROUNDS "
				"[ROUND_MS]]\n");
		return 2;
	}
	conninfo = argv[1];
	snprintf(spec, sizeof(spec), "%s", argv[2]);
	if (argc > 3)
		rounds = (unsigned int)strtoul(argv[3], NULL, 10);
	if (argc > 4)
		ms = (unsigned int)strtoul(argv[4], NULL, 10);
	if (rounds < 1 || rounds > ROUNDS_MAX || ms < 1)
		die("ROUNDS is 1 to 64, ROUND_MS at least 1", NULL);
	admin = PQconnectdb(conninfo);
	if (PQstatus(admin) != CONNECTION_OK)
		die("connect", admin);
	run(admin, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
	for (i = 0; i < n; i++) {
		engine_open(&e[i], spec, i);
		count(&e[i]);
	}
	for (r = 0; r < rounds; r++)
		for (i = 0; i < n; i++) {
			check(&e[i]); /* warm */
			e[i].rate[r] = timed_round(&e[i], ms);
		}
	for (i = 0; i < n; i++) {
		qsort(e[i].rate, rounds, sizeof(double), by_value);
		med[i] = e[i].rate[rounds / 2];
	}
	printf("PostgreSQL %s on loopback, one client thread, %u rounds of "
	       "%u ms\n",
	       PQparameterStatus(admin, "server_version"), rounds, ms);
	printf("%-42s %6s %8s %6s %7s %26s %6s\n", "case", "trips", "srv us",
	       "x hand", "admit", "checks/s median (min-max)", "x hand");
	for (i = 0; i < n; i++)
		printf("%-42s %6.3f %8.1f %6.2f %7.3f %10.0f (%.0f-%.0f) "
		       "%6.2f\n",
		       e[i].name, e[i].trips, e[i].srv_us,
		       e[i].srv_us / e[hand].srv_us, e[i].admitted, med[i],
		       e[i].rate[0], e[i].rate[rounds - 1], med[i] / med[hand]);
	for (i = 0; i < n; i++) {
		tk_limiter_close(e[i].l);
		if (e[i].hand)
			PQfinish(e[i].hand);
	}
	PQfinish(admin);
	return 0;
}
