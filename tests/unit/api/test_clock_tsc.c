/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_clock_tsc.c - the TSC clock (white-box: the test hooks of
 * clock-tsc.c): within its bound of CLOCK_REALTIME, never backwards on
 * any thread, not even when CLOCK_REALTIME steps back, the system clock
 * where the TSC is not to be trusted, and exact decisions on a limiter.
 *
 * The cases run in order: the first forks children before this process
 * calibrates, the second sees the calibration and the periods a process
 * has by default.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "../../../lib/clock-tsc.h"
#include "../../../lib/test-hooks.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* The bound tk_clock_tsc(3) states. */
#define BOUND_NS 50000
#define MS UINT64_C(1000000)
/* How long a case waits for what preemption can only delay. */
#define PATIENCE_NS (60000 * MS)

/*
 * Preemption is harmless here by construction: a reading is asserted only
 * against the CLOCK_REALTIME reads that bracket it (a preemption widens
 * the bracket, which every assertion allows for), and a case that needs
 * a tight bracket to say anything retries only a wide one, a bounded
 * number of times, after asserting what a wide one can show.  A case
 * that waits for re-anchorings waits for their count, not a duration.
 */

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

/* A reading of the TSC clock taken between two of CLOCK_REALTIME. */
struct bracket {
	uint64_t before, v, after;
};

static struct bracket bracketed(void)
{
	struct bracket b;

	b.before = realtime();
	b.v = tsc_now();
	b.after = realtime();
	return b;
}

/* @b within the bound of CLOCK_REALTIME (shifted by -@back_ns). */
static void assert_within(struct bracket b, uint64_t back_ns)
{
	assert_true(b.v + BOUND_NS + back_ns >= b.before);
	assert_true(b.v <= b.after - back_ns + BOUND_NS);
}

/* 1/8 of @d, and what a calibrated rate's error (below 1/256) adds. */
static uint64_t eighth(uint64_t d)
{
	return d / 8 + d / 256;
}

static void skip_without_tsc(void)
{
	if (tk_clock_kind(tk_clock_tsc()) != TK_CLOCK_TSC) {
		print_message("# the TSC is not usable here: system clock\n");
		skip();
	}
}

/* Writes @text to @dir/@path, making the directories on the way. */
static void write_under(const char *dir, const char *path, const char *text)
{
	char full[256], *slash;
	FILE *f;

	snprintf(full, sizeof(full), "%s/%s", dir, path);
	for (slash = strchr(full + strlen(dir) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		assert_true(mkdir(full, 0700) == 0 || errno == EEXIST);
		*slash = '/';
	}
	f = fopen(full, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/*
 * What tk_clock_tsc() reads in a child of this process (not calibrated
 * yet) whose /proc/cpuinfo lists @flags and whose kernel lists the clock
 * sources @sources (no such file if NULL); 100 if the system clock
 * published a line.
 */
static int kind_with(const char *flags, const char *sources)
{
	char dir[] = "/tmp/tk-tsc-XXXXXX", cmd[64], cpuinfo[256];
	pid_t pid;
	int status, kind;

	assert_non_null(mkdtemp(dir));
	snprintf(cpuinfo, sizeof(cpuinfo),
		 "processor\t: 0\nflags\t\t: %s\n\nprocessor\t: 1\n", flags);
	write_under(dir, "proc/cpuinfo", cpuinfo);
	if (sources)
		write_under(dir,
			    "sys/devices/system/clocksource/clocksource0/"
			    "available_clocksource",
			    sources);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tk__tsc_root = dir;
		kind = tk_clock_kind(tk_clock_tsc());
		_exit(kind == TK_CLOCK_SYSTEM && tk__tsc_anchors ? 100 : kind);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/*
 * Before this process calibrates: the TSC clock only where the CPU says
 * its counter is invariant, the kernel still lists "tsc" among its clock
 * sources (not "tsc-early", not a longer word), and, under a hypervisor,
 * /proc/cpuinfo lists constant_tsc and nonstop_tsc.  Elsewhere the
 * system clock, with nothing calibrated.
 */
static void test_detection(void **state)
{
	int invariant = 0, hypervisor = 0, tsc, guest;
	const char *good = "fpu tsc constant_tsc rdtscp nonstop_tsc";

	(void)state;
#if defined(__x86_64__)
	{
		unsigned int a, b, c, d;

		invariant = __get_cpuid(0x80000000, &a, &b, &c, &d) &&
			    a >= 0x80000007 &&
			    __get_cpuid(0x80000007, &a, &b, &c, &d) &&
			    (d & (1u << 8));
		hypervisor = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31));
	}
#endif
	tsc = invariant ? TK_CLOCK_TSC : TK_CLOCK_SYSTEM;
	guest = hypervisor ? TK_CLOCK_SYSTEM : tsc;
	print_message("# invariant TSC: %d, hypervisor: %d\n", invariant,
		      hypervisor);
	assert_int_equal(kind_with(good, "tsc hpet acpi_pm \n"), tsc);
	assert_int_equal(kind_with(good, "hpet acpi_pm tsc\n"), tsc);
	assert_int_equal(kind_with(good, NULL), tsc);
	assert_int_equal(kind_with(good, "tsc-early hpet acpi_pm\n"),
			 TK_CLOCK_SYSTEM);
	assert_int_equal(kind_with(good, "hpet tscx acpi_pm\n"),
			 TK_CLOCK_SYSTEM);
	assert_int_equal(kind_with("fpu tsc constant_tsc rdtscp", "tsc\n"),
			 guest);
	assert_int_equal(
		kind_with("fpu nonstop_tsc rdtscp constant_tsc_x", "tsc\n"),
		guest);
}

/*
 * Every millisecond, a reading within the bound of its bracket, for 2 s
 * and until 5 re-anchorings (the calibration's line and periods doubling
 * from 50 ms to 1 s) and 200 brackets tighter than the bound were seen.
 */
static void test_within_bound_of_realtime(void **state)
{
	struct bracket b;
	uint64_t start, worst = 0, anchors, tight = 0;
	struct timespec ms = { 0, 1000000 };

	(void)state;
	skip_without_tsc();
	anchors = tk__tsc_anchors;
	start = realtime();
	do {
		b = bracketed();
		assert_within(b, 0);
		tight += b.after - b.before < BOUND_NS;
		if (b.v < b.before && b.before - b.v > worst)
			worst = b.before - b.v;
		if (b.v > b.after && b.v - b.after > worst)
			worst = b.v - b.after;
		nanosleep(&ms, NULL);
	} while ((b.after - start < 2000 * MS || tight < 200 ||
		  tk__tsc_anchors - anchors < 5) &&
		 b.after - start < PATIENCE_NS);
	print_message("# worst distance outside the bracket: %llu ns, "
		      "%llu re-anchorings, %llu tight brackets\n",
		      (unsigned long long)worst,
		      (unsigned long long)(tk__tsc_anchors - anchors),
		      (unsigned long long)tight);
	assert_true(tk__tsc_anchors - anchors >= 5);
	assert_true(tight >= 200);
}

/* Periods of at most @ms ms from now on: reads until a line of at most
 * that period is current (the cap applies from the next re-anchoring). */
static void cap_period(uint64_t ms)
{
	uint64_t anchors = tk__tsc_anchors, until = realtime() + PATIENCE_NS;

	tk__tsc_period_cap_ns = ms * MS;
	while (tk__tsc_anchors < anchors + 2 && realtime() < until)
		tsc_now();
	assert_true(tk__tsc_anchors >= anchors + 2);
}

struct reader {
	tk_atomic_u64 *stop;
	uint64_t reads, backwards;
};

static void *read_until(void *arg)
{
	struct reader *r = arg;
	uint64_t prev = 0, now;
	int i;

	while (!tk_atomic_load_u64(r->stop, TK_MO_RELAXED)) {
		for (i = 0; i < 1000; i++) {
			tk_clock_now(tk_clock_tsc(), &now);
			r->backwards += now < prev;
			prev = now;
		}
		r->reads += 1000;
	}
	return NULL;
}

/* @n threads read for @ms ms and until @anchors more lines were
 * published; each one's readings never decrease. */
static void read_in_threads(int n, uint64_t ms, uint64_t anchors)
{
	pthread_t t[8];
	struct reader r[8] = { { 0 } };
	tk_atomic_u64 stop = 0;
	uint64_t start = realtime(), reads = 0, now;
	struct timespec tick = { 0, 1000000 };
	int i;

	anchors += tk__tsc_anchors;
	for (i = 0; i < n; i++) {
		r[i].stop = &stop;
		assert_int_equal(pthread_create(&t[i], NULL, read_until, &r[i]),
				 0);
	}
	do {
		nanosleep(&tick, NULL);
		now = realtime();
	} while ((now - start < ms * MS || tk__tsc_anchors < anchors) &&
		 now - start < PATIENCE_NS);
	tk_atomic_store_u64(&stop, 1, TK_MO_RELAXED);
	for (i = 0; i < n; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(r[i].backwards, 0);
		reads += r[i].reads;
	}
	assert_true(reads > 0);
	assert_true(tk__tsc_anchors >= anchors);
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
	read_in_threads(4, 400, 100);
	print_message("# %llu re-anchorings\n",
		      (unsigned long long)(tk__tsc_anchors - anchors));
}

/* Read for @ms ms and until @anchors more lines were published, on
 * this thread, asserting no step back; the last reading. */
static uint64_t read_for(uint64_t ms, uint64_t anchors)
{
	uint64_t start = realtime(), prev = 0, now, r;

	anchors += tk__tsc_anchors;
	do {
		now = tsc_now();
		assert_true(now >= prev);
		prev = now;
		r = realtime();
	} while ((r - start < ms * MS || tk__tsc_anchors < anchors) &&
		 r - start < PATIENCE_NS);
	assert_true(tk__tsc_anchors >= anchors);
	return now;
}

/*
 * CLOCK_REALTIME as re-anchoring sees it steps back 3 ms after t0: the
 * clock does not step back.  It falls behind CLOCK_REALTIME by at most
 * 1/8 of the time since t0 (1/16 while re-anchored on time; 1/8 where a
 * preemption leaves a line past its period), never below CLOCK_REALTIME
 * less 3 ms.  A bracket 8 ms after t0 shows a faster slew (1/4: 2 ms
 * behind), and one within 20 ms of t0 that it has not dropped to
 * CLOCK_REALTIME less 3 ms yet (as a re-anchoring that met it at once
 * would); a later one shows neither, and the step is tried again, up to
 * 20 times.
 */
static void step_back(void)
{
	struct bracket b;
	uint64_t t0;
	int tries;

	for (tries = 0;; tries++) {
		assert_true(tries < 20);
		read_for(5, 5);
		/* at t0, a reading within the bound (a line in its period) */
		b = bracketed();
		assert_within(b, 0);
		t0 = b.before;
		tk__tsc_realtime_shift_ns = -3 * (int64_t)MS;
		(void)read_for(8, 0);
		b = bracketed();
		assert_true(b.v + 3 * MS + BOUND_NS >= b.before);
		assert_true(b.v <= b.after + BOUND_NS);
		assert_true(b.v + eighth(b.before - t0) + BOUND_NS >= b.before);
		if (b.before - t0 < 20 * MS) {
			print_message("# step back: %d tries\n", tries + 1);
			return;
		}
		/* too late to tell: back to CLOCK_REALTIME, and again */
		tk__tsc_realtime_shift_ns = 0;
	}
}

/*
 * After the step back, with readers on other threads, the clock meets
 * CLOCK_REALTIME less 3 ms and follows it; when CLOCK_REALTIME steps
 * forward again, the clock steps with it within a period.
 */
static void test_realtime_steps(void **state)
{
	(void)state;
	skip_without_tsc();
	cap_period(1);
	step_back();
	/* 3 ms at 1/16: 48 ms of 1 ms periods, sooner if preempted */
	read_in_threads(2, 300, 100);
	(void)read_for(0, 2);
	assert_within(bracketed(), 3 * MS);
	tk__tsc_realtime_shift_ns = 0;
	(void)read_for(0, 2);
	assert_within(bracketed(), 0);
	tk__tsc_period_cap_ns = 0;
}

/*
 * A child of fork() keeps the calibration: it reads the TSC clock at
 * once, within the bound, never below what its parent last read, and
 * re-anchors on its own.  "At once" (no new calibration, a 20 ms pause)
 * needs a bracket tighter than 10 ms: a child that got no such bracket
 * exits 2, and another is forked, up to 20 times.
 */
static void test_fork_keeps_calibration(void **state)
{
	uint64_t before;
	pid_t pid;
	int status, tries;

	(void)state;
	skip_without_tsc();
	cap_period(1);
	for (tries = 0;; tries++) {
		assert_true(tries < 20);
		before = tsc_now();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct bracket b = bracketed();
			int ok =
				tk_clock_kind(tk_clock_tsc()) == TK_CLOCK_TSC &&
				b.v >= before && b.v + BOUND_NS >= b.before &&
				b.v <= b.after + BOUND_NS;
			uint64_t anchors = tk__tsc_anchors;
			uint64_t until = realtime() + PATIENCE_NS;

			while (tk__tsc_anchors <= anchors + 5 &&
			       realtime() < until)
				tsc_now();
			if (!ok || tk__tsc_anchors <= anchors + 5)
				_exit(1);
			_exit(b.after - b.before < 10 * MS ? 0 : 2);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) != 2)
			break;
	}
	assert_int_equal(WEXITSTATUS(status), 0);
	tk__tsc_period_cap_ns = 0;
}

/*
 * A line anchored within [t_pre, t_post] (t_pre past its predecessor's
 * period, so this thread re-anchors), then the writer's lock held: no
 * re-anchoring, and readers past the period go on at 7/8 of the rate.
 * At real time R the clock is within the bound of R less 1/8 of the time
 * since the period ended: at least R - (R - t_pre) / 8 and at most
 * R - (R - t_post - P) / 8 (P, the period, below 2 ms), which @b's ends
 * bracket.
 */
static void assert_slow_since(struct bracket b, uint64_t t_pre, uint64_t t_post)
{
	uint64_t late;

	assert_true(b.v + eighth(b.before - t_pre) + BOUND_NS >= b.before);
	assert_true(b.after - t_post > 2 * MS);
	late = b.after - t_post - 2 * MS;
	assert_true(b.v + late / 8 <= b.after + late / 256 + BOUND_NS);
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
	uint64_t anchors, t_pre, t_post;
	pid_t pid;
	int status;

	(void)state;
	skip_without_tsc();
	cap_period(1);
	usleep(2000);
	t_pre = realtime();
	(void)tsc_now();
	t_post = realtime();
	assert_int_equal(tk__tsc_hold_writer(1), 0);
	anchors = tk__tsc_anchors;
	read_in_threads(2, 40, 0);
	(void)read_for(20, 0);
	assert_slow_since(bracketed(), t_pre, t_post);
	assert_int_equal(tk__tsc_anchors, anchors);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t until = realtime() + PATIENCE_NS;

		while (tk__tsc_anchors <= anchors + 5 && realtime() < until)
			tsc_now();
		_exit(tk__tsc_anchors > anchors + 5 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(tk__tsc_anchors, anchors);
	assert_int_equal(tk__tsc_hold_writer(0), 0);
	(void)read_for(0, 2);
	assert_within(bracketed(), 0);
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
	(void)tk__tsc_hold_writer(0);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detection),
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
