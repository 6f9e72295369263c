/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * redis-cost - the server's time per check of the Redis store's script,
 * policy by policy, next to a minimal hand-written Lua GCRA, in one run
 * (bench/redis-cost.sh starts the server).
 *
 *   redis-cost HOST PORT [CHECKS [POLICY...]]
 *
 * - For each case: CONFIG RESETSTAT, CHECKS checks (20000) on one hot
 *   key, then INFO commandstats: the usec and calls of FCALL, FCALL_RO,
 *   EVALSHA and EVAL, whose usec include the commands a script calls.
 * - The hand GCRA keeps one TAT in integer microseconds (GET, a few
 *   additions, SET PX): what a script that knows one algorithm costs.
 *   A second one reads the server's clock (TIME, as go-redis/redis_rate
 *   does), as the library does by default (server_time=1).
 * - Each row gives its ratio to both hand GCRAs of the same run, and the
 *   share of checks admitted (a denial skips the write).
 * - TK_REDIS_COST_OPTS (e.g. "&server_time=0") is added to the spec.
 * - Cases are measured in rounds (3), interleaved, and each row reports
 *   its lowest usec per call: neighbours on a shared machine only ever
 *   add time.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <throttlekit.h>

#define ROUNDS 3
#define CASES_MAX 32 /* policies; two hand GCRAs besides */

static const char *host;
static int port;
static redisContext *admin;

static void die(const char *what)
{
	fprintf(stderr, "redis-cost: %s\n", what);
	exit(1);
}

static void admin_cmd(const char *cmd)
{
	redisReply *r = redisCommand(admin, cmd);

	if (!r || r->type == REDIS_REPLY_ERROR)
		die(cmd);
	freeReplyObject(r);
}

/* Usec and calls of the script commands since the last RESETSTAT. */
static double usec_per_call(void)
{
	static const char *const names[] = { "fcall", "fcall_ro", "evalsha",
					     "eval" };
	redisReply *r = redisCommand(admin, "INFO commandstats");
	unsigned long long usec = 0, calls = 0, c, u;
	char field[64];
	const char *at;
	size_t i;

	if (!r || r->type != REDIS_REPLY_STRING)
		die("INFO commandstats");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(field, sizeof(field), "cmdstat_%s:calls=", names[i]);
		at = strstr(r->str, field);
		if (at &&
		    sscanf(at + strlen(field), "%llu,usec=%llu", &c, &u) == 2) {
			calls += c;
			usec += u;
		}
	}
	freeReplyObject(r);
	return calls ? (double)usec / (double)calls : 0;
}

static const char hand_gcra[] =
	"local now = tonumber(ARGV[1])\n"
	"if now == 0 then\n"
	"	local t = redis.call('TIME')\n"
	"	now = t[1] * 1000000 + t[2]\n"
	"end\n"
	"local t, tau = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"local tat = tonumber(redis.call('GET', KEYS[1])) or now\n"
	"if tat < now then\n"
	"	tat = now\n"
	"end\n"
	"local new = tat + t\n"
	"if new - now > tau + t then\n"
	"	return 0\n"
	"end\n"
	"redis.call('SET', KEYS[1], new, 'PX', math.ceil((new - now) / 1000))\n"
	"return 1\n";

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* @n checks of the hand GCRA (1 µs apart, a tolerance of 1000 s), on
 * the server's clock if @server. */
static long run_hand(long n, int server)
{
	redisContext *c = redisConnect(host, port);
	redisReply *r;
	char sha[41];
	long i, admitted = 0;

	if (!c || c->err)
		die("connect");
	r = redisCommand(c, "SCRIPT LOAD %s", hand_gcra);
	if (!r || r->type != REDIS_REPLY_STRING)
		die("SCRIPT LOAD");
	snprintf(sha, sizeof(sha), "%s", r->str);
	freeReplyObject(r);
	admin_cmd("CONFIG RESETSTAT");
	for (i = 0; i < n; i++) {
		r = redisCommand(c, "EVALSHA %s 1 hand:gcra %llu 1 1000000000",
				 sha,
				 server ? 0ull : (unsigned long long)now_us());
		if (!r || r->type != REDIS_REPLY_INTEGER)
			die("EVALSHA");
		admitted += r->integer == 1;
		freeReplyObject(r);
	}
	redisFree(c);
	return admitted;
}

/* @n checks of @policy on one key, after the script is loaded. */
static long run_tk(const char *policy, long n)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char spec[128];
	long i, admitted = 0;
	int rc;

	const char *opts = getenv("TK_REDIS_COST_OPTS");

	snprintf(spec, sizeof(spec), "redis://%s:%d?timeout=2s%s", host, port,
		 opts ? opts : "");
	rc = tk_limiter_open(&l, policy, spec, NULL);
	if (rc)
		die(tk_strerror(rc));
	if (tk_limiter_reset(l, "hot", 3))
		die("reset");
	/* The first check loads the script: not part of the count. */
	if (tk_limiter_check(l, "warm", 4, 1, &d))
		die("warm-up check");
	admin_cmd("CONFIG RESETSTAT");
	for (i = 0; i < n; i++) {
		rc = tk_limiter_check(l, "hot", 3, 1, &d);
		if (rc)
			die(tk_strerror(rc));
		admitted += d.allowed;
	}
	tk_limiter_close(l);
	return admitted;
}

static const char *const defaults[] = {
	"gcra:1000000000/1s,burst=1000000000",
	"token-bucket:capacity=1000000000,refill=1000000000/1s",
	"fixed-window:1000000000/1s",
	"quota:1000000000/day",
	"leaky:1000000000/1s,max-queue=1s",
	"sliding-window:1000000000/1s,buckets=100",
	"sliding-log:512/1s",
	/* Every check admits a stamp and drops one that left. */
	"sliding-log:512/10ms",
	"all(gcra:1000000000/1s,burst=1000000000,fixed-window:1000000000/1s,"
	"sliding-log:512/1s)",
};

int main(int argc, char **argv)
{
	const char *const *pol = defaults;
	size_t npol = sizeof(defaults) / sizeof(defaults[0]), i, k;
	double best[CASES_MAX + 2], u;
	long share[CASES_MAX + 2], n = 20000;

	if (argc < 3)
		die("usage: redis-cost HOST PORT [CHECKS [POLICY...]]");
	host = argv[1];
	port = atoi(argv[2]);
	if (argc > 3)
		n = atol(argv[3]);
	if (argc > 4) {
		pol = (const char *const *)argv + 4;
		npol = (size_t)argc - 4;
	}
	if (n <= 0 || npol > CASES_MAX)
		die("bad arguments");
	admin = redisConnect(host, port);
	if (!admin || admin->err)
		die("connect");
	for (i = 0; i <= npol + 1; i++)
		best[i] = -1;
	for (k = 0; k < ROUNDS; k++)
		for (i = 0; i <= npol + 1; i++) {
			admin_cmd("FLUSHALL");
			share[i] = i < 2 ? run_hand(n, i == 1)
					 : run_tk(pol[i - 2], n);
			u = usec_per_call();
			if (best[i] < 0 || u < best[i])
				best[i] = u;
		}
	printf("%-72s %9s %7s %7s %9s\n", "case", "usec/call", "x hand",
	       "x +TIME", "admitted");
	for (i = 0; i <= npol + 1; i++)
		printf("%-72s %9.2f %7.2f %7.2f %8.1f%%\n",
		       i == 0	? "hand: Lua GCRA, integer us"
		       : i == 1 ? "hand: Lua GCRA, integer us, server TIME"
				: pol[i - 2],
		       best[i], best[i] / best[0], best[i] / best[1],
		       100.0 * (double)share[i] / (double)n);
	redisFree(admin);
	return 0;
}
