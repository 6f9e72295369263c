/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reclaimer.c - the periodic sweeping thread the stores share.
 */
#include "clock.h"
#include "fork.h"
#include "store/reclaimer.h"

#include <time.h>

static void *reclaimer_main(void *arg)
{
	struct tk__reclaimer *r = arg;
	struct timespec deadline;
	uint64_t now;

	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		pthread_mutex_unlock(&r->lock);
		if (tk__clock_read(r->clock, &now) == 0)
			r->sweep(r->arg, now);
		pthread_mutex_lock(&r->lock);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += (time_t)(r->interval / 1000000000u);
		deadline.tv_nsec += (long)(r->interval % 1000000000u);
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		if (!r->stopping)
			pthread_cond_timedwait(&r->cond, &r->lock, &deadline);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

void tk__reclaimer_init(struct tk__reclaimer *r,
			void (*sweep)(void *arg, uint64_t now), void *arg,
			struct tk_clock *clock, uint64_t interval)
{
	r->sweep = sweep;
	r->arg = arg;
	r->clock = clock;
	r->interval = interval;
	atomic_init(&r->gen, 0);
	r->stopping = 0;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

int tk__reclaimer_start(struct tk__reclaimer *r)
{
	uint64_t want = tk__fork_generation() + 1;
	uint64_t cur = tk_atomic_load_u64(&r->gen, TK_MO_RELAXED);

	if (cur == want)
		return 0;
	if (!tk_atomic_cas_u64(&r->gen, &cur, want, TK_MO_ACQ_REL))
		return 0; /* another thread of this process starts it */
	if (cur != 0) {
		/* A parent's thread: the child's copies of the locks it may
		 * have held are not usable; make them fresh. */
		pthread_mutex_init(&r->lock, NULL);
		pthread_cond_init(&r->cond, NULL);
		r->stopping = 0;
	}
	if (pthread_create(&r->thread, NULL, reclaimer_main, r) != 0) {
		tk_atomic_store_u64(&r->gen, 0, TK_MO_RELEASE);
		return -1;
	}
	return 0;
}

void tk__reclaimer_destroy(struct tk__reclaimer *r)
{
	if (tk_atomic_load_u64(&r->gen, TK_MO_ACQUIRE) ==
	    tk__fork_generation() + 1) {
		pthread_mutex_lock(&r->lock);
		r->stopping = 1;
		pthread_cond_signal(&r->cond);
		pthread_mutex_unlock(&r->lock);
		pthread_join(r->thread, NULL);
	}
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}
