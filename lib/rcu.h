/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcu.h - read-side critical sections and grace periods (urcu-bp).
 *
 * The wrappers exist for one reason: liburcu is not built with
 * ThreadSanitizer, so TSan cannot see that synchronize_rcu() waits for
 * every read-side section that began before it.  Under TSan each section
 * end "releases" and each grace period "acquires" one sync object, which
 * is exactly the guarantee RCU gives; in other builds they compile to the
 * plain liburcu calls.
 */
#ifndef TK_RCU_H
#define TK_RCU_H

/*
 * Not _LGPL_SOURCE: liburcu's inlined read side accesses the reader
 * registry through a type that claims 128-byte alignment the registry's
 * allocator does not give (UBSan reports it).  The read side below is the
 * same code (urcu/static/urcu-bp.h, _urcu_bp_read_lock() and
 * _urcu_bp_read_unlock()), reaching the reader's counter, the first
 * member of its registry entry, as the unsigned long it is.  Inlined, a
 * read-side section costs no call into liburcu and, with TLS descriptors
 * (-mtls-dialect=gnu2, configure.ac), no __tls_get_addr() call either.
 */
#include <stddef.h>
#include <urcu/urcu-bp.h>
#include <urcu/static/urcu-bp.h>

_Static_assert(offsetof(struct urcu_bp_reader, ctr) == 0,
	       "the reader's counter starts its registry entry");

#if defined(__SANITIZE_THREAD__)
#define TK__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TK__TSAN 1
#endif
#endif

#ifdef TK__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char tk__rcu_tsan_sync;
#define tk__tsan_release() __tsan_release(&tk__rcu_tsan_sync)
#define tk__tsan_acquire() __tsan_acquire(&tk__rcu_tsan_sync)
#else
#define tk__tsan_release() ((void)0)
#define tk__tsan_acquire() ((void)0)
#endif

#ifdef TK__TSAN
/* liburcu is not instrumented: under TSan, its own calls. */
static inline void tk__rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

static inline void tk__rcu_read_unlock(void)
{
	tk__tsan_release();
	urcu_bp_read_unlock();
}

/* Under TSan, never: the sections below are not annotated. */
static inline int tk__rcu_light(void)
{
	return 0;
}

static inline unsigned long *tk__rcu_light_lock(void)
{
	tk__rcu_read_lock();
	return NULL;
}

static inline void tk__rcu_light_unlock(unsigned long *ctr)
{
	(void)ctr;
	tk__rcu_read_unlock();
}
#else
/* This thread's reader counter, registering the thread on first use. */
static inline unsigned long *tk__rcu_counter(void)
{
	struct urcu_bp_reader *r = URCU_TLS(urcu_bp_reader);

	if (caa_unlikely(!r)) {
		urcu_bp_register();
		r = URCU_TLS(urcu_bp_reader);
	}
	return (unsigned long *)(void *)r;
}

/* Enter a read-side critical section (nests). */
static inline void tk__rcu_read_lock(void)
{
	unsigned long *ctr = tk__rcu_counter();
	unsigned long tmp;

	cmm_barrier(); /* not reordered with a mutex */
	tmp = *ctr;
	if (caa_likely(!(tmp & URCU_BP_GP_CTR_NEST_MASK))) {
		/* Outermost: take the current grace-period phase. */
		CMM_STORE_SHARED(*ctr, CMM_LOAD_SHARED(urcu_bp_gp.ctr));
		urcu_bp_smp_mb_slave(); /* the section's accesses after it */
	} else {
		CMM_STORE_SHARED(*ctr, tmp + URCU_BP_GP_COUNT);
	}
}

/* Leave it; the section's accesses happen before the count drops. */
static inline void tk__rcu_read_unlock(void)
{
	unsigned long *ctr = (unsigned long *)(void *)URCU_TLS(urcu_bp_reader);
	unsigned long tmp = *ctr;

	urcu_bp_smp_mb_slave();
	CMM_STORE_SHARED(*ctr, tmp - URCU_BP_GP_COUNT);
	cmm_barrier();
}

/*
 * A read-side section of a hot path, where tk__rcu_light() said that
 * grace periods use membarrier(2), so that readers need only compiler
 * barriers: the steps of tk__rcu_read_lock() without testing that each
 * time, returning the thread's counter for tk__rcu_light_unlock(), which
 * then does not look it up again (a thread's registry entry stays where
 * it is while the thread lives).  Nests with the plain calls.
 * liburcu-bp decides when it initialises, and only ever from "no" to
 * "yes", so a caller may ask once (at a store's open, say): the plain
 * calls are right either way.
 */
static inline int tk__rcu_light(void)
{
	return urcu_bp_has_sys_membarrier;
}

static inline unsigned long *tk__rcu_light_lock(void)
{
	unsigned long *ctr = tk__rcu_counter();
	unsigned long tmp;

	cmm_barrier(); /* not reordered with a mutex */
	tmp = *ctr;
	if (caa_likely(!(tmp & URCU_BP_GP_CTR_NEST_MASK)))
		CMM_STORE_SHARED(*ctr, CMM_LOAD_SHARED(urcu_bp_gp.ctr));
	else
		CMM_STORE_SHARED(*ctr, tmp + URCU_BP_GP_COUNT);
	cmm_barrier(); /* urcu_bp_smp_mb_slave() with membarrier(2) */
	return ctr;
}

static inline void tk__rcu_light_unlock(unsigned long *ctr)
{
	unsigned long tmp = *ctr;

	cmm_barrier(); /* urcu_bp_smp_mb_slave() with membarrier(2) */
	CMM_STORE_SHARED(*ctr, tmp - URCU_BP_GP_COUNT);
	cmm_barrier();
}
#endif

/* Never inside a read-side critical section: it would wait for itself. */
static inline void tk__rcu_synchronize(void)
{
	urcu_bp_synchronize_rcu();
	tk__tsan_acquire();
}

#endif /* TK_RCU_H */
