/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * error.c - error codes are part of the API.
 *
 * Every public entry point returns through tk__rc(), which lets only the
 * documented codes pass; anything else becomes -EIO, so a caller can rely
 * on the ERRORS section of the man pages being complete.
 */
#include "error.h"

#include <errno.h>

static const struct {
	int code;
	const char *name;
	const char *text;
} errors[] = {
	{ 0, "OK", "Success" },
	{ EINVAL, "EINVAL", "Invalid argument" },
	{ ERANGE, "ERANGE", "Cost exceeds what the policy can ever admit" },
	{ ENOMEM, "ENOMEM", "Out of memory" },
	{ ENOTSUP, "ENOTSUP", "Not supported by this build" },
	{ ENAMETOOLONG, "ENAMETOOLONG", "Key or prefix too long" },
	{ EPROTO, "EPROTO", "Incompatible state or zone layout" },
	{ ENOSPC, "ENOSPC", "Store full, or buffer too small" },
	{ EIO, "EIO", "Input/output error" },
	{ EOVERFLOW, "EOVERFLOW",
	  "Time outside what the clock or policy can express" },
	{ ECANCELED, "ECANCELED", "Wait cancelled by the caller" },
	{ ENOENT, "ENOENT", "No such zone" },
	{ EEXIST, "EEXIST", "Zone exists" },
	{ EACCES, "EACCES",
	  "Zone not trusted or not accessible, or server login refused" },
	{ EBADMSG, "EBADMSG", "Zone failed verification" },
	{ ETIMEDOUT, "ETIMEDOUT", "Store server timed out" },
	{ ECONNREFUSED, "ECONNREFUSED", "Store server refused the connection" },
	{ ECONNRESET, "ECONNRESET", "Connection to the store server lost" },
	{ EAGAIN, "EAGAIN", "Store cluster redirected or busy; try again" },
	{ EROFS, "EROFS", "Store server is a read-only replica" },
	{ ENXIO, "ENXIO", "Store server has no such database" },
	{ EHOSTUNREACH, "EHOSTUNREACH",
	  "Redis Sentinel knows no master of that name" },
	{ EMFILE, "EMFILE", "Too many open files for a store connection" },
	{ ESRCH, "ESRCH", "No such rule in the zone" },
	{ EXDEV, "EXDEV",
	  "Limiters of a group on different stores (each \"memory\" open "
	  "is a store of its own)" },
};

#define N_ERRORS (sizeof(errors) / sizeof(errors[0]))

int tk__rc(int rc)
{
	size_t i;

	if (rc >= 0)
		return rc;
	for (i = 1; i < N_ERRORS; i++)
		if (-rc == errors[i].code)
			return rc;
	return -EIO;
}

/* The table row of @err (negative or positive), or NULL. */
static const char *const *lookup(int err, int text)
{
	/* Wider than int: -INT_MIN is no int. */
	long long code = err < 0 ? -(long long)err : err;
	size_t i;

	for (i = 0; i < N_ERRORS; i++)
		if (code == errors[i].code)
			return text ? &errors[i].text : &errors[i].name;
	return NULL;
}

TK_API const char *tk_strerror(int err)
{
	const char *const *s = lookup(err, 1);

	return s ? *s : "Unknown error";
}

TK_API const char *tk_strerrorname(int err)
{
	const char *const *s = lookup(err, 0);

	return s ? *s : "EUNKNOWN";
}

TK_API bool tk_error_is_caller(int err)
{
	/* As lookup(): -INT_MIN is no int. */
	long long code = err < 0 ? -(long long)err : err;

	return code == EINVAL || code == ENAMETOOLONG || code == ERANGE ||
	       code == ENOTSUP || code == EXDEV;
}

TK_API const char *tk_version(void)
{
	return PACKAGE_VERSION;
}
