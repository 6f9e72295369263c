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
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#ifndef REDIS_SERVER
#define REDIS_SERVER "redis-server"
#endif

int redis_kit_available(void)
{
	return access(REDIS_SERVER, X_OK) == 0;
}

/* A port the kernel hands out now; the server binds it right after. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd, port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
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

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int spawn(struct redis_kit *k)
{
	const char *argv[16];
	char port[16];
	int i, n = 0, devnull;

	snprintf(port, sizeof(port), "%d", k->port);
	k->pid = fork();
	if (k->pid < 0)
		return -1;
	if (k->pid == 0) {
		devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		argv[n++] = REDIS_SERVER;
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
		for (i = 0; i < 4 && k->extra[i]; i++)
			argv[n++] = k->extra[i];
		argv[n] = NULL;
		execv(REDIS_SERVER, (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {
		if (redis_kit_cmd(k, NULL, 0, "PING") == 0)
			return 0;
		if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
			k->pid = 0;
			return -1; /* the port was taken meanwhile */
		}
		pause_ms(50);
	}
	redis_kit_stop(k);
	return -1;
}

int redis_kit_start(struct redis_kit *k, const char *password)
{
	int tries;

	if (!k->dir[0]) {
		snprintf(k->dir, sizeof(k->dir), "/tmp/tk-redis-XXXXXX");
		if (!mkdtemp(k->dir)) {
			k->dir[0] = '\0';
			return -1;
		}
		snprintf(k->password, sizeof(k->password), "%s",
			 password ? password : "");
	}
	if (k->port)
		return spawn(k);
	for (tries = 0; tries < 5; tries++) {
		k->port = free_port();
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
}

void redis_kit_destroy(struct redis_kit *k)
{
	char cmd[128];

	redis_kit_stop(k);
	if (k->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", k->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "redis-kit: cannot remove %s\n",
				k->dir);
		k->dir[0] = '\0';
	}
}
