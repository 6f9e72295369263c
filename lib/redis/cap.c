/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cap.c - max_connections=N: at most N connections to each server from
 * this process.
 *
 * - Without it each thread keeps a connection of its own (conn.c): as
 *   many connections as threads that ever checked.
 * - With it a thread takes a connection for one call of the store (from
 *   tk__redis_deadline_begin() to tk__redis_deadline_end()) and gives it
 *   back when the call ends, so N connections serve any number of
 *   threads; a call that reaches several servers (a cluster's batch)
 *   holds one of each.
 * - A thread that finds all N taken waits on the pool's condition
 *   variable, at most until its call's deadline: then -ETIMEDOUT, the
 *   error of a reply that came too late.
 * - The pool's lock orders every claim, creation and give-back of a
 *   capped pool, so @made counts exactly the conns in its list.
 */
#include "redis/conn.h"

#include <errno.h>
#include <time.h>

/* Servers one call may hold a connection to: a cluster's masters. */
#define HELD_MAX 64

static __thread struct {
	struct tk__redis_pool *pool;
	struct tk__redis_conn *c;
} held[HELD_MAX];
static __thread unsigned int nheld;

int tk__redis_cap_init(struct tk__redis_pool *pool)
{
	pthread_condattr_t a;
	int rc;

	pool->cap_ready = 0;
	if (pthread_condattr_init(&a))
		return -ENOMEM;
	/* The call's deadline is on the monotonic clock. */
	rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC) ||
	     pthread_cond_init(&pool->freed, &a);
	pthread_condattr_destroy(&a);
	if (rc)
		return -ENOMEM;
	if (pthread_mutex_init(&pool->lock, NULL)) {
		pthread_cond_destroy(&pool->freed);
		return -ENOMEM;
	}
	pool->cap_ready = 1;
	return 0;
}

void tk__redis_cap_destroy(struct tk__redis_pool *pool)
{
	if (!pool->cap_ready)
		return;
	pthread_cond_destroy(&pool->freed);
	pthread_mutex_destroy(&pool->lock);
	pool->cap_ready = 0;
}

/* A free conn, or a new one below the cap; NULL: wait.  Under lock. */
static struct tk__redis_conn *take_locked(struct tk__redis_pool *pool, int *rc)
{
	struct tk__redis_conn *c = tk__redis_conn_claim(pool, 0);

	if (c || pool->made >= pool->spec->max_connections)
		return c;
	c = tk__redis_conn_claim(pool, 1);
	if (c)
		pool->made++;
	else
		*rc = -ENOMEM;
	return c;
}

int tk__redis_cap_take(struct tk__redis_pool *pool, struct tk__redis_conn **out)
{
	struct tk__redis_conn *c = NULL;
	struct timespec until;
	uint64_t left, ns;
	unsigned int i;
	int rc = 0, waited = 0;

	for (i = 0; i < nheld; i++)
		if (held[i].pool == pool) {
			*out = held[i].c;
			return 0;
		}
	if (nheld == HELD_MAX)
		return -ENOMEM;
	left = tk__redis_deadline_left();
	clock_gettime(CLOCK_MONOTONIC, &until);
	ns = (uint64_t)until.tv_nsec + (left < UINT64_C(1) << 62 ? left : 0);
	until.tv_sec += (time_t)(ns / 1000000000u);
	until.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&pool->lock);
	while (!(c = take_locked(pool, &rc)) && rc == 0) {
		if (left == 0 || waited == ETIMEDOUT) {
			rc = -ETIMEDOUT;
			break;
		}
		/* Without a deadline (none is set outside a call) a thread
		 * waits as long as it takes. */
		waited = left >= UINT64_C(1) << 62
				 ? pthread_cond_wait(&pool->freed, &pool->lock)
				 : pthread_cond_timedwait(&pool->freed,
							  &pool->lock, &until);
	}
	pthread_mutex_unlock(&pool->lock);
	if (rc)
		return rc;
	held[nheld].pool = pool;
	held[nheld++].c = c;
	*out = c;
	return 0;
}

void tk__redis_cap_release(void)
{
	unsigned int i;

	for (i = 0; i < nheld; i++) {
		pthread_mutex_lock(&held[i].pool->lock);
		tk__redis_conn_give_back(held[i].c);
		pthread_cond_signal(&held[i].pool->freed);
		pthread_mutex_unlock(&held[i].pool->lock);
	}
	nheld = 0;
}
