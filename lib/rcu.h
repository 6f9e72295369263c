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
 * Not _LGPL_SOURCE: the inlined read-side code accesses liburcu's reader
 * registry through a type that claims 128-byte alignment the registry's
 * allocator does not give (UBSan reports it); the library's own calls
 * cost a few ns more and keep that access inside liburcu.
 */
#include <urcu/urcu-bp.h>

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

static inline void tk__rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

static inline void tk__rcu_read_unlock(void)
{
	tk__tsan_release();
	urcu_bp_read_unlock();
}

/* Never inside a read-side critical section: it would wait for itself. */
static inline void tk__rcu_synchronize(void)
{
	urcu_bp_synchronize_rcu();
	tk__tsan_acquire();
}

#endif /* TK_RCU_H */
