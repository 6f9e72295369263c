/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier-bench - two tiers (shm:NAME+redis://...) against the plain Redis
 * store and a zone alone, on the same workloads in one run (bench/tier.sh
 * starts the server).
 *
 *   tier-bench HOST PORT [ROUNDS [CHECKS]]
 *
 * Far from the limit (gcra:1000000/s, one key, one client thread):
 * checks/s (the median round of ROUNDS, 3), the latency of each check
 * (median and p99 over every round), and Redis commands per 1000 checks
 * (the server's total_commands_processed before and after, less the
 * INFO that reads it).  A round is CHECKS checks (20000) of the zone and
 * of the tier, a tenth of them of plain Redis (a round trip each).
 *
 * Near the limit (fixed-window:500/100ms and gcra:5000/s,burst=500): two
 * forked processes, each a host of its own zone (the plain store: the
 * same two processes on Redis), check as fast as they can for a second.
 * A fixed window's over-admission is its fullest window against the
 * limit, its under-admission the mean of the whole windows short of it;
 * a GCRA's is what both admitted against burst + rate x the time.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <throttlekit.h>

#define FAR_POLICY "gcra:1000000/s"
#define WINDOWS 16
#define NEAR_MS 1000

static const char *host;
static int port;
static char redis_spec[128];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "tier-bench: %s\n", what);
	exit(1);
}

/* The server's commands so far, not counting the INFO that reads it. */
static long long commands(void)
{
	redisContext *c = redisConnect(host, port);
	redisReply *r;
	long long n = -1;
	char *at;

	if (!c || c->err)
		die("cannot reach redis-server");
	r = redisCommand(c, "INFO stats");
	if (r && r->type == REDIS_REPLY_STRING &&
	    (at = strstr(r->str, "total_commands_processed:")))
		n = atoll(at + 25) - 1;
	freeReplyObject(r);
	redisFree(c);
	return n;
}

static void flush(void)
{
	redisContext *c = redisConnect(host, port);

	if (!c || c->err)
		die("cannot reach redis-server");
	freeReplyObject(redisCommand(c, "FLUSHALL"));
	redisFree(c);
}

static struct tk_limiter *open_limiter(const char *policy, const char *spec)
{
	struct tk_limiter *l;
	char msg[160];

	if (tk_limiter_open(&l, policy, spec, NULL) != 0) {
		snprintf(msg, sizeof(msg), "cannot open %s", spec);
		die(msg);
	}
	return l;
}

struct engine {
	const char *name;
	char spec[200];
	struct tk_limiter *l;
	uint64_t *lat; /* ns per check, every round */
	size_t n, per_round;
	double rate[16]; /* checks/s per round */
	long long cmds;
};

static void one_round(struct engine *e, int round)
{
	struct tk_decision d;
	uint64_t t0, t1, start = now_ns();
	long long before = commands();
	size_t i;

	for (i = 0; i < e->per_round; i++) {
		t0 = now_ns();
		if (tk_limiter_check(e->l, "k", 1, 1, &d) != 0 || !d.allowed)
			die("a check far from the limit failed or was denied");
		t1 = now_ns();
		e->lat[e->n++] = t1 - t0;
	}
	e->rate[round] =
		(double)e->per_round * 1e9 / (double)(now_ns() - start);
	e->cmds += commands() - before;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* @e's row; its median latency, ns. */
static double report_far(struct engine *e, int rounds, double zone_median)
{
	double rates[16];
	uint64_t med, p99;

	memcpy(rates, e->rate, sizeof(rates));
	qsort(rates, (size_t)rounds, sizeof(rates[0]), cmp_double);
	qsort(e->lat, e->n, sizeof(e->lat[0]), cmp_u64);
	med = e->lat[e->n / 2];
	p99 = e->lat[e->n * 99 / 100];
	printf("%-12s %12.0f %10llu %10llu %10.2f %12.1f\n", e->name,
	       rates[rounds / 2], (unsigned long long)med,
	       (unsigned long long)p99,
	       zone_median > 0 ? (double)med / zone_median : 1.0,
	       1000.0 * (double)e->cmds / (double)e->n);
	return (double)med;
}

static void far(int rounds, size_t checks)
{
	double zone;
	struct engine e[3] = {
		{ .name = "zone", .per_round = checks },
		{ .name = "two tiers", .per_round = checks },
		{ .name = "redis", .per_round = checks / 10 },
	};
	int i, r;

	snprintf(e[0].spec, sizeof(e[0].spec), "shm:tier-bench-zone");
	snprintf(e[1].spec, sizeof(e[1].spec), "shm:tier-bench-far+%s",
		 redis_spec);
	snprintf(e[2].spec, sizeof(e[2].spec), "%s", redis_spec);
	flush();
	for (i = 0; i < 3; i++) {
		tk_zone_destroy(i == 0 ? "tier-bench-zone" : "tier-bench-far");
		e[i].l = open_limiter(FAR_POLICY, e[i].spec);
		e[i].lat = calloc((size_t)rounds * e[i].per_round,
				  sizeof(uint64_t));
		if (!e[i].lat)
			die("out of memory");
	}
	for (r = 0; r < rounds; r++)
		for (i = 0; i < 3; i++)
			one_round(&e[i], r);
	printf("far from the limit (%s, one key, one thread)\n", FAR_POLICY);
	printf("%-12s %12s %10s %10s %10s %12s\n", "store", "checks/s",
	       "median ns", "p99 ns", "x zone", "cmds/1000");
	zone = report_far(&e[0], rounds, 0);
	for (i = 1; i < 3; i++)
		report_far(&e[i], rounds, zone);
	printf("two tiers: %.2fx a zone check (median), %.0fx fewer Redis "
	       "commands than plain Redis\n",
	       (double)e[1].lat[e[1].n / 2] / zone,
	       (double)e[2].cmds / (double)e[2].n /
		       ((double)e[1].cmds / (double)e[1].n > 0
				? (double)e[1].cmds / (double)e[1].n
				: 1e-9));
	for (i = 0; i < 3; i++) {
		tk_limiter_close(e[i].l);
		free(e[i].lat);
	}
	tk_zone_destroy("tier-bench-zone");
	tk_zone_destroy("tier-bench-far");
}

/* What two processes admitted near the limit: per window, in all. */
struct near {
	_Atomic uint64_t per_window[WINDOWS];
	_Atomic uint64_t admitted, checks;
	uint64_t start, end; /* ns */
	long long cmds;	     /* Redis commands of the run */
};

static void near_child(struct near *sh, const char *policy, const char *spec,
		       uint64_t window)
{
	struct tk_limiter *l = open_limiter(policy, spec);
	struct tk_decision d;
	uint64_t w;

	while (now_ns() < sh->end) {
		atomic_fetch_add(&sh->checks, 1);
		if (tk_limiter_check(l, "k", 1, 1, &d) != 0 || !d.allowed)
			continue;
		atomic_fetch_add(&sh->admitted, 1);
		/* The window the decision counted in: the one ending at its
		 * reset_at. */
		w = window && d.reset_at > sh->start
			    ? (d.reset_at - sh->start) / window - 1
			    : WINDOWS;
		if (w < WINDOWS)
			atomic_fetch_add(&sh->per_window[w], 1);
	}
	tk_limiter_close(l);
	_exit(0);
}

/* Two processes on @policy for NEAR_MS; the admitted counts in *@sh. */
static void near_run(struct near *sh, const char *policy, int tier,
		     uint64_t window)
{
	char spec[2][200], name[2][32];
	pid_t pid[2];
	int i;

	flush();
	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < 2; i++) {
		snprintf(name[i], sizeof(name[i]), "tier-bench-h%d", i);
		tk_zone_destroy(name[i]);
		if (tier)
			snprintf(spec[i], sizeof(spec[i]), "shm:%s+%s", name[i],
				 redis_spec);
		else
			snprintf(spec[i], sizeof(spec[i]), "%s", redis_spec);
	}
	/* Windows start at multiples of their width since the epoch. */
	sh->start = window ? (now_ns() / window + 1) * window : now_ns();
	sh->end = sh->start + (uint64_t)NEAR_MS * 1000000;
	while (now_ns() < sh->start - 20000000)
		usleep(1000);
	sh->cmds = commands();
	for (i = 0; i < 2; i++) {
		fflush(NULL);
		pid[i] = fork();
		if (pid[i] == 0)
			near_child(sh, policy, spec[i], window);
	}
	for (i = 0; i < 2; i++)
		waitpid(pid[i], NULL, 0);
	sh->cmds = commands() - sh->cmds;
	for (i = 0; i < 2; i++)
		tk_zone_destroy(name[i]);
}

static void near_window(struct near *sh, int tier)
{
	const uint64_t limit = 500, window = 100000000;
	uint64_t max = 0, sum = 0;
	int i, n = NEAR_MS / 100;

	near_run(sh, "fixed-window:500/100ms", tier, window);
	for (i = 0; i < n; i++) {
		if (sh->per_window[i] > max)
			max = sh->per_window[i];
		sum += sh->per_window[i];
	}
	printf("%-12s fixed-window:500/100ms  fullest window %+.2f%%, "
	       "windows on average %+.2f%%, %.0f cmds/1000 checks\n",
	       tier ? "two tiers" : "redis",
	       100.0 * ((double)max - (double)limit) / (double)limit,
	       100.0 * ((double)sum / n - (double)limit) / (double)limit,
	       1000.0 * (double)sh->cmds / (double)sh->checks);
}

static void near_gcra(struct near *sh, int tier)
{
	double exact;

	near_run(sh, "gcra:5000/s,burst=500", tier, 0);
	exact = 500 + 5000.0 * NEAR_MS / 1000;
	printf("%-12s gcra:5000/s,burst=500   admitted %llu of %.0f: %+.2f%%, "
	       "%.0f cmds/1000 checks\n",
	       tier ? "two tiers" : "redis",
	       (unsigned long long)atomic_load(&sh->admitted), exact,
	       100.0 * ((double)atomic_load(&sh->admitted) - exact) / exact,
	       1000.0 * (double)sh->cmds / (double)sh->checks);
}

int main(int argc, char **argv)
{
	struct near *sh;
	int rounds = 3;
	size_t checks = 20000;

	if (argc < 3)
		die("usage: tier-bench HOST PORT [ROUNDS [CHECKS]]");
	host = argv[1];
	port = atoi(argv[2]);
	if (argc > 3)
		rounds = atoi(argv[3]);
	if (argc > 4)
		checks = (size_t)atol(argv[4]);
	if (rounds < 1 || rounds > 16 || checks < 100)
		die("ROUNDS: 1 to 16; CHECKS: at least 100");
	snprintf(redis_spec, sizeof(redis_spec),
		 "redis://%s:%d?timeout=2s&connect_timeout=2s", host, port);
	far(rounds, checks);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	printf("\nnear the limit (two processes, each a host of its own "
	       "zone, %d ms)\n",
	       NEAR_MS);
	near_window(sh, 0);
	near_window(sh, 1);
	near_gcra(sh, 0);
	near_gcra(sh, 1);
	return 0;
}
