/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttlekit.c - the module: INI settings, classes, phpinfo() and errors.
 *
 * MINIT runs once in the php-fpm master before it forks (when the
 * extension is loaded by php.ini or -d), so it only registers: no store is
 * opened, no thread started and no zone mapped there.  Stores are opened by
 * the first Limiter of each process (cache.c).  MSHUTDOWN runs in every
 * exiting child, so it never removes a zone.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php_throttlekit.h"

#include <errno.h>

#include "SAPI.h"
#include "ext/spl/spl_exceptions.h"
#include "ext/standard/info.h"
/* The arginfo marks the store spec #[\SensitiveParameter]. */
#include "zend_attributes.h"
#include "throttlekit_arginfo.h"

ZEND_DECLARE_MODULE_GLOBALS(throttlekit)

zend_class_entry *tkphp_exception_ce;
zend_class_entry *tkphp_store_exception_ce;

/*
 * A mistyped throttlekit.fail must not leave the limits to a policy the
 * operator did not choose without a word: PHP keeps the previous value
 * (at startup the default, "error"), and the warning says so.  At startup
 * it reaches php -m, and php-fpm -t where log_errors is on (Debian's
 * php.ini); a pool's php_admin_value is applied in each worker, whose
 * warning goes to the php-fpm log.
 */
static ZEND_INI_MH(on_update_fail)
{
	unsigned int fail;

	if (tk_fail_parse(ZSTR_VAL(new_value), ZSTR_LEN(new_value), &fail)) {
		char msg[256];

		/* No quotes: html_errors (php-fpm's default) would escape
		 * them in the log. */
		snprintf(msg, sizeof(msg),
			 "throttlekit.fail=%s is not error, open or closed: "
			 "ignored, throttlekit.fail stays %s",
			 ZSTR_VAL(new_value),
			 entry->value ? ZSTR_VAL(entry->value) : "error");
		/*
		 * php-fpm applies a pool's php_admin_value in each worker
		 * before its first request, where no output is active: a
		 * warning displayed there is written through a request that
		 * does not exist yet, and a worker crashed (SIGSEGV) serving
		 * its first request after it.  There the message is logged,
		 * which reaches the php-fpm log all the same.
		 */
		if (stage == ZEND_INI_STAGE_ACTIVATE && !SG(sapi_started))
			php_log_err(msg);
		else
			php_error_docref(NULL, E_WARNING, "%s", msg);
		return FAILURE;
	}
	return OnUpdateString(entry, new_value, mh_arg1, mh_arg2, mh_arg3,
			      stage);
}

/* throttlekit.zone_dir: "" or an absolute directory, no trailing '/'. */
static ZEND_INI_MH(on_update_zone_dir)
{
	const char *d = ZSTR_VAL(new_value);
	size_t n = ZSTR_LEN(new_value);

	if (n && (d[0] != '/' || n < 2 || d[n - 1] == '/'))
		return FAILURE;
	return OnUpdateString(entry, new_value, mh_arg1, mh_arg2, mh_arg3,
			      stage);
}

/*
 * SYSTEM|PERDIR: settable in php.ini and per pool (php_admin_value), not
 * by the scripts whose requests they limit.  throttlekit.zone_dir is
 * SYSTEM alone: a .user.ini, which a site's own files may be, must not
 * move its pool's zones.
 */
PHP_INI_BEGIN()
STD_PHP_INI_ENTRY("throttlekit.default_store", "",
		  PHP_INI_SYSTEM | PHP_INI_PERDIR, OnUpdateString,
		  default_store, zend_throttlekit_globals, throttlekit_globals)
STD_PHP_INI_ENTRY("throttlekit.fail", "error", PHP_INI_SYSTEM | PHP_INI_PERDIR,
		  on_update_fail, fail, zend_throttlekit_globals,
		  throttlekit_globals)
STD_PHP_INI_ENTRY("throttlekit.zone_owner", "", PHP_INI_SYSTEM | PHP_INI_PERDIR,
		  OnUpdateString, zone_owner, zend_throttlekit_globals,
		  throttlekit_globals)
STD_PHP_INI_ENTRY("throttlekit.zone_dir", "", PHP_INI_SYSTEM,
		  on_update_zone_dir, zone_dir, zend_throttlekit_globals,
		  throttlekit_globals)
PHP_INI_END()

const char *tkphp_redact(const char *spec, char *buf, size_t len)
{
	if (tk_spec_redact(spec, buf, len) < 0 && len)
		snprintf(buf, len, "(a store spec)");
	return buf;
}

/* The caller's mistakes are the programmer's; the rest the store's. */
void tkphp_throw(int rc, const char *what, const char *detail)
{
	zend_class_entry *ce = tk_error_is_caller(rc)
				       ? tkphp_exception_ce
				       : tkphp_store_exception_ce;

	zend_throw_exception_ex(ce, -rc, "%s: %s (%s)%s%s", what,
				tk_strerror(rc), tk_strerrorname(rc),
				detail && *detail ? ": " : "",
				detail ? detail : "");
}

static PHP_MINIT_FUNCTION(throttlekit)
{
	REGISTER_INI_ENTRIES();
	tkphp_exception_ce = register_class_ThrottleKit_Exception(
		spl_ce_InvalidArgumentException);
	tkphp_store_exception_ce = register_class_ThrottleKit_StoreException(
		spl_ce_RuntimeException);
	tkphp_limiter_ce = register_class_ThrottleKit_Limiter();
	tkphp_decision_ce = register_class_ThrottleKit_Decision();
	tkphp_limiter_minit();
	tkphp_decision_minit();
	tkphp_cache_minit();
	return SUCCESS;
}

static PHP_MSHUTDOWN_FUNCTION(throttlekit)
{
	UNREGISTER_INI_ENTRIES();
	tkphp_cache_shutdown();
	return SUCCESS;
}

static PHP_MINFO_FUNCTION(throttlekit)
{
	php_info_print_table_start();
	php_info_print_table_row(2, "throttlekit support", "enabled");
	php_info_print_table_row(2, "library version (run time)", tk_version());
	php_info_print_table_row(2, "library version (built with)",
				 TK_VERSION_STRING);
	php_info_print_table_row(2, "license", PHP_THROTTLEKIT_LICENSE);
	php_info_print_table_row(2, "default store", tkphp_default_store());
	tkphp_cache_info();
	php_info_print_table_end();
	DISPLAY_INI_ENTRIES();
}

static const zend_module_dep throttlekit_deps[] = { ZEND_MOD_REQUIRED("spl")
							    ZEND_MOD_END };

zend_module_entry throttlekit_module_entry = { STANDARD_MODULE_HEADER_EX,
					       NULL,
					       throttlekit_deps,
					       "throttlekit",
					       NULL,
					       PHP_MINIT(throttlekit),
					       PHP_MSHUTDOWN(throttlekit),
					       NULL,
					       NULL,
					       PHP_MINFO(throttlekit),
					       PHP_THROTTLEKIT_VERSION,
					       PHP_MODULE_GLOBALS(throttlekit),
					       NULL,
					       NULL,
					       NULL,
					       STANDARD_MODULE_PROPERTIES_EX };

#ifdef COMPILE_DL_THROTTLEKIT
#ifdef ZTS
ZEND_TSRMLS_CACHE_DEFINE()
#endif
ZEND_DLEXPORT zend_module_entry *get_module(void);
ZEND_GET_MODULE(throttlekit)
#endif
