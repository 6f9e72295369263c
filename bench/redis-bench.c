/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * redis-bench - the Redis store over loopback, next to the two scripts
 * users write by hand, in one run (bench/redis.sh starts the server).
 *
 *   redis-bench HOST PORT [ROUNDS [ROUND_MS]]
 *
 * Rows:
 *   tk gcra           tk_limiter_check(), gcra (one key, allow path)
 *   tk gcra 1k keys   the same over 1000 keys
 *   tk all(gcra,fw)   a composite of two dimensions on one key
 *   ... server_time=1 the same deciding on the server's clock (its
 *                     window's arguments at the estimated server time:
 *                     one round trip, two at a window's edge)
 *   tk gcra many16    tk_limiter_check_many() batches of 16 (one pipeline
 *                     per batch where the build has them)
 *   lua-gcra-ms       EVALSHA of a GCRA script on float milliseconds
 *   incr-expire       INCR and EXPIRE of a fixed window, sent together
 * and each baseline again pipelined by 16 (hiredis' append and get).
 *
 * Round trips per check are counted, not assumed: a relay on 127.0.0.1
 * between the client and the server counts the client's flights (data
 * from the client after the server spoke, or first), over 2000 checks
 * after a warm-up.  Commands per check come from the server itself:
 * INFO stats' total_commands_processed before and after, read on a
 * connection of its own (its INFO is subtracted).  Checks/s are timed
 * on direct connections: ROUNDS rounds (5) of ROUND_MS (300 ms) after a
 * 100 ms warm-up, the engines' rounds interleaved, median (min-max), one
 * client thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <throttlekit.h>

#define BATCH 16
#define COUNT_CHECKS 2000
#define KEYS_MANY 1000

static const char *host;
static int port;

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "redis-bench: %s\n", what);
	exit(1);
}

/* ---- the counting relay ---- */

static struct {
	int listen_fd, port;
	pthread_t thread;
	_Atomic uint64_t flights;
} relay;

struct pair {
	int fd[2];    /* client, server */
	int last_dir; /* -1 none, 0 client spoke last, 1 server */
};

static void *relay_main(void *arg)
{
	struct pollfd pfd[1 + 2 * 8];
	struct pair pairs[8];
	struct sockaddr_in a = { .sin_family = AF_INET };
	size_t np = 0, i;
	char buf[65536];
	ssize_t n;
	int fd, side;

	(void)arg;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	for (;;) {
		pfd[0].fd = relay.listen_fd;
		pfd[0].events = POLLIN;
		for (i = 0; i < np; i++) {
			pfd[1 + 2 * i].fd = pairs[i].fd[0];
			pfd[2 + 2 * i].fd = pairs[i].fd[1];
			pfd[1 + 2 * i].events = pfd[2 + 2 * i].events = POLLIN;
		}
		if (poll(pfd, 1 + 2 * np, -1) < 0)
			continue;
		if ((pfd[0].revents & POLLIN) && np < 8) {
			fd = accept(relay.listen_fd, NULL, NULL);
			pairs[np].fd[0] = fd;
			pairs[np].fd[1] = socket(AF_INET, SOCK_STREAM, 0);
			pairs[np].last_dir = -1;
			if (fd >= 0 &&
			    connect(pairs[np].fd[1], (struct sockaddr *)&a,
				    sizeof(a)) == 0)
				np++;
			continue;
		}
		for (i = 0; i < np; i++)
			for (side = 0; side < 2; side++) {
				if (!(pfd[1 + 2 * i + side].revents &
				      (POLLIN | POLLHUP)))
					continue;
				n = read(pairs[i].fd[side], buf, sizeof(buf));
				if (n <= 0) {
					/* A closed connection: forget it. */
					close(pairs[i].fd[0]);
					close(pairs[i].fd[1]);
					pairs[i] = pairs[--np];
					goto next;
				}
				if (side == 0 && pairs[i].last_dir != 0)
					relay.flights++;
				pairs[i].last_dir = side;
				if (write(pairs[i].fd[1 - side], buf,
					  (size_t)n) != n)
					die("relay write");
			}
	next:;
	}
	return NULL;
}

static void relay_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	relay.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (relay.listen_fd < 0 ||
	    bind(relay.listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(relay.listen_fd, 8) ||
	    getsockname(relay.listen_fd, (struct sockaddr *)&a, &len))
		die("relay socket");
	relay.port = ntohs(a.sin_port);
	if (pthread_create(&relay.thread, NULL, relay_main, NULL))
		die("relay thread");
}

/* ---- the server's own count ---- */

static redisContext *admin;

static uint64_t commands_processed(void)
{
	redisReply *r = redisCommand(admin, "INFO stats");
	const char *at;
	uint64_t v;

	if (!r || r->type != REDIS_REPLY_STRING)
		die("INFO stats");
	at = strstr(r->str, "total_commands_processed:");
	if (!at)
		die("INFO stats: no total_commands_processed");
	v = strtoull(at + 25, NULL, 10);
	freeReplyObject(r);
	return v;
}

/*
 * Microseconds the server spent in the commands clients send here
 * (FCALL, EVALSHA, INCR, EXPIRE: INFO commandstats), the commands their
 * scripts call included in the script's.
 */
static uint64_t server_usec(void)
{
	static const char *const names[] = { "fcall", "evalsha", "incr",
					     "expire" };
	redisReply *r = redisCommand(admin, "INFO commandstats");
	char field[64];
	const char *at;
	uint64_t v = 0;
	size_t i;

	if (!r || r->type != REDIS_REPLY_STRING)
		die("INFO commandstats");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(field, sizeof(field), "cmdstat_%s:", names[i]);
		at = strstr(r->str, field);
		at = at ? strstr(at, "usec=") : NULL;
		if (at)
			v += strtoull(at + 5, NULL, 10);
	}
	freeReplyObject(r);
	return v;
}

/* ---- the engines ---- */

/* One engine: open on a port, then checks; @n checks per call. */
struct engine {
	const char *name;
	void *(*open)(int port);
	/* Runs @n checks (one, or one batch); returns the number admitted,
	 * or -1 on an error. */
	long (*run)(void *ctx, uint64_t i, int n);
	void (*close)(void *ctx);
	int batch; /* checks per run() */
};

struct tk_ctx {
	struct tk_limiter *l;
	int keys;
};

static const char *policy_of(const char *name)
{
	if (strstr(name, "all("))
		return "all(gcra:1000000000/1s,burst=1000000000,"
		       "fixed-window:1000000000/1s)";
	return "gcra:1000000000/1s,burst=1000000000";
}

static void *tk_open_with(int p, const char *policy, int keys, const char *opts)
{
	struct tk_ctx *c = calloc(1, sizeof(*c));
	char spec[128];
	int rc;

	snprintf(spec, sizeof(spec), "redis://%s:%d?timeout=2s%s", host, p,
		 opts);
	rc = tk_limiter_open(&c->l, policy, spec, NULL);
	if (rc)
		die(tk_strerror(rc));
	c->keys = keys;
	return c;
}

static void *tk_gcra_open(int p)
{
	return tk_open_with(p, policy_of(""), 1, "");
}

static void *tk_gcra_many_keys_open(int p)
{
	return tk_open_with(p, policy_of(""), KEYS_MANY, "");
}

static void *tk_composite_open(int p)
{
	return tk_open_with(p, policy_of("all("), 1, "");
}

/* A window needs the server's time before the script: two trips. */
static void *tk_composite_server_time_open(int p)
{
	return tk_open_with(p, policy_of("all("), 1, "&server_time=1");
}

static int key_of(char *buf, uint64_t i, int keys)
{
	return sprintf(buf, "k:%08x", (unsigned int)(i % (uint64_t)keys));
}

static long tk_run(void *ctx, uint64_t i, int n)
{
	struct tk_ctx *c = ctx;
	struct tk_request reqs[BATCH] = { { NULL, 0, 0 } };
	struct tk_decision d[BATCH];
	char keys[BATCH][16];
	int rcs[BATCH], k, len;
	long admitted = 0;

	if (n == 1) {
		len = key_of(keys[0], i, c->keys);
		if (tk_limiter_check(c->l, keys[0], (size_t)len, 1, &d[0]))
			return -1;
		return d[0].allowed;
	}
	for (k = 0; k < n; k++) {
		reqs[k].key = keys[k];
		reqs[k].key_len =
			(size_t)key_of(keys[k], i + (uint64_t)k, c->keys);
		reqs[k].cost = 1;
	}
	if (tk_limiter_check_many(c->l, reqs, (size_t)n, d, rcs))
		return -1;
	for (k = 0; k < n; k++) {
		if (rcs[k])
			return -1;
		admitted += d[k].allowed;
	}
	return admitted;
}

static void tk_close(void *ctx)
{
	struct tk_ctx *c = ctx;

	tk_limiter_close(c->l);
	free(c);
}

/*
 * The GCRA users write (the common blog and library version): times in
 * float milliseconds from the client, the TAT a float in a string key,
 * SET with PX to expire it.  Lua numbers are doubles: at ~1.8e12 ms
 * since the epoch they keep about 0.0002 ms, so sub-microsecond rates
 * round, and no state carries an algorithm.
 */
static const char lua_gcra[] =
	"local now = tonumber(ARGV[1])\n"
	"local emission = tonumber(ARGV[2])\n"
	"local tolerance = tonumber(ARGV[3])\n"
	"local tat = tonumber(redis.call('GET', KEYS[1])) or now\n"
	"if tat < now then tat = now end\n"
	"local new_tat = tat + emission\n"
	"if new_tat - now > tolerance then return 0 end\n"
	"redis.call('SET', KEYS[1], new_tat, 'PX',\n"
	"           math.max(1, math.ceil(new_tat - now)))\n"
	"return 1\n";

struct hand_ctx {
	redisContext *c;
	char sha[41];
};

static void *hand_open(int p)
{
	struct hand_ctx *h = calloc(1, sizeof(*h));
	redisReply *r;

	h->c = redisConnect(host, p);
	if (!h->c || h->c->err)
		die("connect");
	r = redisCommand(h->c, "SCRIPT LOAD %s", lua_gcra);
	if (!r || r->type != REDIS_REPLY_STRING)
		die("SCRIPT LOAD");
	snprintf(h->sha, sizeof(h->sha), "%s", r->str);
	freeReplyObject(r);
	return h;
}

static void hand_close(void *ctx)
{
	struct hand_ctx *h = ctx;

	redisFree(h->c);
	free(h);
}

/* Append one check of @i to the output buffer. */
static void lua_append(struct hand_ctx *h, uint64_t i)
{
	char key[16], now[32];

	key_of(key, i, 1);
	/* 1e9 per second: 0.000001 ms apart, a tolerance of 1e6 s. */
	snprintf(now, sizeof(now), "%.3f",
		 (double)now_ns(CLOCK_REALTIME) / 1e6);
	redisAppendCommand(h->c, "EVALSHA %s 1 lua:%s %s 0.000001 1e9", h->sha,
			   key, now);
}

static void incr_append(struct hand_ctx *h, uint64_t i)
{
	char key[16];
	uint64_t window = now_ns(CLOCK_REALTIME) / 1000000000u;

	key_of(key, i, 1);
	redisAppendCommand(h->c, "INCR fw:%s:%llu", key,
			   (unsigned long long)window);
	redisAppendCommand(h->c, "EXPIRE fw:%s:%llu 2", key,
			   (unsigned long long)window);
}

/* @n checks sent together (n = 1: one at a time); @replies each. */
static long hand_run(struct hand_ctx *h, uint64_t i, int n, int incr)
{
	redisReply *r;
	long admitted = 0;
	int k, j, replies = incr ? 2 : 1;

	for (k = 0; k < n; k++)
		if (incr)
			incr_append(h, i + (uint64_t)k);
		else
			lua_append(h, i + (uint64_t)k);
	for (k = 0; k < n; k++)
		for (j = 0; j < replies; j++) {
			if (redisGetReply(h->c, (void **)&r) != REDIS_OK ||
			    r->type != REDIS_REPLY_INTEGER)
				return -1;
			if (j == 0)
				admitted += incr ? r->integer <= 1000000000
						 : r->integer == 1;
			freeReplyObject(r);
		}
	return admitted;
}

static long lua_run(void *ctx, uint64_t i, int n)
{
	return hand_run(ctx, i, n, 0);
}

static long incr_run(void *ctx, uint64_t i, int n)
{
	return hand_run(ctx, i, n, 1);
}

static const struct engine engines[] = {
	{ "tk gcra, hot key", tk_gcra_open, tk_run, tk_close, 1 },
	{ "tk gcra, 1000 keys", tk_gcra_many_keys_open, tk_run, tk_close, 1 },
	{ "tk all(gcra,fixed-window), hot key", tk_composite_open, tk_run,
	  tk_close, 1 },
	{ "tk all(...), server_time=1", tk_composite_server_time_open, tk_run,
	  tk_close, 1 },
	{ "tk gcra, check_many of 16", tk_gcra_open, tk_run, tk_close, BATCH },
	{ "tk all(...), check_many of 16", tk_composite_open, tk_run, tk_close,
	  BATCH },
	{ "hand: Lua GCRA on float ms", hand_open, lua_run, hand_close, 1 },
	{ "hand: Lua GCRA, pipelined 16", hand_open, lua_run, hand_close,
	  BATCH },
	{ "hand: INCR+EXPIRE window", hand_open, incr_run, hand_close, 1 },
	{ "hand: INCR+EXPIRE, pipelined 16", hand_open, incr_run, hand_close,
	  BATCH },
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define ENGINES (sizeof(engines) / sizeof(engines[0]))

/*
 * Checks/s of every engine over direct connections, rate[e][round]
 * sorted.  Rounds are interleaved (round r of every engine, then round
 * r + 1), so that a neighbour's burst of load falls on all of them
 * alike rather than on one engine's rows.
 */
static void timed(int rounds, uint64_t round_ns, double rate[][64])
{
	void *ctx[ENGINES];
	uint64_t i[ENGINES], t0, t, n;
	size_t e;
	int r;

	for (e = 0; e < ENGINES; e++) {
		ctx[e] = engines[e].open(port);
		i[e] = 0;
		for (t0 = now_ns(CLOCK_MONOTONIC);
		     now_ns(CLOCK_MONOTONIC) - t0 < 100000000u;
		     i[e] += (uint64_t)engines[e].batch)
			if (engines[e].run(ctx[e], i[e], engines[e].batch) < 0)
				die(engines[e].name);
	}
	for (r = 0; r < rounds; r++)
		for (e = 0; e < ENGINES; e++) {
			n = 0;
			t0 = now_ns(CLOCK_MONOTONIC);
			do {
				if (engines[e].run(ctx[e], i[e],
						   engines[e].batch) !=
				    engines[e].batch)
					die("a check was denied or failed");
				i[e] += (uint64_t)engines[e].batch;
				n += (uint64_t)engines[e].batch;
				t = now_ns(CLOCK_MONOTONIC);
			} while (t - t0 < round_ns);
			rate[e][r] = (double)n * 1e9 / (double)(t - t0);
		}
	for (e = 0; e < ENGINES; e++) {
		engines[e].close(ctx[e]);
		qsort(rate[e], (size_t)rounds, sizeof(rate[e][0]), cmp_double);
	}
}

/* Round trips and commands per check of @e, through the relay. */
static void counted(const struct engine *e, double *trips, double *cmds,
		    double *usec)
{
	void *ctx = e->open(relay.port);
	uint64_t i, f0, c0, c1, u0;

	/* Connects, loads the script: not part of a check. */
	for (i = 0; i < 64; i += (uint64_t)e->batch)
		if (e->run(ctx, i, e->batch) < 0)
			die(e->name);
	f0 = relay.flights;
	u0 = server_usec();
	c0 = commands_processed();
	for (; i < 64 + COUNT_CHECKS; i += (uint64_t)e->batch)
		if (e->run(ctx, i, e->batch) < 0)
			die(e->name);
	c1 = commands_processed();
	*trips = (double)(relay.flights - f0) / COUNT_CHECKS;
	*cmds = (double)(c1 - c0 - 1) / COUNT_CHECKS; /* less the INFO */
	*usec = (double)(server_usec() - u0) / COUNT_CHECKS;
	e->close(ctx);
}

int main(int argc, char **argv)
{
	size_t i, n = ENGINES;
	static double rate[ENGINES][64];
	double trips[ENGINES], cmds[ENGINES], usec[ENGINES], single;
	int rounds = 5, round_ms = 300;
	redisReply *r;

	if (argc < 3) {
		fprintf(stderr, "usage: redis-bench HOST PORT [ROUNDS "
				"[ROUND_MS]]\n");
		return 2;
	}
	host = argv[1];
	port = atoi(argv[2]);
	if (argc > 3)
		rounds = atoi(argv[3]);
	if (argc > 4)
		round_ms = atoi(argv[4]);
	if (rounds < 1 || rounds > 64 || round_ms < 1)
		die("bad ROUNDS or ROUND_MS");
	admin = redisConnect(host, port);
	if (!admin || admin->err)
		die("cannot connect to the server");
	r = redisCommand(admin, "INFO server");
	if (r && r->type == REDIS_REPLY_STRING &&
	    strstr(r->str, "redis_version:"))
		printf("redis %.*s on %s:%d, libthrottlekit %s, one client "
		       "thread, %d rounds of %d ms\n",
		       (int)strcspn(strstr(r->str, "redis_version:") + 14,
				    "\r\n"),
		       strstr(r->str, "redis_version:") + 14, host, port,
		       tk_version(), rounds, round_ms);
	freeReplyObject(r);
	relay_start();
	printf("\n%-36s %6s %5s %7s %9s %19s %6s\n", "case", "trips", "cmds",
	       "srv us", "checks/s", "(min-max)", "xtk");
	for (i = 0; i < n; i++)
		counted(&engines[i], &trips[i], &cmds[i], &usec[i]);
	timed(rounds, (uint64_t)round_ms * 1000000u, rate);
	single = rate[0][rounds / 2];
	for (i = 0; i < n; i++)
		/* A check of the store is one round trip (server_time=1:
		 * two at a window's edge, one in 2000 at most here). */
		printf("%-36s %6.3f %5.2f %7.2f %9.0f %9.0f-%-9.0f %5.2fx%s\n",
		       engines[i].name, trips[i], cmds[i], usec[i],
		       rate[i][rounds / 2], rate[i][0], rate[i][rounds - 1],
		       rate[i][rounds / 2] / single,
		       strncmp(engines[i].name, "tk ", 3) == 0 &&
				       trips[i] > 1.0005
			       ? " !"
			       : "");
	printf("\n"
	       "trips: round trips per check (a relay counts the client's "
	       "flights)\n"
	       "cmds: commands the server ran per check, those a script "
	       "calls included\n"
	       "srv us: server time per check (INFO commandstats)\n"
	       "checks/s: median of the rounds; xtk: over the first row's\n"
	       "!: a check of more than one round trip\n"
	       "check_many: tk_limiter_check_many() batches of 16, as this "
	       "build sends them\n");
	redisFree(admin);
	return 0;
}
