/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * redis-kit.h - a real redis-server for the Redis store's tests: started
 * on 127.0.0.1 with a free port in a fresh temporary directory (no
 * persistence), stopped by its pid.  No mocks of Redis.
 *
 * Not thread-safe: the test's main thread drives it.
 */
#ifndef TK_TESTS_KIT_REDIS_H
#define TK_TESTS_KIT_REDIS_H

#include <stdint.h>
#include <sys/types.h>

struct redis_kit {
	pid_t pid; /* 0: not running */
	int port;
	char dir[64];
	char password[32]; /* "": none */
	char spec[128];	   /* redis://127.0.0.1:PORT */
	/* More redis-server arguments, NULL-terminated; set before start. */
	const char *extra[7];
	char arg[16]; /* room for an argument of extra, kept for restarts */
	/* A config file, redis-server's first argument (a sentinel needs
	 * one it may rewrite); NULL: none.  Set before start. */
	const char *conf;
};

/* Is there a redis-server to run?  (The tests skip without one.) */
int redis_kit_available(void);
/*
 * Start a server (with --requirepass if @password) and wait until it
 * answers: 0, or -1.  A kit already holding a port reuses it (a restart).
 */
int redis_kit_start(struct redis_kit *k, const char *password);
/* kill -9 by its pid, waited for; keeps the port and dir for a restart
 * (redis_kit_start()), as a crash would. */
void redis_kit_kill(struct redis_kit *k);
/* Stop it (SIGCONT first, then SIGTERM) and wait for it; keeps the dir. */
void redis_kit_stop(struct redis_kit *k);
/* Stop it and remove its directory. */
void redis_kit_destroy(struct redis_kit *k);
/*
 * Run one command (printf-style, as hiredis' redisCommand) on a fresh
 * connection: the reply's integer, 0 for other replies, -1 on errors.
 * @str, if given, receives a string reply (@len bytes, NUL-terminated).
 */
long long redis_kit_cmd(const struct redis_kit *k, char *str, size_t len,
			const char *fmt, ...);

/*
 * Redis @spec with generous timeouts (5 s) added (another store's as
 * it is), for a test not about time:
 * a loaded machine may stall a reply beyond the 100 ms default.  In one
 * of a few static buffers, reused in turn.
 */
const char *redis_kit_slow(const char *spec);
/* As redis_kit_slow(), deciding on the limiter's clock (server_time=0):
 * for tests whose clock is a manual one. */
const char *redis_kit_manual(const char *spec);
/*
 * A limiter of @policy on a manual clock of its own at @start (*@c),
 * failing with the store's error (fail=error), no reclaimer: on the
 * memory store for a NULL @spec, else on Redis @spec (redis_kit_slow()).
 * Asserts that both open.
 */
struct tk_clock;
struct tk_limiter;
void redis_kit_limiter(struct tk_limiter **l, struct tk_clock **c,
		       const char *policy, const char *spec, uint64_t start);

/* The monotonic clock, in ms: for bounds on how long a call waits. */
unsigned long long redis_kit_mono_ms(void);

/*
 * For a cmocka test: a server without a password in @k, started by the
 * first caller (later calls return at once).  Skips the test without
 * redis-server, fails it if the server does not start.
 */
void redis_kit_need(struct redis_kit *k);

/*
 * One cluster-enabled node, in no cluster yet, on a port whose bus port
 * (+10000) is free too; @seed picks ports (rand_r).  0, or -1.
 */
int redis_kit_start_node(struct redis_kit *k, unsigned int *seed);

/*
 * A 3-master Redis Cluster (no replicas): nodes on ports below 55535
 * whose bus ports (+10000) are free too, joined by redis-cli --cluster
 * create, up once CLUSTER INFO says cluster_state:ok on every node.
 * @spec receives "redis+cluster://127.0.0.1:P1,127.0.0.1:P2".  0, or -1
 * (nodes destroyed).  Stop with redis_kit_destroy() on each node.
 */
int redis_cluster_available(void);
int redis_cluster_start(struct redis_kit nodes[3], char *spec, size_t len);
/*
 * For a cmocka test: the cluster, started by the first caller of a test
 * program (*@up set; later calls return at once).  Skips the test without
 * redis-server or redis-cli, fails it if the cluster does not come up.
 */
void redis_cluster_need(struct redis_kit nodes[3], char *spec, size_t len,
			int *up);

/*
 * 3 masters and 3 replicas (--cluster-replicas 1), every node with
 * cluster-node-timeout @timeout_ms: up once every node says
 * cluster_state:ok and every replica master_link_status:up (or no
 * failover could happen).  Which nodes are masters is for
 * redis_cluster_role() to say.  0, or -1 (nodes destroyed).
 */
int redis_cluster_start_replicas(struct redis_kit nodes[6], int timeout_ms);
/*
 * @k's role in CLUSTER NODES as @from sees it: 'M' a master not failed,
 * 'S' a replica, 'F' failed (or suspected), 0 unknown (or no answer).
 */
int redis_cluster_role(const struct redis_kit *from, const struct redis_kit *k);

#endif
