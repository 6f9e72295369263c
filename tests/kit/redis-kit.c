/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * redis-kit.c - see redis-kit.h.
 */
#include "redis-kit.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

#include <hiredis/hiredis.h>
#include <throttlekit.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#ifndef REDIS_SERVER
#define REDIS_SERVER "redis-server"
#endif
#ifndef REDIS_CLI
#define REDIS_CLI "redis-cli"
#endif

/*
 * The directory and server (pid, 0 once reaped) of every kit not yet
 * destroyed: a failed assertion leaves its test by longjmp, past the
 * test's own cleanup, so this process stops them at exit.  A pid is kept
 * only while its process is unreaped, so no other process can hold it.
 *
 * The kit holds its ports (hold[], sockets bound but not listening) from
 * the moment it picks them until it is destroyed: a test that stops its
 * server and starts it again, or looks at a stopped one, finds the port
 * still its own, where another process's free port could otherwise have
 * landed in between.  The held socket sets SO_REUSEADDR once bound, as
 * redis-server does, so the server binds beside it.
 */
static struct {
	int used;
	pid_t pid;
	char dir[64];
	int hold[2]; /* -1: none; the port, a cluster node's bus port */
} kits[16];
static pid_t owner;

static int entry(const char *dir)
{
	int i;

	for (i = 0; i < 16; i++)
		if (kits[i].used && strcmp(kits[i].dir, dir) == 0)
			return i;
	return -1;
}

static void set_pid(const struct redis_kit *k)
{
	int i = entry(k->dir);

	if (i >= 0)
		kits[i].pid = k->pid;
}

static void release(int i)
{
	int j;

	for (j = 0; j < 2; j++) {
		if (kits[i].hold[j] >= 0)
			close(kits[i].hold[j]);
		kits[i].hold[j] = -1;
	}
}

static void remove_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "redis-kit: cannot remove %s\n", dir);
}

static void stop_all(void)
{
	int i;

	if (getpid() != owner)
		return; /* a forked test process: not its servers */
	for (i = 0; i < 16; i++) {
		if (!kits[i].used)
			continue;
		if (kits[i].pid > 0) {
			kill(kits[i].pid, SIGKILL);
			waitpid(kits[i].pid, NULL, 0);
		}
		release(i);
		remove_dir(kits[i].dir);
		kits[i].used = 0;
	}
}

static void remember(const struct redis_kit *k)
{
	int i;

	if (!owner) {
		owner = getpid();
		atexit(stop_all);
	}
	for (i = 0; i < 16 && kits[i].used; i++)
		;
	if (i == 16)
		return;
	kits[i].used = 1;
	kits[i].pid = 0;
	kits[i].hold[0] = kits[i].hold[1] = -1;
	memcpy(kits[i].dir, k->dir, sizeof(kits[i].dir));
}

/* The programs: $REDIS_SERVER and $REDIS_CLI, else configure's. */
static const char *program(const char *var, const char *dflt)
{
	const char *p = getenv(var);

	return p && *p ? p : dflt;
}

/*
 * Must the Redis tests run here?  With TK_REQUIRE_REDIS=1 (as
 * tools/run-tests.sh sets) a missing program is reported and counted as
 * present, so that the test goes on, fails to start it and fails instead
 * of skipping.
 */
static int present(const char *path)
{
	const char *req = getenv("TK_REQUIRE_REDIS");

	if (access(path, X_OK) == 0)
		return 1;
	if (req && strcmp(req, "1") == 0) {
		fprintf(stderr,
			"redis-kit: TK_REQUIRE_REDIS=1 and no %s: failing, "
			"not skipping\n",
			path);
		return 1;
	}
	return 0;
}

int redis_kit_available(void)
{
	return present(program("REDIS_SERVER", REDIS_SERVER));
}

/*
 * Hold 127.0.0.1:@port (0: one the kernel picks) for @k's kit, as its
 * @which-th port: the port, or -1.
 */
static int hold_port(const struct redis_kit *k, int which, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd, one = 1, i = entry(k->dir);

	if (i < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* Bound before SO_REUSEADDR is set: no other socket holds the
	 * port, not even one of another kit. */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		close(fd);
		return -1;
	}
	if (kits[i].hold[which] >= 0)
		close(kits[i].hold[which]);
	kits[i].hold[which] = fd;
	return ntohs(a.sin_port);
}

static redisContext *connect_kit(const struct redis_kit *k)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", k->port, tv);
	redisReply *r;

	if (!c || c->err) {
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	if (k->password[0]) {
		r = redisCommand(c, "AUTH %s", k->password);
		freeReplyObject(r);
	}
	return c;
}

long long redis_kit_cmd(const struct redis_kit *k, char *str, size_t len,
			const char *fmt, ...)
{
	redisContext *c = connect_kit(k);
	redisReply *r;
	long long rc = -1;
	va_list ap;

	if (!c)
		return -1;
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (r && r->type != REDIS_REPLY_ERROR) {
		rc = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
		if (str && len && r->type == REDIS_REPLY_STRING)
			snprintf(str, len, "%.*s", (int)r->len, r->str);
	}
	if (str && len && r && r->type == REDIS_REPLY_ERROR)
		snprintf(str, len, "%.*s", (int)r->len, r->str);
	freeReplyObject(r);
	redisFree(c);
	return rc;
}

void redis_kit_limiter(struct tk_limiter **l, struct tk_clock **c,
		       const char *policy, const char *spec, uint64_t start)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_int_equal(tk_clock_manual_new(c, start), 0);
	o.clock = *c;
	o.fail = TK_FAIL_ERROR;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_int_equal(tk_limiter_open(l, policy,
					 spec ? redis_kit_slow(spec) : "memory",
					 &o),
			 0);
}

const char *redis_kit_slow(const char *spec)
{
	static char buf[4][512];
	static int next;
	char *b;

	if (strncmp(spec, "redis", 5) != 0)
		return spec; /* "memory", "shm:..." */
	b = buf[next++ % 4];
	snprintf(b, sizeof(buf[0]), "%s%ctimeout=5s&connect_timeout=5s", spec,
		 strchr(spec, '?') ? '&' : '?');
	return b;
}

const char *redis_kit_manual(const char *spec)
{
	static char buf[4][512];
	static int next;
	char *b;

	spec = redis_kit_slow(spec);
	if (strncmp(spec, "redis", 5) != 0)
		return spec;
	b = buf[next++ % 4];
	snprintf(b, sizeof(buf[0]), "%s&server_time=0", spec);
	return b;
}

unsigned long long redis_kit_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 +
	       (unsigned long long)ts.tv_nsec / 1000000;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int spawn(struct redis_kit *k)
{
	const char *argv[24];
	char port[16];
	int i, n = 0, devnull;

	snprintf(port, sizeof(port), "%d", k->port);
	k->pid = fork();
	if (k->pid < 0)
		return -1;
	if (k->pid == 0) {
		/* Dies with the test, however the test ends. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		argv[n++] = program("REDIS_SERVER", REDIS_SERVER);
		if (k->conf)
			argv[n++] = k->conf;
		argv[n++] = "--port";
		argv[n++] = port;
		argv[n++] = "--bind";
		argv[n++] = "127.0.0.1";
		argv[n++] = "--dir";
		argv[n++] = k->dir;
		argv[n++] = "--save";
		argv[n++] = "";
		argv[n++] = "--appendonly";
		argv[n++] = "no";
		if (k->password[0]) {
			argv[n++] = "--requirepass";
			argv[n++] = k->password;
		}
		for (i = 0; i < 6 && k->extra[i]; i++)
			argv[n++] = k->extra[i];
		argv[n] = NULL;
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	set_pid(k);
	for (i = 0; i < 100; i++) {
		if (redis_kit_cmd(k, NULL, 0, "PING") == 0)
			return 0;
		if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
			k->pid = 0;
			set_pid(k);
			return -1; /* the port was taken meanwhile */
		}
		pause_ms(50);
	}
	redis_kit_stop(k);
	return -1;
}

/* @k's directory, made at its first start: 0, or -1. */
static int prepare(struct redis_kit *k, const char *password)
{
	if (k->dir[0])
		return 0;
	snprintf(k->dir, sizeof(k->dir), "/tmp/tk-redis-XXXXXX");
	if (!mkdtemp(k->dir)) {
		k->dir[0] = '\0';
		return -1;
	}
	remember(k);
	snprintf(k->password, sizeof(k->password), "%s",
		 password ? password : "");
	return 0;
}

int redis_kit_start(struct redis_kit *k, const char *password)
{
	int tries;

	if (prepare(k, password) != 0)
		return -1;
	if (k->port)
		return spawn(k);
	for (tries = 0; tries < 5; tries++) {
		k->port = hold_port(k, 0, 0);
		if (k->port > 0 && spawn(k) == 0) {
			snprintf(k->spec, sizeof(k->spec),
				 "redis://127.0.0.1:%d", k->port);
			return 0;
		}
	}
	k->port = 0;
	return -1;
}

void redis_kit_stop(struct redis_kit *k)
{
	if (k->pid <= 0)
		return;
	kill(k->pid, SIGCONT);
	kill(k->pid, SIGTERM);
	waitpid(k->pid, NULL, 0);
	k->pid = 0;
	set_pid(k);
}

void redis_kit_kill(struct redis_kit *k)
{
	if (k->pid <= 0)
		return;
	kill(k->pid, SIGKILL);
	waitpid(k->pid, NULL, 0);
	k->pid = 0;
	set_pid(k);
}

void redis_kit_destroy(struct redis_kit *k)
{
	int i;

	redis_kit_stop(k);
	if (!k->dir[0])
		return;
	i = entry(k->dir);
	if (i >= 0) {
		release(i);
		kits[i].used = 0;
	}
	remove_dir(k->dir);
	k->dir[0] = '\0';
}

int redis_cluster_available(void)
{
	return redis_kit_available() &&
	       present(program("REDIS_CLI", REDIS_CLI));
}

int redis_kit_start_node(struct redis_kit *k, unsigned int *seed)
{
	int tries;

	k->extra[0] = "--cluster-enabled";
	k->extra[1] = "yes";
	k->extra[2] = "--cluster-config-file";
	k->extra[3] = "nodes.conf";
	if (prepare(k, NULL) != 0)
		return -1;
	for (tries = 0; tries < 20; tries++) {
		k->port = 20000 + (int)(rand_r(seed) % 35000);
		if (hold_port(k, 0, k->port) != k->port ||
		    hold_port(k, 1, k->port + 10000) != k->port + 10000)
			continue;
		if (redis_kit_start(k, NULL) == 0) {
			snprintf(k->spec, sizeof(k->spec),
				 "redis://127.0.0.1:%d", k->port);
			return 0;
		}
	}
	k->port = 0;
	return -1;
}

/*
 * Start @n nodes (their extra[4..] as set) and join them, @replicas per
 * master, by redis-cli --cluster create.  0, or -1.  Within a minute:
 * redis-cli waits for the join without end when a node dies meanwhile,
 * and so would the test.
 */
static int create(struct redis_kit *nodes, int n, int replicas)
{
	unsigned int seed = (unsigned int)getpid() ^ (unsigned int)time(NULL);
	char cmd[512];
	size_t len;
	int i;

	len = (size_t)snprintf(cmd, sizeof(cmd),
			       "timeout -k 5 60 '%s' --cluster create",
			       program("REDIS_CLI", REDIS_CLI));
	for (i = 0; i < n; i++) {
		if (redis_kit_start_node(&nodes[i], &seed))
			return -1;
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len,
					" 127.0.0.1:%d", nodes[i].port);
	}
	snprintf(cmd + len, sizeof(cmd) - len,
		 " --cluster-replicas %d --cluster-yes >/dev/null 2>&1",
		 replicas);
	return system(cmd) == 0 ? 0 : -1;
}

int redis_cluster_start(struct redis_kit nodes[3], char *spec, size_t len)
{
	char info[4096];
	int i, tries, ok = 0;

	memset(nodes, 0, 3 * sizeof(nodes[0]));
	if (create(nodes, 3, 0))
		goto fail;
	for (tries = 0; tries < 200 && ok < 3; tries++) {
		for (ok = 0, i = 0; i < 3; i++)
			ok += redis_kit_cmd(&nodes[i], info, sizeof(info),
					    "CLUSTER INFO") == 0 &&
			      strstr(info, "cluster_state:ok");
		if (ok < 3)
			pause_ms(50);
	}
	if (ok < 3)
		goto fail;
	snprintf(spec, len, "redis+cluster://127.0.0.1:%d,127.0.0.1:%d",
		 nodes[0].port, nodes[1].port);
	return 0;
fail:
	for (i = 0; i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return -1;
}

/* Every node's CLUSTER INFO says ok, every replica's link is up. */
static int replicas_up(struct redis_kit *nodes, int n)
{
	char info[4096];
	int i, up = 0;

	for (i = 0; i < n; i++) {
		if (redis_kit_cmd(&nodes[i], info, sizeof(info),
				  "CLUSTER INFO") != 0 ||
		    !strstr(info, "cluster_state:ok") ||
		    redis_kit_cmd(&nodes[i], info, sizeof(info),
				  "INFO replication") != 0)
			continue;
		up += strstr(info, "role:master") ||
		      strstr(info, "master_link_status:up");
	}
	return up == n;
}

int redis_cluster_start_replicas(struct redis_kit nodes[6], int timeout_ms)
{
	int i, tries;

	memset(nodes, 0, 6 * sizeof(nodes[0]));
	for (i = 0; i < 6; i++) {
		snprintf(nodes[i].arg, sizeof(nodes[i].arg), "%d", timeout_ms);
		nodes[i].extra[4] = "--cluster-node-timeout";
		nodes[i].extra[5] = nodes[i].arg;
	}
	if (create(nodes, 6, 1))
		goto fail;
	for (tries = 0; tries < 600 && !replicas_up(nodes, 6); tries++)
		pause_ms(50);
	if (tries == 600)
		goto fail;
	return 0;
fail:
	for (i = 0; i < 6; i++)
		redis_kit_destroy(&nodes[i]);
	return -1;
}

int redis_cluster_role(const struct redis_kit *from, const struct redis_kit *k)
{
	char nodes[8192], addr[32], *line, *flags, *end;

	if (redis_kit_cmd(from, nodes, sizeof(nodes), "CLUSTER NODES") != 0)
		return 0;
	snprintf(addr, sizeof(addr), " 127.0.0.1:%d@", k->port);
	line = strstr(nodes, addr);
	if (!line)
		return 0;
	flags = line + strlen(addr);
	flags = strchr(flags, ' ');
	if (!flags)
		return 0;
	flags++;
	end = strchr(flags, ' ');
	if (!end)
		return 0;
	*end = '\0';
	if (strstr(flags, "fail"))
		return 'F';
	if (strstr(flags, "master"))
		return 'M';
	return strstr(flags, "slave") ? 'S' : 0;
}

void redis_kit_need(struct redis_kit *k)
{
	if (k->pid)
		return;
	if (!redis_kit_available())
		skip();
	assert_int_equal(redis_kit_start(k, NULL), 0);
}

void redis_cluster_need(struct redis_kit nodes[3], char *spec, size_t len,
			int *up)
{
	if (*up)
		return;
	if (!redis_cluster_available())
		skip();
	assert_int_equal(redis_cluster_start(nodes, spec, len), 0);
	*up = 1;
}
