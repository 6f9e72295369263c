/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_reconnect.c - dead and slow connections on real
 * redis-servers (tests/kit/redis-kit.c, tests/kit/turn-proxy.c):
 *
 * - a connection the server closed while idle ("timeout 1") is not
 *   used: the first check after the idle passes, on a new connection;
 *   after a restart, so does each thread's;
 * - a command or a batch whose write failed with nothing written is
 *   sent once more on a new connection;
 * - a command whose reply was cut (the server ran it) is not sent again:
 *   the check fails, and the key counts the unit once;
 * - slow replies (DEBUG SLEEP from another client) fail only the checks
 *   that met them: no check is refused without being tried;
 * - an outage with steady checks: the backoff of failing connects is
 *   capped, so checks pass again soon after the server is back.
 *
 * Bounds on time are wide (a shared, loaded machine): the backoff's
 * cap (1 s) is checked as the largest gap between connects, with room
 * to spare below what an uncapped backoff would wait, and "soon after
 * the restart" as the first connect after it being the one that works.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll() */
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "turn-proxy.h"

static struct redis_kit kit;

/* The server of most tests, with DEBUG (SLEEP) enabled. */
static void need_server(void)
{
	kit.extra[0] = "--enable-debug-command";
	kit.extra[1] = "yes";
	redis_kit_need(&kit);
}

static int teardown(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

static void sleep_ms(unsigned int ms)
{
	usleep(ms * 1000u);
}

static struct tk_limiter *open_limiter(const char *policy, const char *spec,
				       const char *opts)
{
	struct tk_limiter *l;
	char full[256];

	snprintf(full, sizeof(full), "%s?%s", spec, opts);
	assert_int_equal(tk_limiter_open(&l, policy, full, NULL), 0);
	return l;
}

static long long connections(void)
{
	char info[8192], *at;

	assert_true(redis_kit_cmd(&kit, info, sizeof(info), "INFO stats") >= 0);
	at = strstr(info, "total_connections_received:");
	assert_non_null(at);
	return atoll(at + strlen("total_connections_received:"));
}

/* Closed by the server while idle: used neither for the check nor for
 * the next (no backoff), and replaced by one connection. */
static void test_idle_closed(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	long long before;
	int round;

	(void)state;
	need_server();
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "CONFIG SET timeout 1"),
			 0);
	l = open_limiter("gcra:1000/s,burst=1000", kit.spec,
			 "timeout=2s&connect_timeout=2s");
	assert_int_equal(tk_limiter_check(l, "idle", 4, 1, &d), 0);
	for (round = 0; round < 2; round++) {
		sleep_ms(3000);
		before = connections();
		assert_int_equal(tk_limiter_check(l, "idle", 4, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(tk_limiter_check(l, "idle", 4, 1, &d), 0);
		/* The kit's own INFO is one of them. */
		assert_int_equal(connections() - before, 2);
	}
	tk_limiter_close(l);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "CONFIG SET timeout 0"),
			 0);
}

/*
 * The library's poll() of a connection before reuse (a zero timeout; a
 * connect's waits have one) answers "nothing" while blind is set: a close
 * that comes after that poll, which only the write can meet.
 */
static int blind, polls; /* __atomic: the library polls from any thread */

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec ts = { timeout / 1000,
			       (long)(timeout % 1000) * 1000000 };
	nfds_t i;

	if (timeout == 0)
		__atomic_fetch_add(&polls, 1, __ATOMIC_RELAXED);
	if (timeout == 0 && __atomic_load_n(&blind, __ATOMIC_RELAXED)) {
		for (i = 0; i < n; i++)
			fds[i].revents = 0;
		return 0;
	}
	return ppoll(fds, n, timeout < 0 ? NULL : &ts, NULL);
}

/*
 * The checker thread's connects (hiredis' connect() is this one), timed,
 * to count how often a connect is tried while the server is down.
 */
#define CONNECTS_MAX 4096
static __thread int counted; /* this thread's connects are recorded */
static pthread_mutex_t connects_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t connects;
static unsigned long long connect_at[CONNECTS_MAX]; /* ms */

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (counted) {
		pthread_mutex_lock(&connects_lock);
		if (connects < CONNECTS_MAX)
			connect_at[connects++] = redis_kit_mono_ms();
		pthread_mutex_unlock(&connects_lock);
	}
	return (int)syscall(SYS_connect, fd, sa, len);
}

/* This process's one TCP connection to @port, or -1. */
static int socket_to(int port)
{
	struct sockaddr_in a;
	socklen_t len;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int fd, found = -1;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		fd = atoi(e->d_name);
		len = sizeof(a);
		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    getpeername(fd, (struct sockaddr *)&a, &len) != 0 ||
		    a.sin_family != AF_INET || ntohs(a.sin_port) != port)
			continue;
		assert_int_equal(found, -1);
		found = fd;
	}
	closedir(d);
	return found;
}

/*
 * A write that fails with nothing written (the socket shut for writing,
 * unseen by the poll): the check is sent once more on a new connection,
 * passes, and counts once; no SIGPIPE reaches the process.
 */
static void test_unsent_resent(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	sigset_t pipe;
	int fd, before;

	(void)state;
	need_server();
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigprocmask(SIG_UNBLOCK, &pipe, NULL);
	l = open_limiter("fixed-window:3/1h", kit.spec,
			 "timeout=2s&connect_timeout=2s");
	assert_int_equal(tk_limiter_check(l, "unsent", 6, 1, &d), 0);
	fd = socket_to(kit.port);
	assert_true(fd >= 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	before = __atomic_load_n(&polls, __ATOMIC_RELAXED);
	__atomic_store_n(&blind, 1, __ATOMIC_RELAXED);
	assert_int_equal(tk_limiter_check(l, "unsent", 6, 1, &d), 0);
	__atomic_store_n(&blind, 0, __ATOMIC_RELAXED);
	/* The connection was polled before its reuse. */
	assert_true(__atomic_load_n(&polls, __ATOMIC_RELAXED) > before);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_int_equal(tk_limiter_check(l, "unsent", 6, 1, &d), 0);
	assert_int_equal(d.remaining, 0);
	tk_limiter_close(l);
}

/* The same for a batch: its pipeline goes again, each check once. */
static void test_unsent_batch_resent(void **state)
{
	static const char *const keys[] = { "ub0", "ub1", "ub2", "ub3" };
	struct tk_request req[4];
	struct tk_decision d[4];
	struct tk_limiter *l;
	int rcs[4], i, fd, round;

	(void)state;
	need_server();
	l = open_limiter("fixed-window:3/1h", kit.spec,
			 "timeout=2s&connect_timeout=2s");
	for (i = 0; i < 4; i++) {
		req[i].key = keys[i];
		req[i].key_len = 3;
		req[i].cost = 1;
	}
	for (round = 0; round < 2; round++) {
		if (round == 1) {
			fd = socket_to(kit.port);
			assert_true(fd >= 0);
			assert_int_equal(shutdown(fd, SHUT_WR), 0);
			__atomic_store_n(&blind, 1, __ATOMIC_RELAXED);
		}
		assert_int_equal(tk_limiter_check_many(l, req, 4, d, rcs), 0);
		__atomic_store_n(&blind, 0, __ATOMIC_RELAXED);
		for (i = 0; i < 4; i++) {
			assert_int_equal(rcs[i], 0);
			assert_true(d[i].allowed);
			assert_int_equal(d[i].remaining, 2 - round);
		}
	}
	tk_limiter_close(l);
}

#define BIG_BATCH 1024 /* one apply_batch() of the limiter */

/* Eight dimensions: eight 1 KB keys a request, 8 MB a batch, more than
 * loopback buffers take (4 MB of socket buffer at most, tcp_wmem). */
#define EIGHT_DIMS                                                             \
	"all(gcra:1000000/s,gcra:1000001/s,gcra:1000002/s,gcra:1000003/s,"     \
	"gcra:1000004/s,gcra:1000005/s,gcra:1000006/s,gcra:1000007/s)"

/*
 * An 8 MB pipeline to a stopped server: the kernel takes part of it, then
 * the write times out.  Commands of it may run when the server resumes,
 * so the batch fails and is not sent again: no connect is made for it.
 */
static void test_partial_pipeline_not_resent(void **state)
{
	static struct tk_request req[BIG_BATCH];
	static struct tk_decision d[BIG_BATCH];
	static char keys[BIG_BATCH][TK_KEY_MAX];
	static int rcs[BIG_BATCH];
	struct tk_limiter *l;
	size_t before, made;
	int i;

	(void)state;
	need_server();
	/* Room left after the write's timeouts: a resend could connect. */
	l = open_limiter(EIGHT_DIMS, kit.spec,
			 "timeout=300ms&connect_timeout=2s");
	for (i = 0; i < BIG_BATCH; i++) {
		memset(keys[i], 'p', TK_KEY_MAX);
		snprintf(keys[i], 16, "%d:", i);
		req[i].key = keys[i];
		req[i].key_len = TK_KEY_MAX;
		req[i].cost = 1;
	}
	assert_int_equal(tk_limiter_check(l, "warm", 4, 1, d), 0);
	assert_int_equal(kill(kit.pid, SIGSTOP), 0);
	counted = 1;
	before = connects;
	tk_limiter_check_many(l, req, BIG_BATCH, d, rcs);
	made = connects - before;
	counted = 0;
	assert_int_equal(kill(kit.pid, SIGCONT), 0);
	for (i = 0; i < BIG_BATCH; i++)
		assert_true(rcs[i] == -ETIMEDOUT || rcs[i] == -ECONNRESET);
	assert_int_equal(made, 0);
	tk_limiter_close(l);
}

/* The reply cut in half: the script ran, so it is not run again. */
static void test_cut_reply_not_resent(void **state)
{
	struct redis_kit own = { 0 };
	struct turn_proxy *p;
	struct tk_limiter *l;
	struct tk_decision d;
	char spec[128];
	int rc;

	(void)state;
	if (!redis_kit_available())
		skip();
	assert_int_equal(turn_proxy_redis(&own, NULL, &p), 0);
	snprintf(spec, sizeof(spec), "redis://127.0.0.1:%d",
		 turn_proxy_port(p));
	l = open_limiter("fixed-window:3/1h", spec,
			 "timeout=2s&connect_timeout=2s");
	assert_int_equal(tk_limiter_check(l, "cut", 3, 1, &d), 0);
	assert_true(d.allowed);
	turn_proxy_cut_next_reply(p);
	rc = tk_limiter_check(l, "cut", 3, 1, &d);
	assert_true(rc == -ECONNRESET || rc == -EPROTO);
	/* Three units: the first, the cut one (ran once), this one. */
	assert_int_equal(tk_limiter_check(l, "cut", 3, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(tk_limiter_check(l, "cut", 3, 1, &d), 0);
	assert_false(d.allowed);
	tk_limiter_close(l);
	turn_proxy_stop(p);
	redis_kit_destroy(&own);
}

#define THREADS 8

struct restarted {
	struct tk_limiter *l;
	pthread_barrier_t *sync;
	char key[8];
	int rc[2]; /* before and after the restart */
};

static void *restarted_run(void *arg)
{
	struct restarted *a = arg;
	struct tk_decision d;

	a->rc[0] = tk_limiter_check(a->l, a->key, strlen(a->key), 1, &d);
	pthread_barrier_wait(a->sync); /* every thread has its connection */
	pthread_barrier_wait(a->sync); /* the server restarted */
	a->rc[1] = tk_limiter_check(a->l, a->key, strlen(a->key), 1, &d);
	return NULL;
}

/*
 * A restart closes every thread's connection (a web server's workers):
 * each thread's next check passes on a new one, none degraded.
 */
static void test_restart_threads(void **state)
{
	struct restarted a[THREADS];
	pthread_t t[THREADS];
	pthread_barrier_t sync;
	struct tk_limiter *l;
	int i;

	(void)state;
	need_server();
	l = open_limiter("gcra:1000/s,burst=1000", kit.spec,
			 "timeout=2s&connect_timeout=2s");
	pthread_barrier_init(&sync, NULL, THREADS + 1);
	for (i = 0; i < THREADS; i++) {
		a[i].l = l;
		a[i].sync = &sync;
		snprintf(a[i].key, sizeof(a[i].key), "rt%d", i);
		assert_int_equal(
			pthread_create(&t[i], NULL, restarted_run, &a[i]), 0);
	}
	pthread_barrier_wait(&sync);
	redis_kit_stop(&kit);
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	pthread_barrier_wait(&sync);
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].rc[0], 0);
		assert_int_equal(a[i].rc[1], 0);
	}
	pthread_barrier_destroy(&sync);
	tk_limiter_close(l);
}

/* Steady checks on another thread, each result timed. */
#define CHECKS_MAX 20000

struct checker {
	struct tk_limiter *l;
	pthread_mutex_t lock;
	int stop_req;
	unsigned int pause_ms;
	size_t n;
	int rc[CHECKS_MAX];
	unsigned long long at[CHECKS_MAX];   /* ms: when the check ended */
	unsigned long long took[CHECKS_MAX]; /* ms */
};

static int stopping(struct checker *k)
{
	int v;

	pthread_mutex_lock(&k->lock);
	v = k->stop_req;
	pthread_mutex_unlock(&k->lock);
	return v;
}

static void *checker_run(void *arg)
{
	struct checker *k = arg;
	struct tk_decision d;
	unsigned long long t0;

	counted = 1;

	while (!stopping(k) && k->n < CHECKS_MAX) {
		t0 = redis_kit_mono_ms();
		k->rc[k->n] = tk_limiter_check(k->l, "steady", 6, 1, &d);
		k->at[k->n] = redis_kit_mono_ms();
		k->took[k->n] = k->at[k->n] - t0;
		k->n++;
		sleep_ms(k->pause_ms);
	}
	return NULL;
}

/* Checks every @pause_ms with timeouts of 100 ms, for 200 ms first. */
static void checker_start(struct checker *k, unsigned int pause_ms,
			  pthread_t *t)
{
	memset(k, 0, sizeof(*k));
	k->l = open_limiter("gcra:1000000/s,burst=1000000", kit.spec,
			    "timeout=100ms&connect_timeout=100ms");
	k->pause_ms = pause_ms;
	pthread_mutex_init(&k->lock, NULL);
	assert_int_equal(pthread_create(t, NULL, checker_run, k), 0);
	sleep_ms(200);
}

static void checker_stop(struct checker *k, pthread_t t)
{
	pthread_mutex_lock(&k->lock);
	k->stop_req = 1;
	pthread_mutex_unlock(&k->lock);
	pthread_join(t, NULL);
	pthread_mutex_destroy(&k->lock);
}

#define SLEEPS 5
#define TIMEOUT_MS 100

/*
 * Five DEBUG SLEEP 0.25 from another client: a check that failed waited
 * for its reply (at least half its timeout: never refused at once), a
 * handful per sleep at most, and the check after them passes.
 */
static void test_slow_reply_no_backoff(void **state)
{
	static struct checker k;
	unsigned long long quick = 0, failures = 0;
	pthread_t t;
	size_t i;
	int s;

	(void)state;
	need_server();
	checker_start(&k, 2, &t);
	for (s = 0; s < SLEEPS; s++) {
		assert_int_equal(
			redis_kit_cmd(&kit, NULL, 0, "DEBUG SLEEP 0.25"), 0);
		sleep_ms(100);
	}
	sleep_ms(300);
	checker_stop(&k, t);
	for (i = 0; i < k.n; i++) {
		if (k.rc[i] == 0)
			continue;
		assert_int_equal(k.rc[i], -ETIMEDOUT);
		failures++;
		quick += k.took[i] < TIMEOUT_MS / 2;
	}
	print_message("# %zu checks, %llu timed out, %llu of them at once\n",
		      k.n, failures, quick);
	assert_int_equal(quick, 0);
	/* Each sleep outlasts two timeouts: three checks meet it, or four
	 * on a slow machine. */
	assert_true(failures >= 1 && failures <= SLEEPS * 4);
	assert_int_equal(k.rc[k.n - 1], 0);
	tk_limiter_close(k.l);
}

#define OUTAGE_MS 4000
/* The cap (1 s) and a wide margin; doubling past it gives 2.56 s. */
#define GAP_MAX_MS 2000

/*
 * The server stopped 4 s under steady checks (one each 10 ms), restarted
 * on its port: while it was down connects were tried seldom (the
 * backoff), never more than the cap apart, and the first connect after
 * the restart works.
 */
static void test_outage_backoff_capped(void **state)
{
	static struct checker k;
	unsigned long long up, down, first = 0, failures = 0, gap = 0;
	size_t i, tried = 0, last = 0, after_up = 0;
	pthread_t t;

	(void)state;
	need_server();
	checker_start(&k, 10, &t);
	redis_kit_stop(&kit);
	down = redis_kit_mono_ms();
	sleep_ms(OUTAGE_MS);
	assert_int_equal(redis_kit_start(&kit, NULL), 0);
	up = redis_kit_mono_ms();
	sleep_ms(GAP_MAX_MS + 1000);
	checker_stop(&k, t);
	for (i = 0; i < k.n; i++) {
		if (k.rc[i] != 0)
			failures++;
		else if (failures && !first)
			first = k.at[i];
	}
	/* The connects from the stop to the one that worked (the checker
	 * is joined: no lock). */
	for (i = 0; i < connects && (!first || connect_at[i] <= first); i++) {
		if (connect_at[i] < down)
			continue;
		if (tried++ && connect_at[i] - connect_at[last] > gap)
			gap = connect_at[i] - connect_at[last];
		last = i;
		after_up += connect_at[i] > up;
	}
	print_message("# %zu checks, %llu failed, %zu connects tried in the "
		      "outage, %llu ms apart at most, back %lld ms after the "
		      "restart, %zu connects after it\n",
		      k.n, failures, tried, gap, (long long)(first - up),
		      after_up);
	assert_true(failures > 0);
	/* About 400 checks met the outage; without a backoff each would
	 * have tried to connect. */
	assert_true(tried >= 3 && tried <= 40);
	assert_true(gap <= GAP_MAX_MS);
	assert_true(first != 0);
	/* The server answered before @up: a connect after it works. */
	assert_true(after_up <= 1);
	assert_true(first <= up + GAP_MAX_MS);
	tk_limiter_close(k.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_closed),
		cmocka_unit_test(test_restart_threads),
		cmocka_unit_test(test_unsent_resent),
		cmocka_unit_test(test_unsent_batch_resent),
		cmocka_unit_test(test_partial_pipeline_not_resent),
		cmocka_unit_test(test_cut_reply_not_resent),
		cmocka_unit_test(test_slow_reply_no_backoff),
		cmocka_unit_test(test_outage_backoff_capped),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
