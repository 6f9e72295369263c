/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_clock_tsc.c - the TSC clock (white-box: the test hooks of
 * clock-tsc.c): within its bound of CLOCK_REALTIME, never backwards on
 * any thread, not even when CLOCK_REALTIME steps back, the system clock
 * where the TSC is not to be trusted, and exact decisions on a limiter.
 *
 * The cases run in order: the first sees the calibration and the
 * periods a process has by default.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "../../../lib/clock-tsc.h"
#include "../../../lib/test-hooks.h"

/* The bound tk_clock_tsc(3) states. */
#define BOUND_NS 50000
#define MS UINT64_C(1000000)

static uint64_t realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t tsc_now(void)
{
	uint64_t ns = 0;

	assert_int_equal(tk_clock_now(tk_clock_tsc(), &ns), 0);
	return ns;
}

static void skip_without_tsc(void)
{
	if (tk_clock_kind(tk_clock_tsc()) != TK_CLOCK_TSC) {
		print_message("# the TSC is not usable here: system clock\n");
		skip();
	}
}

/*
 * Every millisecond for 2 s: a reading bracketed by two of
 * CLOCK_REALTIME is within the bound of the bracket (the bracket is the
 * scheduling slack, however long a preemption makes it).  2 s cover the
 * calibration, the periods doubling from 50 ms, and two of 1 s.
 */
static void test_within_bound_of_realtime(void **state)
{
	uint64_t r1, v, r2, start, worst = 0, anchors;
	struct timespec ms = { 0, 1000000 };

	(void)state;
	skip_without_tsc();
	anchors = tk__tsc_anchors;
	start = realtime();
	do {
		r1 = realtime();
		v = tsc_now();
		r2 = realtime();
		assert_true(v + BOUND_NS >= r1);
		assert_true(v <= r2 + BOUND_NS);
		if (v < r1 && r1 - v > worst)
			worst = r1 - v;
		if (v > r2 && v - r2 > worst)
			worst = v - r2;
		nanosleep(&ms, NULL);
	} while (r2 - start < 2000 * MS);
	print_message("# worst distance outside the bracket: %llu ns, "
		      "%llu re-anchorings\n",
		      (unsigned long long)worst,
		      (unsigned long long)(tk__tsc_anchors - anchors));
	/* after 50, 150, 350, 750 and 1550 ms: at least 5 in 2 s */
	assert_true(tk__tsc_anchors - anchors >= 5);
}

/* Periods of at most @ms ms from now on: reads until a line of at most
 * that period is current (the cap applies from the next re-anchoring). */
static void cap_period(uint64_t ms)
{
	uint64_t anchors = tk__tsc_anchors, until = realtime() + 3000 * MS;

	tk__tsc_period_cap_ns = ms * MS;
	while (tk__tsc_anchors < anchors + 2 && realtime() < until)
		tsc_now();
	assert_true(tk__tsc_anchors >= anchors + 2);
}

struct reader {
	uint64_t until; /* CLOCK_REALTIME, ns */
	uint64_t reads, backwards;
};

static void *read_until(void *arg)
{
	struct reader *r = arg;
	uint64_t prev = 0, now;
	int i;

	while (realtime() < r->until) {
		for (i = 0; i < 1000; i++) {
			tk_clock_now(tk_clock_tsc(), &now);
			r->backwards += now < prev;
			prev = now;
		}
		r->reads += 1000;
	}
	return NULL;
}

/* @n threads read for @ms ms; each one's readings never decrease. */
static void read_in_threads(int n, uint64_t ms)
{
	pthread_t t[8];
	struct reader r[8] = { { 0 } };
	uint64_t until = realtime() + ms * MS, reads = 0;
	int i;

	for (i = 0; i < n; i++) {
		r[i].until = until;
		assert_int_equal(pthread_create(&t[i], NULL, read_until, &r[i]),
				 0);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(r[i].backwards, 0);
		reads += r[i].reads;
	}
	assert_true(reads > 0);
}

/* 4 threads, re-anchoring every millisecond: hundreds of new lines
 * published while they read. */
static void test_monotonic_in_threads(void **state)
{
	uint64_t anchors;

	(void)state;
	skip_without_tsc();
	cap_period(1);
	anchors = tk__tsc_anchors;
	read_in_threads(4, 400);
	print_message("# %llu re-anchorings\n",
		      (unsigned long long)(tk__tsc_anchors - anchors));
	assert_true(tk__tsc_anchors - anchors > 50);
}

/* Read for @ms ms on this thread, asserting no step back; the last
 * reading. */
static uint64_t read_for(uint64_t ms)
{
	uint64_t until = realtime() + ms * MS, prev = 0, now;

	do {
		now = tsc_now();
		assert_true(now >= prev);
		prev = now;
	} while (realtime() < until);
	return now;
}

/*
 * CLOCK_REALTIME (as the re-anchoring sees it) steps back 3 ms: the
 * clock does not, while readers on other threads read; it slows down
 * until it meets CLOCK_REALTIME, then follows it again.  Then it steps
 * forward: the clock steps with it within a period.
 */
static void test_realtime_steps(void **state)
{
	uint64_t v, r, t0;

	(void)state;
	skip_without_tsc();
	cap_period(1);
	read_for(20);
	t0 = realtime();
	tk__tsc_realtime_shift_ns = -3 * (int64_t)MS;
	v = read_for(5);
	r = realtime();
	/* Never below CLOCK_REALTIME as re-anchoring sees it; not there
	 * yet, unless this thread was preempted long enough for a line past
	 * its period (7/8 of the rate) to get there. */
	assert_true(v + BOUND_NS >= r - 3 * MS);
	assert_true(r - t0 > 24 * MS || v > r - 3 * MS + BOUND_NS);
	read_in_threads(2, 300);
	v = tsc_now();
	r = realtime() - 3 * MS;
	assert_true(v + BOUND_NS >= r && v <= realtime() - 3 * MS + BOUND_NS);
	tk__tsc_realtime_shift_ns = 0;
	read_for(20);
	r = realtime();
	v = tsc_now();
	assert_true(v + BOUND_NS >= r && v <= realtime() + BOUND_NS);
	tk__tsc_period_cap_ns = 0;
}

/*
 * A child of fork() keeps the calibration: it reads the TSC clock at
 * once (no new calibration: no 20 ms pause), within the bound, never
 * below what its parent last read, and re-anchors on its own.
 */
static void test_fork_keeps_calibration(void **state)
{
	uint64_t before, anchors;
	pid_t pid;
	int status;

	(void)state;
	skip_without_tsc();
	cap_period(1);
	before = tsc_now();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t r1 = realtime(), v = tsc_now(), r2 = realtime();
		int ok = tk_clock_kind(tk_clock_tsc()) == TK_CLOCK_TSC &&
			 v >= before && v + BOUND_NS >= r1 &&
			 v <= r2 + BOUND_NS && r2 - r1 < 10 * MS;

		anchors = tk__tsc_anchors;
		v = realtime() + 50 * MS;
		while (realtime() < v)
			tsc_now();
		_exit(ok && tk__tsc_anchors > anchors + 5 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	tk__tsc_period_cap_ns = 0;
}

/*
 * While another thread holds the writer's lock (re-anchoring, or
 * preempted doing so), readers past the period go on at 7/8 of the rate:
 * never backwards, behind CLOCK_REALTIME.  A child of fork() takes over
 * a lock its parent's thread held.  Once the lock is free, the clock
 * steps forward to CLOCK_REALTIME.
 */
static void test_writer_held(void **state)
{
	uint64_t anchors, v, r, r1, t0;
	pid_t pid;
	int status;

	(void)state;
	skip_without_tsc();
	cap_period(1);
	/* A line anchored after t0, so its slow rate starts after t0,
	 * however long ago (a loaded machine) the last anchor was. */
	usleep(2000);
	t0 = realtime();
	(void)tsc_now();
	assert_int_equal(tk__tsc_hold_writer(1), 0);
	anchors = tk__tsc_anchors;
	read_in_threads(2, 40);
	read_for(20);
	/* v read between r and r1: a preemption on either side moves only
	 * the real time, which the bounds below allow for. */
	r = realtime();
	v = tsc_now();
	r1 = realtime();
	assert_int_equal(tk__tsc_anchors, anchors);
	/* Behind, at 7/8 of the rate since the line's period ended. */
	assert_true(v < r1 - 1 * MS);
	assert_true(v + (r - t0) / 8 + BOUND_NS >= r);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		read_for(20);
		_exit(tk__tsc_anchors > anchors + 5 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(tk__tsc_hold_writer(0), 0);
	read_for(10);
	assert_true(tk__tsc_anchors > anchors);
	r = realtime();
	v = tsc_now();
	assert_true(v + BOUND_NS >= r && v <= realtime() + BOUND_NS);
	tk__tsc_period_cap_ns = 0;
}

/* Where the TSC is not to be trusted, the system clock, and it says so. */
static void test_fallback(void **state)
{
	uint64_t a, v, b;

	(void)state;
	tk__tsc_no_tsc = 1;
	assert_ptr_equal(tk_clock_tsc(), tk_clock_system());
	assert_int_equal(tk_clock_kind(tk_clock_tsc()), TK_CLOCK_SYSTEM);
	a = realtime();
	assert_int_equal(tk_clock_now(tk_clock_tsc(), &v), 0);
	b = realtime();
	assert_true(a <= v && v <= b);
	tk__tsc_no_tsc = 0;
	assert_int_equal(tk_clock_kind(tk_clock_system()), TK_CLOCK_SYSTEM);
	assert_int_equal(tk_clock_kind(tk_clock_coarse()), TK_CLOCK_COARSE);
	assert_int_equal(tk_clock_kind(NULL), -EINVAL);
#if defined(__x86_64__)
	if (tk_clock_kind(tk_clock_tsc()) == TK_CLOCK_TSC)
		assert_ptr_not_equal(tk_clock_tsc(), tk_clock_system());
#else
	assert_ptr_equal(tk_clock_tsc(), tk_clock_system());
#endif
	tk_clock_free(tk_clock_tsc()); /* ignored */
	assert_int_equal(tk_clock_set(tk_clock_tsc(), 5), -EINVAL);
}

/* A limiter on the TSC clock: GCRA admits exactly its burst. */
static void test_limiter_exact(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	int i, admitted = 0;

	(void)state;
	skip_without_tsc();
	o.clock = tk_clock_tsc();
	assert_int_equal(
		tk_limiter_open(&l, "gcra:1/1h,burst=50", "memory", &o), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		admitted += d.allowed;
	}
	assert_int_equal(admitted, 50);
	tk_limiter_close(l);
}

/* A failed case leaves no hook set for the next. */
static int reset_hooks(void **state)
{
	(void)state;
	tk__tsc_realtime_shift_ns = 0;
	tk__tsc_period_cap_ns = 0;
	tk__tsc_no_tsc = 0;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_within_bound_of_realtime,
					  reset_hooks),
		cmocka_unit_test_teardown(test_monotonic_in_threads,
					  reset_hooks),
		cmocka_unit_test_teardown(test_realtime_steps, reset_hooks),
		cmocka_unit_test_teardown(test_fork_keeps_calibration,
					  reset_hooks),
		cmocka_unit_test_teardown(test_writer_held, reset_hooks),
		cmocka_unit_test_teardown(test_fallback, reset_hooks),
		cmocka_unit_test_teardown(test_limiter_exact, reset_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
