/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * default-store.c - the store of a Limiter built without one.
 *
 * - throttlekit.default_store, when set, names it.
 * - Under php-fpm a pool's workers must share their limits, or N workers
 *   admit N times each limit: the default is the pool's zone,
 *   "shm:php-fpm.POOL", created by the first worker that needs it, as the
 *   pool's user with mode 0600, and refused (EACCES) if another user owns
 *   it (the library's rules for zones).
 * - The pool's name is the one php-fpm writes into its worker's title,
 *   "php-fpm: pool NAME" (over argv[0], NUL-padded), read there in this
 *   process's memory (glibc's program_invocation_name points at it): no
 *   file, so a chrooted pool reads it too.  Not fpm_get_status(): it
 *   copies the pool's scoreboard, and a slot it finds locked by another
 *   worker (as workers start, say) it leaves uninitialised yet reads,
 *   and the worker dies of SIGSEGV (php-fpm 8.2; seen under load in
 *   php/tests/fpm.sh).  Should the title not say (a php-fpm that sets
 *   it otherwise), the zone is one per user, "shm:php-fpm.uid-UID":
 *   shared by more workers than the pool's, so stricter, never looser.
 *   A name too long for the title is named as the title cut it: shared
 *   with pools whose names start alike, stricter again.
 * - Elsewhere (the CLI) a process counts alone: "memory".
 * - A worker's pool never changes, so this is worked out once per process.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php_throttlekit.h"

#include <errno.h> /* program_invocation_name (_GNU_SOURCE, php_config.h) */
#include <pthread.h>
#include <unistd.h>

#include "SAPI.h"

/* "shm:" + a zone name of 1 to 200 bytes + NUL. */
static char automatic[4 + 200 + 1];
static pthread_mutex_t automatic_mu = PTHREAD_MUTEX_INITIALIZER;

/* The pool of this php-fpm worker into @buf; false if it cannot say. */
static bool fpm_pool(char *buf, size_t len)
{
	static const char prefix[] = "php-fpm: pool ";
	const char *title = program_invocation_name;
	size_t name;

	if (!title || strncmp(title, prefix, sizeof(prefix) - 1) != 0)
		return false;
	title += sizeof(prefix) - 1;
	name = strnlen(title, len);
	if (name == 0 || name >= len)
		return false;
	memcpy(buf, title, name + 1);
	return true;
}

/*
 * The zone spec of @pool: the bytes a zone name may hold as they are,
 * others as _XX (hex); a name that would be too long as a hash of it.
 */
static void pool_zone(char *out, size_t len, const char *pool)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
				 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
	uint64_t h = 14695981039346656037u; /* FNV-1a */
	size_t n = (size_t)snprintf(out, len, "shm:php-fpm.");
	const char *c;

	for (c = pool; *c && n + 4 < len; c++) {
		if (strchr(ok, *c))
			out[n++] = *c;
		else
			n += (size_t)snprintf(out + n, len - n, "_%02X",
					      (unsigned char)*c);
	}
	out[n] = '\0';
	if (!*c)
		return;
	for (c = pool; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211u;
	snprintf(out, len, "shm:php-fpm.h%016" PRIx64, h);
}

const char *tkphp_default_store(void)
{
	const char *ini = TKPHP_G(default_store);
	char pool[256];

	if (ini && *ini)
		return ini;
	pthread_mutex_lock(&automatic_mu);
	if (!*automatic) {
		if (strcmp(sapi_module.name, "fpm-fcgi") != 0)
			snprintf(automatic, sizeof(automatic), "memory");
		else if (fpm_pool(pool, sizeof(pool)))
			pool_zone(automatic, sizeof(automatic), pool);
		else
			snprintf(automatic, sizeof(automatic),
				 "shm:php-fpm.uid-%lu",
				 (unsigned long)geteuid());
	}
	pthread_mutex_unlock(&automatic_mu);
	return automatic;
}
