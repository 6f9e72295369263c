/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * workers.c - forked processes for the zone tests (see workers.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

static struct kit_shared *sh;

struct kit_shared *kit_shared(void)
{
	void *p;

	if (sh)
		return sh;
	p = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		sh = p;
	return sh;
}

void kit_shared_reset(uint64_t now)
{
	memset(sh, 0, sizeof(*sh));
	atomic_store(&sh->now, now);
}

void kit_run_workers(int n, void (*fn)(int))
{
	pid_t pid[KIT_MAX_WORKERS];
	int i;

	assert_true(n > 0 && n <= KIT_MAX_WORKERS);
	for (i = 0; i < n; i++) {
		pid[i] = kit_fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			/* Start together: races need company. */
			atomic_fetch_add(&sh->ready, 1);
			while (atomic_load(&sh->ready) < (uint64_t)n)
				;
			fn(i);
			_exit(0);
		}
	}
	for (i = 0; i < n; i++)
		kit_wait_exit(pid[i], 0);
	atomic_store(&sh->ready, 0);
}

void kit_wait_exit(pid_t pid, int code)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("child killed by signal %d", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), code);
}

void kit_in_child(void (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(arg);
		exit(0); /* not _exit(): LeakSanitizer checks at exit */
	}
	kit_wait_exit(pid, 0);
}

int kit_zone_dir(char *tmpl)
{
	if (!mkdtemp(tmpl))
		return -1;
	return setenv("TK_SHM_DIR", tmpl, 1);
}

int kit_zone_dir_remove(void **state)
{
	const char *dir = getenv("TK_SHM_DIR");
	char cmd[1024];

	(void)state;
	if (!dir)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int kit_fresh_zone(struct tk_store **out, const struct tk_options *o,
		   const char *stem, char *name, size_t len)
{
	struct tk_options zo = *o;
	static int serial;
	char spec[80];

	if (name[0])
		tk_zone_destroy(name);
	snprintf(name, len, "%s-%d", stem, ++serial);
	snprintf(spec, sizeof(spec), "shm:%s", name);
	zo.zone_capacity = 1024;
	return tk_store_open(out, spec, &zo);
}

struct tk_store *kit_store_on(const char *spec, struct tk_clock *c)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s;

	o.clock = c;
	o.zone_capacity = 1024;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_int_equal(tk_store_open(&s, spec, &o), 0);
	return s;
}

void kit_zone_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/throttlekit.%s", getenv("TK_SHM_DIR"), name);
}

struct found {
	uint64_t slot, state;
	int n;
};

static int find_key(void *ctx, uint64_t slot, uint64_t fp, uint64_t state)
{
	struct found *f = ctx;

	(void)fp;
	f->slot = slot;
	f->state = state;
	f->n++;
	return 0;
}

off_t kit_block_word_offset(const char *zone, unsigned int w)
{
	struct tk_zone_info info;
	struct found f = { 0, 0, 0 };
	uint64_t pages, cell, table;

	assert_int_equal(tk_zone_info(zone, &info, sizeof(info)), 0);
	assert_int_equal(tk_zone_walk(zone, find_key, &f), 0);
	assert_int_equal(f.n, 1);
	pages = info.arena_size / (1024 * 16);
	table = (pages * 8 + 63) / 64 * 64;
	/* A reference holds (cell / 4 + 1) above its 37 gen bits; cell 0 of a
	 * block is its header, cell 1 its expiry, then one word a cell: its
	 * gen, then its value. */
	cell = ((f.state >> 37) - 1) * 4;
	return (off_t)(4096 + info.capacity * 16 + table + (cell + 2 + w) * 16);
}

int kit_zone_open(const char *zone)
{
	char path[512];
	int fd;

	kit_zone_path(path, sizeof(path), zone);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	return fd;
}

void kit_zone_poke(const char *zone, off_t off, uint64_t v)
{
	int fd = kit_zone_open(zone);

	assert_int_equal(pwrite(fd, &v, sizeof(v), off), (ssize_t)sizeof(v));
	close(fd);
}

uint64_t kit_zone_peek(const char *zone, off_t off)
{
	int fd = kit_zone_open(zone);
	uint64_t v;

	assert_int_equal(pread(fd, &v, sizeof(v), off), (ssize_t)sizeof(v));
	close(fd);
	return v;
}
