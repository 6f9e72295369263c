/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_sigbus.c - a zone file truncated under its users: every call
 * that meets it returns -EPROTO, the process lives on, and SIGBUS that
 * is not from a zone still reaches the application's own handler (or
 * kills as it would have).
 *
 * Each case runs in a forked child, and the parent never attaches a zone:
 * the library's SIGBUS handler is installed at its first attach (and
 * again at a later one, if replaced), on top of whatever was set before (cmocka
 * sets its own handlers for each test and restores them after it, which would
 * remove one installed by an earlier test).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

static char dir[] = "/tmp/tk-zbus-XXXXXX";

/* In the child: the exit code says which check failed. */
#define CHECK KIT_CHILD_CHECK

/* In the child (creating attaches). */
static void make_zone(const char *name)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.zone_capacity = 1024;
	tk_zone_destroy(name);
	CHECK(90, tk_zone_create(name, &o) == 0);
}

static struct tk_limiter *open_limiter(const char *policy, const char *zone)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[128];

	o.flags = TK_OPT_ZONE_NO_CREATE;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	return tk_limiter_open(&l, policy, spec, &o) == 0 ? l : NULL;
}

struct cut {
	off_t size;
	const char *policy;
};

static void truncated_child(void *arg)
{
	const struct cut *c = arg;
	struct tk_limiter *l, *other, *again;
	struct tk_decision d;
	struct tk_stats st;
	struct tk_zone_info info;
	char path[512];

	make_zone("t");
	l = open_limiter(c->policy, "t");
	other = open_limiter("gcra:5/1s", "t");
	CHECK(1, l && other);
	CHECK(2, tk_limiter_check(l, "k", 1, 1, &d) == 0 && d.allowed);
	CHECK(3, tk_limiter_stats(l, &st, sizeof(st)) == 0);
	kit_zone_path(path, sizeof(path), "t");
	CHECK(4, truncate(path, c->size) == 0);
	CHECK(5, tk_limiter_check(l, "k", 1, 1, &d) == -EPROTO);
	/* Broken for good: no second fault, the same answer everywhere. */
	CHECK(6, tk_limiter_check(l, "k2", 2, 1, &d) == -EPROTO);
	CHECK(7, tk_limiter_peek(l, "k", 1, &d) == -EPROTO);
	CHECK(8, tk_limiter_forecast(l, "k", 1, 1, &d) == -EPROTO);
	CHECK(9, tk_limiter_reset(l, "k", 1) == -EPROTO);
	CHECK(10, tk_limiter_stats(l, &st, sizeof(st)) == -EPROTO);
	CHECK(11, tk_limiter_check(other, "k", 1, 1, &d) == -EPROTO);
	/* The file as it is now: not a zone. */
	CHECK(12, tk_zone_info("t", &info, sizeof(info)) == -EPROTO);
	CHECK(13, tk_zone_verify("t", &info, sizeof(info)) == -EPROTO);
	CHECK(14, tk_zone_sweep("t", 1) == -EPROTO);
	CHECK(15, open_limiter(c->policy, "t") == NULL);
	tk_limiter_close(l);
	tk_limiter_close(other);
	/* A new zone of that name: a new open maps it afresh. */
	CHECK(16, tk_zone_destroy("t") == 0);
	CHECK(17, tk_zone_create("t", NULL) == 0);
	again = open_limiter(c->policy, "t");
	CHECK(18, again && tk_limiter_check(again, "k", 1, 1, &d) == 0);
	tk_limiter_close(again);
}

static void test_truncated_under_checks(void **state)
{
	static const char *const policies[] = {
		"gcra:5/1s", "sliding-window:5/1s",
		"all(gcra:5/1s,fixed-window:9/1m)"
	};
	const off_t sizes[] = { 4096, 0 };
	struct cut c;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		for (j = 0; j < 2; j++) {
			c.size = sizes[j];
			c.policy = policies[i];
			kit_in_child(truncated_child, &c);
		}
}

/* A walk whose callback truncates the zone: the scan faults and the
 * walk returns -EPROTO. */
static int cut_during_walk(void *ctx, uint64_t slot, uint64_t fp,
			   uint64_t state)
{
	(void)slot;
	(void)fp;
	(void)state;
	return truncate(ctx, 4096) == 0 ? 0 : 99;
}

static void walk_child(void *arg)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char path[512];
	int i;

	(void)arg;
	make_zone("w");
	l = open_limiter("gcra:5/1s", "w");
	CHECK(1, l != NULL);
	for (i = 0; i < 16; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		CHECK(2, tk_limiter_check(l, key, strlen(key), 1, &d) == 0);
	}
	kit_zone_path(path, sizeof(path), "w");
	CHECK(3, tk_zone_walk("w", cut_during_walk, path) == -EPROTO);
	CHECK(4, tk_limiter_check(l, "k0", 2, 1, &d) == -EPROTO);
	tk_limiter_close(l);
}

static void test_truncated_during_walk(void **state)
{
	(void)state;
	kit_in_child(walk_child, NULL);
}

/*
 * Census, sweep and info while another thread cuts the file to its
 * header and grows it back (an empty table again): each call succeeds or
 * returns -EPROTO, and nothing leaks (ASan builds check).
 */
static atomic_int flapping;

static void *flap(void *arg)
{
	const char *path = arg;
	struct stat st;
	off_t full;

	if (stat(path, &st) != 0)
		return NULL;
	full = st.st_size;
	while (atomic_load(&flapping)) {
		if (truncate(path, 4096) != 0 || truncate(path, full) != 0)
			break;
	}
	return NULL;
}

static void flap_child(void *arg)
{
	struct tk_zone_info info;
	char path[512];
	pthread_t t;
	int i, rc, faults = 0;

	(void)arg;
	make_zone("f");
	kit_zone_path(path, sizeof(path), "f");
	atomic_store(&flapping, 1);
	CHECK(1, pthread_create(&t, NULL, flap, path) == 0);
	for (i = 0; i < 300; i++) {
		rc = tk_zone_info("f", &info, sizeof(info));
		CHECK(2, rc == 0 || rc == -EPROTO || rc == -EINVAL);
		faults += rc != 0;
		rc = tk_zone_sweep("f", 1);
		CHECK(3, rc == 0 || rc == -EPROTO || rc == -EINVAL);
	}
	atomic_store(&flapping, 0);
	pthread_join(t, NULL);
	(void)faults;
}

static void test_flapping_file(void **state)
{
	(void)state;
	kit_in_child(flap_child, NULL);
}

/* Two threads checking while the file is cut: both get -EPROTO. */
struct racer {
	struct tk_limiter *l;
	atomic_int *started;
	int rc;
};

static void *check_until_error(void *arg)
{
	struct racer *r = arg;
	struct tk_decision d;
	char key[16];
	unsigned int i = 0;

	atomic_fetch_add(r->started, 1);
	do {
		snprintf(key, sizeof(key), "k%u", i++ % 50);
		r->rc = tk_limiter_check(r->l, key, strlen(key), 1, &d);
	} while (r->rc == 0);
	return NULL;
}

static void threads_child(void *arg)
{
	const char *policy = arg;
	struct tk_limiter *l;
	atomic_int started = 0;
	struct racer r[2];
	pthread_t t[2];
	char path[512];
	int i;

	make_zone("m");
	l = open_limiter(policy, "m");
	CHECK(1, l != NULL);
	r[0] = r[1] = (struct racer){ l, &started, 0 };
	for (i = 0; i < 2; i++)
		CHECK(2, pthread_create(&t[i], NULL, check_until_error,
					&r[i]) == 0);
	while (atomic_load(&started) < 2)
		;
	usleep(20000);
	kit_zone_path(path, sizeof(path), "m");
	CHECK(3, truncate(path, 0) == 0);
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (r[i].rc != -EPROTO)
			fprintf(stderr, "thread %d: %d\n", i, r[i].rc);
		CHECK(4, r[i].rc == -EPROTO);
	}
	tk_limiter_close(l);
}

static void test_threads_checking(void **state)
{
	(void)state;
	kit_in_child(threads_child, "gcra:1000/1s");
	/* Block states and multi-key steps on the zero pages too. */
	kit_in_child(threads_child, "sliding-window:1000/1s");
	kit_in_child(threads_child, "all(gcra:1000/1s,fixed-window:9000/1m)");
}

/*
 * The application's handler, installed before the first attach, still
 * gets every SIGBUS that is not from a zone: a raise() and a fault on a
 * file the application mapped and truncated itself.
 */
static volatile sig_atomic_t app_calls;
static sigjmp_buf app_env;

static void app_siginfo(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	app_calls++;
	if (si->si_code > 0)
		siglongjmp(app_env, 1);
}

static void app_plain(int sig)
{
	(void)sig;
	app_calls++;
}

static void own_fault(void)
{
	char path[512];
	volatile char *p;
	int fd;

	snprintf(path, sizeof(path), "%s/own-file", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(20, fd >= 0 && ftruncate(fd, 8192) == 0);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(21, p != MAP_FAILED && ftruncate(fd, 0) == 0);
	if (sigsetjmp(app_env, 1) == 0) {
		p[4096] = 1; /* past the end: SIGBUS */
		CHECK(22, 0);
	}
	munmap((void *)p, 8192);
	close(fd);
	unlink(path);
}

static void chain_child(void *arg)
{
	int plain = *(int *)arg;
	struct sigaction sa;
	struct tk_limiter *l;
	struct tk_decision d;

	memset(&sa, 0, sizeof(sa));
	if (plain) {
		sa.sa_handler = app_plain;
	} else {
		sa.sa_sigaction = app_siginfo;
		sa.sa_flags = SA_SIGINFO;
	}
	CHECK(1, sigaction(SIGBUS, &sa, NULL) == 0);
	make_zone("c");
	l = open_limiter("gcra:5/1s", "c");
	CHECK(2, l && tk_limiter_check(l, "k", 1, 1, &d) == 0);
	CHECK(3, raise(SIGBUS) == 0 && app_calls == 1);
	if (!plain) {
		own_fault();
		CHECK(4, app_calls == 2);
	}
	/* Still guarded after passing signals on. */
	{
		char path[512];

		kit_zone_path(path, sizeof(path), "c");
		CHECK(5, truncate(path, 0) == 0);
		CHECK(6, tk_limiter_check(l, "k", 1, 1, &d) == -EPROTO);
	}
	tk_limiter_close(l);
}

static void test_previous_handler_chained(void **state)
{
	int plain;

	(void)state;
	for (plain = 0; plain < 2; plain++)
		kit_in_child(chain_child, &plain);
}

/*
 * A handler installed over ours after the first attach (as Apache's MPMs
 * do in every child): the next store open puts ours back, chaining to it.
 */
static void replaced_child(void *arg)
{
	struct tk_limiter *l, *again;
	struct sigaction sa;
	struct tk_decision d;
	char path[512];

	(void)arg;
	make_zone("r");
	l = open_limiter("gcra:5/1s", "r");
	CHECK(1, l && tk_limiter_check(l, "k", 1, 1, &d) == 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_siginfo;
	sa.sa_flags = SA_SIGINFO;
	CHECK(2, sigaction(SIGBUS, &sa, NULL) == 0);
	again = open_limiter("gcra:5/1s", "r");
	CHECK(3, again != NULL);
	kit_zone_path(path, sizeof(path), "r");
	CHECK(4, truncate(path, 0) == 0);
	CHECK(5, tk_limiter_check(l, "k", 1, 1, &d) == -EPROTO);
	CHECK(6, app_calls == 0);
	own_fault();
	CHECK(7, app_calls == 1);
	tk_limiter_close(again);
	tk_limiter_close(l);
}

/* A replacing handler that chains to the one it replaced: ours. */
static struct sigaction replaced;

static void chaining_app(int sig, siginfo_t *si, void *uc)
{
	app_calls++;
	replaced.sa_sigaction(sig, si, uc);
}

static void loop_child(void *arg)
{
	struct tk_limiter *l, *again;
	struct sigaction sa;
	struct tk_decision d;

	(void)arg;
	make_zone("o");
	l = open_limiter("gcra:5/1s", "o");
	CHECK(1, l && tk_limiter_check(l, "k", 1, 1, &d) == 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = chaining_app;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	CHECK(2, sigaction(SIGBUS, &sa, &replaced) == 0);
	CHECK(3, replaced.sa_flags & SA_SIGINFO);
	again = open_limiter("gcra:5/1s", "o");
	CHECK(4, again != NULL);
	/* ours -> chaining_app -> ours: the default action, not a loop. */
	own_fault();
	CHECK(5, 0);
}

static void test_replaced_handler(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	kit_in_child(replaced_child, NULL);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		loop_child(NULL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
}

/* A child that checks a key of zone "d" with SIGBUS at @action, raises
 * SIGBUS and, if it lives, exits @code: its pid. */
static pid_t raise_in_child(void (*action)(int), int code)
{
	struct tk_limiter *l;
	struct tk_decision d;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGBUS, action); /* not cmocka's */
		make_zone("d");
		l = open_limiter("gcra:5/1s", "d");
		if (!l || tk_limiter_check(l, "k", 1, 1, &d) != 0)
			_exit(1);
		raise(SIGBUS);
		_exit(code);
	}
	return pid;
}

/* Without a handler of its own, a SIGBUS not from a zone still kills the
 * process as SIGBUS (and an ignored one sent by raise() is ignored). */
static void test_default_action_kept(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = raise_in_child(SIG_DFL, 2);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
	kit_wait_exit(raise_in_child(SIG_IGN, 0), 0);
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_under_checks),
		cmocka_unit_test(test_truncated_during_walk),
		cmocka_unit_test(test_flapping_file),
		cmocka_unit_test(test_threads_checking),
		cmocka_unit_test(test_previous_handler_chained),
		cmocka_unit_test(test_default_action_kept),
		cmocka_unit_test(test_replaced_handler),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
