/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * workers.h - forked processes for the zone tests: a page they share,
 * a start barrier, their exit codes, and the directory zones live in.
 *
 * Include after <cmocka.h>: the waits assert.  Not thread-safe: the
 * test's main thread drives these.
 */
#ifndef TK_TESTS_KIT_WORKERS_H
#define TK_TESTS_KIT_WORKERS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * fork() for a test's workers, from the thread that waits for them: a
 * child is killed when that thread ends, so that a test killed by its
 * timeout or crashed leaves no worker spinning on the shared page.
 */
static inline pid_t kit_fork(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0 &&
	    (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
		_exit(70);
	return pid;
}

/* The most workers kit_run_workers() forks. */
#define KIT_MAX_WORKERS 16

/* What forked workers share: a time, the admitted counts, a barrier. */
struct kit_shared {
	_Atomic uint64_t now;
	_Atomic uint64_t allowed;
	_Atomic uint64_t errors;
	_Atomic uint64_t per_key[1024];
	_Atomic uint64_t ready; /* start barrier */
	_Atomic uint64_t phase; /* workers done with a first phase */
};

/* The shared page (anonymous, MAP_SHARED, so children see its updates),
 * mapped on the first call: NULL if it cannot be. */
struct kit_shared *kit_shared(void);
/* Zero it, then set its time to @now. */
void kit_shared_reset(uint64_t now);

/* Fork @n workers running @fn(i), started together; wait for all: each
 * must exit 0. */
void kit_run_workers(int n, void (*fn)(int));
/* Wait for child @pid: it must exit with @code, not die of a signal. */
void kit_wait_exit(pid_t pid, int code);
/* Run @fn(@arg) in a forked child; it must exit 0. */
void kit_in_child(void (*fn)(void *), void *arg);

/* In such a child: exit with @n, saying which check failed, unless
 * @cond holds (cmocka's assertions belong to the parent). */
#define KIT_CHILD_CHECK(n, cond)                                               \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "child check %d failed: %s\n", n,      \
				#cond);                                        \
			_exit(n);                                              \
		}                                                              \
	} while (0)

/* Make a fresh directory from @tmpl (mkdtemp) and point TK_SHM_DIR at
 * it: 0, or -1. */
int kit_zone_dir(char *tmpl);
/* A cmocka group teardown: remove that directory and all it holds. */
int kit_zone_dir_remove(void **state);
struct tk_clock;
struct tk_options;
struct tk_store;

/*
 * A kit's opener of a fresh zone per test: destroys the zone named in
 * @name (if any), names a new one "@stem-N" there (@len bytes), and opens
 * it with @o and a capacity of 1024 slots.
 */
int kit_fresh_zone(struct tk_store **out, const struct tk_options *o,
		   const char *stem, char *name, size_t len);

/* Store @spec on clock @c, without a reclaimer (a test's timeline moves
 * its states), a zone of 1024 slots; asserts it opens. */
struct tk_store *kit_store_on(const char *spec, struct tk_clock *c);

/* The path of zone @name's file in it. */
void kit_zone_path(char *buf, size_t len, const char *name);

/*
 * The byte offset in zone @zone's file of the cell of word @w of the
 * block state of its one key (a block key; found by tk_zone_walk()): the
 * cell's gen there, its value 8 bytes on.
 */
off_t kit_block_word_offset(const char *zone, unsigned int w);

/* Zone @zone's file, open for reading and writing; asserts it opens. */
int kit_zone_open(const char *zone);

/* Write @v at byte @off of zone @zone's file; read the word there. */
void kit_zone_poke(const char *zone, off_t off, uint64_t v);
uint64_t kit_zone_peek(const char *zone, off_t off);

#endif
