/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_rcu.c - the library's inlined RCU read side (lib/rcu.h) against
 * liburcu-bp's grace periods: a grace period waits for every read-side
 * section that began before it, nested sections included, and for no
 * thread outside one.  (White-box, linked statically.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "rcu.h"

struct reader {
	int nest;	  /* sections entered inside the outermost one */
	atomic_int in;	  /* 1: the reader is in its section */
	atomic_int done;  /* 1: the reader's section is over (soon) */
	atomic_int leave; /* 1: the reader thread may exit */
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void *read_side(void *arg)
{
	struct reader *r = arg;
	int i;

	tk__rcu_read_lock();
	for (i = 0; i < r->nest; i++) {
		tk__rcu_read_lock();
		tk__rcu_read_unlock();
	}
	atomic_store(&r->in, 1);
	sleep_ms(200);
	atomic_store(&r->done, 1);
	tk__rcu_read_unlock();
	while (!atomic_load(&r->leave))
		sleep_ms(1);
	return NULL;
}

static void wait_in(struct reader *r)
{
	while (!atomic_load(&r->in))
		sleep_ms(1);
}

static void grace_waits(int nest)
{
	struct reader r = { .nest = nest };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, read_side, &r), 0);
	wait_in(&r);
	tk__rcu_synchronize();
	assert_int_equal(atomic_load(&r.done), 1);
	atomic_store(&r.leave, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void test_grace_period_waits_for_reader(void **state)
{
	(void)state;
	grace_waits(0);
}

/* An inner section's end is not the outer section's. */
static void test_grace_period_waits_for_nested_reader(void **state)
{
	(void)state;
	grace_waits(3);
}

/*
 * A thread that left its sections (and stays alive) holds up no grace
 * period: synchronize returns, well within the alarm.
 */
static void test_idle_reader_not_waited(void **state)
{
	struct reader r = { .nest = 1 };
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, read_side, &r), 0);
	while (!atomic_load(&r.done))
		sleep_ms(1);
	sleep_ms(20); /* out of its section, waiting to leave */
	alarm(30);
	tk__rcu_synchronize();
	tk__rcu_synchronize();
	alarm(0);
	atomic_store(&r.leave, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grace_period_waits_for_reader),
		cmocka_unit_test(test_grace_period_waits_for_nested_reader),
		cmocka_unit_test(test_idle_reader_not_waited),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
