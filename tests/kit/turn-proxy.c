/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * turn-proxy.c - see turn-proxy.h.
 *
 * One thread polls the listener, a stop pipe and every pair of sockets.
 * A readable end is drained into one burst (reads continue while more
 * bytes come within BURST_MS), then written whole to the other end; the
 * direction of the last burst decides whether a client burst is a new
 * turn.
 */
#include "turn-proxy.h"
#include "redis-kit.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAIRS_MAX 32
#define BURST_MS 2
#define BUF_MAX (4 << 20)

enum { NONE, FROM_CLIENT, FROM_SERVER };

struct pair {
	int client, server; /* -1: closed */
	int last;	    /* NONE, FROM_CLIENT, FROM_SERVER */
};

struct turn_proxy {
	pthread_t thread;
	pthread_mutex_t lock; /* turns, accepted, cut, delay_ms */
	int listener, stop[2];
	int port, to_port;
	unsigned long turns, accepted;
	int cut;
	unsigned int delay_ms; /* each server burst held this long */
	struct pair pair[PAIRS_MAX];
	char *buf;
};

static int listen_any(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len) || listen(fd, 64)) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void close_pair(struct pair *q)
{
	if (q->client >= 0)
		close(q->client);
	if (q->server >= 0)
		close(q->server);
	q->client = q->server = -1;
	q->last = NONE;
}

static void accept_one(struct turn_proxy *p)
{
	int fd = accept(p->listener, NULL, NULL), i, one = 1;

	if (fd < 0)
		return;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (i = 0; i < PAIRS_MAX && p->pair[i].client >= 0; i++)
		;
	if (i == PAIRS_MAX) {
		close(fd);
		return;
	}
	p->pair[i].server = connect_to(p->to_port);
	if (p->pair[i].server < 0) {
		close(fd);
		return;
	}
	p->pair[i].client = fd;
	p->pair[i].last = NONE;
	pthread_mutex_lock(&p->lock);
	p->accepted++;
	pthread_mutex_unlock(&p->lock);
}

/* One burst from @fd into p->buf: its length, or 0 at EOF or error. */
static size_t burst(struct turn_proxy *p, int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	size_t len = 0;
	ssize_t got;

	do {
		got = read(fd, p->buf + len, BUF_MAX - len);
		if (got <= 0)
			break;
		len += (size_t)got;
	} while (len < BUF_MAX && poll(&pf, 1, BURST_MS) == 1);
	return len;
}

static int write_all(int fd, const char *buf, size_t len)
{
	ssize_t put;

	while (len) {
		put = write(fd, buf, len);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return -1;
		buf += put;
		len -= (size_t)put;
	}
	return 0;
}

static void relay(struct turn_proxy *p, struct pair *q, int from_client)
{
	size_t len = burst(p, from_client ? q->client : q->server);
	unsigned int delay_ms = 0;
	int cut = 0;

	if (len == 0) {
		close_pair(q);
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (from_client && q->last != FROM_CLIENT)
		p->turns++;
	if (!from_client && p->cut) {
		cut = 1;
		p->cut = 0;
	}
	if (!from_client)
		delay_ms = p->delay_ms;
	pthread_mutex_unlock(&p->lock);
	if (delay_ms) {
		struct timespec ts = { delay_ms / 1000,
				       (long)(delay_ms % 1000) * 1000000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	q->last = from_client ? FROM_CLIENT : FROM_SERVER;
	if (cut) {
		write_all(q->client, p->buf, len / 2);
		close_pair(q);
		return;
	}
	if (write_all(from_client ? q->server : q->client, p->buf, len))
		close_pair(q);
}

static void *run(void *arg)
{
	struct turn_proxy *p = arg;
	struct pollfd pf[2 + 2 * PAIRS_MAX];
	int i, n;

	for (;;) {
		pf[0] = (struct pollfd){ .fd = p->stop[0], .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = p->listener, .events = POLLIN };
		for (i = 0, n = 2; i < PAIRS_MAX; i++, n += 2) {
			pf[n] = (struct pollfd){ .fd = p->pair[i].client,
						 .events = POLLIN };
			pf[n + 1] = (struct pollfd){ .fd = p->pair[i].server,
						     .events = POLLIN };
		}
		if (poll(pf, (nfds_t)n, -1) < 0)
			continue;
		if (pf[0].revents)
			break;
		if (pf[1].revents & POLLIN)
			accept_one(p);
		for (i = 0, n = 2; i < PAIRS_MAX; i++, n += 2) {
			if (p->pair[i].client >= 0 && pf[n].revents)
				relay(p, &p->pair[i], 1);
			if (p->pair[i].server >= 0 && pf[n + 1].revents)
				relay(p, &p->pair[i], 0);
		}
	}
	for (i = 0; i < PAIRS_MAX; i++)
		close_pair(&p->pair[i]);
	return NULL;
}

int turn_proxy_start(struct turn_proxy **out, int to_port)
{
	struct turn_proxy *p = calloc(1, sizeof(*p));
	int i;

	if (!p)
		return -1;
	p->buf = malloc(BUF_MAX);
	p->to_port = to_port;
	for (i = 0; i < PAIRS_MAX; i++)
		p->pair[i].client = p->pair[i].server = -1;
	pthread_mutex_init(&p->lock, NULL);
	p->listener = listen_any(&p->port);
	if (!p->buf || p->listener < 0 || pipe(p->stop))
		goto fail;
	if (pthread_create(&p->thread, NULL, run, p)) {
		close(p->stop[0]);
		close(p->stop[1]);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	if (p->listener >= 0)
		close(p->listener);
	free(p->buf);
	free(p);
	return -1;
}

int turn_proxy_port(const struct turn_proxy *p)
{
	return p->port;
}

static unsigned long counter(struct turn_proxy *p, const unsigned long *v)
{
	unsigned long n;

	pthread_mutex_lock(&p->lock);
	n = *v;
	pthread_mutex_unlock(&p->lock);
	return n;
}

unsigned long turn_proxy_turns(struct turn_proxy *p)
{
	return counter(p, &p->turns);
}

unsigned long turn_proxy_accepted(struct turn_proxy *p)
{
	return counter(p, &p->accepted);
}

void turn_proxy_reset(struct turn_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	p->turns = 0;
	pthread_mutex_unlock(&p->lock);
}

void turn_proxy_cut_next_reply(struct turn_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	p->cut = 1;
	pthread_mutex_unlock(&p->lock);
}

void turn_proxy_delay_replies(struct turn_proxy *p, unsigned int ms)
{
	pthread_mutex_lock(&p->lock);
	p->delay_ms = ms;
	pthread_mutex_unlock(&p->lock);
}

void turn_proxy_stop(struct turn_proxy *p)
{
	if (!p)
		return;
	if (write(p->stop[1], "x", 1) != 1)
		return;
	pthread_join(p->thread, NULL);
	close(p->stop[0]);
	close(p->stop[1]);
	close(p->listener);
	free(p->buf);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int turn_proxy_redis(struct redis_kit *kit, const char *password,
		     struct turn_proxy **p)
{
	if (redis_kit_start(kit, password) != 0)
		return -1;
	return turn_proxy_start(p, kit->port);
}
