/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_idle.c - connections the server closed under the library,
 * on a real redis-server (tests/kit/redis-kit.c): with "timeout 1" on the
 * server, a check, an idle of 2.5 s (the server closes the connection),
 * then a batch of 1000 checks of 1 KB keys, whose writes meet the closed
 * socket; the same after the server restarts.  With SIGPIPE at its
 * default action (which kills the process) the process must live and
 * see successes or typed errors; SIGPIPE must be left as the process had
 * it: unblocked in the thread, or blocked and still pending when the
 * application itself had one pending.  Each run is a child process, so
 * that a death is a failure here, not the test's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"

#define BATCH 1000
#define KEY_LEN 1024
#define ROUNDS 3
#define IDLE_MS 2500

static struct redis_kit kit;

static void need_server(void)
{
	redis_kit_need(&kit);
	if (redis_kit_cmd(&kit, NULL, 0, "CONFIG SET timeout 1") != 0)
		fail_msg("CONFIG SET timeout 1");
}

static int stop_server(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int pipe_blocked(void)
{
	sigset_t now;

	sigprocmask(SIG_SETMASK, NULL, &now);
	return sigismember(&now, SIGPIPE) == 1;
}

static int pipe_pending(void)
{
	sigset_t now;

	sigemptyset(&now);
	sigpending(&now);
	return sigismember(&now, SIGPIPE) == 1;
}

/* A typed error, or success: what a batch's check may answer here. */
static int typed(int rc)
{
	return rc == 0 || rc == -ECONNRESET || rc == -ECONNREFUSED ||
	       rc == -ETIMEDOUT;
}

/*
 * In the child: ROUNDS of a check, an idle the server ends, a batch.
 * With @sync (restarts), each idle starts with a byte to the parent on
 * sync[1] and waits for its answer on sync[0]: the server restarted.
 * @own: the application blocks SIGPIPE and has one pending.  Exits 0, or
 * the first failing step's number.
 */
static void child(const int *sync, int own)
{
	static struct tk_request req[BATCH];
	static struct tk_decision out[BATCH];
	static int rcs[BATCH];
	static char keys[BATCH][KEY_LEN];
	struct tk_limiter *l;
	struct tk_decision d;
	sigset_t pipe;
	char spec[192];
	int i, r;

	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigprocmask(own ? SIG_BLOCK : SIG_UNBLOCK, &pipe, NULL);
	if (own)
		raise(SIGPIPE);
	snprintf(spec, sizeof(spec), "%s?timeout=2s&connect_timeout=2s",
		 kit.spec);
	if (tk_limiter_open(&l, "gcra:1000000/s,burst=1000000", spec, NULL))
		_exit(2);
	for (i = 0; i < BATCH; i++) {
		memset(keys[i], 'a' + i % 26, KEY_LEN);
		snprintf(keys[i], 16, "%d:", i);
		keys[i][strlen(keys[i])] = '-';
		req[i].key = keys[i];
		req[i].key_len = KEY_LEN;
		req[i].cost = 1;
	}
	for (r = 0; r < ROUNDS; r++) {
		/* Success, or what the last batch's end left (a backoff). */
		if (!typed(tk_limiter_check(l, "k", 1, 1, &d)))
			_exit(3);
		if (sync &&
		    (write(sync[1], "r", 1) != 1 || read(sync[0], &d, 1) != 1))
			_exit(4);
		sleep_ms(IDLE_MS);
		tk_limiter_check_many(l, req, BATCH, out, rcs);
		for (i = 0; i < BATCH; i++)
			if (!typed(rcs[i]))
				_exit(5);
		/* The mask as the application had it, its signal kept. */
		if (pipe_blocked() != own || pipe_pending() != own)
			_exit(6);
	}
	tk_limiter_close(l);
	_exit(0);
}

static void run_child(int restart, int own)
{
	int status, up[2], down[2], sync[2], r;
	char byte;
	pid_t pid;

	need_server();
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sync[0] = down[0];
		sync[1] = up[1];
		child(restart ? sync : NULL, own);
	}
	close(up[1]);
	close(down[0]);
	/* Each round: the child checked; the server restarts under it. */
	for (r = 0; restart && r < ROUNDS && read(up[0], &byte, 1) == 1; r++) {
		redis_kit_stop(&kit);
		assert_int_equal(redis_kit_start(&kit, NULL), 0);
		assert_int_equal(write(down[1], "u", 1), 1);
	}
	close(up[0]);
	close(down[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the process died of signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	if (WEXITSTATUS(status) != 0)
		fail_msg("the child failed at step %d", WEXITSTATUS(status));
}

static void test_idle_sigpipe(void **state)
{
	(void)state;
	run_child(0, 0);
}

static void test_restart_sigpipe(void **state)
{
	(void)state;
	run_child(1, 0);
}

static void test_own_sigpipe_kept(void **state)
{
	(void)state;
	run_child(0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_sigpipe),
		cmocka_unit_test(test_restart_sigpipe),
		cmocka_unit_test(test_own_sigpipe_kept),
	};

	return cmocka_run_group_tests(tests, NULL, stop_server);
}
