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
 * - The pool's name is what fpm_get_status(), the SAPI's own function,
 *   says.  Should it not answer (disabled by disable_functions), the zone
 *   is one per user, "shm:php-fpm.uid-UID": shared by more workers than
 *   the pool's, so stricter, never looser.
 * - Elsewhere (the CLI) a process counts alone: "memory".
 * - A worker's pool never changes, so this is worked out once per process.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php_throttlekit.h"

#include <pthread.h>
#include <unistd.h>

#include "SAPI.h"

/* "shm:" + a zone name of 1 to 200 bytes + NUL. */
static char automatic[4 + 200 + 1];
static pthread_mutex_t automatic_mu = PTHREAD_MUTEX_INITIALIZER;

/* The pool of this php-fpm worker into @buf; false if it cannot say. */
static bool fpm_pool(char *buf, size_t len)
{
	zend_function *fn;
	zval rv, *pool;
	bool ok = false;

	fn = zend_hash_str_find_ptr(CG(function_table), "fpm_get_status",
				    sizeof("fpm_get_status") - 1);
	if (!fn)
		return false;
	ZVAL_UNDEF(&rv);
	zend_call_known_function(fn, NULL, NULL, &rv, 0, NULL, NULL);
	if (Z_TYPE(rv) == IS_ARRAY &&
	    (pool = zend_hash_str_find(Z_ARRVAL(rv), "pool", 4)) &&
	    Z_TYPE_P(pool) == IS_STRING && Z_STRLEN_P(pool) > 0 &&
	    Z_STRLEN_P(pool) < len) {
		memcpy(buf, Z_STRVAL_P(pool), Z_STRLEN_P(pool) + 1);
		ok = true;
	}
	zval_ptr_dtor(&rv);
	return ok;
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
