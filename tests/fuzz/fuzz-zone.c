/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz-zone.c - libFuzzer harness for attaching to a zone file.
 *
 * The input is the whole file.  Attaching must either refuse it with a
 * typed error or accept it, and an accepted zone must survive checks,
 * resets, a verify, a walk and a sweep whatever its slots and its arena
 * contain (states in slots and in blocks): a hostile or
 * corrupt segment must never crash a process that attaches to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <throttlekit.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int count_key(void *ctx, uint64_t slot, uint64_t fp, uint64_t state)
{
	(void)slot;
	(void)fp;
	(void)state;
	++*(int *)ctx;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_limiter *l;
	struct tk_decision d;
	char path[128];
	int fd, rc, n = 0;

	if (!dir[0]) {
		strcpy(dir, "/tmp/tk-fuzz-zone-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		setenv("TK_SHM_DIR", dir, 1);
	}
	snprintf(path, sizeof(path), "%s/throttlekit.f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	rc = tk_zone_info("f", &info, sizeof(info));
	if (rc != 0 && rc != -EINVAL && rc != -EPROTO)
		abort();
	o.flags = TK_OPT_ZONE_NO_CREATE;
	if (tk_limiter_open(&l, "gcra:5/1s", "shm:f", &o) == 0) {
		if (rc != 0)
			abort(); /* the two paths must agree */
		tk_limiter_check(l, "a", 1, 1, &d);
		tk_limiter_check(l, "b", 1, 2, &d);
		tk_limiter_reset(l, "a", 1);
		tk_limiter_close(l);
		/* States in blocks: the arena is as hostile as the slots. */
		if (tk_limiter_open(&l, "sliding-window:5/1s,buckets=3",
				    "shm:f", &o) == 0) {
			tk_limiter_check(l, "t", 1, 1, &d);
			tk_limiter_check(l, "u", 1, 2, &d);
			tk_limiter_reset(l, "t", 1);
			tk_limiter_close(l);
		}
		tk_zone_verify("f", &info, sizeof(info));
		tk_zone_walk("f", count_key, &n);
		tk_zone_sweep("f", UINT64_MAX / 2);
	}
	unlink(path);
	return 0;
}
