dnl SPDX-License-Identifier: BSD-2-Clause
dnl config.m4 - the phpize build of the throttlekit extension:
dnl   phpize && ./configure [--with-throttlekit=PREFIX] && make
dnl PREFIX is where libthrottlekit is installed; without one, pkg-config.
dnl (The project's own configure builds the same sources, see README.md.)

PHP_ARG_WITH([throttlekit],
  [for throttlekit support],
  [AS_HELP_STRING([[--with-throttlekit[=PREFIX]]],
    [Include throttlekit support (libthrottlekit in PREFIX)])])

if test "$PHP_THROTTLEKIT" != "no"; then
  if test "$PHP_THROTTLEKIT" != "yes" && test -r "$PHP_THROTTLEKIT/include/throttlekit.h"; then
    PHP_ADD_INCLUDE([$PHP_THROTTLEKIT/include])
    PHP_ADD_LIBRARY_WITH_PATH([throttlekit], [$PHP_THROTTLEKIT/$PHP_LIBDIR], [THROTTLEKIT_SHARED_LIBADD])
  else
    PKG_CHECK_MODULES([THROTTLEKIT], [throttlekit >= 0.1])
    PHP_EVAL_INCLINE([$THROTTLEKIT_CFLAGS])
    PHP_EVAL_LIBLINE([$THROTTLEKIT_LIBS], [THROTTLEKIT_SHARED_LIBADD])
  fi
  PHP_SUBST([THROTTLEKIT_SHARED_LIBADD])
  AC_DEFINE([HAVE_THROTTLEKIT], [1], [Have the throttlekit extension])
  PHP_NEW_EXTENSION([throttlekit],
    [throttlekit.c cache.c limiter.c decision.c default-store.c],
    [$ext_shared],, [-std=gnu11 -DZEND_ENABLE_STATIC_TSRMLS_CACHE=1])
fi
