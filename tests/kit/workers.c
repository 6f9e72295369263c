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
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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
		pid[i] = fork();
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

void kit_zone_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/throttlekit.%s", getenv("TK_SHM_DIR"), name);
}
