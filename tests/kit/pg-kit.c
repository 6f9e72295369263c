/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pg-kit.c - a real PostgreSQL server for tests (pg-kit.h).
 *
 * The binaries are Debian's (postgresql-15), under PG_BINDIR unless the
 * environment's PG_BINDIR says otherwise.  The cluster trusts local
 * connections (the tests connect as "tk", its superuser), but for the
 * members of PG_KIT_PASSWORD_ROLE, and runs with fsync=off: its data dies
 * with the test anyway.
 */
#include "pg-kit.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>
#include <libpq-fe.h>

#ifndef PG_BINDIR
#define PG_BINDIR "/usr/lib/postgresql/15/bin"
#endif

static const char *bindir(void)
{
	const char *p = getenv("PG_BINDIR");

	return p && *p ? p : PG_BINDIR;
}

static void program(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", bindir(), name);
}

int pg_kit_available(void)
{
	const char *req = getenv("TK_REQUIRE_POSTGRES");
	char path[256];

	program(path, sizeof(path), "postgres");
	if (access(path, X_OK) == 0)
		return 1;
	if (req && strcmp(req, "1") == 0) {
		fprintf(stderr,
			"pg-kit: TK_REQUIRE_POSTGRES=1 and no %s: "
			"failing, not skipping\n",
			path);
		return 1;
	}
	return 0;
}

/* In a child: become the server's user (root may not run it). */
static void drop_root(void)
{
	struct passwd *pw;

	if (geteuid() != 0)
		return;
	pw = getpwnam("postgres");
	if (!pw || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
		_exit(126);
}

/* Fork and exec @argv as the server's user; the child's pid, or -1. */
static pid_t run(const char *const *argv)
{
	pid_t pid = fork();
	int devnull;

	if (pid != 0)
		return pid;
	devnull = open("/dev/null", O_WRONLY);
	if (devnull >= 0) {
		dup2(devnull, 1);
		dup2(devnull, 2);
	}
	drop_root();
	/* Dies with the test, however the test ends (set after the
	 * change of user, which clears it). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Run @argv as the server's user to its end: 0 if it exited 0. */
static int run_wait(const char *const *argv)
{
	int status;
	pid_t pid = run(argv);

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

/* A fresh directory for a cluster, the server's user's. */
static int make_dir(struct pg_kit *k)
{
	struct passwd *pw;

	snprintf(k->dir, sizeof(k->dir), "/tmp/tk-pg-XXXXXX");
	if (!mkdtemp(k->dir))
		return -1;
	pw = geteuid() == 0 ? getpwnam("postgres") : NULL;
	if (pw && chown(k->dir, pw->pw_uid, pw->pw_gid) != 0)
		return -1;
	return 0;
}

static int initdb(struct pg_kit *k)
{
	char prog[256], data[96];
	const char *argv[] = { prog, "-D",    data,	   "-U", "tk",
			       "-A", "trust", "--no-sync", NULL };

	if (make_dir(k) != 0)
		return -1;
	program(prog, sizeof(prog), "initdb");
	snprintf(data, sizeof(data), "%s/data", k->dir);
	return run_wait(argv);
}

/* Put @line before the lines of @k's pg_hba.conf (the first match wins). */
static int prepend_hba(const struct pg_kit *k, const char *line)
{
	char path[128], old[16384];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/data/pg_hba.conf", k->dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(old, 1, sizeof(old), f);
	fclose(f);
	if (n == sizeof(old))
		return -1;
	/* Rewritten in place: the file stays the server's user's. */
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n%.*s", line, (int)n, old);
	return fclose(f) == 0 ? 0 : -1;
}

static int spawn(struct pg_kit *k)
{
	char prog[256], data[96], port[16];
	const char *argv[] = { prog, "-D",	  data,
			       "-k", k->dir,	  "-p",
			       port, "-c",	  "listen_addresses=127.0.0.1",
			       "-c", "fsync=off", NULL };
	struct timespec pause = { 0, 50 * 1000000L };
	char conn[128];
	int i;

	program(prog, sizeof(prog), "postgres");
	snprintf(data, sizeof(data), "%s/data", k->dir);
	snprintf(port, sizeof(port), "%d", k->port);
	snprintf(conn, sizeof(conn),
		 "host=127.0.0.1 port=%d user=tk dbname=postgres", k->port);
	k->pid = run(argv);
	if (k->pid < 0)
		return -1;
	for (i = 0; i < 600; i++) {
		if (PQping(conn) == PQPING_OK)
			return 0;
		if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
			k->pid = 0;
			return -1; /* the port was taken meanwhile */
		}
		nanosleep(&pause, NULL);
	}
	return -1;
}

/* Start the server of @k's data on a free port. */
static int spawn_free(struct pg_kit *k)
{
	int tries;

	for (tries = 0; tries < 5; tries++) {
		k->port = free_port();
		if (k->port > 0 && spawn(k) == 0) {
			snprintf(k->spec, sizeof(k->spec),
				 "postgresql://tk@127.0.0.1:%d/postgres",
				 k->port);
			return 0;
		}
	}
	return -1;
}

int pg_kit_start(struct pg_kit *k)
{
	memset(k, 0, sizeof(*k));
	/* Before initdb's lines, which trust everyone: the password roles'. */
	if (initdb(k) != 0 ||
	    prepend_hba(k, "host all +" PG_KIT_PASSWORD_ROLE
			   " 127.0.0.1/32 scram-sha-256") != 0)
		return -1;
	return spawn_free(k);
}

int pg_kit_stop(struct pg_kit *k)
{
	if (k->pid <= 0)
		return -1;
	kill(k->pid, SIGINT);
	if (waitpid(k->pid, NULL, 0) != k->pid)
		return -1;
	k->pid = 0;
	return 0;
}

int pg_kit_restart(struct pg_kit *k)
{
	return k->pid == 0 ? spawn(k) : -1;
}

int pg_kit_hba_first(struct pg_kit *k, const char *line)
{
	if (prepend_hba(k, line) != 0)
		return -1;
	return pg_kit_sql(k, "SELECT pg_reload_conf()::int") == 1 ? 0 : -1;
}

int pg_kit_standby(struct pg_kit *k, const struct pg_kit *primary)
{
	char prog[256], data[96], port[16];
	const char *argv[] = { prog, "-D", data, "-h", "127.0.0.1", "-p", port,
			       "-U", "tk", "-R", "-X", "stream",    NULL };

	memset(k, 0, sizeof(*k));
	if (make_dir(k) != 0)
		return -1;
	program(prog, sizeof(prog), "pg_basebackup");
	snprintf(data, sizeof(data), "%s/data", k->dir);
	snprintf(port, sizeof(port), "%d", primary->port);
	if (run_wait(argv) != 0)
		return -1;
	return spawn_free(k);
}

void pg_kit_destroy(struct pg_kit *k)
{
	char cmd[96];

	if (k->pid > 0) {
		/* SIGINT: the fast shutdown, which ends every session. */
		kill(k->pid, SIGINT);
		waitpid(k->pid, NULL, 0);
		k->pid = 0;
	}
	if (k->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", k->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "pg-kit: cannot remove %s\n", k->dir);
		k->dir[0] = '\0';
	}
}

void pg_kit_need(struct pg_kit *k)
{
	if (k->pid)
		return;
	if (!pg_kit_available())
		skip();
	assert_int_equal(pg_kit_start(k), 0);
}

const char *pg_kit_fresh(struct pg_kit *k)
{
	static char spec[sizeof(k->spec) + 64];

	pg_kit_need(k);
	assert_int_equal(
		pg_kit_sql(k, "DROP TABLE IF EXISTS throttlekit_state"), 0);
	snprintf(spec, sizeof(spec), "%s?timeout=5s&connect_timeout=5s",
		 k->spec);
	return spec;
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

long long pg_kit_sql(const struct pg_kit *k, const char *sql)
{
	char conn[128];
	PGconn *c;
	PGresult *r;
	long long v = -1;

	snprintf(conn, sizeof(conn),
		 "host=127.0.0.1 port=%d user=tk dbname=postgres", k->port);
	c = PQconnectdb(conn);
	if (PQstatus(c) == CONNECTION_OK) {
		PQsetNoticeProcessor(c, quiet, NULL);
		r = PQexec(c, sql);
		if (PQresultStatus(r) == PGRES_TUPLES_OK)
			v = PQntuples(r) && PQnfields(r)
				    ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
				    : 0;
		else if (PQresultStatus(r) == PGRES_COMMAND_OK)
			v = 0;
		PQclear(r);
	}
	PQfinish(c);
	return v;
}
